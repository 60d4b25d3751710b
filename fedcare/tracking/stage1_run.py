"""A coordinator's Stage 1 over sites in MLflow: the run, its λ* trajectory and ``w*``.

The run sits in the dataset's experiment beside every other run (``fedcare/<dataset>``), named
``seed<k> · <the document's run name>`` (:func:`~fedcare.tracking.naming.stage1_run_name`; the
document's own name is the tag ``fedcare.run_name``), with the same per-round metric names
(``lambda/<objective>``, ``stage1/d_sq_norm``, ``stage1/loss.<objective>``,
``stage1/participants``), the Stage 1 settings as parameters, the document and the λ* plot as
artifacts, and ``w*`` (weights only) under ``stage1/``. Nothing in it is patient-level: the
coordinator never had any.

It has no test metrics (each site scores its own model on its own rows, in its own store), so
beside simulated runs it must not look like a run that failed: it is tagged
``fedcare.kind = stage1-federation`` and ``fedcare.setting = <algorithm>-K<sites>-T<rounds>-
stage1-over-sites``, has the parameter ``data.clients`` (its sites), the metrics
``stage1.rounds_run``, ``stage1.converged`` and ``stage1.sites`` (the runs table's columns of a
simulated run's Stage 1), and a description (the run's note) that says what it is, its final
λ*, and why its test columns are empty.
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from mlflow.entities import Metric
from mlflow.utils.mlflow_tags import MLFLOW_RUN_NOTE

from fedcare.tracking import naming, plots, store
from fedcare.tracking.log_run import json_safe, log_batch_chunked, now_ms, round_metrics

_STAGE1_FILE = "stage1.json"
#: What a run is (a tag): a coordinator's Stage 1 over real sites has this value.
TAG_KIND = "fedcare.kind"
STAGE1_KIND = "stage1-federation"


def _params(document: Mapping[str, Any]) -> dict[str, str]:
    out = {"seed": str(document["seed"]), "schema_digest": str(document["schema_digest"])}
    for section, values in document["config"].items():
        for key, value in values.items():
            out[f"{section}.{key}"] = str(value)
    out["sites"] = ",".join(s["name"] for s in document["sites"])
    out["data.clients"] = str(len(document["sites"]))  # K: the runs table's column
    return out


def _summary_metrics(document: Mapping[str, Any]) -> list[Metric]:
    """Rounds run, whether λ* converged, and the sites: one value each (step 0)."""
    now = now_ms()
    values = {
        "stage1.rounds_run": float(document["rounds_run"]),
        "stage1.converged": float(bool(document["converged"])),
        "stage1.sites": float(len(document["sites"])),
    }
    return [Metric(key, value, now, 0) for key, value in values.items()]


def stage1_description(document: Mapping[str, Any]) -> str:
    """The run's description (Markdown): what it is, how it ended, why no test metric.

    Parameters
    ----------
    document
        :func:`fedcare.sites.federation_run.stage1_document`'s output.
    """
    sites = [str(s["name"]) for s in document["sites"]]
    planned = document["config"].get("stage1", {}).get("rounds", "?")
    rounds = list(document["rounds"])
    final = ", ".join(f"{s} {v:.3f}" for s, v in rounds[-1]["lambda"].items()) if rounds else ""
    ended = "converged" if document["converged"] else "not converged"
    return (
        f"**Stage 1 of {document['algorithm']} over {len(sites)} real sites** "
        f"({', '.join(sites)}): {document['rounds_run']} of {planned} rounds run, {ended}"
        + (f"; final λ*: {final}" if final else "")
        + ".\n\n"
        "No test metrics here, by design: the coordinator holds no patient row. Each site "
        "personalises and scores its own model on its own rows (`fedcare site join` / "
        "`fedcare site personalise`, in the site's own MLflow store), so this run's test "
        "columns stay empty. Charts: λ* per round (`lambda/…`), ‖d‖², losses and participants "
        "(`stage1/…`); `w*` is the artifact `stage1/stage1.npz`.\n"
    )


def stage1_tags(document: Mapping[str, Any]) -> dict[str, str]:
    """A Stage 1 run's tags from what is known before its first round (or from its document)."""
    out = {
        TAG_KIND: STAGE1_KIND,
        store.TAG_DATASET: str(document["dataset"]),
        "fedcare.algorithm": str(document["algorithm"]),
        "fedcare.backend": "federation",
        "fedcare.entry": "fedcare federation run",
        "fedcare.schema_digest": str(document["schema_digest"]),
        "fedcare.seed": str(document["seed"]),
        "fedcare.run_name": str(document["run_name"]),
    }
    if "sites" in document:
        sites = len(document["sites"])
        rounds = document.get("config", {}).get("stage1", {}).get("rounds", "?")
        out["fedcare.sites"] = str(sites)
        out["fedcare.setting"] = f"{document['algorithm']}-K{sites}-T{rounds}-stage1-over-sites"
        out[MLFLOW_RUN_NOTE] = stage1_description(document)
    return out


