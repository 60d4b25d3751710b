"""XGBoost's part of federated boosted trees: a client's new trees, the ensemble they join, margins.

An objective's federated model is an **ensemble**: a base margin and a list of trees, kept as
XGBoost's own JSON (the model format Flower's XGBoost strategies exchange). A client boosts
new trees on its rows from the ensemble's margin there (:func:`boost`, XGBoost's
``base_margin``: continuing from the ensemble without reloading it); the server appends them
(:meth:`Ensemble.append_round`, the tree concatenation of Flower's ``aggregate_bagging``). A
margin is summed round block by round block (:meth:`Ensemble.margin`), so a client updates its
margins with the new rounds' trees alone, to the same numbers as a fresh score.

Binary objectives train ``binary:logistic`` without a class weight (trees need none, and their
risks then need no weight undone); length of stay trains ``reg:absoluteerror`` on
``log1p(days)`` (the median in log space: what MAE in days rewards), and its prediction is
``expm1`` of the margin, at least 0.
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import xgboost as xgb

__all__ = ["Ensemble", "TreeSettings", "base_margin", "boost", "margin_loss", "target"]

_OBJECTIVES = {"binary": "binary:logistic", "regression": "reg:absoluteerror"}


@dataclass(frozen=True)
class TreeSettings:
    """How one objective's trees are grown.

    Parameters
    ----------
    kind
        ``"binary"`` or ``"regression"``.
    eta
        Learning rate of each tree (bagging's round rate divided by the round's trees).
    depth
        XGBoost's ``max_depth``.
    seed
        XGBoost's seed (the trees draw nothing at the defaults; kept for the record).
    threads
        XGBoost's ``nthread`` (1: the same trees on every machine and backend).
    """

    kind: str
    eta: float
    depth: int
    seed: int = 0
    threads: int = 1

    def params(self) -> dict[str, Any]:
        """XGBoost's parameters."""
        return {
            "objective": _OBJECTIVES[self.kind],
            "eta": self.eta,
            "max_depth": self.depth,
            "tree_method": "hist",
            "nthread": self.threads,
            "seed": self.seed,
            "verbosity": 0,
        }


def target(kind: str, y: np.ndarray) -> np.ndarray:
    """The label trees fit: the label itself, or ``log1p(days)`` for a regression."""
    y = np.asarray(y, dtype=np.float64)
    return np.log1p(np.maximum(y, 0.0)) if kind == "regression" else y


def margin_loss(kind: str, y: np.ndarray, margin: np.ndarray) -> float:
    """Mean loss at ``margin``: log loss (binary), or absolute error in log1p-days."""
    if kind == "binary":
        return float(np.mean(np.logaddexp(0.0, margin) - y * margin))
    return float(np.mean(np.abs(y - np.maximum(margin, 0.0))))


def boost(
    x: np.ndarray,
    y: np.ndarray,
    margin: np.ndarray | None,
    settings: TreeSettings,
    rounds: int,
) -> xgb.Booster:
    """``rounds`` new trees fitted to rows ``x`` from ``margin`` (None: from scratch).

    Parameters
    ----------
    x
        Features (float32 (n, d); NaN is missing).
    y
        The fitted target (:func:`target`), finite.
    margin
        The ensemble's margin on each row (None: XGBoost's own base score).
    settings
        How the trees are grown.
    rounds
        Trees to add.

    Returns
    -------
    xgboost.Booster
        The new trees alone (with the base score XGBoost chose when ``margin`` is None).
    """
    matrix = xgb.DMatrix(x, label=y, base_margin=margin, nthread=settings.threads)
    return xgb.train(settings.params(), matrix, num_boost_round=rounds)


def _model(booster: xgb.Booster) -> dict[str, Any]:
    raw: dict[str, Any] = json.loads(bytes(booster.save_raw("json")))
    return raw


def base_margin(kind: str, booster: xgb.Booster) -> float:
    """The margin ``booster``'s predictions start from (its base score)."""
    return _base_margin(kind, _model(booster))


def _base_margin(kind: str, model: dict[str, Any]) -> float:
    """The margin of a model's base score (XGBoost stores a probability for logistic)."""
    score = float(str(model["learner"]["learner_model_param"]["base_score"]).strip("[]"))
    if kind == "binary":
        score = min(max(score, 1e-12), 1 - 1e-12)
        return float(np.log(score / (1 - score)))
    return score


#: The XGBoost model attributes that keep an ensemble's round boundaries and its exact base
#: margin (XGBoost's ``base_score`` is a rounded probability) in its JSON.
_ROUNDS_ATTRIBUTE = "fedcare_rounds"
_BASE_ATTRIBUTE = "fedcare_base"


