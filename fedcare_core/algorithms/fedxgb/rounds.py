"""Federated boosted trees' rounds: the client step, the server step, and the in-process loop.

One ensemble per objective (:class:`~fedcare_core.algorithms.fedxgb.trees.Ensemble`), trained
by the clients that pursue it, on their common features. Each round:

- **bagging** (Flower's ``FedXgbBagging``): every client pursuing the objective boosts
  ``fedxgb_local_trees`` trees from the ensemble's margin on its training rows; the server
  appends them all, in client-id order. Each client's trees take ``eta / K_s`` (K_s: the
  clients pursuing the objective), so a round's trees together take one step of ``eta``, as
  NVIDIA FLARE's scaled learning rate does; Flower's own examples leave it to the user.
- **cyclic** (Flower's ``FedXgbCyclic``): one client a round, in client order (round t asks
  client ``(t − 1) mod K``), boosts on every objective it pursues, at the full ``eta``.

Round 1 starts every ensemble from scratch: each client's trees start from XGBoost's base
score on its rows, and the ensemble's base margin is their row-weighted mean
(:meth:`~fedcare_core.algorithms.fedxgb.trees.Ensemble.first`).

A client keeps its training rows' margin between rounds and adds only the trees appended
since it last took part (:class:`ClientMargins`), the same arithmetic in process and over
Flower, so both give the same trees.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import xgboost as xgb

from fedcare_core.algorithms.fedxgb.trees import (
    Ensemble,
    TreeSettings,
    base_margin,
    boost,
    margin_loss,
    target,
)
from fedcare_core.config import BaselineConfig
from fedcare_core.data.clients import ClientData, Federation
from fedcare_core.nn.training import ProgressFn
from fedcare_core.stage1.types import RoundInfo

__all__ = [
    "ClientMargins",
    "ClientTrees",
    "TreeRounds",
    "aggregate",
    "client_boost",
    "client_validation",
    "round_participants",
    "run_rounds",
]


@dataclass(frozen=True)
class ClientTrees:
    """A client's reply for one objective: its new trees, its rows, its loss before them."""

    client_id: int
    booster: xgb.Booster
    rows: int
    loss: float


@dataclass
class ClientMargins:
    """A client's rows' margins under each ensemble, and how many trees each counts.

    Keyed by objective, and by ``"<objective>:val"`` for its validation rows.
    """

    margins: dict[str, np.ndarray] = field(default_factory=dict)
    counted: dict[str, int] = field(default_factory=dict)

    def current(self, key: str, ensemble: Ensemble, x: np.ndarray) -> np.ndarray:
        """The margin of ``ensemble`` on rows ``x``, adding only trees not yet counted."""
        seen = self.counted.get(key, 0)
        if key not in self.margins or seen == 0:
            self.margins[key] = ensemble.margin(x)
        elif seen < len(ensemble.trees):
            self.margins[key] = self.margins[key] + ensemble.margin(x, start=seen)
        self.counted[key] = len(ensemble.trees)
        return self.margins[key]


def _labelled(
    client: ClientData, objective: str, kind: str, split: str = "train"
) -> tuple[np.ndarray, np.ndarray]:
    rows = client.split(split)
    y = rows.y[:, client.objectives.index(objective)]
    ok = np.isfinite(y)
    return rows.x_common[ok], target(kind, y[ok])


def client_validation(
    client: ClientData, objective: str, kind: str, ensemble: Ensemble, margins: ClientMargins
) -> tuple[int, float] | None:
    """The client's labelled validation rows and the ensemble's loss there (None: no row)."""
    x, y = _labelled(client, objective, kind, "val")
    if len(y) == 0:
        return None
    return len(y), margin_loss(kind, y, margins.current(f"{objective}:val", ensemble, x))


def client_boost(
    client: ClientData,
    objective: str,
    kind: str,
    ensemble: Ensemble | None,
    margins: ClientMargins,
    settings: TreeSettings,
    trees: int,
) -> ClientTrees | None:
    """One client's new trees of ``objective`` (None: no labelled training row).

    Parameters
    ----------
    client
        The client (its training rows' common features and labels).
    objective, kind
        The objective and its kind.
    ensemble
        The federation's trees so far (None: round 1, from scratch).
    margins
        The client's margins, updated here.
    settings
        How the trees are grown (``eta`` already scaled for bagging).
    trees
        Trees to boost.
    """
    x, y = _labelled(client, objective, kind)
    if len(y) == 0:
        return None
    margin = None if ensemble is None else margins.current(objective, ensemble, x)
    booster = boost(x, y, margin, settings, trees)
    start = np.full(len(y), base_margin(kind, booster)) if margin is None else margin
    return ClientTrees(client.client_id, booster, len(y), margin_loss(kind, y, start))


def aggregate(
    kind: str, ensemble: Ensemble | None, replies: Sequence[ClientTrees]
) -> Ensemble | None:
    """The server step: the replies' trees appended in client-id order (round 1: a new one)."""
    ordered = sorted(replies, key=lambda r: r.client_id)
    if not ordered:
        return ensemble
    if ensemble is None:
        return Ensemble.first(kind, [(r.booster, r.rows) for r in ordered])
    for reply in ordered:
        ensemble.append(reply.booster)
    return ensemble


