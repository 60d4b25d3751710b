"""Where the user keeps the real data sets, and what to say when none is found."""

from __future__ import annotations

import os
from pathlib import Path

from fedcare_core.errors import DataError

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


def checked_data_dir(arg: str | Path | None, *, looks_elsewhere: bool = False) -> Path | None:
    """:func:`resolve_data_dir`, refusing a ``$FEDCARE_DATA_DIR`` that names nothing.

    A path given explicitly is returned as it is (the dataset's source names it when it does
    not exist); one that comes from the environment is checked here, so that the message names
    the variable a user may have forgotten setting rather than a path from nowhere.

    Parameters
    ----------
    arg
        A path given explicitly (e.g. ``--data-dir``, a flow's ``data_dir``), or None.
    looks_elsewhere
        The dataset also looks beside its definition file when that folder holds nothing (a
        dataset defined by a file): a variable naming no folder is then passed over, as before.

    Returns
    -------
    Path or None
        As :func:`resolve_data_dir`.

    Raises
    ------
    DataError
        ``$FEDCARE_DATA_DIR`` used, naming no file or folder, for a dataset that looks nowhere
        else.
    """
    path = resolve_data_dir(arg)
    from_env = path is not None and (arg is None or str(arg) == "")
    if from_env and path is not None and not looks_elsewhere and not path.exists():
        raise DataError(
            f"{_DATA_DIR_ENV}={path}: no such file or folder; point it at the data folder, "
            "unset it, or pass --data-dir DIR"
        )
    return path


def no_data_message(dataset: str, *, fetch_into: Path | None = None) -> str:
    """One line saying that no data was given for ``dataset``, and every way to give it.

    Parameters
    ----------
    dataset
        The dataset's name, as the user writes it.
    fetch_into
        The download cache ``fedcare data fetch`` fills for this dataset, where it has a
        public download (None: it has none, e.g. credentialed data).

    Returns
    -------
    str
        ``no data folder given for D …: pass --data-dir DIR (a flow: data_dir), set
        FEDCARE_DATA_DIR=DIR, or run 'fedcare data fetch D' …``.
    """
    given = "pass --data-dir DIR (a flow: data_dir)"
    if fetch_into is None:
        return f"no data folder given for {dataset}: {given} or set {_DATA_DIR_ENV}=DIR"
    return (
        f"no data folder given for {dataset} and none downloaded (nothing in {fetch_into}): "
        f"{given}, set {_DATA_DIR_ENV}=DIR, or run 'fedcare data fetch {dataset}' (downloads "
        "and verifies the public file there, where a run without --data-dir reads it)"
    )
