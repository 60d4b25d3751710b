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

from fedcare_core.algorithms.fedxgb.options import FedXgbOptions
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
    "TreeServer",
    "aggregate",
    "client_boost",
    "client_round",
    "client_scores",
    "client_validation",
    "round_participants",
    "run_rounds",
    "tree_server",
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
    """A client's rows' margins under each ensemble, and how many round blocks each counts.

    Keyed by objective, and by ``"<objective>:val"`` for its validation rows.
    """

    margins: dict[str, np.ndarray] = field(default_factory=dict)
    counted: dict[str, int] = field(default_factory=dict)

    def current(self, key: str, ensemble: Ensemble, x: np.ndarray) -> np.ndarray:
        """The margin of ``ensemble`` on rows ``x``, adding only the blocks not yet counted."""
        seen = self.counted.get(key, 0)
        done = self.margins.get(key)
        if done is None or len(done) != len(x) or seen > len(ensemble.bounds):
            seen, done = 0, None
        self.margins[key] = ensemble.margin(x, seen, done)
        self.counted[key] = len(ensemble.bounds)
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
    ensemble.append_round([r.booster for r in ordered])
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
    options = FedXgbOptions.of(base)
    share = strategy_share if options.fedxgb_strategy == "bagging" else 1
    return TreeSettings(kind, options.fedxgb_eta / max(share, 1), options.fedxgb_depth, seed)


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


def client_round(
    client: ClientData,
    ensembles: Mapping[str, Ensemble | None],
    boosting: Mapping[str, TreeSettings],
    margins: ClientMargins,
    trees: int,
) -> dict[str, ClientTrees]:
    """A client's step of a round: new trees of each objective it is asked to boost.

    Parameters
    ----------
    client
        The client.
    ensembles
        The federation's ensembles so far (None: the objective's round 1).
    boosting
        The objectives it boosts this round, with their trees' settings.
    margins
        The client's margins, updated here.
    trees
        Trees per objective (``fedxgb_local_trees``).

    Returns
    -------
    dict of str to ClientTrees
        Its reply per objective (none where it holds no labelled training row).
    """
    out: dict[str, ClientTrees] = {}
    for objective, settings in boosting.items():
        ensemble = ensembles.get(objective)
        reply = client_boost(client, objective, settings.kind, ensemble, margins, settings, trees)
        if reply is not None:
            out[objective] = reply
    return out


def client_scores(
    client: ClientData,
    ensembles: Mapping[str, Ensemble],
    margins: ClientMargins,
) -> dict[str, tuple[int, float]]:
    """The client's validation rows and loss under each ensemble of an objective it pursues."""
    out: dict[str, tuple[int, float]] = {}
    for objective in client.objectives:
        ensemble = ensembles.get(objective)
        if ensemble is not None:
            scored = client_validation(client, objective, ensemble.kind, ensemble, margins)
            if scored is not None:
                out[objective] = scored
    return out


