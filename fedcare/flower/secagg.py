"""The securely aggregated round's instruction (Flower's legacy ``FitIns`` config) and settings.

Under ``Stage1Config.secagg`` a round runs on Flower's legacy workflow path, the only one with
SecAgg+ in Flower 1.42: the server's :class:`~fedcare.flower.secagg_strategy.SecureStage1Strategy`
sends ``FitIns(parameters=[w^t, β^t], config=...)`` with the keys below, each client
(:mod:`fedcare.flower.secagg_client`) replies ``FitRes(parameters=[sealed vector],
num_examples=1, metrics={"client-id": k})`` and Flower's ``secaggplus_mod`` masks the vector
before it leaves the client. The vector is :mod:`fedcare_core.stage1.secure_sums`'s.

Config keys (all scalars, as the legacy ``Config`` requires)
    ``protocol`` (int, :data:`SECAGG_PROTOCOL`), ``server-round`` (int), ``seed`` (int),
    ``client-id`` (int: the client the server's handshake assigned this node; a site's
    position in the run, as on the Message API path),
    ``objectives``/``kinds`` (str, JSON lists), ``common-width`` (int), ``model-config`` and
    ``stage1-config`` (str, JSON of the core's dataclasses; never the DP noise seed, which
    keys the server's noise), ``clip`` (float, the range ``c``
    of this try), ``levels`` (int, ``T``), ``noise-sites`` (int: under DP, the number of sites
    each adding a share ``z·C/√m`` of the noise before sealing, so that the server only ever
    holds noised sums; 0 without DP) and ``noise-seed`` (int, -1: each site draws its share
    from OS entropy; a seeded research run's seed otherwise).

Why every client's weight is 1
    SecAgg+ sums ``num_examples·x_k`` and divides by ``Σ num_examples``: with weight 1 (and
    ``max_weight`` 1) the factor Flower applies is exactly 1.0 and the server receives the mean
    of the vectors, which it multiplies by the number of vectors summed. The weights FedCARE
    needs (``N_{k,s}/N̄``) are inside the vector, so that they are summed under the masks too.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, replace

from fedcare.flower.run_plan import RunPlan
from fedcare_core.config import ModelConfig, Stage1Config
from fedcare_core.errors import ConfigError
from fedcare_core.stage1.secure_sums import (
    MAX_ATTEMPTS,
    MODULUS,
    choose_levels,
    grid_step,
)

#: Bumped when the keys above change; the client checks it.
SECAGG_PROTOCOL = 3
#: The reply's metric naming the client (who took part is not hidden; what it sent is).
CLIENT_ID = "client-id"
#: SecAgg+'s weight of every client (see the module docstring).
UNIT_WEIGHT = 1


class SecAggProtocolError(ValueError):
    """A securely aggregated round's message does not follow the layout above."""


@dataclass(frozen=True)
class SecureInstruction:
    """Everything a client needs for one securely aggregated round."""

    server_round: int
    seed: int
    client_id: int
    objectives: tuple[str, ...]
    kinds: dict[str, str]
    common_width: int
    model: ModelConfig
    stage1: Stage1Config
    clip: float
    levels: int
    #: Distributed DP: the sites sharing the noise (0: no DP, or the server adds it).
    noise_sites: int = 0
    #: A seeded research run's noise seed (the sites' shares are then reproducible and
    #: removable by whoever knows it; never for a released model). None: OS entropy.
    noise_seed: int | None = None


def encode_instruction(ins: SecureInstruction) -> dict[str, bool | bytes | float | int | str]:
    """The ``FitIns`` config of :class:`SecureInstruction`."""
    return {
        "protocol": SECAGG_PROTOCOL,
        "server-round": int(ins.server_round),
        "seed": int(ins.seed),
        CLIENT_ID: int(ins.client_id),
        "objectives": json.dumps(list(ins.objectives)),
        "kinds": json.dumps([ins.kinds[s] for s in ins.objectives]),
        "common-width": int(ins.common_width),
        "model-config": json.dumps(asdict(ins.model)),
        # The noise seed keys the server's noise: a client that had it could subtract the noise.
        "stage1-config": json.dumps(asdict(replace(ins.stage1, dp_noise_seed=None))),
        "clip": float(ins.clip),
        "levels": int(ins.levels),
        "noise-sites": int(ins.noise_sites),
        "noise-seed": -1 if ins.noise_seed is None else int(ins.noise_seed),
    }


