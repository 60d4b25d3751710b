"""λ* and round time of flower-sim with and without ``--secagg`` (Stage 1 only).

Usage: ``python benchmarks/secagg_lambda.py [--diabetes DATA_DIR] [--rounds T] [--backend B]``.
Prints one JSON line per configuration: the largest |Δλ*| over rounds and objectives, the
largest |Δ‖d‖²|/‖d‖², and the median round wall time of both runs.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
from dataclasses import replace

from fedcare.flower.flower_options import FlowerConfig
from fedcare.flower.runners import make_stage1_runner
from fedcare_core.config import DataConfig, ExperimentConfig, Stage1Config
from fedcare_core.run.pipeline import prepare_federation


def _run(backend, fed, cfg, secagg):
    stage1 = replace(cfg.stage1, secagg=secagg)
    with tempfile.TemporaryDirectory() as tmp:
        runner = make_stage1_runner(backend, FlowerConfig(workdir_parent=tmp))
        result = runner(fed, cfg.model, stage1, cfg.seed, None)
    return result, runner.timing


def compare(name, backend, fed, cfg):
    """Run both and print the differences."""
    plain, t_plain = _run(backend, fed, cfg, False)
    secure, t_secure = _run(backend, fed, cfg, True)
    dl = max(
        abs(a.lambdas[s] - b.lambdas[s])
        for a, b in zip(plain.rounds, secure.rounds, strict=True)
        for s in a.lambdas
    )
    dd = max(
        abs(a.d_sq_norm - b.d_sq_norm) / a.d_sq_norm
        for a, b in zip(plain.rounds, secure.rounds, strict=True)
    )
    median = lambda t: statistics.median(t.round_s)  # noqa: E731
    print(
        json.dumps(
            {
                "federation": name,
                "backend": backend,
                "clients": len(fed.clients),
                "rounds": len(plain.rounds),
                "max_abs_lambda_diff": dl,
                "max_rel_dsq_diff": dd,
                "median_round_s_plain": round(median(t_plain), 3),
                "median_round_s_secagg": round(median(t_secure), 3),
                "round_s_secagg": [round(r, 2) for r in t_secure.round_s],
                "secagg_notes": secure.notes,
            }
        ),
        flush=True,
    )


def main() -> None:
    """Parse the options and compare."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--diabetes", metavar="DATA_DIR")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--backend", default="flower-sim")
    ap.add_argument("--clients", type=int, default=3)
    ap.add_argument("--max-patients", type=int, default=3000)
    args = ap.parse_args()
    if args.diabetes:
        from fedcare_core.data.loading import load_dataset

        cfg = ExperimentConfig(
            seed=0,
            data=DataConfig(
                dataset="diabetes130", clients=args.clients, max_patients=args.max_patients
            ),
            stage1=Stage1Config(rounds=args.rounds),
        ).validate()
        loaded = load_dataset(cfg.data, args.diabetes)
        fed = prepare_federation(loaded.cohort, loaded.partition, cfg, None)
        compare("diabetes130", args.backend, fed, cfg)
    else:
        from tests.fedcare_core.synthetic import PARTITION, make_cohort

        cfg = ExperimentConfig(
            seed=0,
            data=DataConfig(clients=args.clients),
            stage1=Stage1Config(rounds=args.rounds, batch_size=32),
        ).validate()
        fed = prepare_federation(make_cohort(300), PARTITION, cfg, None)
        compare("synthetic", args.backend, fed, cfg)


if __name__ == "__main__":
    main()
