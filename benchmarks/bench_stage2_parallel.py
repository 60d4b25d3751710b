"""Stage 2 wall time: the flow's parallel step (process pool) vs. clients one after another.

Builds the Diabetes 130 federation (K clients, seed 0), runs Stage 1 once in process, then
times Stage 2 of all K clients four ways on the same backbone:

* ``sequential`` — ``run_stage2_client`` for each client in this process (what ``fedcare run``
  does);
* ``process pool, warm`` — the flow's step: ``PrefectExecutor.map`` over Prefect's
  ``ProcessPoolTaskRunner`` whose workers were started beforehand (the flow starts them during
  Stage 1);
* ``process pool, cold`` — the same with the workers' start-up inside the timed step;
* ``plain process pool`` — ``concurrent.futures.ProcessPoolExecutor`` (spawn, as many workers as
  CPUs, started beforehand) without Prefect: separates Prefect's overhead from the machine's;
* ``thread pool`` — ``ThreadPoolTaskRunner`` with as many threads as CPUs, for comparison (the
  GIL; and threads share torch's global dropout generator, so its results are not reproducible).

Each parallel result is compared with the sequential one (μ* traces and validation losses).
Prefect runs against a temporary server (``prefect_test_harness``).

    python benchmarks/bench_stage2_parallel.py --data-dir ../shared/datasets --clients 10
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
os.environ.setdefault("DO_NOT_TRACK", "1")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from prefect import flow
from prefect.task_runners import ProcessPoolTaskRunner, ThreadPoolTaskRunner

from fedcare_core.algorithms.fedcare import run_stage2_client, stage2_backbone
from fedcare_core.config import DataConfig, ExperimentConfig, Stage1Config
from fedcare_core.datasets import load_dataset
from fedcare_core.runner import configure_torch, personalise_one, prepare_federation
from fedcare_core.stage1 import run_stage1
from fedcare_core.training import objective_kinds
from flows.fedcare_flow import stage2_workers
from tasks.training import PrefectExecutor, warm_up_task

#: What the timed flows work on (module state: flow parameters are sent to the API as JSON).
STATE: dict[str, Any] = {}


def _fine_tune(args: tuple[Any, Any, Any, ExperimentConfig]) -> Any:
    backbone, client, kinds, config = args
    configure_torch(config)
    return run_stage2_client(backbone, client, kinds, config)


def plain_pool(executor: Any, kinds: dict[str, str]) -> tuple[float, list[Any]]:
    """Stage 2 over a started ``ProcessPoolExecutor`` (no Prefect)."""
    jobs = [(STATE["backbone"], c, kinds, STATE["config"]) for c in STATE["federation"].clients]
    t = time.perf_counter()
    out = list(executor.map(_fine_tune, jobs))
    return time.perf_counter() - t, out


def _signature(results: list[Any]) -> list[Any]:
    return [(r.client_id, r.mu_trace, r.val_loss, r.steps) for r in results]


def _timed_stage2(warm: bool) -> tuple[float, list[Any]]:
    if warm:
        for f in [warm_up_task.submit(i) for i in range(stage2_workers())]:
            f.result()
    shared = (STATE["backbone"], objective_kinds(STATE["federation"]))
    t = time.perf_counter()
    out = PrefectExecutor(parallel=True).map(
        "stage2", personalise_one, STATE["federation"].clients, "fedcare", shared, STATE["config"]
    )
    return time.perf_counter() - t, out


@flow(name="bench-stage2-processes", task_runner=ProcessPoolTaskRunner())  # type: ignore[arg-type]
def processes(warm: bool) -> tuple[float, list[Any]]:
    return _timed_stage2(warm)


@flow(name="bench-stage2-threads", task_runner=ThreadPoolTaskRunner(max_workers=os.cpu_count()))  # type: ignore[arg-type]
def threads() -> tuple[float, list[Any]]:
    return _timed_stage2(False)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", default=os.environ.get("FEDCARE_DATA_DIR"))
    parser.add_argument("--clients", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=100)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--out", type=Path, default=Path("docs/benchmarks/stage2_parallel.md"))
    args = parser.parse_args()

    from prefect.testing.utilities import prefect_test_harness

    config = ExperimentConfig(
        data=DataConfig(clients=args.clients), stage1=Stage1Config(rounds=args.rounds)
    ).validate()
    configure_torch(config)
    loaded = load_dataset(config.data, args.data_dir)
    federation = prepare_federation(loaded.cohort, loaded.partition, config, loaded.source)
    t = time.perf_counter()
    stage1 = run_stage1(federation, config.model, config.stage1, config.seed)
    print(f"stage 1: {time.perf_counter() - t:.1f} s", flush=True)
    STATE.update(
        backbone=stage2_backbone(stage1, federation, config), federation=federation, config=config
    )
    kinds = objective_kinds(federation)

    rows: dict[str, list[float]] = {}
    reference: list[Any] | None = None
    same: dict[str, bool] = {}
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    executor = ProcessPoolExecutor(
        stage2_workers(), mp_context=multiprocessing.get_context("spawn")
    )
    list(executor.map(abs, range(stage2_workers())))  # start the workers
    with prefect_test_harness(server_startup_timeout=180):
        for _ in range(args.repeats):
            t = time.perf_counter()
            seq = [
                run_stage2_client(STATE["backbone"], c, kinds, config) for c in federation.clients
            ]
            rows.setdefault("sequential (in process)", []).append(time.perf_counter() - t)
            reference = _signature(seq)
            for name, fn in (
                ("process pool, warm (the flow)", lambda: processes(True)),
                ("process pool, cold", lambda: processes(False)),
                ("plain process pool (no Prefect)", lambda: plain_pool(executor, kinds)),
                ("thread pool", threads),
            ):
                seconds, results = fn()
                rows.setdefault(name, []).append(seconds)
                same[name] = same.get(name, True) and _signature(results) == reference
                print(f"{name}: {seconds:.1f} s", flush=True)
    executor.shutdown()
    base = min(rows["sequential (in process)"])
    load = os.getloadavg()
    lines = [
        f"Stage 2 of {args.clients} clients (Diabetes 130, seed 0, Stage 1 {args.rounds} rounds), "
        f"{os.cpu_count()} CPUs, {stage2_workers()} pool workers, best of {args.repeats}; "
        f"load average at the end {load[0]:.1f} / {load[1]:.1f} / {load[2]:.1f}.",
        "",
        "| mode | wall time (s) | speed-up vs sequential | results equal sequential |",
        "| --- | ---: | ---: | :---: |",
    ]
    for name, values in rows.items():
        best = min(values)
        equal = "—" if name.startswith("sequential") else ("yes" if same[name] else "no")
        lines.append(f"| {name} | {best:.1f} | {base / best:.2f}× | {equal} |")
    text = "\n".join(lines) + "\n"
    print(text)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text)


if __name__ == "__main__":
    main()
