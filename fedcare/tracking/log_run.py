"""Log one finished FedCARE run (one algorithm × seed) to MLflow, from its result.

Run layout, in the dataset's experiment::

    <flow run>                      (parent, created by the caller; optional)
      seed<k> · <algorithm>-K<k>-T<t>[-<variant>]
                                    params, per-round metrics, final metrics, artifacts, the
                                    backbone (FedCARE, FedCARE-B) and every client's deployed
                                    model (``client<k>``: a pyfunc over raw rows)
        stage2-client<k>            μ* and loss traces per epoch (FedCARE)

Run names and the metrics' keys (``lambda/<objective>``, ``test/<objective>.<metric>.pooled``,
…) are :mod:`fedcare.tracking.naming`'s.

Everything logged comes from :meth:`ExperimentResult.to_dict` (the ``results.json`` document),
which holds no identifiers (clients are numbered 0..K-1), and from the models and their
encoders (training statistics, never rows); the input examples stored with the models are
synthetic (the backbone's rows of zeros and ones, the client models' made-up encounters).
"""

from __future__ import annotations

import json
import logging
import math
import tempfile
import time
import warnings
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import mlflow.pytorch
import numpy as np
import torch
from mlflow.entities import Metric, Param, RunTag
from mlflow.tracking import MlflowClient
from mlflow.utils.validation import MAX_METRICS_PER_BATCH, MAX_PARAMS_TAGS_PER_BATCH

from fedcare.tracking import naming, plots, store, views
from fedcare.tracking.client_models import log_client_models
from fedcare.tracking.mlflow_params import flatten_params, param_value
from fedcare.tracking.objective_metrics import objective_values
from fedcare.tracking.serving import GlobalPredictor, input_example, signature_for
from fedcare_core import __version__
from fedcare_core.algorithms import get_algorithm
from fedcare_core.run.results import ExperimentResult
from fedcare_core.stage1.loop import load_global_model

_log = logging.getLogger(__name__)

#: SHA-256 of the dataset's source file.
TAG_DATASET_SHA256 = "fedcare.dataset_sha256"
#: FedCARE version that produced the run.
TAG_VERSION = "fedcare.version"
#: Torch's CPU kernel path that produced the numbers (``fedcare_core.nn.cpu_kernels``).
TAG_CPU_KERNELS = "fedcare.cpu_kernels"
#: Prefect flow-run id of the flow that ran the experiment.
TAG_FLOW_RUN_ID = "prefect.flow_run_id"
#: Dataset, algorithm and seed, for searching runs.
TAG_DATASET = "fedcare.dataset"
TAG_ALGORITHM = "fedcare.algorithm"
_TAG_SEED = "fedcare.seed"
#: Which part of the method a run covers (``"experiment"`` or ``"stage2"``).
TAG_STAGE = "fedcare.stage"
#: Client index of a Stage 2 run.
TAG_CLIENT = "fedcare.client"
#: Logged-model id of the run's backbone (read by :mod:`fedcare.tracking.registry`).
TAG_BACKBONE_MODEL_ID = "fedcare.backbone_model_id"
#: Logged-model id of each client's deployed model: ``fedcare.client_model_id.<k>`` on the run,
#: ``fedcare.client_model_id`` on a Stage 2 run.
TAG_CLIENT_MODEL_ID = "fedcare.client_model_id"
#: The rounds' privacy: ``none``, or the DP mechanism and its accountant.
TAG_PRIVACY = "fedcare.privacy"
#: The ``privacy`` fields of ``results.json`` logged as run metrics (``dp.delta`` …; ε is the
#: per-round ``stage1/dp.epsilon``, whose last step the runs table shows; ``dp.epsilon_pld`` and
#: ``dp.epsilon_rdp`` give both accountants' final ε).
_DP_SUMMARY = ("delta", "noise_multiplier", "clip")
#: Prefix of the tags naming each objective's metric (``fedcare.metric.los = mae_days``).
TAG_METRIC_PREFIX = "fedcare.metric."
#: The run's setting: its name without the seed (``fedcare-K10-T100``), to group seeds by.
TAG_SETTING = "fedcare.setting"
#: Every departure of the run's configuration from the dataset's defaults, readable.
TAG_VARIANT = "fedcare.variant"

