"""Cases about where a run writes and how it runs: ``--out``, ``--run-dir``/``--resume``, the
Flower backends' options and ``fedcare experiment``'s grid options.
"""

from __future__ import annotations

import os
import subprocess
from functools import partial
from pathlib import Path

from case_model import OUT_FILE, Builder, Case, Sources, write_diabetes
from config_cases import run_argv
from diabetes_cases import CSV, R1, diabetes_argv, set_cells

#: A Diabetes 130 copy with a non-numeric count in data row R1 (a check the loader surely has,
#: so these cases test what happens around a refusal, not the content check itself).
BAD_DATA = {(R1, "num_medications"): "many"}


def run_fedcare(argv: list[str], cwd: Path) -> None:
    """Run the CLI from a builder (the runner exports ``BADINPUTS_PYTHON``); raise on failure."""
    python = os.environ.get("BADINPUTS_PYTHON", "python")
    subprocess.run(
        [python, "-m", "fedcare.cli", *argv], cwd=cwd, check=True, capture_output=True, timeout=300
    )


def _both(*builders: Builder) -> Builder:
    def build(inp: Path, src: Sources) -> None:
        for b in builders:
            b(inp, src)

    return build


def _mkdir(rel: str, mode: int | None = None, file: str | None = None) -> Builder:
    """A builder making ``{work}/rel`` (``rel`` relative to the case folder), optionally a file."""

    def build(inp: Path, _src: Sources) -> None:
        path = inp.parent / rel
        path.mkdir(parents=True, exist_ok=True)
        if file is not None:
            (path / file).write_text("keep me\n")
        if mode is not None:
            path.chmod(mode)

    return build


def _file(rel: str, text: str = "old results\n", mode: int | None = None) -> Builder:
    def build(inp: Path, _src: Sources) -> None:
        path = inp.parent / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        if mode is not None:
            path.chmod(mode)

    return build


def output_cases(src: Sources) -> list[Case]:
    """``--out`` locations that cannot be written, and refusals that must leave no file."""
    o = "--out|out"
    bad = diabetes_argv()
    bad_out = lambda path: (*bad[:-1], path)  # noqa: E731 - the last argument is --out's value
    return [
        Case(
            "o-out-is-directory", "output", "refused", run_argv(src, out="{work}/out"), names=(o,)
        ),
        Case(
            "o-out-unwritable-folder",
            "output",
            "refused",
            run_argv(src, out="{work}/ro/results.json"),
            _mkdir("ro", 0o555),
            names=(o,),
            as_nobody=True,
            note="folder 0555, run as nobody",
        ),
        Case(
            "o-out-readonly-file",
            "output",
            "refused",
            run_argv(src, out="{work}/ro.json"),
            _file("ro.json", mode=0o444),
            names=(o,),
            as_nobody=True,
        ),
        Case(
            "o-out-under-a-file",
            "output",
            "refused",
            run_argv(src, out="{work}/plain/results.json"),
            _file("plain"),
            names=(o,),
        ),
        Case("o-out-empty-string", "output", "refused", run_argv(src, out=""), names=(o,)),
        Case(
            "o-out-missing-folder-bad-data",
            "output",
            "refused",
            bad_out("{work}/out/new/sub/results.json"),
            set_cells(BAD_DATA),
            names=(CSV, "num_medications"),
            note="the missing folders must not be left behind",
        ),
        Case(
            "o-out-existing-file-bad-data",
            "output",
            "refused",
            diabetes_argv(),
            _both(set_cells(BAD_DATA), _file("out/results.json")),
            names=(CSV, "num_medications"),
            note="an earlier results file must stay as it was",
        ),
        Case(
            "o-ok-out-missing-folder",
            "output-valid",
            "accepted",
            run_argv(src, out="{work}/out/new/sub/results.json"),
            outputs=("{work}/out/new/sub/results.json",),
            note="README: the folder is made",
        ),
    ]


def _make_run_folder(inp: Path, src: Sources) -> None:
    """A real, complete-less run folder of FedAvg on a copy, then the copy changed."""
    path = write_diabetes(inp, src.diabetes_lines)
    run_fedcare(
        [
            "run",
            "--dataset",
            "diabetes130",
            "--data-dir",
            str(path),
            "--no-verify",
            "--algorithm",
            "fedcare",
            "--max-patients",
            "600",
            "--rounds",
            "1",
            "--clients",
            "3",
            "--stage2-epochs",
            "1",
            "--quiet",
            "--run-dir",
            str(inp / "rd"),
        ],
        inp,
    )
    (inp / "rd" / "results.json").unlink()
    write_diabetes(inp, src.diabetes_lines, eol="\n")


