"""What a federation of sites cannot take from a configuration, and how to say so.

Sites prepare their own files apart, so a federation's schema cannot pool the clients'
statistics before training (``data.scaling`` other than ``client``), fix a published split
(``data.benchmark_split``) or name an algorithm a federation does not run. Each such setting is
a :class:`Conflict` with the flag that sets it and the value a federation takes;
:func:`check_federation_config` refuses the first, and :func:`check_preset_fits` says when a
``--preset`` is what set it: the preset and the flag to add are named.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from typing import Any

from fedcare_core.config import ExperimentConfig
from fedcare_core.errors import ConfigError

__all__ = ["Conflict", "check_federation_config", "check_preset_fits", "federation_conflicts"]


@dataclass(frozen=True)
class Conflict:
    """A setting a federation of sites cannot take.

    Parameters
    ----------
    setting
        ``section.key`` (``data.scaling``) or ``algorithm``.
    flag
        The command-line flag that sets it (``--scaling``).
    value
        The value refused.
    fix
        What to give instead (``--scaling client``), or how to drop it.
    why
        Why a federation cannot take it, in a few words.
    message
        The refusal's text.
    """

    setting: str
    flag: str
    value: Any
    fix: str
    why: str
    message: str


def federation_conflicts(config: ExperimentConfig) -> list[Conflict]:
    """Every setting of ``config`` a federation of sites cannot take, in the order checked."""
    from fedcare_core.algorithms import federation_algorithms  # torch: imported when used

    algorithms = tuple(federation_algorithms())
    out = []
    if config.algorithm not in algorithms:
        out.append(
            Conflict(
                "algorithm",
                "--algorithm",
                config.algorithm,
                f"--algorithm {algorithms[0]}",
                f"a federation of sites runs {' or '.join(algorithms)}",
                f"a federation of sites runs {' or '.join(algorithms)}, not {config.algorithm!r}",
            )
        )
    if config.data.benchmark_split is not None:
        out.append(
            Conflict(
                "data.benchmark_split",
                "--benchmark-split",
                config.data.benchmark_split,
                "no --benchmark-split",
                "each site splits its own patients",
                "data.benchmark_split: in a federation each site splits its own patients; a "
                "schema cannot fix a published split",
            )
        )
    if config.data.scaling != "client":
        out.append(
            Conflict(
                "data.scaling",
                "--scaling",
                config.data.scaling,
                "--scaling client",
                "it pools the clients' statistics before training, and sites prepare their "
                "files apart",
                f"data.scaling (--scaling) {config.data.scaling!r} pools the clients' statistics "
                "before training; sites' own files are prepared apart, so a federation of sites "
                "scales each site by its own (scaling 'client')",
            )
        )
    return out


def check_federation_config(config: ExperimentConfig) -> None:
    """Refuse a configuration a federation of sites cannot take (the first conflict).

    Raises
    ------
    ConfigError
        Naming the setting and its flag.
    """
    conflicts = federation_conflicts(config)
    if conflicts:
        raise ConfigError(conflicts[0].message)


def check_preset_fits(preset: str, config: ExperimentConfig, given: Collection[str]) -> None:
    """Refuse ``config`` by ``preset``'s name where the preset set what a federation refuses.

    Parameters
    ----------
    preset
        The ``--preset`` given.
    config
        The configuration built from it and the flags.
    given
        The flags given on the command line (``--scaling``): a setting a flag gave is the
        flag's, not the preset's.

    Raises
    ------
    ConfigError
        ``--preset NAME sets SETTING (FLAG) VALUE, …; add FIX …``: one line naming the
        preset, the setting and the flag to add.
    """
    from fedcare_core.config.presets import PRESETS

    sections = PRESETS.get(preset, {})
    for conflict in federation_conflicts(config):
        section, _, key = conflict.setting.rpartition(".")
        set_by_preset = key in sections.get(section, {}) if section else key in sections
        if set_by_preset and conflict.flag not in given:
            raise ConfigError(
                f"--preset {preset} sets {conflict.setting} ({conflict.flag}) "
                f"{conflict.value!r}, which a federation of sites cannot take: {conflict.why}; "
                f"add {conflict.fix} to start from {preset} here"
            )
