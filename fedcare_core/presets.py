"""Named starting configurations (``--preset``): the paper's FedCARE, and the recommended one.

``recommended`` is the candidate the ``selection`` experiment chose on validation scores only
(:mod:`fedcare_core.experiments.selection`; the run and its tables are in
``docs/results/diabetes130/selection/``). A preset sets configuration fields; a config file
comes first and command-line flags win over it.
"""

from __future__ import annotations

from typing import Any

from fedcare_core.config import ExperimentConfig
from fedcare_core.errors import ConfigError
from fedcare_core.experiments.cells import CANDIDATES

__all__ = ["PRESETS", "RECOMMENDED_CANDIDATE", "with_preset"]

#: The selection experiment's choice (docs/results/diabetes130/selection/selection.md).
RECOMMENDED_CANDIDATE = "s1-adam-backbone+s2-frozen-warm"
#: Preset name → the configuration sections it sets.
PRESETS: dict[str, dict[str, dict[str, Any]]] = {
    "paper": {},
    "recommended": CANDIDATES[RECOMMENDED_CANDIDATE],
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
