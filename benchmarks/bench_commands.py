"""Time the ``fedcare`` commands a user waits on: help, version, predict and site prepare.

Each command runs as a whole process (start-up and imports included), ``--runs`` times after
``--warmup`` uncounted runs; the table gives the median wall time (min–max) and the median CPU
time (user + system of the process and its children). On real Diabetes 130 data:

* ``fedcare --version``, ``fedcare --help`` and ``fedcare run --help``;
* ``fedcare predict`` of 1,000 raw rows (the published file's first) with a client model
  registered in a local SQLite MLflow store by a small ``fedcare run`` (3 clients, 2 rounds),
  warm: the model already in the store, the files in the OS cache;
* ``fedcare site prepare`` of a 30,000-row hospital file: whole patients of the first of
  ``fedcare data split-sites --sites 3``'s files, against ``fedcare federation init``'s schema.

``--baseline DIR`` also runs every command from another checkout of the project (its packages
first on ``PYTHONPATH``; e.g. ``git archive <commit> | tar -x -C DIR``), alternating with this
one, and checks that both write byte-identical scores and site folders (the node key pair,
the card's public key and the preparation time aside).

Run from the project's root::

    FEDCARE_DATA_DIR=../shared/datasets python benchmarks/bench_commands.py \\
        [--runs 5] [--warmup 1] [--work DIR] [--baseline DIR] [--out results.md]
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import os
import platform
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import zipfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

#: Rows scored by ``fedcare predict``.
PREDICT_ROWS = 1_000
#: Rows of the hospital file ``fedcare site prepare`` reads (whole patients, at most this many).
SITE_ROWS = 30_000


@dataclass(frozen=True)
class Timing:
    """One command's runs: wall and CPU seconds of each."""

    wall: list[float]
    cpu: list[float]

    def cell(self) -> str:
        """``median (min–max)`` wall seconds and the median CPU seconds, for the table."""
        lo, hi = min(self.wall), max(self.wall)
        return (
            f"{statistics.median(self.wall):.2f} ({lo:.2f}–{hi:.2f}) | "
            f"{statistics.median(self.cpu):.2f}"
        )


def fedcare(source: Path | None) -> tuple[list[str], dict[str, str]]:
    """The ``fedcare`` command and its environment (``source``: that checkout's packages first)."""
    script = Path(sys.executable).with_name("fedcare")
    command = [str(script)] if script.is_file() else [sys.executable, "-m", "fedcare.cli"]
    env = {k: v for k, v in os.environ.items() if k != "MLFLOW_TRACKING_URI"}
    if source is not None:
        env["PYTHONPATH"] = os.pathsep.join([str(source.resolve()), env.get("PYTHONPATH", "")])
    return command, env


def run_once(argv: Sequence[str], env: dict[str, str]) -> tuple[float, float]:
    """Wall and CPU seconds of one run of ``argv``; a failure stops the benchmark."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(list(argv), env=env, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        sys.exit(f"{' '.join(argv)} failed ({done.returncode}):\n{done.stderr[-2000:]}")
    cpu = (after.ru_utime - usage.ru_utime) + (after.ru_stime - usage.ru_stime)
    return wall, cpu


def diabetes_csv(data_dir: Path) -> bytes:
    """The published ``diabetic_data.csv``, from its folder, file or archive."""
    from fedcare_core.data.diabetes130 import find_csv_member, find_diabetes130

    source = find_diabetes130(data_dir)
    if source.suffix.lower() != ".zip":
        return source.read_bytes()
    member = find_csv_member(source)
    if member is None:
        sys.exit(f"{source}: no diabetic_data.csv inside")
    with zipfile.ZipFile(source) as zf:
        return zf.read(member)


def whole_patients(path: Path, out: Path, max_rows: int) -> int:
    """Copy to ``out`` the header and the rows of ``path``'s first patients, ≤ ``max_rows``."""
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    header = next(csv.reader([lines[0]]))
    column = header.index("patient_nbr")
    patients = [row[column] for row in csv.reader(lines[1:])]
    counts: dict[str, int] = {}
    for p in patients:
        counts[p] = counts.get(p, 0) + 1
    kept: set[str] = set()
    total = 0
    for p in dict.fromkeys(patients):
        if total + counts[p] > max_rows:
            break
        kept.add(p)
        total += counts[p]
    out.write_text(
        lines[0] + "".join(line for line, p in zip(lines[1:], patients, strict=True) if p in kept),
        encoding="utf-8",
    )
    return total


