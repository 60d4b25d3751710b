"""The rounds a method runs over Flower, found by the name its class gives them.

An algorithm whose rounds a Flower backend runs names them in
:attr:`~fedcare_core.algorithms.base.Algorithm.federated_rounds`; the name is an entry of the
``fedcare.federated_rounds`` group (:mod:`fedcare_core.plugins`), which loads a
:class:`FederatedRounds`: the server's strategy and what every ``train`` message carries, and
the client's answer to a ``train`` or ``evaluate`` message. The ServerApp and the ClientApp
dispatch through it, never by a method's name.

A ``train`` message of a method's own rounds names its algorithm in its config record
(``algorithm``); one that names none is Algorithm 1's (FedCARE's Stage 1, :data:`STAGE1`).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

from flwr.app import ConfigRecord, Context, Message, RecordDict

from fedcare.flower.messages import CONFIG, ProtocolError
from fedcare.flower.run_plan import RunPlan
from fedcare_core.algorithms import get_algorithm
from fedcare_core.errors import ConfigError
from fedcare_core.plugins import load_entry
from fedcare_core.stage1.loop import RoundInfo

#: The extension kind (:data:`fedcare_core.plugins.GROUPS`).
KIND = "federated_rounds"
#: The rounds of a message that names no algorithm: FedCARE's Algorithm 1.
STAGE1 = "stage1"
#: The config key a method's own ``train`` messages name their algorithm by.
ALGORITHM_KEY = "algorithm"

RoundHook = Callable[[RoundInfo, float], None]
DataLocator = Callable[[Context], Path]


class FederatedRounds(Protocol):
    """One kind of federated rounds over Flower: the server's side and the client's.

    ``broadcasts``: whether the rounds end by sending each site its final model (a site
    federation's ``w*`` or trees); its strategy then has the ``clients`` (node → client id),
    ``state`` and ``rounds`` the broadcast reads (:mod:`fedcare.flower.final_model`).
    """

    broadcasts: bool

    def strategy(self, plan: RunPlan, on_round: RoundHook | None) -> Any:
        """The server's strategy for ``plan`` (a Flower ``Strategy`` with FedCARE's hooks)."""
        ...

    def train_config(self, strategy: Any, plan: RunPlan) -> ConfigRecord | None:
        """The config every ``train`` message carries (None: the strategy builds its own)."""
        ...

    def train(self, locate: DataLocator, msg: Message, context: Context) -> Message:
        """A client's reply to one round's ``train`` message."""
        ...

    def evaluate(self, locate: DataLocator, msg: Message, context: Context) -> Message:
        """A client's reply to one round's ``evaluate`` message."""
        ...


def rounds_of_plan(plan: RunPlan) -> FederatedRounds:
    """The rounds the plan's algorithm runs over Flower.

    Raises
    ------
    ConfigError
        An algorithm whose rounds no installed entry provides (the message names it).
    """
    algorithm = get_algorithm(plan.algorithm)
    if algorithm.federated_rounds is None:
        raise ConfigError(f"algorithm {algorithm.name!r} has no rounds over Flower")
    rounds: FederatedRounds = load_entry(KIND, algorithm.federated_rounds)
    return rounds


def rounds_of_message(content: RecordDict) -> FederatedRounds:
    """The rounds a ``train`` or ``evaluate`` message belongs to (by the algorithm it names)."""
    config = content.config_records.get(CONFIG)
    named = None if config is None else config.get(ALGORITHM_KEY)
    name = STAGE1 if named is None else get_algorithm(str(named)).federated_rounds
    if name is None:
        raise ProtocolError(f"a message of algorithm {named!r}, which has no rounds over Flower")
    rounds: FederatedRounds = load_entry(KIND, name)
    return rounds
