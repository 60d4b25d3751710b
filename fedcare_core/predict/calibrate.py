"""Calibrating each client's deployed model on validation rows (issue 31).

Binary heads train with a positive-class weight (SPEC §2), so their raw probabilities rank well
but overstate risk. Before anything is evaluated, packaged or served, every binary objective of
a client's deployed model gets a calibrator: the client's class weight undone, then what the
validation rows show is left. Where training chose an epoch on those rows, each row's
prediction comes from the epoch the other folds of them chose (cross-fitting,
:mod:`fedcare_core.nn.cross_fit`), so that the selection's optimism is not taken for
calibration. By default (``calibration = auto``) that is one recalibration fitted across the
clients that pursue the objective from a few numbers each, a shared slope and site intercepts
shrunk toward their mean (:mod:`fedcare_core.evaluation.federated_recalibration`); ``local`` is
each client's own closed test (:func:`~fedcare_core.evaluation.recalibration.fit_calibrator`),
which is also what a site of a multi-site federation does in its own Stage 2 run.
Every length-of-stay objective gets a prediction interval from the client's rows, by split
conformal prediction on the (likewise cross-fitted) validation residuals in log1p-days
(:func:`~fedcare_core.evaluation.conformal.fit_conformal_interval`, nominal coverage
:data:`INTERVAL_COVERAGE`). Rows are read only at their client.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import torch

from fedcare_core.data.clients import ClientData, Federation
from fedcare_core.evaluation.calibration import Calibrator
from fedcare_core.evaluation.conformal import (
    DEFAULT_COVERAGE,
    ConformalInterval,
    fit_conformal_interval,
)
from fedcare_core.evaluation.federated_recalibration import (
    SiteValidation,
    federated_calibrators,
)
from fedcare_core.evaluation.recalibration import CalibrationRule, fit_calibrator
from fedcare_core.objectives import make_loss, objective_kind
from fedcare_core.predict.predictors import ClientPredictor

__all__ = [
    "INTERVAL_COVERAGE",
    "calibrate_predictor",
    "calibrate_predictors",
    "calibration_rule",
    "class_weight",
    "federation_class_weight",
    "fit_intervals",
]

#: Nominal coverage of a length-of-stay interval unless the caller says (the run's
#: ``interval_coverage`` setting does).
INTERVAL_COVERAGE = DEFAULT_COVERAGE


def _validation_inputs(client: ClientData) -> tuple[torch.Tensor, torch.Tensor]:
    """The client's validation rows' common and private inputs, as the predictor reads them."""
    return torch.from_numpy(client.val.x_common), torch.from_numpy(client.val.x_private)


def calibration_rule(setting: str) -> CalibrationRule:
    """The rule of the run's ``calibration`` setting (``"none"``: every map the identity).

    ``auto`` and ``local`` share the closed test's rule (``auto`` runs it across the clients).
    """
    method = {"none": "identity", "local": "auto"}.get(setting, setting)
    return CalibrationRule(method=method)


def class_weight(client: ClientData, objective: str, kind: str) -> float:
    """The positive-class weight ``client``'s training loss gave ``objective``, a risk (SPEC §2)."""
    j = client.objectives.index(objective)
    loss = make_loss(kind, client.train.y[:, j], client.preferences.get(objective))
    return loss.pos_weight


def federation_class_weight(clients: Sequence[ClientData], objective: str, kind: str) -> float:
    """The class weight a model shared by ``clients`` learned ``objective`` under.

    A model trained on every client's loss (FedAvg's, FedProx's, the pooled model's) sees each
    client's positives weighted by that client's own weight, so its scores carry the mean of the
    weights over the positives: ``Σ_k pos_k w_k / Σ_k pos_k``, which is the pooled
    ``negatives / positives`` for plain losses. Each client sends two counts.

    Returns
    -------
    float
        The weight (1.0 where no client has a positive training label).
    """
    weighted, positives = 0.0, 0
    for client in clients:
        if objective not in client.objectives:
            continue
        y = client.train.y[:, client.objectives.index(objective)]
        n_pos = int((y[np.isfinite(y)] > 0.5).sum())
        weighted += n_pos * class_weight(client, objective, kind)
        positives += n_pos
    return weighted / positives if positives else 1.0


def _site_validation(
    client: ClientData,
    predictor: ClientPredictor,
    weights: Mapping[str, float] | None = None,
) -> dict[str, SiteValidation | None]:
    """Each binary objective's validation labels and raw scores at ``client`` (None: not its).

    ``weights``: each objective's class weight to undo (:func:`federation_class_weight` for a
    shared model); by default the client's own (:func:`class_weight`).
    """
    val = client.val
    x_common, x_private = _validation_inputs(client)
    out: dict[str, SiteValidation | None] = {}
    for objective, kind in zip(predictor.objectives, predictor.kinds, strict=True):
        if not objective_kind(kind).risk:
            continue
        if objective not in client.objectives:
            out[objective] = None
            continue
        j = client.objectives.index(objective)
        if not predictor.class_weighted:
            weight = 1.0  # trained without a class weight: nothing to undo
        else:
            weight = (weights or {}).get(objective) or class_weight(client, objective, kind)
        scores = predictor.validation_predictions(x_common, x_private, objective)
        out[objective] = SiteValidation(val.y[:, j], np.clip(scores, 0.0, 1.0), weight)
    return out