class TreeServer:
    """The server's side of the rounds, wherever they run (in process or over Flower).

    It says who boosts each objective in a round and with which settings (:meth:`plan`),
    appends the replies' trees (:meth:`aggregate`), records the holders' validation loss of
    the new ensembles (:meth:`record_validation`) and ends with each objective's ensemble of
    its chosen round (:meth:`result`).

    Parameters
    ----------
    kinds
        Objective → kind, in the federation's order.
    holders
        Objective → the ids of the clients pursuing it.
    client_ids
        Every client's id, in order (cyclic boosting walks them).
    base
        ``fedxgb_strategy``, ``fedxgb_eta``, ``fedxgb_depth``.
    seed
        XGBoost's seed.
    """

    def __init__(
        self,
        kinds: Mapping[str, str],
        holders: Mapping[str, Sequence[int]],
        client_ids: Sequence[int],
        base: BaselineConfig,
        seed: int,
    ) -> None:
        self.kinds = dict(kinds)
        self.holders = {s: list(holders.get(s, ())) for s in kinds}
        self.client_ids = sorted(client_ids)
        self.strategy = FedXgbOptions.of(base).fedxgb_strategy
        self.settings = {
            s: tree_settings(k, base, len(self.holders[s]), seed) for s, k in kinds.items()
        }
        self.ensembles: dict[str, Ensemble | None] = dict.fromkeys(kinds)
        self.rounds: list[RoundInfo] = []
        self.validation: list[dict[str, float]] = []
        self._choices = {s: _Choice() for s in kinds}

    def plan(self, round_idx: int) -> dict[int, dict[str, TreeSettings]]:
        """Client id → the objectives it boosts in round ``round_idx`` (1-based), with settings."""
        out: dict[int, dict[str, TreeSettings]] = {}
        for s in self.kinds:
            for k in round_participants(self.strategy, self.client_ids, self.holders[s], round_idx):
                out.setdefault(k, {})[s] = self.settings[s]
        return out

    def aggregate(
        self, round_idx: int, replies: Mapping[int, Mapping[str, ClientTrees]], asked: Sequence[int]
    ) -> RoundInfo:
        """Append each objective's replies (client-id order); record and return the round.

        ``losses``: the repliers' row-weighted mean training loss before the round's trees.
        """
        losses: dict[str, float] = {}
        for s, kind in self.kinds.items():
            mine = [r[s] for _, r in sorted(replies.items()) if s in r]
            self.ensembles[s] = aggregate(kind, self.ensembles[s], mine)
            if mine:
                losses[s] = _row_weighted([(r.rows, r.loss) for r in mine])
        info = RoundInfo(round_idx, {}, 0.0, losses, tuple(sorted(asked)))
        self.rounds.append(info)
        return info

    def record_validation(
        self, round_idx: int, scores: Mapping[int, Mapping[str, tuple[int, float]]]
    ) -> dict[str, float]:
        """The holders' row-weighted validation loss of each ensemble; offer it to the choice."""
        checked: dict[str, float] = {}
        for s, ensemble in self.ensembles.items():
            if ensemble is None:
                continue
            held = [v[s] for k, v in sorted(scores.items()) if k in self.holders[s] and s in v]
            checked[s] = _row_weighted(held) if held else float("nan")
            self._choices[s].offer(checked[s], round_idx, len(ensemble.trees))
        self.validation.append(checked)
        return checked

    def result(self) -> TreeRounds:
        """Each objective's ensemble cut at its chosen round, and the record."""
        last = len(self.rounds)
        kept = {
            s: e.truncated(self._choices[s].trees or len(e.trees))
            for s, e in self.ensembles.items()
            if e is not None
        }
        chosen = {s: self._choices[s].round or last for s in kept}
        return TreeRounds(kept, list(self.rounds), chosen, list(self.validation))

    def present(self) -> dict[str, Ensemble]:
        """The ensembles built so far (objectives with none omitted)."""
        return {s: e for s, e in self.ensembles.items() if e is not None}


def tree_server(
    federation: Federation, kinds: Mapping[str, str], base: BaselineConfig, seed: int
) -> TreeServer:
    """The :class:`TreeServer` of a federation's clients."""
    held = {s: holders(federation, s) for s in kinds}
    return TreeServer(kinds, held, [c.client_id for c in federation.clients], base, seed)


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
    margins = {k: ClientMargins() for k in clients}
    server = tree_server(federation, kinds, base, seed)
    local_trees = FedXgbOptions.of(base).fedxgb_local_trees
    for t in range(1, rounds + 1):
        plan = server.plan(t)
        replies = {
            k: client_round(clients[k], server.ensembles, boosting, margins[k], local_trees)
            for k, boosting in plan.items()
        }
        server.aggregate(t, replies, list(plan))
        present = server.present()
        server.record_validation(
            t, {k: client_scores(c, present, margins[k]) for k, c in clients.items()}
        )
        if progress is not None:
            progress("stage1", t, rounds)
    return server.result()


def _row_weighted(pairs: Sequence[tuple[int, float]]) -> float:
    """The mean of ``(rows, loss)`` pairs' losses, weighted by their rows."""
    rows = np.array([n for n, _ in pairs], dtype=np.float64)
    return float(rows @ np.array([loss for _, loss in pairs]) / rows.sum())
