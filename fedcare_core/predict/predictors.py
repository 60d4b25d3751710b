"""What each client deploys: one predictor over its own encoded features, whatever the method.

Every algorithm ends with one :class:`ClientPredictor` per client (SPEC §3: a client is scored
with the model it deploys). A predictor reads the client's two encoded blocks — the common
features ``x_c`` and its private features ``x_u`` — and returns one column per client
objective: a probability for a binary objective, days for length of stay. How it maps the two
blocks onto its network is the method's business:

- :class:`CommonInput`: the global model over ``x_c`` (FedCARE-B);
- :class:`PersonalInput`: the personalised model ``φ_k`` over ``x_c`` and ``x_u`` (FedCARE);
- :class:`UnionInput`: a FullMLP over the union vector, built from the two blocks (the global
  baselines, Centralised, Local);
- :class:`OwnInput`: PAFNet's client model over ``[x_c, x_u]``.

Each binary objective's probability passes through the calibrator fitted on the client's own
validation rows (:attr:`ClientPredictor.calibration`, :mod:`fedcare_core.predict.calibrate`), and
each length-of-stay prediction has a prediction interval fitted on the same rows by split
conformal prediction (:attr:`ClientPredictor.intervals`, 90 % nominal coverage by default;
:mod:`fedcare_core.evaluation.conformal`).
The evaluation scores exactly these predictors, and a packaged model
(:mod:`fedcare_core.predict.package`) rebuilds them from their :meth:`~ClientPredictor.spec` and
weights, so a deployed model predicts what the evaluation measured.
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

import numpy as np
import torch
from torch import nn

from fedcare_core.config import ModelConfig
from fedcare_core.data.clients import SplitArrays
from fedcare_core.evaluation.calibration import Calibrator
from fedcare_core.evaluation.clients import Scorer
from fedcare_core.evaluation.conformal import ConformalInterval
from fedcare_core.evaluation.interval_report import IntervalScorer
from fedcare_core.nn.models import FullMLP, MultiObjectiveModel, PersonalModel
from fedcare_core.objectives import objective_kind, predict
from fedcare_core.plugins import entry_names, load_entry

__all__ = [
    "KIND",
    "ClientPredictor",
    "CommonInput",
    "PersonalInput",
    "UnionInput",
    "config_dict",
    "config_from",
    "predictor_from_spec",
    "predictor_interval_scorer",
    "predictor_scorer",
]


def config_dict(config: ModelConfig) -> dict[str, Any]:
    """A model configuration as a predictor's spec writes it (JSON: lists for tuples)."""
    fields = dataclasses.asdict(config)
    return {k: list(v) if isinstance(v, tuple) else v for k, v in fields.items()}


def config_from(values: Mapping[str, Any]) -> ModelConfig:
    """The model configuration a spec wrote with :func:`config_dict`."""
    fields = dict(values)
    fields["head_hidden"] = tuple(fields["head_hidden"])
    return ModelConfig(**fields)


