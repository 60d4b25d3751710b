"""XGBoost's part of federated boosted trees: a client's new trees, the ensemble they join, margins.

An objective's federated model is an **ensemble**: a base margin and a list of trees, kept as
XGBoost's own JSON (the model format Flower's XGBoost strategies exchange). A client boosts
new trees on its rows from the ensemble's margin there (:func:`boost`, XGBoost's
``base_margin``: continuing from the ensemble without reloading it); the server appends them
(:meth:`Ensemble.append`, the tree concatenation of Flower's ``aggregate_bagging``). Margins of
new trees alone come from a booster holding only them (:meth:`Ensemble.margin` with ``start``),
so a client updates its margins round by round instead of re-scoring the whole ensemble.

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


@dataclass
class Ensemble:
    """One objective's federated trees: a base margin and the trees, in order.

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
    """

    kind: str
    header: dict[str, Any]
    base: float
    trees: list[dict[str, Any]] = field(default_factory=list)

    @classmethod
    def first(cls, kind: str, boosters: list[tuple[xgb.Booster, int]]) -> Ensemble:
        """The ensemble of round 1's boosters (each from scratch), weighted by their rows.

        Its base margin is the row-weighted mean of the boosters' own; their trees follow.
        """
        models = [_model(b) for b, _ in boosters]
        rows = np.array([n for _, n in boosters], dtype=np.float64)
        bases = np.array([_base_margin(kind, m) for m in models])
        base = float(rows @ bases / rows.sum()) if rows.sum() > 0 else float(bases.mean())
        out = cls(kind, _header(models[0]), base)
        for model in models:
            out.trees.extend(_trees(model))
        return out

    def truncated(self, trees: int) -> Ensemble:
        """The ensemble of its first ``trees`` trees (the same base margin)."""
        return Ensemble(self.kind, self.header, self.base, self.trees[:trees])

    def append(self, booster: xgb.Booster) -> None:
        """Add a client's new trees (bagging; a cyclic round replaces the ensemble instead)."""
        self.trees.extend(_trees(_model(booster)))

    def booster(self, start: int = 0, *, with_base: bool = True) -> xgb.Booster:
        """An XGBoost booster of trees ``start:`` (with the base margin, or from 0)."""
        model = copy.deepcopy(self.header)
        base = self.base if with_base else 0.0
        score = 1 / (1 + np.exp(-base)) if self.kind == "binary" else base
        model["learner"]["learner_model_param"]["base_score"] = f"[{score:.9E}]"
        gbm = model["learner"]["gradient_booster"]["model"]
        trees = [dict(t, id=i) for i, t in enumerate(self.trees[start:])]
        gbm["trees"] = trees
        gbm["tree_info"] = [0] * len(trees)
        gbm["iteration_indptr"] = list(range(len(trees) + 1))
        gbm["gbtree_model_param"]["num_trees"] = str(len(trees))
        out = xgb.Booster()
        out.load_model(bytearray(json.dumps(model).encode()))
        return out

    def margin(self, x: np.ndarray, start: int = 0, threads: int = 1) -> np.ndarray:
        """Rows ``x``'s margin: the base plus every tree (``start`` > 0: trees ``start:`` alone)."""
        if start >= len(self.trees) and start > 0:
            return np.zeros(len(x))
        booster = self.booster(start, with_base=start == 0)
        booster.set_param({"nthread": threads})
        out = booster.predict(xgb.DMatrix(x, nthread=threads), output_margin=True)
        return np.asarray(out, dtype=np.float64)

    def to_json(self) -> bytes:
        """The ensemble as XGBoost JSON (what a round's message carries; :meth:`from_json`)."""
        return bytes(self.booster().save_raw("json"))

    @classmethod
    def from_json(cls, kind: str, raw: bytes) -> Ensemble:
        """The ensemble of XGBoost JSON ``raw`` (:meth:`to_json`), trees in their order."""
        model: dict[str, Any] = json.loads(raw)
        return cls(kind, _header(model), _base_margin(kind, model), list(_trees(model)))

    def to_bytes(self) -> bytes:
        """The ensemble as one XGBoost model (UBJSON): what a packaged model stores."""
        return bytes(self.booster().save_raw("ubj"))


def _header(model: dict[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(model)
    out["learner"]["gradient_booster"]["model"]["trees"] = []
    return out


def _trees(model: dict[str, Any]) -> list[dict[str, Any]]:
    trees: list[dict[str, Any]] = model["learner"]["gradient_booster"]["model"]["trees"]
    return trees