@dataclass
class Ensemble:
    """One objective's federated trees: a base margin and the trees, in order, round by round.

    Parameters
    ----------
    kind
        ``"binary"`` or ``"regression"``.
    header
        An XGBoost JSON model whose learner settings the ensemble keeps (its trees are
        replaced).
    base
        The margin every prediction starts from.
    trees
        XGBoost JSON trees, in the order they were added.
    bounds
        The number of trees at the end of each round (a round's trees are one block).

    Notes
    -----
    A margin is the base plus each round's block of trees, summed in float64 in round order
    (:meth:`margin`). A client that kept its rows' margin adds only the new rounds' blocks,
    which gives the same numbers as scoring the whole ensemble afresh, so a client that lost
    its margins (another process, a restart) still boosts the same trees.
    """

    kind: str
    header: dict[str, Any]
    base: float
    trees: list[dict[str, Any]] = field(default_factory=list)
    bounds: list[int] = field(default_factory=list)

    @classmethod
    def first(cls, kind: str, boosters: list[tuple[xgb.Booster, int]]) -> Ensemble:
        """The ensemble of round 1's boosters (each from scratch), weighted by their rows.

        Its base margin is the row-weighted mean of the boosters' own; their trees follow,
        as round 1's block.
        """
        models = [_model(b) for b, _ in boosters]
        rows = np.array([n for _, n in boosters], dtype=np.float64)
        bases = np.array([_base_margin(kind, m) for m in models])
        base = float(rows @ bases / rows.sum()) if rows.sum() > 0 else float(bases.mean())
        out = cls(kind, _header(models[0]), base)
        for model in models:
            out.trees.extend(_trees(model))
        out.bounds.append(len(out.trees))
        return out

    def truncated(self, trees: int) -> Ensemble:
        """The ensemble of its first ``trees`` trees (a round's end; the same base margin)."""
        bounds = [b for b in self.bounds if b <= trees]
        return Ensemble(self.kind, self.header, self.base, self.trees[:trees], bounds)

    def append_round(self, boosters: list[xgb.Booster]) -> None:
        """Add a round's new trees, in order, as one block (bagging's tree concatenation)."""
        for booster in boosters:
            self.trees.extend(_trees(_model(booster)))
        if self.trees and (not self.bounds or self.bounds[-1] < len(self.trees)):
            self.bounds.append(len(self.trees))

    def booster(
        self, start: int = 0, stop: int | None = None, *, with_base: bool = True
    ) -> xgb.Booster:
        """An XGBoost booster of trees ``start:stop`` (with the base margin, or from 0)."""
        model = copy.deepcopy(self.header)
        base = self.base if with_base else 0.0
        score = 1 / (1 + np.exp(-base)) if self.kind == "binary" else base
        model["learner"]["learner_model_param"]["base_score"] = f"[{score:.9E}]"
        gbm = model["learner"]["gradient_booster"]["model"]
        trees = [dict(t, id=i) for i, t in enumerate(self.trees[start:stop])]
        gbm["trees"] = trees
        gbm["tree_info"] = [0] * len(trees)
        gbm["iteration_indptr"] = list(range(len(trees) + 1))
        gbm["gbtree_model_param"]["num_trees"] = str(len(trees))
        out = xgb.Booster()
        out.load_model(bytearray(json.dumps(model).encode()))
        return out

    def margin(
        self, x: np.ndarray, blocks_done: int = 0, done: np.ndarray | None = None
    ) -> np.ndarray:
        """Rows ``x``'s margin: the base plus every round's block of trees (class notes).

        ``done``: the margin of the first ``blocks_done`` blocks, which are not scored again
        (None: start from the base).
        """
        margin = np.full(len(x), self.base) if done is None else done
        starts = [0, *self.bounds]
        for b in range(blocks_done if done is not None else 0, len(self.bounds)):
            booster = self.booster(starts[b], starts[b + 1], with_base=False)
            block = booster.predict(xgb.DMatrix(x, nthread=1), output_margin=True)
            margin = margin + np.asarray(block, dtype=np.float64)
        return margin

    def to_json(self) -> bytes:
        """The ensemble as XGBoost JSON, its round bounds an attribute (:meth:`from_json`)."""
        booster = self.booster()
        rounds = ",".join(map(str, self.bounds))
        booster.set_attr(**{_ROUNDS_ATTRIBUTE: rounds, _BASE_ATTRIBUTE: repr(float(self.base))})
        return bytes(booster.save_raw("json"))

    @classmethod
    def from_json(cls, kind: str, raw: bytes) -> Ensemble:
        """The ensemble of XGBoost JSON ``raw`` (:meth:`to_json`), trees in their order."""
        model: dict[str, Any] = json.loads(raw)
        trees = list(_trees(model))
        attributes = model["learner"].get("attributes", {})
        kept = attributes.get(_ROUNDS_ATTRIBUTE, "")
        bounds = [int(b) for b in kept.split(",") if b] or ([len(trees)] if trees else [])
        base = float(attributes.get(_BASE_ATTRIBUTE, _base_margin(kind, model)))
        return cls(kind, _header(model), base, trees, bounds)

    def to_bytes(self) -> bytes:
        """The ensemble as one XGBoost model (UBJSON): what a packaged model stores."""
        return bytes(self.booster().save_raw("ubj"))


def _header(model: dict[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(model)
    out["learner"]["gradient_booster"]["model"]["trees"] = []
    for name in (_ROUNDS_ATTRIBUTE, _BASE_ATTRIBUTE):
        out["learner"].get("attributes", {}).pop(name, None)
    return out


def _trees(model: dict[str, Any]) -> list[dict[str, Any]]:
    trees: list[dict[str, Any]] = model["learner"]["gradient_booster"]["model"]["trees"]
    return trees
