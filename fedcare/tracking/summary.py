"""Mean and std over seeds on a parent run, so flow runs compare in MLflow's runs table.

A flow run's parent gets, per algorithm and objective, the mean and the std (ddof 1, as in the
experiment tables; left out for a single seed) over its algorithm × seed runs of the pooled and
mean-over-clients test metrics, and how many seeds went in:
``test_over_seeds/fedcare/readmission.auroc.pooled.mean``, ``…/fedcare/seeds``
(:mod:`fedcare.tracking.naming`), and the experiment's "FedCARE: mean over seeds" view shows
them (:mod:`fedcare.tracking.views`). Where one parent holds several settings of an algorithm,
each setting is its own group (``test_over_seeds/fedcare-K5-T20/…``).

A parent whose runs share one setting (a flow run of one algorithm, as ``make run``) also
carries that mean under its runs' own keys, ``test/<objective>.<metric>.<pooled|
mean_over_clients>``, with its runs' setting tag and their K and T as params, so the runs
table's columns (and the "FedCARE: test metrics" view) show the parent's row filled, not "-".
A parent of several settings gets the setting tag (``fedcare-K10-T100 + fedavg-K10-T100``)
only: one value per column would mix them.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from mlflow.entities import Metric, Run

from fedcare.tracking import naming, store, views
from fedcare.tracking.log_run import (
    TAG_ALGORITHM,
    TAG_METRIC_PREFIX,
    TAG_SETTING,
    TAG_STAGE,
    log_batch_chunked,
    now_ms,
)

#: ``(objective, metric, field)`` → value: one run's test scores.
_Scores = dict[tuple[str, str, str], float]
#: A run's K and T among its params (``flatten_params`` of its configuration).
_CLIENTS_PARAM = "data.clients"
_ROUNDS_PARAM = "stage1.rounds"


@dataclass(frozen=True)
class _RunScores:
    """One algorithm × seed run's summary test scores.

    Parameters
    ----------
    algorithm
        Its algorithm.
    setting
        Its setting (:func:`fedcare.tracking.naming.setting_name`).
    scores
        ``(objective, metric, field)`` → value, for the fields in
        :data:`~fedcare.tracking.naming.SUMMARY_FIELDS` (missing values left out).
    clients, rounds
        Its K and T (the params ``data.clients`` and ``stage1.rounds``), when known.
    """

    algorithm: str
    setting: str
    scores: _Scores = field(default_factory=dict)
    clients: str | None = None
    rounds: str | None = None


def _finite(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if math.isfinite(value) else None


def scores_from_doc(doc: Mapping[str, Any]) -> _RunScores:
    """A results document's (``results.json``) summary test scores."""
    scores: _Scores = {}
    for objective, rep in doc["objectives"].items():
        for name in naming.SUMMARY_FIELDS:
            value = _finite(rep.get(name))
            if value is not None:
                scores[(objective, str(rep.get("metric")), name)] = value
    config = doc.get("config", {})
    clients = config.get("data", {}).get("clients")
    rounds = config.get("stage1", {}).get("rounds")
    return _RunScores(
        str(doc["algorithm"]),
        naming.setting_name(doc),
        scores,
        None if clients is None else str(clients),
        None if rounds is None else str(rounds),
    )


def scores_from_run(run: Run) -> _RunScores:
    """An MLflow run's summary test scores, read back from its metrics and tags."""
    tags, metrics = run.data.tags, run.data.metrics
    scores: _Scores = {}
    for key, metric in tags.items():
        if not key.startswith(TAG_METRIC_PREFIX):
            continue
        objective = key[len(TAG_METRIC_PREFIX) :]
        for name in naming.SUMMARY_FIELDS:
            value = _finite(metrics.get(naming.test_key(objective, metric, name)))
            if value is not None:
                scores[(objective, metric, name)] = value
    algorithm = tags.get(TAG_ALGORITHM, "unknown")
    params = run.data.params
    return _RunScores(
        algorithm,
        tags.get(TAG_SETTING, algorithm),
        scores,
        params.get(_CLIENTS_PARAM),
        params.get(_ROUNDS_PARAM),
    )


def _group(runs: Sequence[_RunScores]) -> dict[str, list[_RunScores]]:
    """Runs by algorithm, or by setting for an algorithm with several settings."""
    settings: dict[str, set[str]] = {}
    for r in runs:
        settings.setdefault(r.algorithm, set()).add(r.setting)
    groups: dict[str, list[_RunScores]] = {}
    for r in runs:
        key = r.algorithm if len(settings[r.algorithm]) == 1 else r.setting
        groups.setdefault(key, []).append(r)
    return groups


