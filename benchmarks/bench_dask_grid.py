"""An experiment grid on Dask: wall time on a local cluster of one worker against two.

Runs one fixed grid (the comparison: every method, ``--seeds`` seeds, K = ``--clients``,
``--rounds`` rounds, a ``--max-patients`` subsample of Diabetes 130, ``--stage2-epochs`` epochs
of Stage 2 and of the bounds) through ``fedcare.grid.run_grid`` on a local cluster of 1 and of
2 worker processes (one thread each), ``--repeats`` times each, alternating, each run into a
fresh folder (nothing resumed). Per run it times the cluster's start (workers up and
registered) and the grid (first submit to last document, each worker's one data load
included), and sums the jobs' CPU seconds. It reports medians, the speed-up of two workers over
one, and whether every run's documents equal the first run's (timings aside).

    python benchmarks/bench_dask_grid.py --data-dir ../shared/datasets
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
# The local cluster's workers are spawned processes: they see this tree through the environment.
os.environ["PYTHONPATH"] = os.pathsep.join(
    p for p in (str(Path(__file__).resolve().parents[1]), os.environ.get("PYTHONPATH")) if p
)

from fedcare.app.grid_jobs import run_job
from fedcare.experiments.cells import experiment_cells, grid_base
from fedcare.experiments.engine import DataSpec, plan_jobs
from fedcare.grid import grid_client, run_grid


def _documents(out: Path) -> dict[str, Any]:
    docs = {}
    for path in sorted(out.glob("*.json")):
        docs[path.stem] = {k: v for k, v in json.loads(path.read_text()).items() if k != "timing"}
    return docs


def one_run(workers: int, cells: Any, base: Any, spec: DataSpec) -> dict[str, Any]:
    """One grid on a fresh local cluster of ``workers`` processes, into a fresh folder."""
    with tempfile.TemporaryDirectory(prefix="bench-dask-grid-") as tmp:
        t0 = time.perf_counter()
        with grid_client(workers=workers) as client:
            client.wait_for_workers(workers)
            t1 = time.perf_counter()
            outcomes = run_grid(cells, base, spec, tmp, client, run_job)
            t2 = time.perf_counter()
        return {
            "start_s": t1 - t0,
            "grid_s": t2 - t1,
            "cpu_s": sum(o.cpu_seconds for o in outcomes),
            "docs": _documents(Path(tmp)),
        }


def _cpu_model() -> str:
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return platform.processor() or "unknown CPU"


def _report(args: argparse.Namespace, runs: dict[int, list[dict[str, Any]]], info: dict) -> str:
    def med(w: int, key: str) -> float:
        return statistics.median(r[key] for r in runs[w])

    reference = runs[1][0]["docs"]
    same = all(r["docs"] == reference for w in runs for r in runs[w])
    lines = [
        f"Comparison grid on Diabetes 130: every method × {args.seeds} seeds "
        f"({info['cells']} runs, {info['jobs']} jobs), K = {args.clients}, "
        f"T = {args.rounds} rounds, {args.max_patients} patients, {args.stage2_epochs} epochs "
        f"of Stage 2 and bounds; `fedcare.grid.run_grid` on a local Dask cluster "
        f"(one thread per worker), median of {args.repeats} runs each, alternating.",
        "",
        f"Machine: {info['nproc']} CPUs ({info['cpu']}); load average (1/5/15 min) before "
        f"{info['load_before']}, after {info['load_after']}.",
        "",
        "| workers | cluster start (s) | grid (s) | total (s) | CPU of the jobs (s) "
        "| CPU ÷ (workers × grid) | grid runs (s) |",
        "| ---: | ---: | ---: | ---: | ---: | ---: | --- |",
    ]
    for w in sorted(runs):
        each = ", ".join(f"{r['grid_s']:.1f}" for r in runs[w])
        total = statistics.median(r["start_s"] + r["grid_s"] for r in runs[w])
        share = med(w, "cpu_s") / (w * med(w, "grid_s"))
        lines.append(
            f"| {w} | {med(w, 'start_s'):.1f} | {med(w, 'grid_s'):.1f} | {total:.1f} "
            f"| {med(w, 'cpu_s'):.0f} | {share:.0%} | {each} |"
        )
    grid_up = med(1, "grid_s") / med(2, "grid_s")
    total_up = statistics.median(r["start_s"] + r["grid_s"] for r in runs[1]) / statistics.median(
        r["start_s"] + r["grid_s"] for r in runs[2]
    )
    lines += [
        "",
        f"Speed-up from one worker to two: **{grid_up:.2f}×** on the grid, {total_up:.2f}× "
        "with the cluster's start.",
        f"Every run's documents equal the first's (timings aside): {'yes' if same else 'NO'}.",
        "",
        "CPU ÷ (workers × grid) is the share of its cores the grid got: below 100 % the workers "
        "waited for a core (other processes on the machine) or for the last job.",
    ]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", default=os.environ.get("FEDCARE_DATA_DIR"))
    parser.add_argument("--seeds", type=int, default=2)
    parser.add_argument("--clients", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--max-patients", type=int, default=3000)
    parser.add_argument("--stage2-epochs", type=int, default=5)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--out", type=Path, default=Path("docs/benchmarks/dask_grid.md"))
    args = parser.parse_args()

    base = grid_base(
        "diabetes130",
        rounds=args.rounds,
        max_patients=args.max_patients,
        stage2_epochs=args.stage2_epochs,
    )
    cells = experiment_cells("comparison", args.seeds, clients=args.clients)
    spec = DataSpec(args.data_dir)
    info: dict[str, Any] = {
        "cells": len(cells),
        "jobs": len(plan_jobs(cells)),
        "nproc": os.cpu_count(),
        "cpu": _cpu_model(),
        "load_before": " / ".join(f"{x:.1f}" for x in os.getloadavg()),
    }
    runs: dict[int, list[dict[str, Any]]] = {1: [], 2: []}
    for i in range(args.repeats):
        for workers in (1, 2):
            run = one_run(workers, cells, base, spec)
            runs[workers].append(run)
            print(
                f"repeat {i + 1}, {workers} worker(s): start {run['start_s']:.1f} s, "
                f"grid {run['grid_s']:.1f} s, CPU {run['cpu_s']:.0f} s",
                flush=True,
            )
    info["load_after"] = " / ".join(f"{x:.1f}" for x in os.getloadavg())
    report = _report(args, runs, info)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(report)
    print(report)


if __name__ == "__main__":
    main()