#: Logged-model name of the Stage 1 model.
_BACKBONE_MODEL_NAME = "backbone"
#: Artifact names.
RESULTS_FILE = "results.json"
_PLOTS_DIR = "plots"
_LAMBDA_PLOT = "lambda_trajectory.png"
_METRICS_PLOT = "metrics.png"


def log_experiment(
    result: ExperimentResult | Mapping[str, Any],
    *,
    parent_run_id: str | None = None,
    tags: Mapping[str, str] | None = None,
    models: bool = True,
    extra_artifacts: Mapping[str, str | Path] | None = None,
    flow_run_id: str | None = None,
    run_name: str | None = None,
) -> str:
    """Log one algorithm × seed run, with a nested run per client's Stage 2.

    Call :func:`fedcare.tracking.store.configure` first.

    Parameters
    ----------
    result
        The run's result, or its ``results.json`` document (then no models are logged).
    parent_run_id
        The flow run's MLflow run; the new run is nested under it, in its experiment. Without
        it the run goes to the dataset's experiment
        (:func:`~fedcare.tracking.store.experiment_for`).
    tags
        Extra tags for the run and its Stage 2 runs.
    models
        Log the model each client deploys (a pyfunc over raw rows,
        :mod:`fedcare.tracking.client_models`) and, for FedCARE and FedCARE-B, the Stage 1
        backbone (PyTorch flavour, ``pt2`` format, with a tensor signature).
    extra_artifacts
        Artifact folder → local file or folder, e.g. ``{"validation": report_dir}``.
    flow_run_id
        Prefect flow-run id, tagged as :data:`TAG_FLOW_RUN_ID`.
    run_name
        Display name (default :func:`fedcare.tracking.naming.run_name`, e.g.
        ``seed0 · fedcare-K10-T100``).

    Returns
    -------
    str
        The run id.

    Raises
    ------
    FileNotFoundError
        If an ``extra_artifacts`` path does not exist (checked before anything is logged).
    """
    doc = result.to_dict() if isinstance(result, ExperimentResult) else dict(result)
    extras = {name: Path(p) for name, p in (extra_artifacts or {}).items()}
    for name, p in extras.items():
        if not p.exists():
            raise FileNotFoundError(f"extra artifact {name!r}: {p} does not exist")
    source: ExperimentResult | None = None
    if models:
        if isinstance(result, ExperimentResult):
            source = result
        else:
            _log.warning("models are logged only from an ExperimentResult; skipping them")

    mc = store.client()
    experiment_id = (
        mc.get_run(parent_run_id).info.experiment_id
        if parent_run_id is not None
        else store.experiment_for(doc["dataset"])
    )
    config = doc.get("config", {})
    common = _provenance_tags(doc, tags, flow_run_id)
    run_id = store.create_child_run(
        experiment_id,
        parent_run_id=parent_run_id,
        run_name=run_name or naming.run_name(doc),
        tags=common
        | {TAG_STAGE: "experiment"}
        | {TAG_METRIC_PREFIX + s: str(o.get("metric")) for s, o in doc["objectives"].items()},
    )
    views.publish(mc, experiment_id, views.RUNS_VIEW, views.runs_columns(doc["objectives"]))
    try:
        params = flatten_params(config)
        log_batch_chunked(mc, run_id, params=params)
        log_batch_chunked(mc, run_id, metrics=round_metrics(doc["rounds"]) + _final_metrics(doc))
        _log_artifacts(mc, run_id, doc, extras)
        client_models = (
            {} if source is None else _log_models(mc, source, run_id, experiment_id, params)
        )
        for entry in doc.get("stage2", []):
            _log_stage2(
                mc,
                doc,
                entry,
                client_models.get(int(entry["client"])),
                experiment_id=experiment_id,
                parent_run_id=run_id,
                tags=common,
            )
    except BaseException:
        mc.set_terminated(run_id, status="FAILED")
        raise
    mc.set_terminated(run_id, status="FINISHED")
    return run_id