def _own_calibration(
    sites: dict[str, SiteValidation | None], rule: CalibrationRule
) -> dict[str, Calibrator]:
    """Each objective's calibrator from the client's own rows alone."""
    return {
        objective: Calibrator("identity", reason="not the client's objective")
        if site is None
        else fit_calibrator(site.y, site.scores, pos_weight=site.pos_weight, rule=rule)
        for objective, site in sites.items()
    }


def calibrate_predictor(
    client: ClientData,
    predictor: ClientPredictor,
    rule: CalibrationRule,
    coverage: float = INTERVAL_COVERAGE,
) -> ClientPredictor:
    """``predictor`` calibrated on ``client``'s validation rows alone, with its LOS intervals.

    Parameters
    ----------
    client
        The client whose model it is (its validation split is read).
    predictor
        The model it deploys.
    rule
        How each binary objective's calibrator's method is chosen.
    coverage
        Nominal coverage of each regression objective's interval (:func:`fit_intervals`).

    Returns
    -------
    ClientPredictor
        A copy sharing the network, with a calibrator per binary objective and an interval per
        regression objective; a binary objective the client has no validation label for gets
        the identity (its reason says so).
    """
    calibration = _own_calibration(_site_validation(client, predictor), rule)
    intervals = fit_intervals(client, predictor, coverage)
    return _deployed(predictor, calibration, intervals)


def _deployed(
    predictor: ClientPredictor,
    calibration: dict[str, Calibrator],
    intervals: dict[str, ConformalInterval],
) -> ClientPredictor:
    """``predictor`` with its calibration and intervals, its validation predictions dropped."""
    fitted = predictor.with_calibration(calibration).with_intervals(intervals)
    return fitted.with_validation_outputs({})


def fit_intervals(
    client: ClientData, predictor: ClientPredictor, coverage: float = INTERVAL_COVERAGE
) -> dict[str, ConformalInterval]:
    """A split-conformal interval per regression objective, from ``client``'s validation rows.

    Parameters
    ----------
    client
        The client whose model it is (its validation split is read).
    predictor
        The model it deploys.
    coverage
        Nominal coverage of each interval (0.9 by default).

    Returns
    -------
    dict
        Regression objective → its interval; none (with the reason) when the client has too few
        labelled validation rows for ``coverage`` or does not pursue the objective.
    """
    x_common, x_private = _validation_inputs(client)
    out: dict[str, ConformalInterval] = {}
    for objective, kind in zip(predictor.objectives, predictor.kinds, strict=True):
        if not objective_kind(kind).interval:
            continue
        if objective not in client.objectives:
            out[objective] = ConformalInterval(coverage, None, 0, "not the client's objective")
            continue
        y = client.val.y[:, client.objectives.index(objective)]
        days = predictor.validation_predictions(x_common, x_private, objective)
        out[objective] = fit_conformal_interval(y, days, coverage)
    return out


def calibrate_predictors(
    federation: Federation,
    predictors: Sequence[ClientPredictor],
    setting: str,
    coverage: float = INTERVAL_COVERAGE,
    *,
    shared: bool = False,
) -> list[ClientPredictor]:
    """Every client's deployed model calibrated, with its length-of-stay intervals.

    Parameters
    ----------
    federation
        The clients.
    predictors
        Their deployed models, in the same order.
    setting
        The run's ``calibration`` setting (:data:`~fedcare_core.config.CALIBRATION_METHODS`):
        ``auto`` recalibrates each binary objective across the clients that pursue it, from a
        few numbers per client
        (:func:`~fedcare_core.evaluation.federated_recalibration.federated_calibrators`);
        ``local`` is each client's own closed test (:func:`calibrate_predictor`); the others
        force a method. It does not touch the length-of-stay intervals, which every setting
        fits.
    coverage
        Nominal coverage of the length-of-stay intervals.
    shared
        Whether every client deploys one model trained on all their losses (FedAvg, the pooled
        model): under ``auto`` the class weight undone is then the federation's
        (:func:`federation_class_weight`), not each client's own, whose noise at a small site
        would shift its risks away from the others'.

    Returns
    -------
    list of ClientPredictor
        The calibrated models, with their intervals, in client order.
    """
    rule = calibration_rule(setting)
    clients = federation.clients
    if setting != "auto":
        return [
            calibrate_predictor(client, predictor, rule, coverage)
            for client, predictor in zip(clients, predictors, strict=True)
        ]
    risks = {o.name: o.kind for o in federation.objectives if objective_kind(o.kind).risk}
    weights = (
        {o: federation_class_weight(clients, o, k) for o, k in risks.items()} if shared else None
    )
    sites = [_site_validation(c, p, weights) for c, p in zip(clients, predictors, strict=True)]
    calibrations: list[dict[str, Calibrator]] = [{} for _ in sites]
    for objective in dict.fromkeys(o for s in sites for o in s):
        fitted = federated_calibrators([s.get(objective) for s in sites], rule)
        for calibration, calibrator in zip(calibrations, fitted, strict=True):
            calibration[objective] = calibrator
    return [
        _deployed(
            predictor,
            {o: calibration[o] for o in site},
            fit_intervals(client, predictor, coverage),
        )
        for client, predictor, site, calibration in zip(
            clients, predictors, sites, calibrations, strict=True
        )
    ]
