"""The flow's parameters as one frozen dataclass, turned into experiment configurations.

The flow takes typed keyword parameters (what a Prefect deployment shows and overrides); they
are gathered here at the flow boundary, checked once, and expanded into one
:class:`~fedcare_core.config.ExperimentConfig` per algorithm × seed, with the same meaning as
the ``fedcare run`` flags of the same names (a ``--config``-style JSON file first, the explicit
values on top).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from fedcare_core.algorithms import backend_refusal, validate_config
from fedcare_core.config import ExperimentConfig
from fedcare_core.errors import ConfigError

#: Stage 1 backends the flow accepts (as ``fedcare run --backend``).
BACKENDS = ("local", "flower-sim", "flower-deployment")


@dataclass(frozen=True)
class FlowParameters:
    """What one run of the ``fedcare`` flow does.

    Parameters
    ----------
    dataset
        ``"diabetes130"`` or ``"mimic3"``.
    data_dir
        Dataset folder or file (``None``: ``$FEDCARE_DATA_DIR``, then the download cache).
    algorithms
        One nested MLflow run per algorithm × seed.
    seeds
        Experiment seeds.
    clients, rounds, rho, max_patients, stage2_epochs
        As the ``fedcare run`` flags; ``None`` keeps the configuration's value.
    backend
        Where Stage 1 runs.
    config_file
        A JSON ``ExperimentConfig`` (as ``fedcare run --config``) the other values override.
    overrides
        Further configuration sections, e.g. ``{"stage1": {"solver": "slsqp"}}``.
    """

    dataset: str = "diabetes130"
    data_dir: str | None = None
    algorithms: tuple[str, ...] = ("fedcare",)
    seeds: tuple[int, ...] = (0,)
    clients: int | None = None
    rounds: int | None = None
    rho: float | None = None
    max_patients: int | None = None
    stage2_epochs: int | None = None
    backend: str = "local"
    config_file: str | None = None
    overrides: Mapping[str, Any] = field(default_factory=dict)

    def validate(self) -> FlowParameters:
        """Check everything that can be checked before touching data; return ``self``.

        Raises
        ------
        ConfigError
            On an unknown backend, a baseline that runs in process only (PAFNet, the bounds)
            with a Flower backend, no algorithm or seed,
            repeated values, or any invalid configuration value.
        """
        if self.backend not in BACKENDS:
            raise ConfigError(
                f"unknown backend {self.backend!r}; expected one of {', '.join(BACKENDS)}"
            )
        for algorithm in self.algorithms:
            refusal = backend_refusal(algorithm, self.backend)
            if refusal is not None:
                raise ConfigError(refusal.replace("--backend local", "backend 'local'"))
        for name, values in (("algorithm", self.algorithms), ("seed", self.seeds)):
            if not values:
                raise ConfigError(f"at least one {name} is needed")
            if len(set(values)) != len(values):
                raise ConfigError(f"repeated {name}s: {list(values)}")
        self.experiment_configs()
        return self

    def base_config(self) -> ExperimentConfig:
        """The configuration file's contents (defaults without one)."""
        if self.config_file is None:
            return ExperimentConfig()
        path = Path(self.config_file)
        try:
            raw = json.loads(path.read_text())
        except (OSError, json.JSONDecodeError) as exc:
            raise ConfigError(f"cannot read config {path}: {exc}") from None
        return ExperimentConfig.from_dict(raw)

    def experiment_configs(self) -> list[ExperimentConfig]:
        """One validated configuration per algorithm × seed, algorithms first.

        Returns
        -------
        list of ExperimentConfig
            In the order the flow runs them.
        """
        base = self.base_config()
        sections: dict[str, dict[str, Any]] = {"data": {}, "stage1": {}, "stage2": {}}
        top: dict[str, Any] = {}
        for key, value in self.overrides.items():
            if isinstance(value, Mapping):
                sections.setdefault(key, {}).update(value)
            else:
                top[key] = value
        sections["data"]["dataset"] = self.dataset
        for section, key, value in (
            ("data", "clients", self.clients),
            ("data", "rho", self.rho),
            ("data", "max_patients", self.max_patients),
            ("stage1", "rounds", self.rounds),
            ("stage2", "epochs", self.stage2_epochs),
        ):
            if value is not None:
                sections[section][key] = value
        try:
            return [
                validate_config(
                    base.with_overrides(
                        **(top | {"algorithm": algorithm, "seed": seed}), **sections
                    )
                )
                for algorithm in self.algorithms
                for seed in self.seeds
            ]
        except TypeError as exc:  # an unknown field name in overrides
            raise ConfigError(f"invalid configuration override: {exc}") from None

    def to_params(self) -> dict[str, str]:
        """The parameters as MLflow params of the parent run (``flow.<name>``)."""
        from fedcare_tracking.mlflow_params import flatten_params

        return flatten_params(asdict(self), prefix="flow")


def as_tuple(value: str | Sequence[str] | int | Sequence[int]) -> tuple[Any, ...]:
    """A single value or a sequence of them, as a tuple."""
    if isinstance(value, str | int):
        return (value,)
    return tuple(value)
