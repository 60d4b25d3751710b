"""Whether a client's training rows can teach each of its objectives (before any training)."""

from __future__ import annotations

import numpy as np

from fedcare_core.data.cohort import Cohort
from fedcare_core.errors import DataError
from fedcare_core.objectives import objective_kind

__all__ = ["check_labels"]


def check_labels(
    cohort: Cohort, objs: tuple[str, ...], y: np.ndarray, who: str, source: str | None
) -> None:
    """Raise if a client cannot learn an objective: no labelled, positive or negative row.

    ``who`` names the client in the message (``client 3``, ``site 'north'``).
    """
    for j, name in enumerate(objs):
        col = y[:, j]
        col = col[np.isfinite(col)]
        if len(col) == 0:
            raise DataError(
                f"{who} has no training row labelled for objective {name!r}; "
                "use fewer clients or more data",
                file=source,
                column=name,
            )
        kind = cohort.objective(name).kind
        reason = objective_kind(kind).unlearnable(col)
        if reason is not None:
            raise DataError(
                f"{who} {reason} for {kind} objective {name!r} in its "
                f"{len(col)} training rows; use fewer clients or more data",
                file=source,
                column=name,
            )