def holders(federation: Federation, objective: str) -> list[int]:
    """The ids of the clients that pursue ``objective``, in order."""
    return [c.client_id for c in federation.clients if objective in c.objectives]


def round_participants(
    strategy: str, client_ids: Sequence[int], objective_holders: Sequence[int], round_idx: int
) -> list[int]:
    """Who boosts an objective in round ``round_idx`` (1-based): all its holders, or one client.

    ``cyclic`` asks client ``client_ids[(round − 1) mod K]``, whichever objectives it pursues
    (Flower's FedXgbCyclic samples one node a round, in a fixed order).
    """
    if strategy == "bagging":
        return list(objective_holders)
    chosen = client_ids[(round_idx - 1) % len(client_ids)]
    return [chosen] if chosen in objective_holders else []


def tree_settings(kind: str, base: BaselineConfig, strategy_share: int, seed: int) -> TreeSettings:
    """An objective's tree settings; bagging divides the round's rate over its K_s clients."""
    share = strategy_share if base.fedxgb_strategy == "bagging" else 1
    return TreeSettings(kind, base.fedxgb_eta / max(share, 1), base.fedxgb_depth, seed)


@dataclass
class TreeRounds:
    """The rounds' outcome: each objective's ensemble and each round's record.

    ``chosen``: per objective, the round whose ensemble the holders' validation loss chose (its
    trees are the ensemble's); ``validation``: that loss after each round.
    """

    ensembles: dict[str, Ensemble]
    rounds: list[RoundInfo]
    chosen: dict[str, int] = field(default_factory=dict)
    validation: list[dict[str, float]] = field(default_factory=list)


@dataclass
class _Choice:
    """The best round so far of one objective on the holders' validation loss."""

    loss: float = float("inf")
    round: int = 0
    trees: int = 0

    def offer(self, loss: float, round_idx: int, trees: int) -> None:
        if np.isfinite(loss) and loss < self.loss:
            self.loss, self.round, self.trees = loss, round_idx, trees


def _validation_loss(
    clients: Sequence[ClientData],
    objective: str,
    kind: str,
    ensemble: Ensemble,
    margins: Mapping[int, ClientMargins],
) -> float:
    """The holders' row-weighted validation loss of ``ensemble`` (NaN: no validation row)."""
    scored = [
        v
        for c in clients
        if (v := client_validation(c, objective, kind, ensemble, margins[c.client_id]))
    ]
    return _row_weighted(scored) if scored else float("nan")


def run_rounds(
    federation: Federation,
    kinds: Mapping[str, str],
    base: BaselineConfig,
    rounds: int,
    seed: int,
    progress: ProgressFn | None = None,
) -> TreeRounds:
    """Federated boosted trees in process (module docstring), ``rounds`` rounds.

    After each round, every holder scores the ensemble on its validation rows; each objective
    keeps the trees of the round whose row-weighted validation loss is lowest (boosting's early
    stopping, chosen on validation across the federation, never on test rows).

    Returns
    -------
    TreeRounds
        Each objective's ensemble (objectives no client holds a label of have none), cut at its
        chosen round, and the per-round record (losses: the participants' row-weighted mean
        training loss before the round's trees; in round 1, at each client's own base score).
    """
    clients = {c.client_id: c for c in federation.clients}
    ids = sorted(clients)
    margins = {k: ClientMargins() for k in ids}
    ensembles: dict[str, Ensemble | None] = dict.fromkeys(kinds)
    choices = {s: _Choice() for s in kinds}
    trace: list[RoundInfo] = []
    validation: list[dict[str, float]] = []
    for t in range(1, rounds + 1):
        losses: dict[str, float] = {}
        checked: dict[str, float] = {}
        asked: set[int] = set()
        for objective, kind in kinds.items():
            held = holders(federation, objective)
            settings = tree_settings(kind, base, len(held), seed)
            replies = []
            for k in round_participants(base.fedxgb_strategy, ids, held, t):
                asked.add(k)
                reply = client_boost(
                    clients[k], objective, kind, ensembles[objective], margins[k], settings,
                    base.fedxgb_local_trees,
                )  # fmt: skip
                if reply is not None:
                    replies.append(reply)
            ensemble = ensembles[objective] = aggregate(kind, ensembles[objective], replies)
            if replies:
                losses[objective] = _row_weighted([(r.rows, r.loss) for r in replies])
            if ensemble is not None:
                holding = [clients[k] for k in held]
                checked[objective] = _validation_loss(holding, objective, kind, ensemble, margins)
                choices[objective].offer(checked[objective], t, len(ensemble.trees))
        trace.append(RoundInfo(t, {}, 0.0, losses, tuple(sorted(asked))))
        validation.append(checked)
        if progress is not None:
            progress("stage1", t, rounds)
    kept = {s: e.truncated(choices[s].trees or len(e.trees)) for s, e in ensembles.items() if e}
    chosen = {s: choices[s].round or rounds for s in kept}
    return TreeRounds(kept, trace, chosen, validation)


def _row_weighted(pairs: Sequence[tuple[int, float]]) -> float:
    """The mean of ``(rows, loss)`` pairs' losses, weighted by their rows."""
    rows = np.array([n for n, _ in pairs], dtype=np.float64)
    return float(rows @ np.array([loss for _, loss in pairs]) / rows.sum())