def decode_instruction(config: dict[str, bool | bytes | float | int | str]) -> SecureInstruction:
    """Inverse of :func:`encode_instruction`.

    Raises
    ------
    SecAggProtocolError
        A missing key, or another protocol version.
    """
    try:
        if config["protocol"] != SECAGG_PROTOCOL:
            raise SecAggProtocolError(
                f"secure aggregation protocol {config['protocol']!r}, expected {SECAGG_PROTOCOL}"
            )
        names = tuple(json.loads(str(config["objectives"])))
        kinds = json.loads(str(config["kinds"]))
        model_raw = json.loads(str(config["model-config"]))
        model_raw["head_hidden"] = tuple(model_raw["head_hidden"])
        return SecureInstruction(
            server_round=int(config["server-round"]),
            seed=int(config["seed"]),
            client_id=int(config[CLIENT_ID]),
            objectives=names,
            kinds=dict(zip(names, kinds, strict=True)),
            common_width=int(config["common-width"]),
            model=ModelConfig(**model_raw),
            stage1=Stage1Config(**json.loads(str(config["stage1-config"]))),
            clip=float(config["clip"]),
            levels=int(config["levels"]),
            noise_sites=int(config["noise-sites"]),
            noise_seed=None if int(config["noise-seed"]) < 0 else int(config["noise-seed"]),
        )
    except KeyError as exc:
        raise SecAggProtocolError(f"secure round instruction lacks {exc}") from None


def secure_plan(plan: RunPlan) -> bool:
    """Whether the plan's rounds run under SecAgg+ (Flower's legacy-path apps).

    Raises
    ------
    ConfigError
        ``stage1.secagg`` for an algorithm other than Algorithm 1 on the common features
        (FedCARE, FedCARE-B): the baselines' rounds and FMGDA/FSMGDA's union vectors have no
        secure path.
    """
    if not plan.stage1.secagg:
        return False
    if not _algorithm_1(plan.algorithm) or plan.union_common_width is not None:
        raise ConfigError(
            "stage1.secagg: secure aggregation covers FedCARE and FedCARE-B only "
            "(Algorithm 1 on the common features), not the baselines"
        )
    return True


def _algorithm_1(algorithm: str) -> bool:
    """Whether the plan's rounds are FedCARE's Stage 1 (``Algorithm.runs_stage1``)."""
    from fedcare_core.algorithms import algorithm_names, get_algorithm

    return algorithm in algorithm_names() and get_algorithm(algorithm).runs_stage1


def majority(num_clients: int) -> int:
    """A strict majority of ``num_clients``, at least 2 (SecAgg+'s smallest threshold)."""
    return max(2, num_clients // 2 + 1)


@dataclass(frozen=True)
class SecAggSettings:
    """SecAgg+'s parameters for a round that asks K clients.

    Parameters
    ----------
    num_clients
        K.
    levels
        ``T``: :func:`~fedcare_core.stage1.secure_sums.choose_levels` of the most clients the run
        can have (every site of a federation), so that no round's sum can wrap.
    threshold
        Shamir's reconstruction threshold: a strict majority of the K clients asked,
        ``⌊K/2⌋ + 1`` (at least 2). A server that claims a live client dropped cannot then
        obtain both of its secrets (each needs a majority's shares), and a round survives up to
        ``K − threshold`` clients lost after it began; with fewer left it fails.
    """

    num_clients: int
    levels: int
    threshold: int

    @classmethod
    def for_clients(cls, num_clients: int) -> SecAggSettings:
        """The settings used for ``num_clients`` clients (every client shares with all)."""
        if num_clients < 2:
            raise ValueError("secure aggregation needs at least 2 clients")
        return cls(num_clients, choose_levels(num_clients), majority(num_clients))

    def for_round(self, asked: int) -> SecAggSettings:
        """The settings of a round that asks ``asked`` of these clients (same levels)."""
        if not 2 <= asked <= self.num_clients:
            raise ValueError(f"a round of {asked} client(s) out of {self.num_clients}")
        return SecAggSettings(asked, self.levels, majority(asked))

    @property
    def tolerated_losses(self) -> int:
        """How many clients a round can lose and still be unmasked."""
        return self.num_clients - self.threshold

    def error_bound(self, clip: float) -> float:
        """The largest rounding error of one summed value at range ``c`` (``K·2c/T``)."""
        return self.num_clients * grid_step(clip, self.levels)


__all__ = [
    "CLIENT_ID",
    "MAX_ATTEMPTS",
    "MODULUS",
    "SECAGG_PROTOCOL",
    "UNIT_WEIGHT",
    "SecAggProtocolError",
    "SecAggSettings",
    "SecureInstruction",
    "decode_instruction",
    "encode_instruction",
    "majority",
    "secure_plan",
]
