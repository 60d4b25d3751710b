"""Track one finished run: log it, then register its backbone and every client's model.

The one entry shared by the Prefect flow (:mod:`tasks.tracking`) and ``fedcare run
--tracking-uri``, so a run tracked either way has the same runs, λ* traces, models and
registry versions.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fedcare.tracking import log_run, registry
from fedcare.tracking.client_registry import ClientRegistration, register_client_models
from fedcare.tracking.model_names import (
    BACKBONE_MODEL_TEMPLATE,
    backbone_card,
    backbone_model_name,
)
from fedcare_core.algorithms import get_algorithm
from fedcare_core.run.results import ExperimentResult

__all__ = [
    "BACKBONE_MODEL_TEMPLATE",
    "BackboneRegistration",
    "Registrations",
    "TrackedRun",
    "backbone_model_name",
    "register_run",
    "track_result",
]


@dataclass(frozen=True)
class BackboneRegistration:
    """The backbone's new version.

    Parameters
    ----------
    model_name
        Registered model name.
    version
        The new version.
    promoted
        Whether it took the ``champion`` alias.
    score
        Its validation score (mean validation AUROC over the binary objectives).
    """

    model_name: str
    version: int
    promoted: bool
    score: float


@dataclass(frozen=True)
class Registrations:
    """What registering a run added: the backbone's version (FedCARE methods) and the clients'."""

    backbone: BackboneRegistration | None = None
    clients: list[ClientRegistration] = field(default_factory=list)

    def versions(self) -> list[tuple[str, int, bool]]:
        """``(model name, version, promoted)`` of every new version, the backbone first."""
        backbone = self.backbone
        head = (
            [] if backbone is None else [(backbone.model_name, backbone.version, backbone.promoted)]
        )
        return head + [(c.model_name, c.version, c.promoted) for c in self.clients]

    def summary(self) -> dict[str, Any]:
        """A JSON-able summary (for a flow's result and a command's output)."""
        out: dict[str, Any] = {}
        if self.backbone is not None:
            out["registry"] = {
                "model": self.backbone.model_name,
                "version": self.backbone.version,
                "promoted": self.backbone.promoted,
                "validation_score": self.backbone.score,
            }
        out["client_models"] = [
            {
                "client": c.client,
                "model": c.model_name,
                "version": c.version,
                "promoted": c.promoted,
                "validation_score": c.score.value,
                "score_name": c.score.name,
                "promotion": c.reason,
            }
            for c in self.clients
        ]
        return out


def register_run(
    result: ExperimentResult,
    run_id: str,
    *,
    site_name: str | None = None,
    margin: float | None = None,
) -> Registrations:
    """Register a logged run's backbone (FedCARE and FedCARE-B) and every client's model.

    Parameters
    ----------
    result
        The run's result.
    run_id
        Its MLflow run, logged with models.
    site_name
        The run is this named site's own Stage 2 from the federation's ``w*``: only the site's
        model is registered, under the site's name
        (:func:`~fedcare.tracking.model_names.site_model_name`); the backbone is the
        coordinator's to register (it stays logged with the run).
    margin
        A site re-training: its new version is the challenger, and the champion unless worse
        by more than this on the site's validation rows (None: only a better one).

    Returns
    -------
    Registrations
        The new versions, and which took ``champion``.
    """
    backbone = None
    report = registry.validation_report(result)  # scored once, for the backbone and the clients
    # A backbone without a defined validation score cannot be ranked against the champion: it
    # stays logged with its run, unregistered (as a client's model without one).
    score = registry.defined_validation_score(result, report=report)
    if (
        get_algorithm(result.config.algorithm).runs_stage1
        and site_name is None
        and score is not None
    ):
        card = backbone_card(result)
        version, promoted = registry.register_backbone(
            run_id, card.name, score, model_tags=card.tags, model_description=card.description
        )
        backbone = BackboneRegistration(card.name, version, promoted, score)
    clients = register_client_models(result, run_id, report, site_name=site_name, margin=margin)
    return Registrations(backbone, clients)


@dataclass(frozen=True)
class TrackedRun:
    """A logged run and what registering it added."""

    run_id: str
    registrations: Registrations


def track_result(
    result: ExperimentResult,
    *,
    parent_run_id: str | None = None,
    flow_run_id: str | None = None,
    extra_artifacts: Mapping[str, str | Path] | None = None,
    tags: Mapping[str, str] | None = None,
    register: bool = True,
    site_name: str | None = None,
    margin: float | None = None,
) -> TrackedRun:
    """Log a run with its models (:func:`~fedcare.tracking.log_run.log_experiment`), then register.

    Call :func:`fedcare.tracking.store.configure` first.

    Parameters
    ----------
    result
        The run's result.
    parent_run_id, flow_run_id, extra_artifacts, tags
        As for :func:`~fedcare.tracking.log_run.log_experiment`.
    register
        Register the backbone and the clients' models (:func:`register_run`).
    site_name, margin
        As for :func:`register_run`.

    Returns
    -------
    TrackedRun
        The run id and the registrations.
    """
    run_id = log_run.log_experiment(
        result,
        parent_run_id=parent_run_id,
        flow_run_id=flow_run_id,
        extra_artifacts=extra_artifacts,
        tags=tags,
    )
    registrations = (
        register_run(result, run_id, site_name=site_name, margin=margin)
        if register
        else Registrations()
    )
    return TrackedRun(run_id, registrations)
