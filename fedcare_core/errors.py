"""Errors the core raises for expected, user-facing failures.

Every expected failure (bad input file, bad configuration) is a :class:`FedcareError`, so the
CLI can print one clear message and exit non-zero without a traceback.
"""

from __future__ import annotations

from collections.abc import Sequence

#: How many offending row numbers a message lists before it summarises the rest.
_MAX_ROWS_SHOWN = 10


class FedcareError(Exception):
    """Base class of every expected, user-facing error."""


class ConfigError(FedcareError, ValueError):
    """An invalid configuration value or option string."""


class TrainingDivergedError(FedcareError):
    """Training produced non-finite values (NaN or ±inf): the step sizes or the noise too large."""


class DataError(FedcareError):
    """A problem with an input data file.

    Parameters
    ----------
    message
        What is wrong, in plain words.
    file
        The file at fault (path as the user gave or as found), if any.
    column
        The column at fault, if any.
    rows
        1-based data row numbers at fault (header excluded), if any. Only the first
        :data:`_MAX_ROWS_SHOWN` are printed, followed by a count of the rest.
    """

    def __init__(
        self,
        message: str,
        *,
        file: str | None = None,
        column: str | None = None,
        rows: Sequence[int] | None = None,
    ) -> None:
        self.message = message
        self.file = file
        self.column = column
        self.rows = tuple(int(r) for r in rows) if rows is not None else None
        super().__init__(self.__str__())

    def __str__(self) -> str:
        parts = []
        if self.file is not None:
            parts.append(f"file {self.file}")
        if self.column is not None:
            parts.append(f"column {self.column!r}")
        if self.rows:
            shown = ", ".join(str(r) for r in self.rows[:_MAX_ROWS_SHOWN])
            more = len(self.rows) - _MAX_ROWS_SHOWN
            suffix = f" and {more} more" if more > 0 else ""
            label = "row" if len(self.rows) == 1 else "rows"
            parts.append(f"{label} {shown}{suffix}")
        where = "; ".join(parts)
        return f"{where}: {self.message}" if where else self.message


class MissingColumnsError(DataError):
    """A file whose header lacks columns it must hold.

    Parameters
    ----------
    message
        What is wrong, naming the columns.
    file
        The file at fault.
    missing
        The columns it must hold and does not, as the file would name them.
    unexpected
        The columns it holds that nothing asked for (perhaps the missing ones, renamed).
    """

    def __init__(
        self,
        message: str,
        *,
        file: str,
        missing: Sequence[str],
        unexpected: Sequence[str] = (),
    ) -> None:
        self.missing = tuple(missing)
        self.unexpected = tuple(unexpected)
        super().__init__(message, file=file, column=missing[0] if len(missing) == 1 else None)


class ChecksumError(DataError):
    """A file's SHA-256 does not match the expected value."""


class DefinitionError(ConfigError):
    """A dataset definition file (or a site's private-feature or column-map file) is invalid.

    Parameters
    ----------
    message
        What is wrong, in plain words.
    file
        The file at fault.
    key
        Where in it: ``columns.age.range``, ``objectives[1].label`` (None: the whole file).
    """

    def __init__(self, message: str, *, file: str, key: str | None = None) -> None:
        self.message = message
        self.file = file
        self.key = key
        super().__init__(self.__str__())

    def __str__(self) -> str:
        where = f"file {self.file}" + ("" if self.key is None else f"; key {self.key}")
        return f"{where}: {self.message}"
