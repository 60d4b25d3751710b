"""Flower's console lines in a FedCARE process: warnings only unless asked, colour on a terminal.

Flower's ServerApp logs each run at INFO on stderr (its strategy's settings, ``[ROUND t/T]``,
the aggregated metrics of every round, the final results: about 150 lines per flower-sim run of
100 rounds), in ANSI colour even when stderr is a file. Where a FedCARE command runs Flower in
its own process (``--backend flower-sim``: the ServerApp's thread), :func:`flower_console`
shows Flower's WARNING lines and above only, and colours them only on a terminal; FedCARE's
progress bars say how far the rounds are. ``FLWR_LOG_LEVEL`` (Flower's own variable:
``FLWR_LOG_LEVEL=INFO`` or ``DEBUG``) brings Flower's lines back, still without colour in a file.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

#: Flower's variable for its console level (read by Flower at import, and here).
FLOWER_LOG_LEVEL_ENV = "FLWR_LOG_LEVEL"
#: Flower's console level in a FedCARE process unless :data:`FLOWER_LOG_LEVEL_ENV` names one.
QUIET_LEVEL = logging.WARNING


def requested_level(environ: dict[str, str] | None = None) -> int:
    """The console level :data:`FLOWER_LOG_LEVEL_ENV` names, else :data:`QUIET_LEVEL`.

    Parameters
    ----------
    environ
        The environment (None: ``os.environ``). A value that is not a logging level's name
        (``INFO``, ``debug``, ``WARNING``, …) counts as unset, as Flower treats it.

    Returns
    -------
    int
        A :mod:`logging` level.
    """
    value = (os.environ if environ is None else environ).get(FLOWER_LOG_LEVEL_ENV, "")
    level = logging.getLevelName(value.strip().upper()) if value.strip() else None
    return level if isinstance(level, int) else QUIET_LEVEL


#: The logger Flower writes to (its console handler hangs there).
_FLOWER_LOGGER = "flwr"


def _is_terminal(stream: Any) -> bool:
    """Whether ``stream`` is an interactive terminal (a file, a pipe or a closed stream: no)."""
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError, OSError):
        return False


@contextmanager
def flower_console() -> Iterator[None]:
    """Flower's console at :func:`requested_level` and above, coloured only on a terminal.

    Flower's console handlers are set so within the block, and put back as they were after it.
    """
    # Flower's console handler (flwr.common.logger, not public API) is found by its ``colored``
    # switch on the ``flwr`` logger; none found: nothing to set.
    handlers: list[Any] = [
        h for h in logging.getLogger(_FLOWER_LOGGER).handlers if hasattr(h, "colored")
    ]
    saved = [(h, h.level, h.colored) for h in handlers]
    level = requested_level()
    for handler in handlers:
        handler.setLevel(level)
        handler.colored = _is_terminal(handler.stream)
    try:
        yield
    finally:
        for handler, old_level, old_colored in saved:
            handler.setLevel(old_level)
            handler.colored = old_colored
