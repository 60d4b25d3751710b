"""Register every client's deployed model, one registered model per client and objectives.

Client ``k`` of an algorithm on a dataset, predicting objectives ``o1``, ``o2``, is
``fedcare-<dataset>-<algorithm>-<o1>+<o2>-client<k>`` (:mod:`fedcare.tracking.model_names`;
the objectives sorted): a client's objectives are drawn per seed, so a seed that draws it
other objectives registers another model. The registered model's tags and description say
what it predicts, for whom and from what; each run adds a version whose tags and description
carry the client's per-objective validation and test metrics and the run that made it. The
``champion`` alias moves only when the client's validation score improves: the mean
validation AUROC over its binary objectives (higher is better), or for a client with only
length of stay its validation MAE in days (lower is better). Every version of a model is
judged on the same objectives; one judged otherwise than the champion (a champion set by hand,
or registered under an older name scheme) is registered but not compared, and tagged why.

A site of a federation that runs its own Stage 2 (``fedcare site personalise``) registers its
one model in its own store under its name instead:
``fedcare-<dataset>-<algorithm>-<objectives>-<site>``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from fedcare.tracking import store
from fedcare.tracking.log_run import TAG_CLIENT_MODEL_ID
from fedcare.tracking.model_names import (
    CLIENT_MODEL_TEMPLATE,
    SITE_MODEL_TEMPLATE,
    TAG_OUTPUTS,
    TAG_SITE,
    client_card,
    client_model_name,
    site_model_name,
)
from fedcare.tracking.registry import (
    TAG_PROMOTION,
    Score,
    register_version,
    validation_report,
)
from fedcare_core.evaluation.clients import EvaluationReport
from fedcare_core.run.results import ExperimentResult

__all__ = [
    "CLIENT_MODEL_TEMPLATE",
    "SITE_MODEL_TEMPLATE",
    "ClientRegistration",
    "client_model_name",
    "client_score",
    "privacy_tags",
    "register_client_models",
    "site_model_name",
]

#: Model-version tag prefixes of the per-objective metrics (``fedcare.val.los.mae_days``).
_TAG_VAL_PREFIX = "fedcare.val."
_TAG_TEST_PREFIX = "fedcare.test."


@dataclass(frozen=True)
class ClientRegistration:
    """One client's new version: where it went and whether it is the champion."""

    client: int
    model_name: str
    version: int
    promoted: bool
    score: Score
    #: Why it took ``champion`` or not (the scores compared and the rule).
    reason: str = ""


def _client_values(report: EvaluationReport, client: int) -> dict[tuple[str, str], float | None]:
    """(objective, metric) → the client's value, for the objectives it pursues."""
    out: dict[tuple[str, str], float | None] = {}
    for o in report.objectives:
        for c in o.clients:
            if c.client_id == client:
                out[(o.name, o.metric)] = c.value
    return out


def client_score(values: dict[tuple[str, str], float | None]) -> Score | None:
    """The client's validation score from its values (None: none is defined)."""
    objectives = sorted(s for s, _ in values)
    for metric, higher in (("auroc", True), ("mae_days", False)):
        defined = [v for (_, m), v in values.items() if m == metric and v is not None]
        if any(m == metric for _, m in values):
            if not defined:
                return None
            name = f"validation {metric} of {', '.join(objectives)}"
            return Score(float(np.mean(defined)), name, higher)
    return None


#: Decimals of a metric in a model version's tags and description (the registry is read by
#: people; the run's MLflow metrics keep every digit, and ``fedcare.score``, which the next
#: re-training compares with, keeps the full value).
METRIC_DECIMALS = 4


def _text(value: float | None) -> str:
    """A metric as a version's tag or description shows it: 4 decimals, or ``undefined``."""
    if value is None or not math.isfinite(value):
        return "undefined"
    return f"{float(value):.{METRIC_DECIMALS}f}"


def _description(
    result: ExperimentResult,
    client: int,
    run_id: str,
    val: dict[tuple[str, str], float | None],
    test: dict[tuple[str, str], float | None],
    site_name: str | None = None,
    outputs: str = "",
) -> str:
    unit = {"auroc": "AUROC", "mae_days": "MAE (days)"}
    who = f"Client {client}" if site_name is None else f"Site {site_name} (client {client})"
    lines = [
        f"{who}'s deployed model: {result.config.algorithm}, "
        f"K = {result.config.data.clients}, T = {result.config.stage1.rounds}, "
        f"seed {result.config.seed}; MLflow run {run_id}. Outputs: {outputs}.",
        "",
        "| objective | metric | validation | test |",
        "| --- | --- | --- | --- |",
    ]
    for s, m in sorted(val):
        lines.append(
            f"| {s} | {unit.get(m, m)} | {_text(val[(s, m)])} | {_text(test.get((s, m)))} |"
        )
    return "\n".join(lines) + "\n"


