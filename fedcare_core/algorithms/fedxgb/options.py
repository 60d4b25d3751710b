"""fedxgb's own settings, its trees' (the ``fedcare.options`` entry)."""

from __future__ import annotations

from dataclasses import dataclass

from fedcare_core.config.fields import Range
from fedcare_core.config.limits import MAX_STEPS, STEPS
from fedcare_core.config.method_options import MethodOptions
from fedcare_core.config.sections import BASELINES_GROUP
from fedcare_core.config.settings import setting

#: How the trees are built (Flower's two XGBoost strategies): every client adds trees each
#: round (bagging), or one client a round, in turn (cyclic).
FEDXGB_STRATEGIES = ("bagging", "cyclic")
#: Tree depth (XGBoost's ``max_depth``; deeper trees are refused as absurd).
TREE_DEPTH = Range(1, 16)
#: Trees a client boosts beyond the federation's (0: none).
EXTRA_TREES = Range(0, MAX_STEPS)


@dataclass(frozen=True)
class FedXgbOptions(MethodOptions):
    """The federated trees' strategy, rate, depth and counts."""

    fedxgb_strategy: str = setting(
        "bagging",
        help="fedxgb: every client adds trees each round (bagging) or one client a round in turn "
        "(cyclic), as Flower's FedXgbBagging and FedXgbCyclic",
        choices=FEDXGB_STRATEGIES,
        noun="fedxgb strategy",
        group=BASELINES_GROUP,
    )
    fedxgb_eta: float = setting(
        0.1, help="fedxgb: a round's learning rate (bagging splits it over the round's trees)",
        range=Range(0, 1, low_open=True), group=BASELINES_GROUP,
    )  # fmt: skip
    fedxgb_depth: int = setting(
        5, help="fedxgb: depth of each tree (XGBoost's max_depth)", range=TREE_DEPTH,
        group=BASELINES_GROUP,
    )  # fmt: skip
    fedxgb_local_trees: int = setting(
        1, help="fedxgb: trees a client boosts per round", range=STEPS, group=BASELINES_GROUP
    )
    fedxgb_personal_trees: int = setting(
        100, help="fedxgb: most trees a client boosts on all its features (its private ones "
        "too) on top of the federation's, early-stopped on its validation rows (0: none)",
        range=EXTRA_TREES, group=BASELINES_GROUP,
    )  # fmt: skip
