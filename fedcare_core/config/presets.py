"""Named starting configurations (``--preset``): the paper's FedCARE, and the recommended one.

``recommended`` is the candidate the ``selection`` experiment chose on validation scores only
(:mod:`fedcare.experiments.selection`; the runs and their tables are in
``docs/results/diabetes130/selection_uncalibrated/`` and ``selection/``);
``recommended-admission`` is its choice on the admission-time partition
(``docs/results/diabetes130/selection_admission/``), with that partition's feature set. A
preset sets configuration fields; a config file comes first and command-line flags win over it.
"""

from __future__ import annotations

from typing import Any

from fedcare_core.config import DataConfig, ExperimentConfig, Stage1Config, Stage2Config
from fedcare_core.config.variants import (
    CANDIDATES,
    RECOMMENDED_ADMISSION_CANDIDATE,
    RECOMMENDED_CANDIDATE,
)
from fedcare_core.errors import ConfigError

__all__ = ["PRESETS", "RECOMMENDED_CANDIDATE", "baby_config", "with_preset"]

#: Preset name → the configuration sections it sets.
PRESETS: dict[str, dict[str, dict[str, Any]]] = {
    "paper": {},
    "recommended": CANDIDATES[RECOMMENDED_CANDIDATE],
    "recommended-admission": CANDIDATES[RECOMMENDED_ADMISSION_CANDIDATE]
    | {"data": CANDIDATES[RECOMMENDED_ADMISSION_CANDIDATE]["data"] | {"features": "admission"}},
}


def with_preset(config: ExperimentConfig, name: str) -> ExperimentConfig:
    """``config`` with preset ``name``'s fields set.

    Raises
    ------
    ConfigError
        For an unknown preset.
    """
    if name not in PRESETS:
        raise ConfigError(
            f"unknown preset {name!r} (--preset); expected one of {', '.join(PRESETS)}"
        )
    sections = {section: dict(values) for section, values in PRESETS[name].items()}
    return config.with_overrides(**sections) if sections else config


def baby_config(dataset: str = "diabetes130", seed: int = 0) -> ExperimentConfig:
    """A tiny configuration (3 clients, 2 rounds, a few hundred patients) that runs in seconds."""
    return ExperimentConfig(
        seed=seed,
        data=DataConfig(dataset=dataset, clients=3, max_patients=600),
        stage1=Stage1Config(rounds=2, batch_size=64),
        stage2=Stage2Config(epochs=2, batch_size=64, patience=2),
    ).validate()