def register_client_models(
    result: ExperimentResult,
    run_id: str,
    report: EvaluationReport | None = None,
    *,
    site_name: str | None = None,
    margin: float | None = None,
) -> list[ClientRegistration]:
    """Register each client's deployed model of a logged run; move ``champion`` if better.

    Parameters
    ----------
    result
        The run's result.
    run_id
        Its MLflow run, logged with models (the ``fedcare.client_model_id.<k>`` tags).
    report
        Its validation report (:func:`~fedcare.tracking.registry.validation_report`) when
        already computed.
    site_name
        The run is this named site's own (one client): its model is registered as
        :func:`~fedcare.tracking.model_names.site_model_name` and its versions tagged
        ``fedcare.site``.
    margin
        A site re-training its model: each new version is the ``challenger`` and becomes the
        ``champion`` unless its validation score is worse by more than this
        (:func:`~fedcare.tracking.registry.register_version`).

    Returns
    -------
    list of ClientRegistration
        One per client whose validation score is defined, in client order.

    Raises
    ------
    ValueError
        If the run logged no model for a client, or ``site_name`` is given for a run of more
        than one client.
    ConfigError
        For a ``site_name`` :func:`~fedcare.tracking.model_names.check_site_name` refuses.
    """
    if site_name is not None and len(result.federation.clients) != 1:
        raise ValueError(f"site {site_name!r}: a site's run has one client")
    tags = store.client().get_run(run_id).data.tags
    val_report = report if report is not None else validation_report(result)
    dp_tags = privacy_tags(result)
    out: list[ClientRegistration] = []
    for client in result.federation.clients:
        k = client.client_id
        model_id = tags.get(f"{TAG_CLIENT_MODEL_ID}.{k}")
        if not model_id:
            raise ValueError(f"run {run_id} logged no model for client {k}")
        val, test = _client_values(val_report, k), _client_values(result.evaluation, k)
        score = client_score(val)
        if score is None:
            continue
        card = client_card(result, client, site_name)
        site_tags = {} if site_name is None else {TAG_SITE: site_name}
        metric_tags = {f"{_TAG_VAL_PREFIX}{s}.{m}": _text(v) for (s, m), v in val.items()}
        metric_tags |= {f"{_TAG_TEST_PREFIX}{s}.{m}": _text(v) for (s, m), v in test.items()}
        outputs = ", ".join(f"`{c}`" for c in card.tags[TAG_OUTPUTS].split(","))
        version, promoted = register_version(
            card.name,
            model_id,
            run_id,
            score,
            tags=metric_tags
            | {
                "fedcare.client": str(k),
                "fedcare.objectives": ",".join(client.objectives),
                "fedcare.run_id": run_id,
                "fedcare.seed": str(result.config.seed),
            }
            | site_tags
            | dp_tags,
            description=_description(result, k, run_id, val, test, site_name, outputs),
            other_score="keep",
            model_tags=card.tags,
            model_description=card.description,
            margin=margin,
        )
        reason = store.client().get_model_version(card.name, str(version)).tags.get(TAG_PROMOTION)
        out.append(ClientRegistration(k, card.name, version, promoted, score, reason or ""))
    return out


def privacy_tags(result: ExperimentResult) -> dict[str, str]:
    """A model version's privacy tags: ``fedcare.privacy`` and, under DP, ε, δ and the noise.

    Parameters
    ----------
    result
        The run whose model is registered.
    """
    record = result.to_dict().get("privacy")
    if not record:
        return {"fedcare.privacy": "none"}
    return {
        "fedcare.privacy": f"client-level DP ({record['mechanism']})",
        "fedcare.dp.epsilon": f"{float(record['epsilon']):.{METRIC_DECIMALS}g}",
        "fedcare.dp.delta": f"{float(record['delta']):.{METRIC_DECIMALS}g}",
        "fedcare.dp.noise": str(record["noise"]),
    }
