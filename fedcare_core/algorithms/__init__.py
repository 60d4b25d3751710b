"""The algorithm registry: every method a run can use, by the name configurations give it.

Adding an algorithm is one module under :mod:`fedcare_core.algorithms` (a subclass of
:class:`~fedcare_core.algorithms.base.Algorithm`) and one entry in :data:`REGISTRY`.
"""

from __future__ import annotations

import importlib
from functools import cache
from typing import TYPE_CHECKING

from fedcare_core.config import ExperimentConfig
from fedcare_core.config.backends import REGISTRY as REGISTERED_BACKENDS
from fedcare_core.config.backends import secagg_backends
from fedcare_core.config.quick import quick_sized
from fedcare_core.errors import ConfigError

if TYPE_CHECKING:
    from fedcare_core.algorithms.base import Algorithm

#: Every registered algorithm: its name → ``module:class``, in the order the CLI and the
#: documents list them. Loaded on first use, so listing the names (``fedcare --help``) does not
#: import torch.
REGISTRY: dict[str, str] = {
    "fedcare": "fedcare_core.algorithms.fedcare.method:FedCare",
    "fedcare-b": "fedcare_core.algorithms.fedcare.fedcare_b:FedCareB",
    "fedavg": "fedcare_core.algorithms.fedavg.method:FedAvg",
    "fedprox": "fedcare_core.algorithms.fedavg.fedprox:FedProx",
    "fmgda": "fedcare_core.algorithms.fmgda.method:Fmgda",
    "fsmgda": "fedcare_core.algorithms.fmgda.fsmgda:Fsmgda",
    "pafnet": "fedcare_core.algorithms.pafnet.method:Pafnet",
    "local": "fedcare_core.algorithms.bounds.local:Local",
    "centralised": "fedcare_core.algorithms.bounds.centralised:Centralised",
    "fedxgb": "fedcare_core.algorithms.fedxgb.method:FedXgb",
}
#: The registered names.
ALGORITHM_NAMES: tuple[str, ...] = tuple(REGISTRY)
#: FedCARE's own two methods; every other algorithm is a baseline or a bound.
FEDCARE_ALGORITHMS = ("fedcare", "fedcare-b")  # grouping for listings (baselines: the rest)
#: The baselines and bounds of SPEC §4.
BASELINE_ALGORITHMS: tuple[str, ...] = tuple(n for n in REGISTRY if n not in FEDCARE_ALGORITHMS)


@cache
def _load(name: str) -> Algorithm:
    module, _, cls = REGISTRY[name].partition(":")
    algorithm: Algorithm = getattr(importlib.import_module(module), cls)()
    if algorithm.name != name:
        raise RuntimeError(f"registry entry {name!r} loads algorithm {algorithm.name!r}")
    return algorithm


def federated_baselines() -> tuple[str, ...]:
    """The baselines whose rounds a federated backend (Flower) runs."""
    return tuple(n for n in BASELINE_ALGORITHMS if _load(n).flower)


def federation_algorithms() -> tuple[str, ...]:
    """The algorithms a federation of sites runs (:attr:`Algorithm.site_federation`)."""
    return tuple(n for n in ALGORITHM_NAMES if _load(n).site_federation)


def proposed_algorithm() -> str:
    """The method the paper proposes (:attr:`Algorithm.proposed`): the tables' reference."""
    return next(n for n in ALGORITHM_NAMES if _load(n).proposed)


def get_algorithm(name: str) -> Algorithm:
    """The registered algorithm called ``name``.

    Raises
    ------
    ConfigError
        If no algorithm of that name is registered (the message lists those that are).
    """
    if not isinstance(name, str) or name not in REGISTRY:
        raise ConfigError(
            f"unknown algorithm {name!r}; expected one of {', '.join(ALGORITHM_NAMES)}"
        )
    return _load(name)


def validate_config(config: ExperimentConfig) -> ExperimentConfig:
    """Check a configuration whole, its algorithm included; return it so calls chain.

    Raises
    ------
    ConfigError
        For an unknown algorithm, any invalid field, or differential privacy or secure
        aggregation asked of an algorithm whose rounds have none.

    Notes
    -----
    With ``FEDCARE_QUICK`` set the configuration returned is capped
    (:func:`fedcare_core.config.quick.quick_sized`).
    """
    algorithm = get_algorithm(config.algorithm)
    config.validate()
    if config.stage1.privacy() is not None and not algorithm.private_rounds:
        private = [n for n in ALGORITHM_NAMES if _load(n).private_rounds]
        raise ConfigError(
            f"algorithm {config.algorithm!r} has no differentially private rounds; "
            f"stage1.dp_epsilon / dp_noise_multiplier apply to {', '.join(private)}"
        )
    if config.stage1.secagg and not algorithm.runs_stage1:
        capable = [n for n in ALGORITHM_NAMES if _load(n).runs_stage1]
        raise ConfigError(
            f"algorithm {config.algorithm!r} has no securely aggregated rounds; "
            f"stage1.secagg applies to {', '.join(capable)} over Flower"
        )
    return quick_sized(config)


def backend_refusal(name: str, backend: str) -> str | None:
    """Why algorithm ``name`` cannot run on the backend called ``backend`` (None: it can).

    ``"local"`` runs everything; any other backend is federated and runs only the algorithms
    whose rounds a federated backend supports.
    """
    algorithm = get_algorithm(name)
    spec = REGISTERED_BACKENDS.get(backend)
    if (spec is not None and not spec.federated) or algorithm.flower:
        return None
    return (
        f"algorithm {name!r} runs in process only (--backend local): "
        f"{algorithm.in_process_reason}. Over Flower: {', '.join(federated_baselines())}"
    )


def secagg_refusal(config: ExperimentConfig, backend: str) -> str | None:
    """Why ``config`` cannot run its secure aggregation on ``backend`` (None: it can, or no SecAgg).

    SecAgg+ is Flower's: the in-process loop has no server to hide updates from. (The
    multi-site federation, ``fedcare federation run --secagg``, runs on Flower too.)
    """
    return secagg_backend_refusal(backend) if config.stage1.secagg else None


def secagg_backend_refusal(backend: str) -> str | None:
    """Why ``backend`` cannot sum rounds with SecAgg+ (None: it can)."""
    capable = secagg_backends()
    if backend in capable:
        return None
    return (
        f"stage1.secagg (--secagg) runs on Flower's SecAgg+: backend {backend!r} cannot; "
        f"use {' or '.join(capable)}"
    )


def check_backend(algorithm: Algorithm, backend: object | None) -> None:
    """Refuse a federated backend object that cannot run ``algorithm``'s rounds.

    Raises
    ------
    ConfigError
        If ``backend`` is given and cannot run them.
    """
    if backend is None:
        return
    refusal = backend_refusal(algorithm.name, "federated")
    if refusal is not None:
        raise ConfigError(refusal)
    if not algorithm.accepts(backend):
        raise ConfigError(
            f"algorithm {algorithm.name!r} needs --backend local: this backend runs Stage 1 "
            "of fedcare/fedcare-b only"
        )


__all__ = [
    "ALGORITHM_NAMES",
    "BASELINE_ALGORITHMS",
    "FEDCARE_ALGORITHMS",
    "REGISTRY",
    "backend_refusal",
    "check_backend",
    "federated_baselines",
    "get_algorithm",
    "proposed_algorithm",
    "validate_config",
]
