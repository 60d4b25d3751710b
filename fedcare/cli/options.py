"""Options ``fedcare run`` and ``fedcare experiment`` share."""

from __future__ import annotations

from typing import Any, TypeVar

from fedcare_core.config.fields import Range
from fedcare_core.errors import ConfigError

#: An option's number type.
Number = TypeVar("Number", int, float)


def add_tracking_uri_option(
    parser: Any, what: str, otherwise: str = "else nothing is logged"
) -> None:
    """``--tracking-uri``: an MLflow tracking URI (default ``$MLFLOW_TRACKING_URI``).

    Parameters
    ----------
    parser
        The sub-command's parser.
    what
        What the store is for, in the help.
    otherwise
        What happens with neither the option nor ``$MLFLOW_TRACKING_URI``, in the help.
    """
    parser.add_argument(
        "--tracking-uri",
        metavar="URI",
        help=f"MLflow tracking URI, {what} (e.g. sqlite:///mlflow/mlflow.db, the stack's store "
        f"with the stack up or down, or http://127.0.0.1:5000; default $MLFLOW_TRACKING_URI, "
        f"{otherwise})",
    )


def bounded(flag: str, value: Number, limits: Range) -> Number:
    """``value`` of option ``flag`` if it lies in ``limits``, else a one-line refusal.

    Every numeric option a multi-site command reads is bounded where it is read, so a value
    that would overflow later (a timeout past the clock's range, 10**9 sites) is refused first.

    Raises
    ------
    ConfigError
        ``<flag> must lie in [low, high], got <value>``.
    """
    if not limits.contains(value):
        shown = f"{value:,}" if isinstance(value, int) else f"{value:g}"  # never read as an id
        raise ConfigError(f"{flag} must {limits.text()}, got {shown}")
    return value