class ClientPredictor(nn.Module):
    """A client's deployed model: ``(x_c, x_u)`` → ``(n, S_k)`` predictions.

    Parameters
    ----------
    network
        The trained network (set to evaluation mode here).
    objectives
        The client's objectives, in its order: one output column each.
    kinds
        Each objective's kind (:mod:`fedcare_core.objectives`), in the order of ``objectives``.
    spec
        Everything besides the weights that rebuilds ``network`` (JSON-able; see
        :func:`predictor_from_spec`).
    """

    #: The subclass's name in a spec.
    kind: ClassVar[str]
    #: Whether its binary risks carry the training loss's class weight (calibration undoes it).
    class_weighted: ClassVar[bool] = True

    def __init__(
        self,
        network: nn.Module,
        objectives: Sequence[str],
        kinds: Mapping[str, str],
        spec: Mapping[str, Any],
    ) -> None:
        super().__init__()
        self.network = network.eval()
        self.objectives = tuple(objectives)
        self.kinds = tuple(kinds[s] for s in self.objectives)
        self._spec = dict(spec)
        #: Binary objective → the calibrator of its probability (none: uncalibrated).
        self.calibration: dict[str, Calibrator] = {}
        #: Regression objective → its prediction interval (none: no interval, NaN ends).
        self.intervals: dict[str, ConformalInterval] = {}
        #: Objective → each validation row's prediction by a model selected without that row
        #: (cross-fitting, :mod:`fedcare_core.nn.cross_fit`), which calibration reads instead
        #: of the deployed model's own; empty where training selected nothing or could not
        #: cross-fit. Never packaged.
        self.validation_outputs: dict[str, np.ndarray] = {}

    def raw(self, x_common: torch.Tensor, x_private: torch.Tensor, objective: str) -> torch.Tensor:
        """The network's raw score of ``objective`` (before the output activation)."""
        raise NotImplementedError

    def uncalibrated(
        self, x_common: torch.Tensor, x_private: torch.Tensor, objective: str
    ) -> np.ndarray:
        """The network's prediction of ``objective`` (float64): probability or days."""
        kind = self.kinds[self.objectives.index(objective)]
        with torch.no_grad():
            out = predict(kind, self.raw(x_common, x_private, objective))
        return out.numpy().astype(np.float64)

    def predict_objective(
        self, x_common: torch.Tensor, x_private: torch.Tensor, objective: str
    ) -> np.ndarray:
        """The deployed prediction of ``objective`` (float64): calibrated probability or days."""
        out = self.uncalibrated(x_common, x_private, objective)
        calibrator = self.calibration.get(objective)
        return out if calibrator is None else calibrator.apply(out)

    def interval_bounds(self, days: np.ndarray, objective: str) -> tuple[np.ndarray, np.ndarray]:
        """The prediction interval (days) of ``objective``'s predictions ``days``.

        Returns
        -------
        tuple of ndarray
            Lower and upper ends (float64); NaN throughout where ``objective`` has no interval
            (:attr:`intervals`: a binary objective, too few validation rows, an old package).
        """
        interval = self.intervals.get(objective)
        if interval is None:
            nan = np.full(np.shape(days), np.nan)
            return nan, nan.copy()
        return interval.bounds(days)

    def predict_interval(
        self, x_common: torch.Tensor, x_private: torch.Tensor, objective: str
    ) -> tuple[np.ndarray, np.ndarray]:
        """The deployed prediction interval of ``objective`` (days; see :meth:`interval_bounds`)."""
        days = self.predict_objective(x_common, x_private, objective)
        return self.interval_bounds(days, objective)

    def predictions(self, x_common: torch.Tensor, x_private: torch.Tensor) -> np.ndarray:
        """One column per client objective (float64): calibrated probability or days."""
        columns = [self.predict_objective(x_common, x_private, s) for s in self.objectives]
        return np.column_stack(columns) if columns else np.zeros((len(x_common), 0))

    def validation_predictions(
        self, x_common: torch.Tensor, x_private: torch.Tensor, objective: str
    ) -> np.ndarray:
        """The uncalibrated predictions of the validation rows that calibration is fitted on.

        ``x_common``/``x_private`` are the client's validation rows; where training selected an
        epoch on them, each row's cross-fitted prediction (:attr:`validation_outputs`) is used.
        """
        honest = self.validation_outputs.get(objective)
        if honest is not None and len(honest) == len(x_common):
            return honest
        return self.uncalibrated(x_common, x_private, objective)

    def with_validation_outputs(self, outputs: Mapping[str, np.ndarray]) -> ClientPredictor:
        """A copy (sharing the network) with :attr:`validation_outputs` ``outputs``."""
        out = copy.copy(self)
        out.validation_outputs = dict(outputs)
        return out

    def with_calibration(self, calibration: Mapping[str, Calibrator]) -> ClientPredictor:
        """A copy (sharing the network) whose binary objectives pass through ``calibration``.

        Raises
        ------
        ValueError
            If a calibrated objective is not one of the predictor's binary objectives.
        """
        pairs = zip(self.objectives, self.kinds, strict=True)
        binary = {s for s, k in pairs if objective_kind(k).risk}
        unknown = sorted(set(calibration) - binary)
        if unknown:
            raise ValueError(f"no binary objective {unknown} to calibrate; has {sorted(binary)}")
        out = copy.copy(self)
        out.calibration = dict(calibration)
        return out

    def with_intervals(self, intervals: Mapping[str, ConformalInterval]) -> ClientPredictor:
        """A copy (sharing the network) whose regression objectives have ``intervals``.

        Raises
        ------
        ValueError
            If an interval's objective is not one of the predictor's regression objectives.
        """
        pairs = zip(self.objectives, self.kinds, strict=True)
        regression = {s for s, k in pairs if objective_kind(k).interval}
        unknown = sorted(set(intervals) - regression)
        if unknown:
            raise ValueError(
                f"no regression objective {unknown} to give an interval; has {sorted(regression)}"
            )
        out = copy.copy(self)
        out.intervals = dict(intervals)
        return out

    def forward(self, x_common: torch.Tensor, x_private: torch.Tensor) -> torch.Tensor:
        """:meth:`predictions` as a float64 tensor."""
        return torch.from_numpy(self.predictions(x_common, x_private))

    def spec(self) -> dict[str, Any]:
        """Rebuild recipe: kind, objectives, kinds, network arguments, calibration, intervals."""
        return {
            "kind": self.kind,
            "objectives": list(self.objectives),
            "kinds": dict(zip(self.objectives, self.kinds, strict=True)),
            **self._spec,
            "calibration": {s: c.to_dict() for s, c in self.calibration.items()},
            "intervals": {s: i.to_dict() for s, i in self.intervals.items()},
        }