def resume_cases(src: Sources) -> list[Case]:
    """``--run-dir`` and ``--resume`` misuse."""
    rd, rs = "--run-dir|run-dir|run folder", "--resume|resume|run folder|config.json"

    def resume(path: str, *extra: str) -> tuple[str, ...]:
        return ("run", "--resume", path, *extra, "--quiet", "--out", OUT_FILE)

    base = run_argv(src)
    return [
        Case(
            "r-run-dir-nonempty",
            "run-dir",
            "refused",
            (*base, "--run-dir", "{work}/rd"),
            _mkdir("rd", file="notes.txt"),
            names=(rd,),
        ),
        Case(
            "r-run-dir-is-file",
            "run-dir",
            "refused",
            (*base, "--run-dir", "{work}/rd"),
            _file("rd"),
            names=(rd,),
        ),
        Case(
            "r-run-dir-new-bad-data",
            "run-dir",
            "refused",
            (*diabetes_argv(), "--run-dir", "{work}/out/rd"),
            set_cells(BAD_DATA),
            names=(CSV, "num_medications"),
            note="the new run folder must not be left behind",
        ),
        Case(  # Flower runs are checkpointed too (their ServerApp writes the checkpoint)
            "r-ok-run-dir-flower-sim",
            "run-dir-valid",
            "accepted",
            (*base, "--backend", "flower-sim", "--run-dir", "{work}/out/rd"),
        ),
        Case(
            "r-run-dir-and-resume",
            "run-dir",
            "refused",
            (*base, "--run-dir", "{work}/a", "--resume", "{work}/b"),
            names=("--run-dir|--resume",),
        ),
        Case("r-resume-missing", "run-dir", "refused", resume("{work}/nowhere"), names=(rs,)),
        Case(
            "r-resume-empty-folder",
            "run-dir",
            "refused",
            resume("{work}/rd"),
            _mkdir("rd"),
            names=(rs,),
        ),
        Case(
            "r-resume-garbage-config",
            "run-dir",
            "refused",
            resume("{work}/rd"),
            _file("rd/config.json", "not json at all"),
            names=(rs,),
        ),
        Case(
            "r-resume-empty-object",
            "run-dir",
            "refused",
            resume("{work}/rd"),
            _file("rd/config.json", "{}"),
            names=(rs,),
        ),
        Case(
            "r-resume-a-file", "run-dir", "refused", resume("{work}/rd"), _file("rd"), names=(rs,)
        ),
        Case(
            "r-resume-with-clients",
            "run-dir",
            "refused",
            resume("{work}/rd", "--clients", "5"),
            _mkdir("rd"),
            names=("--clients",),
        ),
        Case(
            "r-resume-changed-data",
            "run-dir",
            "refused",
            resume("{in}/rd"),
            _make_run_folder,
            names=("sha-256|sha256|checksum|changed|data",),
            note="the data file was rewritten (LF endings) after the run folder was made",
        ),
        Case(
            "r-ok-run-dir",
            "run-dir-valid",
            "accepted",
            (*base, "--run-dir", "{work}/out/rd"),
            outputs=(OUT_FILE, "{work}/out/rd/results.json"),
        ),
    ]


def flower_cases(src: Sources) -> list[Case]:
    """Flower backend options that must be refused before any process starts."""
    rt = "--round-timeout|round_timeout|round_timeout_s"
    st = "--startup-timeout|startup_timeout|startup_timeout_s"

    def fl(cid: str, backend: str, names: tuple[str, ...], *extra: str, **flags: str) -> Case:
        argv = (*run_argv(src, **flags), "--backend", backend, *extra)
        return Case(cid, "flower", "refused", argv, names=names, timeout=120)

    d, s = "flower-deployment", "flower-sim"
    return [
        fl("w-deploy-round-timeout-nan", d, (rt,), "--round-timeout", "nan"),
        fl("w-deploy-round-timeout-negative", d, (rt,), "--round-timeout", "-1"),
        fl("w-deploy-round-timeout-zero", d, (rt,), "--round-timeout", "0"),
        fl("w-deploy-round-timeout-inf", d, (rt,), "--round-timeout", "inf"),
        fl("w-deploy-startup-timeout-nan", d, (st,), "--startup-timeout", "nan"),
        fl("w-deploy-startup-timeout-zero", d, (st,), "--startup-timeout", "0"),
        fl("w-sim-round-timeout-nan", s, (rt,), "--round-timeout", "nan"),
        fl("w-sim-round-timeout-text", s, (rt,), "--round-timeout", "soon"),
        fl(
            "w-deploy-node-auth-insecure",
            d,
            ("--node-auth|--insecure|tls",),
            "--node-auth",
            "--insecure",
        ),
        fl("w-sim-pafnet", s, ("pafnet|--backend|backend",), algorithm="pafnet"),
        fl("w-deploy-local-bound", d, ("local|--backend|backend",), algorithm="local"),
        fl("w-deploy-clients-zero", d, ("--clients|clients",), clients="0"),
    ]


#: Where ``fedcare experiment`` cases write.
_EXP_OUT = "{work}/out/exp"