def _log_models(
    mc: MlflowClient,
    result: ExperimentResult,
    run_id: str,
    experiment_id: str,
    params: Mapping[str, str],
) -> dict[int, str]:
    """The backbone (FedCARE, FedCARE-B) and every client's model; client → logged-model id."""
    if get_algorithm(result.config.algorithm).runs_stage1:
        model_id = _log_backbone(result, run_id, experiment_id, params)
        mc.set_tag(run_id, TAG_BACKBONE_MODEL_ID, model_id)
    client_models = log_client_models(
        result, run_id=run_id, experiment_id=experiment_id, params=params
    )
    tags = {f"{TAG_CLIENT_MODEL_ID}.{k}": v for k, v in client_models.items()}
    log_batch_chunked(mc, run_id, tags=tags)
    return client_models


def _provenance_tags(
    doc: Mapping[str, Any], tags: Mapping[str, str] | None, flow_run_id: str | None
) -> dict[str, str]:
    config = doc.get("config", {})
    out = {
        TAG_DATASET: str(doc["dataset"]),
        TAG_ALGORITHM: str(doc["algorithm"]),
        _TAG_SEED: str(config.get("seed")),
        TAG_SETTING: naming.setting_name(doc),
        TAG_VARIANT: naming.describe_variant(config, str(doc["dataset"])),
        TAG_DATASET_SHA256: str(doc.get("data", {}).get("sha256", "")),
        TAG_VERSION: str(doc.get("fedcare_version", __version__)),
    }
    if "cpu_kernels" in doc:
        out[TAG_CPU_KERNELS] = str(doc["cpu_kernels"])
    privacy = doc.get("privacy")
    out[TAG_PRIVACY] = f"{privacy['mechanism']} ({privacy['accountant']})" if privacy else "none"
    if flow_run_id is not None:
        out[TAG_FLOW_RUN_ID] = flow_run_id
    out.update({k: str(v) for k, v in (tags or {}).items()})
    return out


def _number(value: Any) -> float | None:
    """A metric value, or ``None`` for a missing one (JSON ``null``)."""
    return None if value is None else float(value)


def _metrics(values: Iterable[tuple[str, Any, int]], timestamp: int) -> list[Metric]:
    out = []
    for key, value, step in values:
        number = _number(value)
        if number is not None:
            out.append(Metric(key=key, value=number, timestamp=timestamp, step=step))
    return out


def now_ms() -> int:
    """Wall-clock time in milliseconds, MLflow's timestamp unit."""
    return int(time.time() * 1000)


def round_metrics(rounds: Sequence[Mapping[str, Any]]) -> list[Metric]:
    """Per-round Stage 1 trace (step = round): λ*_s, then ‖d‖², loss per objective, participants.

    Keys: ``lambda/<objective>`` (its own chart section, the first of a run's) and
    ``stage1/d_sq_norm``, ``stage1/loss.<objective>``, ``stage1/participants``,
    ``stage1/dp.epsilon`` (under DP only) — :func:`~fedcare.tracking.naming.lambda_key`,
    :func:`~fedcare.tracking.naming.round_key`.
    """
    now = now_ms()
    values: list[tuple[str, Any, int]] = []
    for r in rounds:
        step = int(r["round"])
        values += [(naming.lambda_key(s), v, step) for s, v in r.get("lambda", {}).items()]
        values.append((naming.round_key("d_sq_norm"), r.get("d_sq_norm"), step))
        values += [(naming.round_key(f"loss.{s}"), v, step) for s, v in r.get("loss", {}).items()]
        values.append((naming.round_key("participants"), len(r.get("participants", [])), step))
        values.append((naming.round_key("dp.epsilon"), r.get("epsilon"), step))  # under DP only
    return _metrics(values, now)


