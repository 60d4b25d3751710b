"""``FEDCARE_QUICK=1``: every run at a size that finishes in seconds, to try the commands.

With the variable set (to anything but ``0`` or empty), every configuration FedCARE validates
is capped: at most :data:`QUICK_ROUNDS` Stage 1 rounds, :data:`QUICK_EPOCHS` Stage 2 and bound
epochs, and :data:`QUICK_PATIENTS` patients; experiment grids run :data:`_QUICK_SEEDS` seed. The
capped values are the run's configuration (they show in ``results.json``, MLflow and the
tables), and each command says once that the mode is on. It is how the README's journeys are
tested (``tests/e2e/test_readme.py``); its numbers mean nothing.
"""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from fedcare_core.config import ExperimentConfig

#: The environment variable that turns the mode on.
QUICK_ENV = "FEDCARE_QUICK"
QUICK_ROUNDS = 2
QUICK_EPOCHS = 2
QUICK_PATIENTS = 3000
_QUICK_SEEDS = 1

_said = False


def _quick_mode() -> bool:
    """Whether ``FEDCARE_QUICK`` asks for quick runs."""
    return os.environ.get(QUICK_ENV, "").strip() not in ("", "0")


def quick_sized(config: ExperimentConfig) -> ExperimentConfig:
    """``config`` capped to the quick size when :func:`_quick_mode`, else ``config`` itself.

    Parameters
    ----------
    config
        A valid configuration.

    Returns
    -------
    ExperimentConfig
        Rounds, epochs and patients no larger than the quick limits; everything else as given.
    """
    if not _quick_mode():
        return config
    _say()
    patients = config.data.max_patients
    sections: dict[str, Any] = {
        "stage1": {"rounds": min(config.stage1.rounds, QUICK_ROUNDS)},
        "stage2": {"epochs": min(config.stage2.epochs, QUICK_EPOCHS)},
        "baselines": _quick_options(config),
        "data": {
            "max_patients": QUICK_PATIENTS if patients is None else min(patients, QUICK_PATIENTS)
        },
    }
    capped = config.with_overrides(**sections)
    return config if capped == config else capped


def quick_seeds(seeds: int) -> int:
    """How many seeds a grid runs: ``seeds``, or :data:`_QUICK_SEEDS` in quick mode."""
    if not _quick_mode():
        return seeds
    _say()
    return min(seeds, _QUICK_SEEDS)


def _say() -> None:
    global _said
    if not _said:
        _said = True
        print(
            f"fedcare: {QUICK_ENV} is set: runs are capped at {QUICK_ROUNDS} rounds, "
            f"{QUICK_EPOCHS} epochs and {QUICK_PATIENTS} patients (to try commands; the "
            "numbers mean nothing)",
            file=sys.stderr,
        )


def _quick_options(config: ExperimentConfig) -> dict[str, Any]:
    """What each installed method caps of its own settings (``MethodOptions.quick``)."""
    from fedcare_core.config.method_options import options_classes

    out: dict[str, Any] = {}
    for cls in options_classes():
        out.update(cls.of(config.baselines).quick())
    return out
