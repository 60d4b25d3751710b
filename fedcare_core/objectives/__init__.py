"""Objective kinds: what a label is, the head's prediction, its loss, metric and columns.

Each kind is one entry of ``fedcare.objective_kinds`` (:mod:`fedcare_core.plugins`):
``binary`` (:mod:`~fedcare_core.objectives.binary`) and ``regression``
(:mod:`~fedcare_core.objectives.regression`) are FedCARE's own, declared as an outside
package declares its own (``docs/EXTENDING.md``).
"""

from __future__ import annotations

from fedcare_core.objectives.kind import (
    ObjectiveKind,
    compute_metric,
    make_loss,
    objective_kind,
    objective_kind_names,
    predict,
)
from fedcare_core.objectives.metrics import MetricValue

__all__ = [
    "MetricValue",
    "ObjectiveKind",
    "compute_metric",
    "make_loss",
    "objective_kind",
    "objective_kind_names",
    "predict",
]
