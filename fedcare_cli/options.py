"""Options ``fedcare run`` and ``fedcare experiment`` share."""

from __future__ import annotations

from typing import Any

from fedcare_core.config import UNSEEN_CATEGORY_POLICIES


def add_unseen_categories_option(parser: Any) -> None:
    """``--unseen-categories``: refuse (default) or encode as 'other' unknown category values."""
    parser.add_argument(
        "--unseen-categories",
        choices=UNSEEN_CATEGORY_POLICIES,
        help="a category outside a column's documented values: refuse the data (default) or "
        "encode it as 'other' (for a site whose export holds more codes)",
    )
