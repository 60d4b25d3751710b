"""Stage 1 wall time per round for each backend: local, flower-sim, flower-deployment.

Start-up (processes, Ray, handshake) is reported apart from the rounds. Round times of the
Flower backends are the ServerApp's own (configure → replies → server step); local rounds are
the gaps between the in-process runner's progress callbacks.

    python benchmarks/bench_backends.py --data-dir ../shared/datasets --clients 10 --rounds 5
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("FLWR_TELEMETRY_ENABLED", "0")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch

from fedcare.flower.flower_options import FlowerConfig
from fedcare.flower.runners import make_stage1_runner
from fedcare_core.config import DataConfig, ExperimentConfig, Stage1Config
from fedcare_core.config.backends import backend_names
from fedcare_core.data.loading import load_dataset
from fedcare_core.run.pipeline import prepare_federation
from fedcare_core.stage1.loop import run_stage1

#: flower-deployment with Flower's stock SuperNodes (``fedcare run --stock-supernodes``).
STOCK = "flower-deployment-stock"


def bench(backend: str, fed: Any, cfg: ExperimentConfig) -> dict[str, Any]:
    marks: list[float] = []
    t0 = time.time()
    if backend == "local":
        run_stage1(
            fed, cfg.model, cfg.stage1, cfg.seed, progress=lambda *a: marks.append(time.time())
        )
        total = time.time() - t0
        edges = [t0, *marks]
        rounds = [b - a for a, b in itertools.pairwise(edges)]
        startup = 0.0
    else:
        flower = FlowerConfig()
        if backend == STOCK:  # Flower's own SuperNode loop and per-message interpreters
            flower = FlowerConfig(client_exec="subprocess", node_poll_s=None)
        runner = make_stage1_runner(backend.removesuffix("-stock"), flower)
        assert runner is not None
        runner(fed, cfg.model, cfg.stage1, cfg.seed, None)
        total = time.time() - t0
        timing = runner.timing  # type: ignore[attr-defined]
        rounds, startup = list(timing.round_s), timing.startup_s
    return {
        "backend": backend,
        "startup_s": startup,
        "round_s": rounds,
        "median_round_s": statistics.median(rounds),
        "median_round_after_first_s": statistics.median(rounds[1:] or rounds),
        "total_s": total,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--data-dir", default=os.environ.get("FEDCARE_DATA_DIR"))
    ap.add_argument("--clients", type=int, default=10)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--max-patients", type=int)
    ap.add_argument(
        "--backends",
        default=",".join(backend_names()),
        help=f"comma-separated, from {', '.join([*backend_names(), STOCK])}",
    )
    ap.add_argument("--out", type=Path, help="write the measurements as JSON here")
    args = ap.parse_args()
    cfg = ExperimentConfig(
        data=DataConfig(clients=args.clients, max_patients=args.max_patients),
        stage1=Stage1Config(rounds=args.rounds),
    ).validate()
    torch.use_deterministic_algorithms(True)  # as run_experiment does
    loaded = load_dataset(cfg.data, args.data_dir)
    fed = prepare_federation(loaded.cohort, loaded.partition, cfg, loaded.source)
    results = [bench(b, fed, cfg) for b in args.backends.split(",")]
    local = next((r for r in results if r["backend"] == "local"), None)
    threads = torch.get_num_threads()
    print(f"K={args.clients} T={args.rounds} cores={os.cpu_count()} torch threads={threads}")
    print(
        "| backend | start-up (s) | median round (s) | median round after the first (s) "
        "| × local | total (s) |"
    )
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    for r in results:
        ratio = (
            r["median_round_after_first_s"] / local["median_round_after_first_s"]
            if local
            else float("nan")
        )
        print(
            f"| {r['backend']} | {r['startup_s']:.1f} | {r['median_round_s']:.2f} | "
            f"{r['median_round_after_first_s']:.2f} | {ratio:.1f} | {r['total_s']:.1f} |"
        )
    if args.out:
        args.out.write_text(
            json.dumps({"args": vars(args) | {"out": str(args.out)}, "results": results}, indent=1)
        )


if __name__ == "__main__":
    main()