def _experiment_argv(src: Sources, name: str, **flags: str | None) -> tuple[str, ...]:
    """``fedcare experiment name`` on the published archive; ``flags`` override (``None``: drop)."""
    base: dict[str, str | None] = {
        "dataset": "diabetes130",
        "data_dir": str(src.diabetes_zip),
        "seeds": "1",
        "rounds": "1",
        "max_patients": "1000",
        "stage2_epochs": "1",
        "workers": "1",
        "out": _EXP_OUT,
    }
    if name != "disparity" and name != "ablation":
        base["algorithms"] = "fedavg"
    if name != "clients":
        base["clients"] = "3"
    base.update(flags)
    argv = ["experiment", name]
    for key, value in base.items():
        if value is not None:
            argv += [f"--{key.replace('_', '-')}", value]
    return (*argv, "--quiet")


def _experiment_case(
    src: Sources,
    cid: str,
    name: str,
    names: tuple[str, ...],
    build: Builder | None = None,
    **flags: str | None,
) -> Case:
    """A refused ``fedcare experiment name`` case with the given flags."""
    return Case(
        cid,
        "experiment",
        "refused",
        _experiment_argv(src, name, **flags),
        build or (lambda i, s: None),
        names=names,
        timeout=120,
    )


def _grid_option_cases(src: Sources) -> list[Case]:
    """Bad values of the grid options: algorithms, counts, ratios, seeds, workers, variants."""
    al, co, ra = "--algorithms|algorithms", "--counts|counts", "--ratios|ratios"
    e = partial(_experiment_case, src)
    return [
        e("e-algorithm-unknown", "comparison", (al,), algorithms="magic"),
        e("e-algorithms-empty", "comparison", (al,), algorithms=""),
        e("e-algorithms-double-comma", "comparison", (al,), algorithms="fedavg,,fedprox"),
        e("e-algorithms-duplicate", "comparison", (al,), algorithms="fedavg,fedavg"),
        e("e-counts-zero", "clients", (co,), counts="0"),
        e("e-counts-text", "clients", (co,), counts="3,abc"),
        e("e-counts-negative", "clients", (co,), counts="-3"),
        e("e-counts-one", "clients", (co,), counts="1"),
        e("e-counts-fraction", "clients", (co,), counts="2.5"),
        e("e-counts-empty", "clients", (co,), counts=""),
        e("e-ratios-zero", "disparity", (ra,), ratios="0"),
        e("e-ratios-one", "disparity", (ra,), ratios="1"),
        e("e-ratios-nan", "disparity", (ra,), ratios="nan"),
        e("e-ratios-above-one", "disparity", (ra,), ratios="0.2,2"),
        e("e-ratios-text", "disparity", (ra,), ratios="half"),
        e("e-seeds-zero", "comparison", ("--seeds|seeds",), seeds="0"),
        e("e-seeds-negative", "comparison", ("--seeds|seeds",), seeds="-1"),
        e("e-workers-zero", "comparison", ("--workers|workers",), workers="0"),
        e("e-variants-unknown", "ablation", ("--variants|variants",), variants="magic"),
    ]


def _run_setting_cases(src: Sources) -> list[Case]:
    """Bad run settings shared with ``fedcare run``: Dask address, output, sizes, data path."""
    e = partial(_experiment_case, src)
    return [
        e(
            "e-dask-address-malformed",
            "comparison",
            ("--dask-address|dask",),
            dask_address="not-an-address",
            workers=None,
        ),
        e("e-out-is-file", "comparison", ("--out|out",), _file("out/exp"), out=_EXP_OUT),
        e("e-rounds-zero", "comparison", ("--rounds|rounds",), rounds="0"),
        e("e-max-patients-zero", "comparison", ("--max-patients|max_patients",), max_patients="0"),
        e("e-stage2-epochs-zero", "comparison", ("--stage2-epochs|epochs",), stage2_epochs="0"),
        e("e-clients-zero", "comparison", ("--clients|clients",), clients="0"),
        e("e-data-missing", "comparison", ("nowhere",), data_dir="{in}/nowhere"),
    ]


def _experiment_run_cases(src: Sources) -> list[Case]:
    """Bad data, an unknown experiment, an unreachable Dask scheduler, and a tiny valid run."""
    bad = set_cells(BAD_DATA)
    return [
        Case(
            "e-bad-data",
            "experiment",
            "refused",
            (*_experiment_argv(src, "comparison", data_dir="{in}/" + CSV), "--no-verify"),
            bad,
            names=(CSV, "num_medications"),
            timeout=120,
        ),
        Case(
            "e-unknown-experiment",
            "experiment",
            "refused",
            ("experiment", "bogus"),
            names=("bogus|experiment",),
        ),
        Case(
            "e-dask-address-unreachable",
            "experiment",
            "refused",
            _experiment_argv(src, "comparison", dask_address="tcp://127.0.0.1:9", workers=None),
            names=("--dask-address|dask|127.0.0.1",),
            timeout=120,
            note="nothing listens there",
        ),
        Case(
            "e-ok-comparison-tiny",
            "experiment-valid",
            "accepted",
            _experiment_argv(src, "comparison"),
            outputs=(_EXP_OUT + "/comparison/comparison_runs.csv",),
            timeout=300,
        ),
    ]


def experiment_cases(src: Sources) -> list[Case]:
    """``fedcare experiment`` grid options."""
    return _grid_option_cases(src) + _run_setting_cases(src) + _experiment_run_cases(src)
