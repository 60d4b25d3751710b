"""Stage 2 wall time: the flow's parallel step vs. clients one after another.

Builds the Diabetes 130 federation (K clients, seed 0), runs Stage 1 once in process, then
times Stage 2 of all K clients on the same backbone, each way through the pipeline's executor
(``personalise_one`` per client):

* ``sequential`` — in this process (what ``fedcare run`` does);
* ``the flow's step`` — ``PrefectExecutor`` with a started ``WorkerPool``: one Prefect task per
  client on the flow's threads, each computing in a plain ``spawn`` process pool;
* ``ProcessPoolTaskRunner`` — the tasks mapped over Prefect's process-pool task runner (the
  flow's step before), its workers started beforehand;
* ``plain process pool`` — ``concurrent.futures.ProcessPoolExecutor`` (spawn, as many workers as
  CPUs, started beforehand) without Prefect: the machine's own speed-up;
* ``thread pool`` — Prefect tasks on threads computing in the flow process, for comparison (the
  GIL; threads share torch's global dropout generator, so its results are not reproducible).

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

from fedcare_core.algorithms.fedcare.method import stage2_backbone
from fedcare_core.config import DataConfig, ExperimentConfig, Stage1Config
from fedcare_core.data.loading import load_dataset
from fedcare_core.nn.training import objective_kinds
from fedcare_core.run.executors import InProcess, ProcessPool
from fedcare_core.run.pipeline import configure_torch, personalise_one, prepare_federation
from fedcare_core.stage1.loop import run_stage1
from tasks.training import PrefectExecutor, WorkerPool, pool_size

#: What the timed flows work on (module state: flow parameters are sent to the API as JSON).
STATE: dict[str, Any] = {}
#: The started WorkerPool.
WORKERS: dict[str, WorkerPool] = {}


def _stage2(executor: Any) -> tuple[float, list[Any]]:
    federation, config = STATE["federation"], STATE["config"]
    shared = (STATE["backbone"], objective_kinds(federation))
    t = time.perf_counter()
    out = executor.map("stage2", personalise_one, federation.clients, "fedcare", shared, config)
    return time.perf_counter() - t, out


def _signature(results: list[Any]) -> list[Any]:
    return [(r.client_id, r.mu_trace, r.val_loss, r.steps) for r in results]


@flow(name="bench-stage2-start-pool", task_runner=ThreadPoolTaskRunner())  # type: ignore[arg-type]
def start_pool(workers: int) -> WorkerPool:
    pool = WorkerPool(workers)
    pool.ready()
    return pool


@flow(name="bench-stage2-flow-step", task_runner=ThreadPoolTaskRunner())  # type: ignore[arg-type]
def flow_step() -> tuple[float, list[Any]]:
    return _stage2(PrefectExecutor(WORKERS["pool"].pool))


@flow(name="bench-stage2-task-runner", task_runner=ProcessPoolTaskRunner())  # type: ignore[arg-type]
def task_runner_processes() -> tuple[float, list[Any]]:
    return _stage2(PrefectExecutor(None, map_over_runner=True))


@flow(name="bench-stage2-threads", task_runner=ThreadPoolTaskRunner(max_workers=os.cpu_count()))  # type: ignore[arg-type]
def threads() -> tuple[float, list[Any]]:
    return _stage2(PrefectExecutor(None, map_over_runner=True))


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

    rows: dict[str, list[float]] = {}
    reference: list[Any] | None = None
    same: dict[str, bool] = {}
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    workers = pool_size()
    executor = ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn"))
    list(executor.map(abs, range(workers)))  # start the workers
    with prefect_test_harness(server_startup_timeout=180):
        WORKERS["pool"] = start_pool(workers)
        task_runner_processes()  # start the task runner's workers (not timed)
        for _ in range(args.repeats):
            seconds, seq = _stage2(InProcess())
            rows.setdefault("sequential (in process)", []).append(seconds)
            reference = _signature(seq)
            for name, fn in (
                ("the flow's step (tasks on threads, WorkerPool)", flow_step),
                ("ProcessPoolTaskRunner (the step before)", task_runner_processes),
                (
                    "plain process pool (no Prefect)",
                    lambda: _stage2(ProcessPool(workers, executor)),
                ),
                ("Prefect tasks on threads, no processes", threads),
            ):
                seconds, results = fn()
                rows.setdefault(name, []).append(seconds)
                same[name] = same.get(name, True) and _signature(results) == reference
                print(f"{name}: {seconds:.1f} s", flush=True)
        WORKERS["pool"].close()
    executor.shutdown()
    base = min(rows["sequential (in process)"])
    load = os.getloadavg()
    lines = [
        f"Stage 2 of {args.clients} clients (Diabetes 130, seed 0, Stage 1 {args.rounds} rounds), "
        f"{os.cpu_count()} CPUs, {workers} pool workers, best of {args.repeats}; "
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
    # Run as the importable module ``bench_stage2_parallel``, not ``__main__``: Prefect's process
    # pool cloudpickles the flow-run context, and a flow of ``__main__`` would travel by value
    # with every global it reaches (the whole federation in STATE) to each task, as a flow of the
    # project's own modules (``flows.fedcare_flow``) never does.
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import bench_stage2_parallel

    bench_stage2_parallel.main()
