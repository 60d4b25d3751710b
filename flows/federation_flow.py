"""The ``fedcare`` flow with ``backend="federation"``: Stage 1 over real sites, in MLflow.

A scheduled (or manual) re-training over the sites registered with a running coordinator
(``fedcare federation start`` / ``register``), as ``fedcare federation run`` does it: the flow
never loads, checks or holds patient data (the coordinator has none), so there is no data check
and no Stage 2 here: each site personalises on its own data once ``w*`` reaches it.

Before anything is logged the flow checks that the coordinator runs and that ``min_sites``
sites are registered for the schema; then, per seed, one ``stage1-federation-seed<S>`` task
runs Stage 1 (``rounds`` rounds), its document is written to ``out_dir`` (when given) and
logged as a run nested under the flow run's MLflow parent run (``lambda/<objective>`` per
round, the document, the λ* plot and ``w*``), the parent named
``flow · <algorithm>-federation-T<rounds> · seeds …``. An expected failure (the coordinator stopped,
too few sites registered or online, the run failing) ends the flow run ``Failed`` with its
one-line message.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any, cast

from fedcare.tracking.log_run import TAG_FLOW_RUN_ID
from fedcare_core.sites.schema import read_schema
from flows.flow_parameters import FlowParameters
from flows.parent_run import ParentRun
from tasks.federation import (
    FederationStage1,
    LiveTarget,
    log_stage1_task,
    stage1_federation_task,
)


def run_name(seed: int, flow_run_id: str | None) -> str:
    """A new Stage 1 run's name: ``fedcare-<UTC time>-<flow run>-seed<S>`` (unique per run)."""
    stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime())
    return f"fedcare-{stamp}-{(flow_run_id or 'local')[:8]}-seed{seed}"


def stage1_summary(document: dict[str, Any], run_id: str) -> dict[str, Any]:
    """One seed's entry of the flow's result.

    Parameters
    ----------
    document
        The seed's Stage 1 document.
    run_id
        Its MLflow run.

    Returns
    -------
    dict
        Seed, MLflow run id, run name, sites by name, rounds run, λ* of the last round
        (``{}`` when no round ran), ``w_star_sha256`` and the notes.
    """
    last = document["rounds"][-1] if document["rounds"] else None
    return {
        "seed": document["seed"],
        "mlflow_run_id": run_id,
        "run_name": document["run_name"],
        "sites": [s["name"] for s in document["sites"]],
        "rounds_run": document["rounds_run"],
        "lambda": dict(last["lambda"]) if last else {},
        "w_star_sha256": document["w_star_sha256"],
        "notes": list(document["notes"]),
    }


def document_path(out_dir: Path, document: dict[str, Any]) -> Path:
    """Where ``out_dir`` keeps a seed's Stage 1 document."""
    return out_dir / f"{document['dataset']}-federation-stage1-seed{document['seed']}.json"


def run_federation_pipeline(
    params: FlowParameters, *, tracking_uri: str | None, out_dir: str | None
) -> dict[str, Any]:
    """Stage 1 over the coordinator's sites for each seed, each logged under the parent run.

    Parameters
    ----------
    params
        The flow's parameters, checked (:meth:`FlowParameters.validate`), backend
        ``"federation"``.
    tracking_uri
        The MLflow store (None: the default one).
    out_dir
        Folder for each seed's Stage 1 document (None: none written).

    Returns
    -------
    dict
        ``tracking_uri``, ``parent_run_id`` and ``runs``: per seed :func:`stage1_summary`.

    Raises
    ------
    CoordinatorError
        Before the parent run exists: the coordinator is not running or fewer than
        ``min_sites`` sites are registered for the schema; later, from the seed's task.
    """
    from fedcare.sites.coordinator import Coordinator
    from fedcare.sites.federation_run import run_sites
    from fedcare_core.files.atomic import write_json_atomic

    state_dir, schema_path = str(params.federation_state_dir), str(params.federation_schema)
    min_sites = int(params.min_sites or 1)
    schema = read_schema(schema_path)
    coordinator = Coordinator(state_dir)
    coordinator.require_running()
    run_sites(coordinator, schema, min_sites, where="min_sites")
    rounds = params.rounds if params.rounds is not None else schema.config.stage1.rounds
    setting = f"{schema.config.algorithm}-federation-T{rounds}"
    run = ParentRun.start(tracking_uri, params, [setting])
    runs: list[dict[str, Any]] = []
    try:
        for seed in params.seeds:
            run.step = f"stage 1 seed {seed}"
            state = stage1_federation_task(
                state_dir, schema_path, min_sites=min_sites, rounds=rounds, seed=seed,
                run_name=run_name(seed, run.flow_run_id), secagg=params.secagg,
                live=LiveTarget(run.uri, run.parent, {TAG_FLOW_RUN_ID: run.flow_run_id}),
                return_state=True,
            )  # fmt: skip
            # A failed task's state raises its error (a CoordinatorError, ...) here.
            stage1 = cast(FederationStage1, state.result())
            run.step = f"tracking seed {seed}"
            if out_dir is not None:
                write_json_atomic(document_path(Path(out_dir), stage1.document), stage1.document)
            run_id = log_stage1_task(
                run.uri, stage1, seed=seed, parent_run_id=run.parent,
                tags={TAG_FLOW_RUN_ID: run.flow_run_id},
            )  # fmt: skip
            runs.append(stage1_summary(stage1.document, run_id))
        run.status = "FINISHED"
    finally:
        run.close()
    return {"tracking_uri": run.uri, "parent_run_id": run.parent, "runs": runs}