def summary_metrics(runs: Iterable[_RunScores]) -> dict[str, float]:
    """Mean and std over seeds of each group's scores, and its number of seeds.

    Parameters
    ----------
    runs
        The parent's algorithm × seed runs (:func:`scores_from_doc`, :func:`scores_from_run`).

    Returns
    -------
    dict[str, float]
        Metric key → value; a std only where at least two seeds have the score.
    """
    out: dict[str, float] = {}
    for group, members in sorted(_group(list(runs)).items()):
        out[naming.seeds_key(group)] = float(len(members))
        keys = sorted({k for r in members for k in r.scores})
        for key in keys:
            values = [r.scores[key] for r in members if key in r.scores]
            out[naming.summary_key(group, *key, "mean")] = statistics.fmean(values)
            if len(values) > 1:
                out[naming.summary_key(group, *key, "std")] = statistics.stdev(values)
    return out


def _setting_metrics(runs: Iterable[_RunScores]) -> dict[str, float]:
    """The mean over seeds under the runs' own keys, for runs of one setting; else nothing.

    Parameters
    ----------
    runs
        The parent's algorithm × seed runs.

    Returns
    -------
    dict[str, float]
        ``test/<objective>.<metric>.<field>`` → the mean over the runs that have it
        (:func:`~fedcare.tracking.naming.test_key`); empty unless every run has one setting.
    """
    members = list(runs)
    if len({r.setting for r in members}) != 1:
        return {}
    keys = sorted({k for r in members for k in r.scores})
    return {
        naming.test_key(*key): statistics.fmean(r.scores[key] for r in members if key in r.scores)
        for key in keys
    }


def _parent_labels(runs: Sequence[_RunScores]) -> tuple[dict[str, str], dict[str, str]]:
    """The parent's setting tag, and its runs' K and T as params where they all share them."""
    if not runs:
        return {}, {}
    tags = {TAG_SETTING: " + ".join(sorted({r.setting for r in runs}))}
    params: dict[str, str] = {}
    for key, values in (
        (_CLIENTS_PARAM, {r.clients for r in runs}),
        (_ROUNDS_PARAM, {r.rounds for r in runs}),
    ):
        shared = values.pop() if len(values) == 1 else None
        if shared is not None:
            params[key] = shared
    return tags, params


def child_runs(parent_run_id: str) -> list[Run]:
    """The parent's finished algorithm × seed runs (not their Stage 2 runs)."""
    mc = store.client()
    experiment_id = mc.get_run(parent_run_id).info.experiment_id
    return list(
        mc.search_runs(
            [experiment_id],
            filter_string=(
                f"tags.`mlflow.parentRunId` = '{parent_run_id}' "
                f"AND tags.`{TAG_STAGE}` = 'experiment' AND attributes.status = 'FINISHED'"
            ),
            max_results=10_000,
        )
    )


def log_parent_summary(
    parent_run_id: str, docs: Iterable[Mapping[str, Any]] | None = None
) -> dict[str, float]:
    """Log the mean and std over seeds of the parent's runs on the parent run.

    Parameters
    ----------
    parent_run_id
        The flow run's MLflow run.
    docs
        The runs' results documents; ``None`` reads the parent's finished algorithm × seed
        runs from MLflow instead (:func:`child_runs`).

    Returns
    -------
    dict[str, float]
        What was logged (empty when the parent has no finished run): :func:`summary_metrics`
        and, for runs of one setting, :func:`_setting_metrics`.
    """
    runs = (
        [scores_from_run(r) for r in child_runs(parent_run_id)]
        if docs is None
        else [scores_from_doc(d) for d in docs]
    )
    values = summary_metrics(runs) | _setting_metrics(runs)
    now = now_ms()
    metrics = [Metric(key, value, now, 0) for key, value in values.items()]
    mc = store.client()
    tags, params = _parent_labels(runs)
    logged = mc.get_run(parent_run_id).data.params  # a retry: only the params not yet logged
    params = {k: v for k, v in params.items() if k not in logged}
    log_batch_chunked(mc, parent_run_id, metrics=metrics, params=params, tags=tags)
    if values:
        experiment_id = mc.get_run(parent_run_id).info.experiment_id
        views.publish(mc, experiment_id, views.SEEDS_VIEW, views.seeds_columns(values))
    return values