def _final_metrics(doc: Mapping[str, Any]) -> list[Metric]:
    """Test metrics per objective (clinical ones too), Stage 1 summary, timing."""
    values = objective_values(doc)
    stage1 = doc.get("stage1", {})
    if "rounds_run" in stage1:
        values.append(("stage1.rounds_run", stage1["rounds_run"], 0))
    if "converged" in stage1:
        values.append(("stage1.converged", float(bool(stage1["converged"])), 0))
    values += [(f"timing.{k}", v, 0) for k, v in doc.get("timing", {}).items()]
    privacy = doc.get("privacy") or {}
    values += [(f"dp.{k}", privacy.get(k), 0) for k in _DP_SUMMARY if k in privacy]
    by_accountant = privacy.get("epsilon_by_accountant", {})
    values += [(f"dp.epsilon_{name}", value, 0) for name, value in by_accountant.items()]
    return _metrics(values, now_ms())


def log_batch_chunked(
    mc: MlflowClient,
    run_id: str,
    *,
    metrics: Sequence[Metric] = (),
    params: Mapping[str, str] | None = None,
    tags: Mapping[str, str] | None = None,
) -> None:
    """``MlflowClient.log_batch`` in chunks that respect MLflow's per-request limits.

    Parameters
    ----------
    mc
        The tracking client.
    run_id
        The run to log to.
    metrics, params, tags
        What to log; each is sent in as many requests as the limits require.
    """
    for i in range(0, len(metrics), MAX_METRICS_PER_BATCH):
        mc.log_batch(run_id, metrics=list(metrics[i : i + MAX_METRICS_PER_BATCH]))
    plist = [Param(k, v) for k, v in (params or {}).items()]
    for i in range(0, len(plist), MAX_PARAMS_TAGS_PER_BATCH):
        mc.log_batch(run_id, params=plist[i : i + MAX_PARAMS_TAGS_PER_BATCH])
    tlist = [RunTag(k, v) for k, v in (tags or {}).items()]
    for i in range(0, len(tlist), MAX_PARAMS_TAGS_PER_BATCH):
        mc.log_batch(run_id, tags=tlist[i : i + MAX_PARAMS_TAGS_PER_BATCH])