def prepare_inputs(
    work: Path, data_dir: Path, command: list[str], env: dict[str, str]
) -> dict[str, str]:
    """The rows to score, the hospital file, the schema and a registered client model."""

    def call(*args: str) -> str:
        done = subprocess.run([*command, *args], env=env, capture_output=True, text=True)
        if done.returncode != 0:
            sys.exit(f"fedcare {' '.join(args)} failed:\n{done.stderr[-2000:]}")
        return done.stdout

    data = diabetes_csv(data_dir)
    rows = work / "rows.csv"
    rows.write_bytes(b"".join(io.BytesIO(data).readlines()[: PREDICT_ROWS + 1]))
    (work / "diabetic_data.csv").write_bytes(data)
    split = work / "split"
    if not split.is_dir():
        split_args = "data split-sites --dataset diabetes130 --sites 3 --seed 0".split()
        call(*split_args, "--data", str(work / "diabetic_data.csv"), "--out", str(split))
    hospital = work / "hospital.csv"
    kept = whole_patients(split / "site-0.csv", hospital, SITE_ROWS)
    schema = work / "federation.json"
    if not schema.is_file():
        call("federation", "init", "--dataset", "diabetes130", "--out", str(schema))
    store = f"sqlite:///{(work / 'mlflow.db').resolve()}"
    registered = work / "registered.txt"
    if not registered.is_file():
        small = "--dataset diabetes130 --clients 3 --rounds 2 --max-patients 3000 --seed 0"
        quick = "--stage2-epochs 2 --quiet --no-verify".split()
        call("run", *small.split(), *quick, "--data-dir", str(work / "diabetic_data.csv"),
                   "--tracking-uri", store, "--out", str(work / "run.json"))  # fmt: skip
        registered.write_text(client_model(store))
    model = f"models:/{registered.read_text().strip()}/1"
    return {
        "rows": str(rows),
        "hospital": str(hospital),
        "hospital_rows": str(kept),
        "schema": str(schema),
        "store": store,
        "model": model,
    }


def client_model(store: str) -> str:
    """The registered model of client 0 in ``store`` (its name carries its objectives)."""
    from fedcare.tracking import store as stores

    stores.configure(store)
    names = [m.name for m in stores.client().search_registered_models()]
    return next(n for n in names if n.endswith("-client0"))


def site_contents(folder: Path) -> dict[str, bytes]:
    """A site folder's files, less what differs by design between two preparations."""
    out: dict[str, bytes] = {}
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        name = str(path.relative_to(folder))
        if name.startswith("keys/"):
            continue
        data = path.read_bytes()
        if name in ("site.json", "site-card.json"):
            doc = json.loads(data)
            doc.pop("prepared_at", None)
            doc.pop("public_key", None)
            data = json.dumps(doc, sort_keys=True).encode()
        out[name] = data
    return out


