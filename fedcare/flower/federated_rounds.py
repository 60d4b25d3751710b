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

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import numpy as np
from flwr.app import ConfigRecord, Context, Message, RecordDict

from fedcare.flower.messages import CONFIG, ProtocolError
from fedcare.flower.run_plan import RunPlan
from fedcare_core.algorithms import get_algorithm
from fedcare_core.config import ModelConfig
from fedcare_core.errors import ConfigError
from fedcare_core.nn.param_vectors import ParamLayout
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
    ``state`` and ``rounds`` the broadcast reads (:mod:`fedcare.flower.final_model`), and
    :meth:`read_final_model` reads back what a site kept.
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

    def read_final_model(self, path: Path, received: ReceivedShape) -> ReceivedModel:
        """The final model a site kept (``stage1/stage1.npz``), checked, and its layout.

        Raises
        ------
        ConfigError
            Naming the file and the array that is not the model ``received`` describes.
        """
        ...


@dataclass(frozen=True)
class ReceivedShape:
    """What a site knows of the final model it was sent: the model its schema describes.

    ``objectives``: those the broadcast names, in the schema's order; ``kinds``: objective →
    kind (the schema's); ``common_width``: the schema's encoded width; ``model``: the network
    its configuration describes.
    """

    objectives: tuple[str, ...]
    kinds: Mapping[str, str]
    common_width: int
    model: ModelConfig


#: A kept final model: its ``params`` and ``buffers`` arrays and the parameters' layout.
ReceivedModel = tuple[dict[str, np.ndarray], ParamLayout]


def rounds_of_plan(plan: RunPlan) -> FederatedRounds:
    """The rounds the plan's algorithm runs over Flower.

    Raises
    ------
    ConfigError
        An algorithm whose rounds no installed entry provides (the message names it).
    """
    return rounds_of_algorithm(plan.algorithm)


def rounds_of_algorithm(name: str) -> FederatedRounds:
    """The rounds the algorithm called ``name`` runs over Flower.

    Raises
    ------
    ConfigError
        An algorithm without rounds over Flower, or whose rounds no installed entry provides.
    """
    algorithm = get_algorithm(name)
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