def json_safe(obj: Any) -> Any:
    """Make a document strict-JSON safe: NaN/inf → ``None``, tuples → lists, numpy → Python."""
    if isinstance(obj, np.generic):
        obj = obj.item()
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, Mapping):
        return {str(k): json_safe(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [json_safe(v) for v in obj]
    return obj


def _log_artifacts(
    mc: MlflowClient, run_id: str, doc: Mapping[str, Any], extras: Mapping[str, Path]
) -> None:
    with tempfile.TemporaryDirectory(prefix="fedcare-mlflow-") as tmp:
        root = Path(tmp)
        results = root / RESULTS_FILE
        results.write_text(json.dumps(json_safe(doc), indent=2, allow_nan=False) + "\n")
        mc.log_artifact(run_id, str(results))
        plots.lambda_trajectory(doc["rounds"], root / _PLOTS_DIR / _LAMBDA_PLOT)
        plots.metrics_chart(doc["objectives"], root / _PLOTS_DIR / _METRICS_PLOT)
        mc.log_artifacts(run_id, str(root / _PLOTS_DIR), artifact_path=_PLOTS_DIR)
    for name, path in extras.items():
        if path.is_dir():
            mc.log_artifacts(run_id, str(path), artifact_path=name)
        else:
            mc.log_artifact(run_id, str(path), artifact_path=name)


def _pip_requirements() -> list[str]:
    # Explicit requirements skip MLflow's inference, which re-loads the model in a subprocess.
    # The local version label (+cpu) is dropped so the pin installs from PyPI.
    return [f"torch=={torch.__version__.split('+')[0]}"]


def log_model(
    module: GlobalPredictor,
    width: int,
    *,
    name: str,
    run_id: str,
    experiment_id: str,
    params: Mapping[str, str] | None = None,
) -> str:
    """Log a predictor with the PyTorch flavour (``pt2``) and a tensor signature.

    The logged model is created in ``experiment_id`` and linked to ``run_id`` explicitly, so
    nothing depends on MLflow's active-run state.

    Parameters
    ----------
    module
        The predictor (set to evaluation mode here).
    width
        Input columns.
    name
        Logged-model name.
    run_id, experiment_id
        The run producing the model and its experiment.
    params
        Params recorded on the logged model (e.g. the run's configuration).

    Returns
    -------
    str
        The logged-model id (load with ``mlflow.pytorch.load_model(f"models:/{id}")``).
    """
    module.eval()
    example = input_example(width)
    signature = signature_for(module, example)
    mc = store.client()
    logged = mc.create_logged_model(
        experiment_id=experiment_id,
        name=name,
        source_run_id=run_id,
        params=dict(params or {}),
    )
    with warnings.catch_warnings():
        # torch's pt2 archive warns about the model's (CPU) weights: "No complete tensor found
        # in the group!" — a message about sharded accelerator tensors, not these.
        warnings.filterwarnings("ignore", message="No complete tensor found", category=UserWarning)
        _log_pytorch(module, name, logged.model_id, run_id, signature, example)
    return str(logged.model_id)


def _log_pytorch(
    module: Any, name: str, model_id: str, run_id: str, signature: Any, example: Any
) -> None:
    mlflow.pytorch.log_model(
        module,
        name=name,
        model_id=model_id,
        run_id=run_id,
        signature=signature,
        input_example=example,
        serialization_format="pt2",
        pip_requirements=_pip_requirements(),
        metadata={
            "objectives": list(module.objectives),
            "kinds": list(module.kinds),
            "output": "one column per objective: probability (binary) or days (regression)",
        },
    )


def _kinds(result: ExperimentResult) -> dict[str, str]:
    return {o.name: o.kind for o in result.federation.objectives}


def _log_backbone(
    result: ExperimentResult, run_id: str, experiment_id: str, params: Mapping[str, str]
) -> str:
    fed = result.federation
    model = load_global_model(result.stage1, fed.common_width, result.config.model)
    return log_model(
        GlobalPredictor(model, _kinds(result)),
        fed.common_width,
        name=_BACKBONE_MODEL_NAME,
        run_id=run_id,
        experiment_id=experiment_id,
        params=params,
    )


def _log_stage2(
    mc: MlflowClient,
    doc: Mapping[str, Any],
    entry: Mapping[str, Any],
    client_model_id: str | None,
    *,
    experiment_id: str,
    parent_run_id: str,
    tags: Mapping[str, str],
) -> str:
    """One client's Stage 2 run: μ*, train and validation loss per epoch (step = epoch)."""
    k = int(entry["client"])
    run_id = store.create_child_run(
        experiment_id,
        parent_run_id=parent_run_id,
        run_name=f"stage2-client{k}",
        tags=dict(tags)
        | {TAG_STAGE: "stage2", TAG_CLIENT: str(k), "fedcare.stopped": str(entry.get("stopped"))},
    )
    try:
        info: Mapping[str, Any] = next(
            (c for c in doc.get("clients", []) if c.get("client") == k), {}
        )
        params = {f"client.{key}": param_value(v) for key, v in info.items()}
        now = now_ms()
        values: list[tuple[str, Any, int]] = []
        for epoch, mu in enumerate(entry.get("mu_trace", []), start=1):
            values += [(f"mu.{s}", v, epoch) for s, v in mu.items()]
        for key in ("train_loss", "val_loss"):
            values += [(key, v, epoch) for epoch, v in enumerate(entry.get(key, []), start=1)]
        values += [(f"mu_mean.{s}", v, 0) for s, v in entry.get("mu_mean", {}).items()]
        values += [("steps", entry.get("steps"), 0), ("best_epoch", entry.get("best_epoch"), 0)]
        for s, rep in doc["objectives"].items():
            values += [
                (naming.stage2_test_key(s, rep.get("metric")), c.get("value"), 0)
                for c in rep.get("clients", [])
                if c["client"] == k
            ]
        log_batch_chunked(mc, run_id, params=params, metrics=_metrics(values, now))
        if client_model_id is not None:
            mc.set_tag(run_id, TAG_CLIENT_MODEL_ID, client_model_id)
    except BaseException:
        mc.set_terminated(run_id, status="FAILED")
        raise
    mc.set_terminated(run_id, status="FINISHED")
    return run_id
