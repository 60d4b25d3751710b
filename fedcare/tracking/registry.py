"""Model registry: register a re-trained backbone and move ``champion`` only when it is better.

Each registered version keeps the score it was judged on as model-version tags, so the next
re-training compares against the champion's stored score rather than re-evaluating it. The
registered model itself carries the tags and description that say what it predicts
(:mod:`fedcare.tracking.model_names`), written when it is created and kept up to date.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import torch
from mlflow.entities.model_registry import ModelVersion
from mlflow.exceptions import MlflowException
from mlflow.protos.databricks_pb2 import (
    INVALID_PARAMETER_VALUE,
    RESOURCE_ALREADY_EXISTS,
    RESOURCE_DOES_NOT_EXIST,
    ErrorCode,
)

from fedcare.tracking import store
from fedcare.tracking.log_run import TAG_BACKBONE_MODEL_ID
from fedcare_core.evaluation.clients import EvaluationReport, evaluate
from fedcare_core.predict.predictors import predictor_scorer
from fedcare_core.run.results import ExperimentResult

#: The alias that marks the model to deploy.
CHAMPION_ALIAS = "champion"
#: Model-version tags recording what a version was judged on.
TAG_SCORE = "fedcare.score"
_TAG_SCORE_NAME = "fedcare.score_name"
_TAG_HIGHER_IS_BETTER = "fedcare.higher_is_better"
#: Whether the version took the alias when it was registered.
TAG_PROMOTED = "fedcare.promoted"
#: Why the version took the alias or not (the scores compared and the rule).
TAG_PROMOTION = "fedcare.promotion"
#: The alias a site's re-trained version takes whether or not it is promoted.
CHALLENGER_ALIAS = "challenger"
#: Why a version was not compared with the champion (judged on another score).
TAG_NOT_COMPARED = "fedcare.not_compared"
_ABSENT = {ErrorCode.Name(RESOURCE_DOES_NOT_EXIST), ErrorCode.Name(INVALID_PARAMETER_VALUE)}
#: Default name of the score (what the caller measured).
_DEFAULT_SCORE_NAME = "validation_score"


def champion(model_name: str, alias: str = CHAMPION_ALIAS) -> ModelVersion | None:
    """The version holding ``alias``, or ``None`` if the model or the alias does not exist."""
    try:
        return store.client().get_model_version_by_alias(model_name, alias)
    except MlflowException as exc:
        # A missing model is RESOURCE_DOES_NOT_EXIST, a missing alias INVALID_PARAMETER_VALUE;
        # anything else (an unreachable server) must not read as "no champion".
        if exc.error_code in _ABSENT:
            return None
        raise


def _stored_score(version: ModelVersion) -> float | None:
    raw = (version.tags or {}).get(TAG_SCORE)
    try:
        value = float(raw) if raw is not None else None
    except ValueError:
        return None
    return value if value is not None and math.isfinite(value) else None


def register_backbone(
    run_id: str,
    model_name: str,
    score: float,
    higher_is_better: bool = True,
    *,
    score_name: str = _DEFAULT_SCORE_NAME,
    alias: str = CHAMPION_ALIAS,
    model_tags: Mapping[str, str] | None = None,
    model_description: str | None = None,
) -> tuple[int, bool]:
    """Register the run's backbone as a new version and promote it if it beats the champion.

    The alias moves when no version holds it, or when ``score`` is strictly better than the
    champion's stored score. A champion without a stored score (an alias set by hand) is kept:
    there is nothing to compare with, and a person chose it.

    Parameters
    ----------
    run_id
        A run logged by :func:`fedcare.tracking.log_run.log_experiment` with models.
    model_name
        Registered model name (created on first use).
    score
        The new model's validation score (e.g. mean validation AUROC; the caller decides).
    higher_is_better
        Direction of ``score`` (``False`` for an error such as MAE).
    score_name
        What ``score`` measures; comparing with a champion judged on another score is refused.
    alias
        The alias to manage.
    model_tags, model_description
        The registered model's tags and description (:func:`register_version`).

    Returns
    -------
    tuple[int, bool]
        The new version number, and whether it now holds ``alias``.

    Raises
    ------
    ValueError
        If ``score`` is not finite, the run logged no backbone, or the champion was judged on a
        different score or direction.
    """
    model_id = store.client().get_run(run_id).data.tags.get(TAG_BACKBONE_MODEL_ID)
    if not model_id:
        raise ValueError(f"run {run_id} has no logged backbone (tag {TAG_BACKBONE_MODEL_ID})")
    return register_version(
        model_name,
        model_id,
        run_id,
        Score(score, score_name, higher_is_better),
        alias=alias,
        model_tags=model_tags,
        model_description=model_description,
    )


@dataclass(frozen=True)
class Score:
    """What a version is judged on: a value, its name and its direction."""

    value: float
    name: str = _DEFAULT_SCORE_NAME
    higher_is_better: bool = True

    def beats(self, other: float) -> bool:
        """Whether this score is strictly better than ``other``."""
        return self.value > other if self.higher_is_better else self.value < other

    def within(self, other: float, margin: float) -> bool:
        """Whether this score is not worse than ``other`` by more than ``margin``."""
        if self.higher_is_better:
            return self.value >= other - margin
        return self.value <= other + margin


def register_version(
    model_name: str,
    model_id: str,
    run_id: str,
    score: Score,
    *,
    alias: str = CHAMPION_ALIAS,
    tags: Mapping[str, str] | None = None,
    description: str | None = None,
    other_score: str = "raise",
    model_tags: Mapping[str, str] | None = None,
    model_description: str | None = None,
    margin: float | None = None,
) -> tuple[int, bool]:
    """Register a logged model as a new version of ``model_name``; move ``alias`` if it is better.

    Parameters
    ----------
    model_name
        Registered model name (created on first use).
    model_id
        The logged model (``models:/<model_id>``).
    run_id
        The run that produced it.
    score
        Its validation score.
    alias
        The alias to manage.
    tags, description
        More model-version tags, and the version's description.
    other_score
        A champion judged on another score or direction: ``"raise"`` (:class:`ValueError`) or
        ``"keep"`` (the new version is registered, not compared, not promoted, and tagged why).
        With names that say what a model predicts this is rare: a champion set by hand, or a
        version registered under an older naming.
    model_tags, model_description
        The registered model's tags and description (what it predicts, for whom): set when it
        is created, in the order given (the registry list shows the first three), and updated
        where they differ.
    margin
        Re-training at a site: the new version takes :data:`CHALLENGER_ALIAS` and ``alias``
        moves to it unless it is worse than the champion's score by more than ``margin``.
        None: ``alias`` moves only to a strictly better version.

    Returns
    -------
    tuple[int, bool]
        The new version number, and whether it now holds ``alias``. Why is in its
        :data:`TAG_PROMOTION` tag.
    """
    if not math.isfinite(score.value):
        raise ValueError(f"score must be finite, got {score.value}")
    mc = store.client()
    current = champion(model_name, alias)
    mismatch = _judged_otherwise(current, score, model_name, alias)
    if mismatch is not None and other_score == "raise":
        raise ValueError(mismatch)
    _ensure_registered_model(model_name, model_tags or {}, model_description)
    version = mc.create_model_version(
        model_name,
        source=f"models:/{model_id}",
        run_id=run_id,
        tags={
            TAG_SCORE: repr(float(score.value)),
            _TAG_SCORE_NAME: score.name,
            _TAG_HIGHER_IS_BETTER: str(score.higher_is_better).lower(),
            **(tags or {}),
        },
        description=description,
        model_id=model_id,
    )
    promote, why = _decide(current, None if mismatch else score, alias, margin)
    if margin is not None:
        mc.set_registered_model_alias(model_name, CHALLENGER_ALIAS, version.version)
    if promote:
        mc.set_registered_model_alias(model_name, alias, version.version)
    mc.set_model_version_tag(model_name, version.version, TAG_PROMOTED, str(promote).lower())
    mc.set_model_version_tag(model_name, version.version, TAG_PROMOTION, why)
    if mismatch is not None:
        mc.set_model_version_tag(model_name, version.version, TAG_NOT_COMPARED, mismatch)
    return int(version.version), promote


def _decide(
    current: ModelVersion | None, score: Score | None, alias: str, margin: float | None
) -> tuple[bool, str]:
    """Whether a new version of ``score`` takes ``alias`` from ``current``, and why.

    ``score`` None: the champion was judged otherwise and is not compared.
    """
    if current is None:
        return True, f"no {alias} yet: the first version takes it"
    best = _stored_score(current)
    if score is None or best is None:
        return False, f"{alias} version {current.version} kept: it cannot be compared"
    said = (
        f"validation {score.name} {score.value:.4f} against the {alias}'s {best:.4f} "
        f"(version {current.version})"
    )
    if margin is None:
        promote = score.beats(best)
        return promote, f"{said}: {'better' if promote else 'not better'}"
    promote = score.within(best, margin)
    verdict = f"within {margin:g}: promoted" if promote else f"worse by more than {margin:g}: kept"
    return promote, f"{said}, {verdict}"


def _ensure_registered_model(
    model_name: str, tags: Mapping[str, str], description: str | None
) -> None:
    """Create the registered model with ``tags`` and ``description``, or bring them up to date."""
    mc = store.client()
    try:
        mc.create_registered_model(model_name, tags=dict(tags), description=description)
        return
    except MlflowException as exc:
        if exc.error_code != ErrorCode.Name(RESOURCE_ALREADY_EXISTS):
            raise
    current = mc.get_registered_model(model_name)
    if description is not None and current.description != description:
        mc.update_registered_model(model_name, description=description)
    held = [key for key in current.tags if key in tags]
    if tags and held[:1] != list(tags)[:1]:
        # The registry list shows a model's first three tags in the order they were set: a
        # model made before its first tag existed gets its tags set again, in order (once).
        for key in held:
            mc.delete_registered_model_tag(model_name, key)
        held = []
    for key, value in tags.items():
        if key not in held or current.tags.get(key) != value:
            mc.set_registered_model_tag(model_name, key, value)


def _judged_otherwise(
    current: ModelVersion | None, score: Score, model_name: str, alias: str
) -> str | None:
    """Why the champion cannot be compared with ``score`` (None: it can)."""
    if current is None:
        return None
    tags = current.tags or {}
    direction = str(score.higher_is_better).lower()
    if (
        tags.get(_TAG_SCORE_NAME, score.name) == score.name
        and tags.get(_TAG_HIGHER_IS_BETTER, direction) == direction
    ):
        return None
    return (
        f"the {alias!r} version {current.version} of {model_name!r} was judged on "
        f"{tags.get(_TAG_SCORE_NAME)!r} (higher_is_better={tags.get(_TAG_HIGHER_IS_BETTER)}), "
        f"not {score.name!r} (higher_is_better={direction})"
    )


def validation_score(
    result: ExperimentResult, metric: str = "auroc", *, report: EvaluationReport | None = None
) -> float:
    """Mean over objectives (those scored with ``metric``) of the mean validation value.

    Each client is scored with the model it deploys (``result.predictors``: its personalised
    model for FedCARE, the global model for FedCARE-B and the global baselines) on its own
    validation split.

    Parameters
    ----------
    result
        A run's result.
    metric
        ``"auroc"`` (higher is better) or ``"mae_days"`` (lower is better).
    report
        :func:`validation_report` of ``result`` when already computed.

    Returns
    -------
    float
        The score.

    Raises
    ------
    ValueError
        If no objective with ``metric`` has a defined validation value.
    """
    score = defined_validation_score(result, metric, report=report)
    if score is None:
        raise ValueError(f"no objective has a defined validation {metric}")
    return score


def defined_validation_score(
    result: ExperimentResult, metric: str = "auroc", *, report: EvaluationReport | None = None
) -> float | None:
    """:func:`validation_score`, or None where no objective's validation value is defined.

    Undefined: every client's validation split of every ``metric`` objective holds one class
    (a small site, a subsampled trial), so the run cannot be ranked against a champion.
    """
    report = report if report is not None else validation_report(result)
    values = [
        o.mean_over_clients
        for o in report.objectives
        if o.metric == metric and o.mean_over_clients is not None
    ]
    return float(np.mean(values)) if values else None


def validation_report(result: ExperimentResult) -> EvaluationReport:
    """Every client scored on its validation split with the model it deploys."""
    scorers = [predictor_scorer(p) for p in result.predictors]
    with torch.no_grad():
        return evaluate(result.federation, scorers, split="val")
