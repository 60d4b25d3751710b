"""A coordinator's Stage 1 over sites in MLflow: the run, its λ* trajectory and ``w*``.

The run sits in the dataset's experiment beside every other run (``fedcare/<dataset>``), named
``seed<k> · <the document's run name>`` (:func:`~fedcare.tracking.naming.stage1_run_name`; the
document's own name is the tag ``fedcare.run_name``), with the same per-round metric names
(``lambda/<objective>``, ``stage1/d_sq_norm``, ``stage1/loss.<objective>``,
``stage1/participants``), the Stage 1 settings as parameters, the document and the λ* plot as
artifacts, and ``w*`` (weights only) under ``stage1/``. Nothing in it is patient-level: the
coordinator never had any.
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from fedcare.tracking import naming, plots, store
from fedcare.tracking.log_run import json_safe, log_batch_chunked, round_metrics

_STAGE1_FILE = "stage1.json"


def _params(document: Mapping[str, Any]) -> dict[str, str]:
    out = {"seed": str(document["seed"]), "schema_digest": str(document["schema_digest"])}
    for section, values in document["config"].items():
        for key, value in values.items():
            out[f"{section}.{key}"] = str(value)
    out["sites"] = ",".join(s["name"] for s in document["sites"])
    return out


def log_stage1_run(
    document: Mapping[str, Any],
    result_dir: Path,
    *,
    parent_run_id: str | None = None,
    tags: Mapping[str, str] | None = None,
) -> str:
    """Log a Stage 1 document (``fedcare federation run``) and its ``w*``; the run's id.

    Parameters
    ----------
    document
        :func:`fedcare.sites.federation_run.stage1_document`'s output.
    result_dir
        The ServerApp's result folder (its ``stage1.npz`` is ``w*``).
    parent_run_id
        Nest the run under this run (the ``fedcare`` flow run's parent run); None: top level.
    tags
        Further tags, over the defaults (e.g. ``fedcare.entry`` and the Prefect flow run).

    Returns
    -------
    str
        The new run's id.
    """
    all_tags = {
        store.TAG_DATASET: str(document["dataset"]),
        "fedcare.algorithm": str(document["algorithm"]),
        "fedcare.backend": "federation",
        "fedcare.entry": "fedcare federation run",
        "fedcare.schema_digest": str(document["schema_digest"]),
        "fedcare.sites": str(len(document["sites"])),
        "fedcare.seed": str(document["seed"]),
        "fedcare.run_name": str(document["run_name"]),
        **(tags or {}),
    }
    run_id = store.create_child_run(
        store.experiment_for(str(document["dataset"])),
        parent_run_id=parent_run_id,
        run_name=naming.stage1_run_name(document),
        tags=all_tags,
    )
    mc = store.client()
    try:
        log_batch_chunked(
            mc, run_id, metrics=round_metrics(document["rounds"]), params=_params(document)
        )
        with tempfile.TemporaryDirectory(prefix="fedcare-mlflow-") as tmp:
            root = Path(tmp)
            path = root / _STAGE1_FILE
            path.write_text(json.dumps(json_safe(document), indent=2, allow_nan=False) + "\n")
            mc.log_artifact(run_id, str(path))
            if document["rounds"]:
                plot = plots.lambda_trajectory(document["rounds"], root / "lambda.png")
                mc.log_artifact(run_id, str(plot), artifact_path="plots")
        weights = result_dir / "stage1.npz"
        if weights.exists():
            mc.log_artifact(run_id, str(weights), artifact_path="stage1")
    except BaseException:
        store.finish_run(run_id, "FAILED")
        raise
    store.finish_run(run_id)
    return run_id
