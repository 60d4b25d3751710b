"""The algorithms: every method a run can use, by the name configurations give it.

An algorithm is an :class:`~fedcare_core.algorithms.base.Algorithm` subclass declared as an
entry point of the ``fedcare.algorithms`` group (:mod:`fedcare_core.plugins`): FedCARE's own in
its ``pyproject.toml``, an outside method in its own package's. Names are read without
importing anything (``fedcare --help`` does not import torch); a class is loaded on first use.
What a method can do is read from its class, never from its name.
"""

from __future__ import annotations

from functools import cache
from typing import TYPE_CHECKING

from fedcare_core.config import ExperimentConfig
from fedcare_core.config.backends import backend_names, get_backend, secagg_backends
from fedcare_core.config.quick import quick_sized
from fedcare_core.data.choices import check_dataset_choices
from fedcare_core.errors import ConfigError
from fedcare_core.plugins import entry_names, load_entry

if TYPE_CHECKING:
    from fedcare_core.algorithms.base import Algorithm

#: The extension kind of algorithms (:data:`fedcare_core.plugins.GROUPS`).
KIND = "algorithm"


def algorithm_names() -> tuple[str, ...]:
    """Every installed algorithm's name: FedCARE's in name order, then the others'."""
    return entry_names(KIND)


@cache
def _load(name: str) -> Algorithm:
    algorithm: Algorithm = load_entry(KIND, name)()
    if algorithm.name != name:
        raise ConfigError(f"the {KIND} entry {name!r} loads algorithm {algorithm.name!r}")
    return algorithm


def baseline_algorithms() -> tuple[str, ...]:
    """The baselines and bounds of SPEC §4: every algorithm whose rounds are not Stage 1."""
    return tuple(n for n in algorithm_names() if not _load(n).runs_stage1)


def federated_baselines() -> tuple[str, ...]:
    """The baselines whose rounds a federated backend (Flower) runs."""
    return tuple(n for n in baseline_algorithms() if _load(n).flower)


def federation_algorithms() -> tuple[str, ...]:
    """The algorithms a federation of sites runs (:attr:`Algorithm.site_federation`)."""
    return tuple(n for n in algorithm_names() if _load(n).site_federation)


def proposed_algorithm() -> str:
    """The method the paper proposes (:attr:`Algorithm.proposed`): the tables' reference."""
    return next(n for n in algorithm_names() if _load(n).proposed)


def get_algorithm(name: str) -> Algorithm:
    """The registered algorithm called ``name``.

    Raises
    ------
    ConfigError
        If no algorithm of that name is registered (the message lists those that are).
    """
    if not isinstance(name, str) or name not in algorithm_names():
        raise ConfigError(
            f"unknown algorithm {name!r}; expected one of {', '.join(algorithm_names())}"
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
    check_dataset_choices(config.data)
    if config.stage1.privacy() is not None and not algorithm.private_rounds:
        private = [n for n in algorithm_names() if _load(n).private_rounds]
        raise ConfigError(
            f"algorithm {config.algorithm!r} has no differentially private rounds; "
            f"stage1.dp_epsilon / dp_noise_multiplier apply to {', '.join(private)}"
        )
    if config.stage1.secagg and not algorithm.runs_stage1:
        capable = [n for n in algorithm_names() if _load(n).runs_stage1]
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
    spec = get_backend(backend) if backend in backend_names() else None
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
        capable = [n for n in algorithm_names() if _load(n).runs_stage1]
        raise ConfigError(
            f"algorithm {algorithm.name!r} needs --backend local: this backend runs Stage 1 "
            f"of {'/'.join(capable)} only"
        )


__all__ = [
    "KIND",
    "algorithm_names",
    "backend_refusal",
    "baseline_algorithms",
    "check_backend",
    "federated_baselines",
    "get_algorithm",
    "proposed_algorithm",
    "validate_config",
]
