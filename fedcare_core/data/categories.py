"""Known value sets: refuse a category a column has never been documented to hold, or map it.

Every declared vocabulary (a dataset definition's ``vocabulary``) is a data-dictionary fact. A
value outside it is most often a corrupted or mis-exported file, so by default
(``unseen_categories="refuse"``) the loader stops and names the file, the column and the rows,
never the values themselves (:mod:`fedcare_core.data.declared.values`). ``"other"`` is the
explicit opt-in for a site whose export legitimately holds more codes: those values are kept and
every client encodes them in the column's ``other`` indicator (see
:mod:`fedcare_core.data.preprocess`), and the cohort's notes say how many there were.
"""

from __future__ import annotations

from collections.abc import Sequence

from fedcare_core.config.limits import UNSEEN_CATEGORY_POLICIES

__all__ = ["UNSEEN_CATEGORY_POLICIES", "unseen_categories_message"]

#: How many known values a message lists before it summarises the rest.
_MAX_KNOWN_SHOWN = 12


def unseen_categories_message(n: int, vocabulary: Sequence[str]) -> str:
    """The refusal of ``n`` values outside ``vocabulary``: the known values and the way out."""
    known = ", ".join(repr(v) for v in vocabulary[:_MAX_KNOWN_SHOWN])
    if len(vocabulary) > _MAX_KNOWN_SHOWN:
        known += f" … ({len(vocabulary)} in all)"
    return (
        f"{n} value(s) outside the column's known categories ({known}); if the site's export "
        "legitimately holds other codes, pass --unseen-categories other (data.unseen_categories) "
        "to encode them as 'other'"
    )
