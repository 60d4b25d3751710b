"""Where the user keeps the real data sets."""

from __future__ import annotations

import os
from pathlib import Path

#: Environment variable naming the data directory when no path is given.
_DATA_DIR_ENV = "FEDCARE_DATA_DIR"


def resolve_data_dir(arg: str | Path | None) -> Path | None:
    """Return the data directory to read from.

    Parameters
    ----------
    arg
        A path given explicitly (e.g. a CLI option); wins when given (non-empty).

    Returns
    -------
    Path or None
        ``arg`` if given, else ``$FEDCARE_DATA_DIR`` if set and non-empty, else ``None``. A
        leading ``~`` is expanded; the path is not checked for existence.

    """
    if arg is not None and str(arg) != "":
        return Path(arg).expanduser()
    env = os.environ.get(_DATA_DIR_ENV)
    if env:
        return Path(env).expanduser()
    return None
