"""Time Stage 1's rounds with and without client-level DP, in process, on Diabetes 130.

Runs :func:`fedcare_core.stage1.loop.run_stage1` at K clients for T rounds, alternately without DP
and with ``dp_epsilon`` (the joint clip at every client, the server's noise and the accountant
after every round), and prints a Markdown table of the median seconds per round and the
relative overhead. Needs the Diabetes 130 file (``--data-dir`` or ``$FEDCARE_DATA_DIR``).

    python benchmarks/bench_dp_round.py --data-dir ../shared/datasets/diabetes130 [--repeats 3]
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import statistics
import time

from fedcare_core.config import DataConfig, ExperimentConfig, Stage1Config
from fedcare_core.data.loading import load_dataset
from fedcare_core.run.pipeline import configure_torch, prepare_federation
from fedcare_core.stage1.loop import run_stage1


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data-dir", default=os.environ.get("FEDCARE_DATA_DIR"))
    parser.add_argument("--clients", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--epsilon", type=float, default=3.0)
    args = parser.parse_args()
    plain = ExperimentConfig(
        data=DataConfig(clients=args.clients), stage1=Stage1Config(rounds=args.rounds)
    )
    configure_torch(plain)
    data = load_dataset(plain.data, args.data_dir, verify_checksum=False)
    federation = prepare_federation(data.cohort, data.partition, plain, None)
    private = dataclasses.replace(plain.stage1, dp_epsilon=args.epsilon)
    times: dict[str, list[float]] = {"no DP": [], f"DP, ε = {args.epsilon:g}": []}
    for _ in range(args.repeats):
        for samples, stage1 in zip(times.values(), (plain.stage1, private), strict=True):
            t0 = time.perf_counter()
            run_stage1(federation, plain.model, stage1, seed=0)
            samples.append((time.perf_counter() - t0) / args.rounds)
    base = statistics.median(next(iter(times.values())))
    print(f"K = {args.clients}, T = {args.rounds}, {args.repeats} repeats, median s/round\n")
    print("| rounds | s/round | overhead |\n| --- | ---: | ---: |")
    for name, samples in times.items():
        med = statistics.median(samples)
        print(f"| {name} | {med:.3f} | {100 * (med / base - 1):+.1f} % |")


if __name__ == "__main__":
    main()