def main() -> int:
    """Measure, print (and optionally write) the Markdown table."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--warmup", type=int, default=1)
    parser.add_argument("--data-dir", type=Path, default=os.environ.get("FEDCARE_DATA_DIR"))
    parser.add_argument("--work", type=Path, help="keep inputs here (default: a temporary folder)")
    parser.add_argument("--baseline", type=Path, help="another checkout to compare with")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    if args.data_dir is None:
        sys.exit("give --data-dir or set FEDCARE_DATA_DIR (the folder holding diabetes130/)")
    work = args.work or Path(tempfile.mkdtemp(prefix="fedcare-bench-commands-"))
    work.mkdir(parents=True, exist_ok=True)
    variants = {"this checkout": fedcare(None)}
    if args.baseline is not None:
        variants = {"baseline": fedcare(args.baseline), **variants}
    inputs = prepare_inputs(work, args.data_dir, *variants["this checkout"])
    results = run_all(variants, inputs, work, args.runs, args.warmup)
    lines = table(results, variants, inputs, args.runs)
    if args.baseline is not None:
        lines += ["", same_outputs(variants, work)]
    text = "\n".join(lines)
    print(text)
    if args.out is not None:
        args.out.write_text(text + "\n", encoding="utf-8")
    if args.work is None:
        shutil.rmtree(work, ignore_errors=True)
    return 0


def run_all(
    variants: dict[str, tuple[list[str], dict[str, str]]],
    inputs: dict[str, str],
    work: Path,
    runs: int,
    warmup: int,
) -> dict[str, dict[str, Timing]]:
    """Every command's timings, by command label."""
    slug = {name: name.replace(" ", "-") for name in variants}

    def fresh_site(name: str) -> None:
        shutil.rmtree(work / f"site-{slug[name]}", ignore_errors=True)

    predict = [
        "predict",
        "--model",
        inputs["model"],
        "--data",
        inputs["rows"],
        "--tracking-uri",
        inputs["store"],
    ]
    site = [
        "site",
        "prepare",
        "--schema",
        inputs["schema"],
        "--data",
        inputs["hospital"],
        "--objectives",
        "readmission",
        "--name",
        "hospital",
        "--seed",
        "0",
    ]
    out: dict[str, dict[str, Timing]] = {}
    for label, argv in [
        ("fedcare --version", ["--version"]),
        ("fedcare --help", ["--help"]),
        ("fedcare run --help", ["run", "--help"]),
    ]:
        out[label] = measure(variants, same_for_all(argv), runs, warmup)
    out[f"fedcare predict ({PREDICT_ROWS:,} rows, warm)"] = measure(
        variants,
        lambda name: [*predict, "--out", str(work / f"scores-{slug[name]}.csv")],
        runs,
        warmup,
    )
    out[f"fedcare site prepare ({int(inputs['hospital_rows']):,} rows)"] = measure(
        variants,
        lambda name: [*site, "--out", str(work / f"site-{slug[name]}")],
        runs,
        warmup,
        fresh_site,
    )
    return out


def same_for_all(argv: list[str]) -> Callable[[str], list[str]]:
    """``argv`` whatever the variant."""
    return lambda _: argv


def measure(
    variants: dict[str, tuple[list[str], dict[str, str]]],
    argv_of: Callable[[str], list[str]],
    runs: int,
    warmup: int,
    before: Callable[[str], None] = lambda _: None,
) -> dict[str, Timing]:
    """Time ``fedcare argv_of(variant)`` under each variant, the variants taking turns."""
    times = {name: Timing([], []) for name in variants}
    for i in range(warmup + runs):
        for name, (command, env) in variants.items():
            before(name)
            wall, cpu = run_once([*command, *argv_of(name)], env)
            if i >= warmup:
                times[name].wall.append(wall)
                times[name].cpu.append(cpu)
    return times


def table(
    results: dict[str, dict[str, Timing]],
    variants: dict[str, tuple[list[str], dict[str, str]]],
    inputs: dict[str, str],
    runs: int,
) -> list[str]:
    """The Markdown table: one row per command, wall (median, min–max) and CPU per variant."""
    cpus = os.cpu_count()
    head = "| command | " + " | ".join(f"{v}: wall s (min–max) | CPU s" for v in variants) + " |"
    lines = [
        f"`benchmarks/bench_commands.py`, {runs} runs each (medians), {platform.python_version()}, "
        f"{cpus} CPU cores, {time.strftime('%Y-%m-%d')}; model {inputs['model']} in a local "
        "SQLite store.",
        "",
        head,
        "| --- |" + " ---: | ---: |" * len(variants),
    ]
    for label, timings in results.items():
        lines.append(f"| {label} | " + " | ".join(timings[v].cell() for v in variants) + " |")
    return lines


def same_outputs(variants: dict[str, tuple[list[str], dict[str, str]]], work: Path) -> str:
    """Whether every variant wrote the same scores and site folder as the first."""
    slugs = [name.replace(" ", "-") for name in variants]
    scores = {(work / f"scores-{s}.csv").read_bytes() for s in slugs}
    sites = [site_contents(work / f"site-{s}") for s in slugs]
    same_sites = all(site == sites[0] for site in sites)
    verdict = "identical" if len(scores) == 1 and same_sites else "DIFFERENT"
    return (
        f"Outputs of {' and '.join(variants)}: scores and site folders {verdict} "
        "(byte for byte; the node key pair, the card's public key and the preparation time aside)."
    )


if __name__ == "__main__":
    sys.exit(main())