class CommonInput(ClientPredictor):
    """The global model ``w*`` over the common features (FedCARE-B)."""

    kind = "common"

    def __init__(
        self,
        model: MultiObjectiveModel,
        objectives: Sequence[str],
        kinds: Mapping[str, str],
        config: ModelConfig,
    ) -> None:
        spec = {
            "in_dim": model.backbone.in_dim,
            "heads": list(model.objectives),
            "model": config_dict(config),
        }
        super().__init__(model, objectives, kinds, spec)

    def raw(self, x_common: torch.Tensor, x_private: torch.Tensor, objective: str) -> torch.Tensor:
        """``w*``'s head of ``objective`` over ``x_c``."""
        out: torch.Tensor = self.network(x_common, objective)
        return out

    @classmethod
    def rebuild(cls, spec: Mapping[str, Any]) -> CommonInput:
        """An untrained predictor of ``spec``'s shape (load the weights next)."""
        config = config_from(spec["model"])
        model = MultiObjectiveModel(spec["in_dim"], spec["heads"], config)
        return cls(model, spec["objectives"], spec["kinds"], config)


class PersonalInput(ClientPredictor):
    """A client's personalised model ``φ_k`` over ``x_c`` and ``x_u`` (FedCARE)."""

    kind = "personal"

    def __init__(self, model: PersonalModel, kinds: Mapping[str, str], config: ModelConfig) -> None:
        spec = {
            "in_dim": model.backbone.in_dim,
            "private_dim": model.private_dim,
            "model": config_dict(config),
        }
        super().__init__(model, model.objectives, kinds, spec)

    def raw(self, x_common: torch.Tensor, x_private: torch.Tensor, objective: str) -> torch.Tensor:
        """``φ_k``'s head of ``objective``."""
        out: torch.Tensor = self.network(x_common, x_private, objective)
        return out

    @classmethod
    def rebuild(cls, spec: Mapping[str, Any]) -> PersonalInput:
        """An untrained predictor of ``spec``'s shape."""
        config = config_from(spec["model"])
        model = PersonalModel(spec["in_dim"], spec["private_dim"], spec["objectives"], config)
        return cls(model, spec["kinds"], config)


