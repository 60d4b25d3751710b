"""Bad configuration from every CLI entry: one ``fedcare: error:`` line, exit 2, no work done."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fedcare.cli.main import EXIT_ERROR, main


@pytest.fixture
def no_work(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fail the test if any dataset is loaded or any cluster started."""

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("work started before the configuration was checked")

    # Both names: the checks module binds the loader at its import, which must not happen
    # under this patch either (a later test would load with ``refuse``).
    import data_checks.source_checks

    monkeypatch.setattr("fedcare_core.data.loading.load_dataset", refuse)
    monkeypatch.setattr(data_checks.source_checks, "load_dataset", refuse)
    monkeypatch.setattr("fedcare.grid.grid_client", refuse)
    monkeypatch.setattr("fedcare.procs.children.ProcessSupervisor.start", refuse)


def _one_error_line(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("fedcare"), err
    assert "Traceback" not in err
    return lines[0]


#: (``fedcare run`` arguments, with ``{cfg}`` for a JSON file of the given contents and
#: ``{tmp}`` for the test's folder; the document; words the message names).
RUN_CASES = [
    (["--max-patients", "-5"], None, ("data.max_patients", "-5")),
    (["--max-patients-per-client", "0"], None, ("data.max_patients_per_client", "0")),
    (["--clients", "0"], None, ("data.clients", "0")),
    (["--rounds", "0"], None, ("stage1.rounds",)),
    (["--local-lr", "inf"], None, ("stage1.local_lr", "inf")),
    (["--global-lr=-inf"], None, ("stage1.global_lr", "-inf")),
    (["--local-lr", "nan"], None, ("stage1.local_lr", "nan")),
    (["--rho", "nan"], None, ("data.rho", "nan")),
    (["--rho", "1.5"], None, ("data.rho", "1.5")),
    (["--seed", "-1"], None, ("seed", "-1")),
    (["--local-lr", "0"], None, ("stage1.local_lr", "> 0")),
    (["--config", "{cfg}"], [1, 2], ("JSON array", "c.json")),
    (["--config", "{cfg}"], 5, ("JSON object", "c.json")),
    (["--config", "{cfg}"], {"stage1": {"rounds": "5"}}, ("stage1.rounds", "'5'")),
    (["--config", "{cfg}"], {"stage1": {"rounds": 2.5}}, ("stage1.rounds", "2.5")),
    (["--config", "{cfg}"], {"stage1": {"local_lr": 1e400}}, ("stage1.local_lr", "inf")),
    (["--config", "{cfg}"], {"data": {"cover_all_objectives": "no"}}, ("cover_all",)),
    (["--config", "{cfg}"], {"data": {"dataset": 1}}, ("data.dataset",)),
    (["--config", "{cfg}"], {"stage1": [1]}, ("stage1", "JSON array")),
    (["--config", "{cfg}"], {"stage9": {}}, ("stage9",)),
    (["--config", "{tmp}/absent.json"], None, ("cannot read config",)),
    (["--out", "{tmp}"], None, ("--out", "--data-dir", "would replace the input")),
    (["--out", "{tmp}/file/r.json"], None, ("--out", "not a folder")),
    (["--run-dir", "{tmp}/file/rd"], None, ("--run-dir", "not a folder")),
    (["--run-dir", "{tmp}/file"], None, ("run folder", "not empty")),
    *[
        (["--backend", "flower-deployment", *flags], None, words)
        for flags, words in [
            (["--round-timeout", "nan"], ("--round-timeout", "finite", "nan")),
            (["--round-timeout", "inf"], ("--round-timeout", "finite", "inf")),
            (["--round-timeout=-5"], ("--round-timeout", "(0, 2,592,000]", "-5")),
            (["--round-timeout", "0"], ("--round-timeout", "(0, 2,592,000]", "got 0")),
            (["--startup-timeout", "inf"], ("--startup-timeout", "inf")),
            (["--insecure", "--node-auth"], ("--node-auth", "--insecure")),
            (["--bind-address", "0.0.0.0"], ("--bind-address", "0.0.0.0")),
            (["--bind-address", "hospital.lan"], ("--bind-address", "IPv4", "hospital.lan")),
            (["--bind-address", "192.0.2.7"], ("--bind-address", "cannot listen there")),
            (["--insecure", "--bind-address", "192.0.2.7"], ("not loopback", "--insecure")),
        ]
    ],
    (["--backend", "flower-sim", "--startup-timeout", "nan"], None, ("--startup-timeout",)),
    (["--backend", "flower-sim", "--bind-address", "127.0.0.2"], None, ("flower-deployment",)),
    # a Flower flag with a backend that would ignore it (local is the default)
    *[
        (flags, None, (flags[0], "applies to", where))
        for flags, where in [
            (["--round-timeout", "nan"], "--backend flower-deployment or flower-sim"),
            (["--round-timeout", "30"], "--backend flower-deployment or flower-sim"),
            (["--startup-timeout", "9"], "--backend flower-deployment or flower-sim"),
            (["--keep-workdir"], "--backend flower-deployment or flower-sim"),
            (["--stock-supernodes"], "flower-deployment only"),
            (["--insecure"], "flower-deployment only"),
            (["--node-auth"], "flower-deployment only"),
            (["--bind-address", "127.0.0.2"], "flower-deployment only"),
        ]
    ],
    (["--backend", "flower-sim", "--insecure"], None, ("--insecure", "flower-deployment only")),
    (["--backend", "flower-sim", "--node-auth"], None, ("--node-auth", "flower-deployment")),
    (["--backend", "flower-sim", "--stock-supernodes"], None, ("--stock-supernodes",)),
    # bounds and objectives (fedcare_core.config)
    (["--config", "{cfg}"], {"stage1": {"rounds": 10**30}}, ("stage1.rounds", "[1, 100,000]")),
    (["--clients", "1"], None, ("data.clients", "[2, 1000]", "1")),
    (["--clients", "2"], None, ("data.cover_all_objectives", "--clients")),
    (["--objectives-per-client", "9"], None, ("data.objectives_per_client", "9")),
    (["--objectives-per-client", "4"], None, ("data.objectives_per_client", "4")),
]


@pytest.mark.parametrize(("argv", "document", "words"), RUN_CASES)
def test_fedcare_run_refuses_bad_configuration_before_any_work(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    no_work: None,
    argv: list[str],
    document: object,
    words: tuple[str, ...],
) -> None:
    (tmp_path / "file").write_text("")
    if document is not None:
        (tmp_path / "c.json").write_text(json.dumps(document))
    before = sorted(tmp_path.rglob("*"))
    args = [a.format(cfg=tmp_path / "c.json", tmp=tmp_path) for a in argv]
    assert main(["run", "--quiet", "--data-dir", str(tmp_path), *args]) == EXIT_ERROR
    line = _one_error_line(capsys)
    for word in words:
        assert word in line, (word, line)
    assert sorted(tmp_path.rglob("*")) == before  # nothing written


@pytest.mark.parametrize("data", ["absent", "garbage"])
def test_a_new_run_dir_is_made_only_once_the_data_checks_pass(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], data: str
) -> None:
    source = tmp_path / "in" / "diabetic_data.csv"
    if data == "garbage":
        source.parent.mkdir()
        source.write_text("a,b\n1,2\n")
    run_dir = tmp_path / "out" / "rd"
    argv = ["run", "--quiet", "--no-verify", "--data-dir", str(source), "--run-dir", str(run_dir)]
    assert main([*argv, "--clients", "3", "--rounds", "1"]) == EXIT_ERROR
    _one_error_line(capsys)
    assert not (tmp_path / "out").exists()  # neither the folder nor the one above it


