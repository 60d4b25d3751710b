"""Calibrating each client's deployed model on its own validation rows (issue 31).

Binary heads train with a positive-class weight (SPEC §2), so their raw probabilities rank well
but overstate risk. Before anything is evaluated, packaged or served, every binary objective of
a client's deployed model gets a calibrator: the client's class weight undone, then whatever its
validation rows show is left (:func:`~fedcare_core.evaluation.recalibration.fit_calibrator`;
the run's ``calibration`` setting chooses the rule). Only the client's own rows are read, at
the client: in a multi-site federation each site calibrates its model in its own Stage 2 run.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch

from fedcare_core.data.clients import ClientData, Federation
from fedcare_core.evaluation.calibration import Calibrator
from fedcare_core.evaluation.recalibration import CalibrationRule, fit_calibrator
from fedcare_core.nn.losses import make_loss
from fedcare_core.predict.predictors import ClientPredictor

__all__ = ["calibrate_predictor", "calibrate_predictors", "calibration_rule"]


def calibration_rule(setting: str) -> CalibrationRule:
    """The rule of the run's ``calibration`` setting (``"none"``: every map the identity)."""
    return CalibrationRule(method="identity" if setting == "none" else setting)


def calibrate_predictor(
    client: ClientData, predictor: ClientPredictor, rule: CalibrationRule
) -> ClientPredictor:
    """``predictor`` with a calibrator per binary objective, fitted on ``client``'s validation rows.

    Parameters
    ----------
    client
        The client whose model it is (its validation split is read).
    predictor
        The model it deploys.
    rule
        How each calibrator's method is chosen.

    Returns
    -------
    ClientPredictor
        A copy sharing the network; a binary objective the client has no validation label for
        gets the identity (its reason says so).
    """
    val = client.val
    x_common, x_private = torch.from_numpy(val.x_common), torch.from_numpy(val.x_private)
    calibration: dict[str, Calibrator] = {}
    for objective, kind in zip(predictor.objectives, predictor.kinds, strict=True):
        if kind != "binary":
            continue
        if objective not in client.objectives:
            calibration[objective] = Calibrator("identity", reason="not the client's objective")
            continue
        j = client.objectives.index(objective)
        weight = make_loss("binary", client.train.y[:, j]).pos_weight
        scores = predictor.uncalibrated(x_common, x_private, objective)
        calibration[objective] = fit_calibrator(
            val.y[:, j], np.clip(scores, 0.0, 1.0), pos_weight=weight, rule=rule
        )
    return predictor.with_calibration(calibration)


def calibrate_predictors(
    federation: Federation, predictors: Sequence[ClientPredictor], setting: str
) -> list[ClientPredictor]:
    """:func:`calibrate_predictor` for every client, in client order.

    Parameters
    ----------
    federation
        The clients.
    predictors
        Their deployed models, in the same order.
    setting
        The run's ``calibration`` setting (:data:`~fedcare_core.config.CALIBRATION_METHODS`).

    Returns
    -------
    list of ClientPredictor
        The calibrated models.
    """
    rule = calibration_rule(setting)
    return [
        calibrate_predictor(client, predictor, rule)
        for client, predictor in zip(federation.clients, predictors, strict=True)
    ]