def open_stage1_run(
    head: Mapping[str, Any],
    *,
    parent_run_id: str | None = None,
    tags: Mapping[str, str] | None = None,
) -> str:
    """Create the MLflow run of a Stage 1 about to start (status RUNNING); its id.

    ``head`` holds the document's ``dataset``, ``algorithm``, ``schema_digest``, ``seed`` and
    ``run_name`` (:func:`fedcare.sites.federation_run.stage1_head`); ``parent_run_id`` and
    ``tags`` as :func:`log_stage1_run`'s.
    """
    return store.create_child_run(
        store.experiment_for(str(head["dataset"])),
        parent_run_id=parent_run_id,
        run_name=naming.stage1_run_name(head),
        tags={**stage1_tags(head), **(tags or {})},
    )


class LiveRounds:
    """Logs each round of a running Stage 1 to its MLflow run as the round log grows.

    Call it with each round's line (:func:`fedcare.flower.results.read_rounds`). The run is
    opened (``open_run``, e.g. :func:`open_stage1_run`) at the first round, so a Stage 1 whose
    sites never came online leaves no run behind. A failure of the tracking store is reported
    once (``warn``) and never stops Stage 1: the document logged at the end
    (:func:`log_stage1_run`) carries every round the live view missed.
    """

    def __init__(self, open_run: Callable[[], str], warn: Callable[[str], None]) -> None:
        self.run_id: str | None = None
        self.logged = 0  # rounds logged so far, in order
        self._open = open_run
        self._warn: Callable[[str], None] | None = warn

    def __call__(self, line: Mapping[str, Any]) -> None:
        """Log one round's line (the next in order)."""
        if self._warn is None:
            return
        try:
            if self.run_id is None:
                self.run_id = self._open()
            log_batch_chunked(store.client(), self.run_id, metrics=round_metrics([line]))
        except Exception as exc:
            self._warn(f"MLflow: live rounds stopped at round {self.logged + 1} ({exc})")
            self._warn = None
            return
        self.logged += 1

    @classmethod
    def resumed(cls, run_id: str, logged: int, warn: Callable[[str], None]) -> LiveRounds:
        """The live view of run ``run_id``, which already holds ``logged`` rounds.

        A flow's Stage 1 task hands its run to the tracking task this way.
        """
        live = cls(lambda: run_id, warn)
        live.run_id, live.logged = run_id, logged
        return live

    def fail(self) -> None:
        """Mark the run failed, if one was opened.

        Quietly if the store is gone too: Stage 1's own error is the one to report.
        """
        if self.run_id is None:
            return
        try:
            store.finish_run(self.run_id, "FAILED")
        except Exception:  # the store may be gone as well
            pass


def log_stage1_run(
    document: Mapping[str, Any],
    result_dir: Path,
    *,
    parent_run_id: str | None = None,
    tags: Mapping[str, str] | None = None,
    live: LiveRounds | None = None,
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
    live
        The rounds were logged as they ran (:class:`LiveRounds`): finish that run, logging only
        the rounds it lacks (a live view that opened no run: as without one).

    Returns
    -------
    str
        The run's id.
    """
    if live is None or live.run_id is None:
        run_id = open_stage1_run(document, parent_run_id=parent_run_id, tags=tags)
        missing, late_tags = list(document["rounds"]), None
    else:  # the tags known only once the sites answered (how many took part)
        run_id = live.run_id
        missing, late_tags = list(document["rounds"])[live.logged :], stage1_tags(document)
    mc = store.client()
    try:
        metrics = round_metrics(missing) + _summary_metrics(document)
        log_batch_chunked(mc, run_id, metrics=metrics, params=_params(document), tags=late_tags)
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
