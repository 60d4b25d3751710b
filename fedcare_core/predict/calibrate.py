"""Calibrating each client's deployed model on its own validation rows (issue 31).

Binary heads train with a positive-class weight (SPEC §2), so their raw probabilities rank well
but overstate risk. Before anything is evaluated, packaged or served, every binary objective of
a client's deployed model gets a calibrator: the client's class weight undone, then whatever its
validation rows show is left (:func:`~fedcare_core.evaluation.recalibration.fit_calibrator`;
the run's ``calibration`` setting chooses the rule). Every length-of-stay objective gets a
prediction interval from the same rows, by split conformal prediction on the validation residuals
in log1p-days (:func:`~fedcare_core.evaluation.conformal.fit_conformal_interval`, nominal
coverage :data:`INTERVAL_COVERAGE`). Only the client's own rows are read, at the client: in a
multi-site federation each site calibrates its model in its own Stage 2 run.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch

from fedcare_core.data.clients import ClientData, Federation
from fedcare_core.evaluation.calibration import Calibrator
from fedcare_core.evaluation.conformal import (
    DEFAULT_COVERAGE,
    ConformalInterval,
    fit_conformal_interval,
)
from fedcare_core.evaluation.recalibration import CalibrationRule, fit_calibrator
from fedcare_core.nn.losses import make_loss
from fedcare_core.predict.predictors import ClientPredictor

__all__ = [
    "INTERVAL_COVERAGE",
    "calibrate_predictor",
    "calibrate_predictors",
    "calibration_rule",
    "fit_intervals",
]

#: Nominal coverage of a length-of-stay interval unless the caller says (the run's
#: ``interval_coverage`` setting does).
INTERVAL_COVERAGE = DEFAULT_COVERAGE


def _validation_inputs(client: ClientData) -> tuple[torch.Tensor, torch.Tensor]:
    """The client's validation rows' common and private inputs, as the predictor reads them."""
    return torch.from_numpy(client.val.x_common), torch.from_numpy(client.val.x_private)


def calibration_rule(setting: str) -> CalibrationRule:
    """The rule of the run's ``calibration`` setting (``"none"``: every map the identity)."""
    return CalibrationRule(method="identity" if setting == "none" else setting)


def calibrate_predictor(
    client: ClientData,
    predictor: ClientPredictor,
    rule: CalibrationRule,
    coverage: float = INTERVAL_COVERAGE,
) -> ClientPredictor:
    """``predictor`` calibrated on ``client``'s validation rows, with its LOS intervals.

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
    val = client.val
    x_common, x_private = _validation_inputs(client)
    calibration: dict[str, Calibrator] = {}
    for objective, kind in zip(predictor.objectives, predictor.kinds, strict=True):
        if kind != "binary":
            continue
        if objective not in client.objectives:
            calibration[objective] = Calibrator("identity", reason="not the client's objective")
            continue
        j = client.objectives.index(objective)
        preference = client.preferences.get(objective)
        weight = make_loss("binary", client.train.y[:, j], preference).pos_weight
        scores = predictor.uncalibrated(x_common, x_private, objective)
        calibration[objective] = fit_calibrator(
            val.y[:, j], np.clip(scores, 0.0, 1.0), pos_weight=weight, rule=rule
        )
    intervals = fit_intervals(client, predictor, coverage)
    return predictor.with_calibration(calibration).with_intervals(intervals)


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
        if kind != "regression":
            continue
        if objective not in client.objectives:
            out[objective] = ConformalInterval(coverage, None, 0, "not the client's objective")
            continue
        y = client.val.y[:, client.objectives.index(objective)]
        days = predictor.predict_objective(x_common, x_private, objective)
        out[objective] = fit_conformal_interval(y, days, coverage)
    return out


def calibrate_predictors(
    federation: Federation,
    predictors: Sequence[ClientPredictor],
    setting: str,
    coverage: float = INTERVAL_COVERAGE,
) -> list[ClientPredictor]:
    """:func:`calibrate_predictor` for every client, in client order.

    Parameters
    ----------
    federation
        The clients.
    predictors
        Their deployed models, in the same order.
    setting
        The run's ``calibration`` setting (:data:`~fedcare_core.config.CALIBRATION_METHODS`);
        it does not touch the length-of-stay intervals, which every setting fits.
    coverage
        Nominal coverage of the length-of-stay intervals.

    Returns
    -------
    list of ClientPredictor
        The calibrated models, with their intervals.
    """
    rule = calibration_rule(setting)
    return [
        calibrate_predictor(client, predictor, rule, coverage)
        for client, predictor in zip(federation.clients, predictors, strict=True)
    ]