class UnionInput(ClientPredictor):
    """A FullMLP over the union vector: ``x_c`` first, ``x_u`` at the client's union positions.

    Parameters
    ----------
    model
        The FullMLP (global, pooled or the client's own).
    objectives, kinds
        As for :class:`ClientPredictor`.
    config
        Its widths.
    common_width
        Width of ``x_c`` (the union vector's first columns).
    private_index
        Union position of each of the client's private columns
        (:meth:`~fedcare_core.algorithms.union.features.UnionLayout.private_index`).
    """

    kind = "union"
    private_index: torch.Tensor

    def __init__(
        self,
        model: MultiObjectiveModel,
        objectives: Sequence[str],
        kinds: Mapping[str, str],
        config: ModelConfig,
        *,
        common_width: int,
        private_index: Sequence[int],
    ) -> None:
        spec = {
            "in_dim": model.backbone.in_dim,
            "heads": list(model.objectives),
            "model": config_dict(config),
            "common_width": int(common_width),
            "private_index": [int(i) for i in private_index],
        }
        super().__init__(model, objectives, kinds, spec)
        self.common_width = int(common_width)
        self.width = int(model.backbone.in_dim)
        self.register_buffer(
            "private_index", torch.as_tensor(np.asarray(private_index, dtype=np.int64))
        )

    def union(self, x_common: torch.Tensor, x_private: torch.Tensor) -> torch.Tensor:
        """The union vectors: zeros where the client lacks a feature."""
        out = torch.zeros((x_common.shape[0], self.width), dtype=x_common.dtype)
        out[:, : self.common_width] = x_common
        out[:, self.private_index] = x_private
        return out

    def raw(self, x_common: torch.Tensor, x_private: torch.Tensor, objective: str) -> torch.Tensor:
        """The FullMLP's head of ``objective`` over the union vector."""
        out: torch.Tensor = self.network(self.union(x_common, x_private), objective)
        return out

    @classmethod
    def rebuild(cls, spec: Mapping[str, Any]) -> UnionInput:
        """An untrained predictor of ``spec``'s shape."""
        config = config_from(spec["model"])
        model = FullMLP(spec["in_dim"], spec["heads"], config)
        return cls(
            model,
            spec["objectives"],
            spec["kinds"],
            config,
            common_width=spec["common_width"],
            private_index=spec["private_index"],
        )


#: The extension kind of predictors (:data:`fedcare_core.plugins.GROUPS`): an entry's name is
#: the ``kind`` its class writes in :meth:`ClientPredictor.spec`.
KIND = "predictor"


def predictor_from_spec(
    spec: Mapping[str, Any], weights: Mapping[str, torch.Tensor]
) -> ClientPredictor:
    """Rebuild a predictor from :meth:`ClientPredictor.spec` and its ``state_dict``.

    Parameters
    ----------
    spec
        The rebuild recipe.
    weights
        The predictor's ``state_dict()`` (every parameter and buffer).

    Returns
    -------
    ClientPredictor
        The predictor, in evaluation mode. Its class is the ``fedcare.predictors`` entry of
        the spec's kind, imported now (XGBoost only for a package of trees).

    Raises
    ------
    ValueError
        If ``spec`` names an unknown kind, or ``weights`` do not fit its shape.
    """
    kind = str(spec.get("kind"))
    if kind not in entry_names(KIND):
        raise ValueError(
            f"unknown predictor kind {spec.get('kind')!r}; expected one of "
            f"{', '.join(entry_names(KIND))}"
        )
    predictor: ClientPredictor = load_entry(KIND, kind).rebuild(spec)
    try:
        predictor.load_state_dict(dict(weights), strict=True)
    except RuntimeError as exc:
        raise ValueError(f"the weights do not fit the {spec['kind']} predictor: {exc}") from exc
    calibration = {
        str(s): Calibrator.from_dict(c) for s, c in dict(spec.get("calibration", {})).items()
    }
    # A spec written before intervals (issue 31) has none: its LOS intervals are NaN.
    intervals = {
        str(s): ConformalInterval.from_dict(i) for s, i in dict(spec.get("intervals", {})).items()
    }
    return predictor.with_calibration(calibration).with_intervals(intervals).eval()


def predictor_scorer(predictor: ClientPredictor, *, calibrated: bool = True) -> Scorer:
    """The evaluation's scorer of a client's split: the predictor's prediction per objective.

    Parameters
    ----------
    predictor
        The client's deployed model.
    calibrated
        Score with its calibrators (what it deploys); False: the network's own probabilities.
    """
    predictor.eval()
    method = predictor.predict_objective if calibrated else predictor.uncalibrated

    def score(split: SplitArrays, objective: str) -> np.ndarray:
        x_common, x_private = torch.from_numpy(split.x_common), torch.from_numpy(split.x_private)
        return method(x_common, x_private, objective)

    return score


def predictor_interval_scorer(predictor: ClientPredictor) -> IntervalScorer:
    """The evaluation's interval scorer of a client's split: each row's interval, in days.

    Parameters
    ----------
    predictor
        The client's deployed model (NaN ends for an objective without an interval).
    """
    predictor.eval()

    def score(split: SplitArrays, objective: str) -> tuple[np.ndarray, np.ndarray]:
        x_common, x_private = torch.from_numpy(split.x_common), torch.from_numpy(split.x_private)
        return predictor.predict_interval(x_common, x_private, objective)

    return score