EXPERIMENT_CASES = [
    (["--algorithms", "fedavg,nope"], ("--algorithms", "unknown algorithm", "'nope'")),
    (["--seeds", "0"], ("--seeds", "0")),
    (["--clients", "0"], ("--clients", "0")),
    (["--clients", "1"], ("--clients", "≥ 2", "1")),
    (["--rounds", "0"], ("stage1.rounds", "0")),
    (["--max-patients", "-5"], ("data.max_patients", "-5")),
    (["--stage2-epochs", "0"], ("stage2.epochs",)),
    (["--workers", "0"], ("--workers",)),
    (["--out", "{tmp}/file"], ("--out", "is a file")),
    (["--out", "{tmp}/file/sub"], ("--out", "not a folder")),
    (["--settings", "iid,tiny"], ("--settings", "unknown setting", "'tiny'")),
    (["--features", "admission", "--dataset", "mimic3"], ("data.features", "mimic3")),
]


@pytest.mark.parametrize(("argv", "words"), EXPERIMENT_CASES)
def test_fedcare_experiment_checks_options_grid_and_out_first(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    no_work: None,
    argv: list[str],
    words: tuple[str, ...],
) -> None:
    (tmp_path / "file").write_text("")
    args = [a.format(tmp=tmp_path) for a in argv]
    out = ["--out", str(tmp_path / "out")] if "--out" not in argv else []
    assert main(["experiment", "comparison", "--quiet", *out, *args]) == EXIT_ERROR
    line = _one_error_line(capsys)
    for word in words:
        assert word in line, (word, line)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["file"]


@pytest.mark.parametrize(
    ("argv", "words"),
    [
        (["--counts", "3,0"], ("--counts", "≥ 2", "0")),
        (["--counts", "3,x"], ("--counts",)),
        (["--ratios", "0.1,nan"], ("--ratios", "nan")),
        (["--ratios", "0.1,1.5"], ("--ratios", "1.5")),
        # empty lists and items, repeats; a federation has two clients
        (["--counts", ""], ("--counts", "empty list")),
        (["--counts", "3,,5"], ("--counts", "empty item")),
        (["--counts", "3,5,3"], ("--counts", "3 given twice")),
        (["--counts", "1"], ("--counts", "≥ 2")),
        (["--ratios", "0.2,0.2"], ("--ratios", "0.2 given twice")),
        (["--ratios", " "], ("--ratios", "empty list")),
        (["--algorithms", ""], ("--algorithms", "empty list")),
        (["--algorithms", "fedavg,,fedprox"], ("--algorithms", "empty item")),
        (["--algorithms", "fedavg,fedavg"], ("--algorithms", "fedavg given twice")),
        (["--variants", "paper,paper"], ("--variants", "paper given twice")),
    ],
)
def test_experiment_lists_are_parsed_and_range_checked(
    capsys: pytest.CaptureFixture[str], no_work: None, argv: list[str], words: tuple[str, ...]
) -> None:
    # A list argparse cannot read ends in its usage error; one it reads but whose values the
    # grid's declaration refuses, in one line: both exit EXIT_ERROR having done nothing.
    try:
        code = main(["experiment", "clients", *argv])
    except SystemExit as exit_:
        code = exit_.code
    assert code == EXIT_ERROR
    err = capsys.readouterr().err
    assert "Traceback" not in err and all(w in err for w in words), err


def test_an_unknown_variant_in_the_ablation_grid(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], no_work: None
) -> None:
    argv = ["experiment", "ablation", "--variants", "paper,bogus", "--out", str(tmp_path / "o")]
    assert main(argv) == EXIT_ERROR
    line = _one_error_line(capsys)
    assert "bogus" in line and "--variants" in line
    assert not (tmp_path / "o").exists()
