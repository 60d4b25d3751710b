"""Parsing MIMIC-III date/times, and repairing the two-digit years a spreadsheet leaves behind.

ISO ``YYYY-MM-DD HH:MM[:SS]`` (the MIMIC-III release format) is parsed directly. ``M/D/YY H:MM``
values, which a spreadsheet round trip leaves behind (the bundled demo's ``ADMISSIONS`` and
``PATIENTS`` are written that way), are ambiguous by whole centuries: MIMIC-III shifts dates
into 2100-2200 and dates of birth of patients over 89 some 300 years further back. Their
century is restored from a reference time of the same patient (see :func:`parse_times`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import numpy as np
import pandas as pd

from fedcare_core.errors import DataError

__all__ = ["TimeRule", "TimeStats", "parse_times"]

_ISO_RE = r"^\d{4}-\d{1,2}-\d{1,2}(?:[ T]\d{1,2}:\d{2}(?::\d{2}(?:\.\d+)?)?)?$"
_US_RE = r"^(\d{1,2})/(\d{1,2})/(\d{2}|\d{4})(?:\s+(\d{1,2}):(\d{2})(?::(\d{2}))?)?$"
#: Centuries a two-digit year may belong to: shifted MIMIC-III dates span 1800-2299.
_CENTURIES = (1800, 1900, 2000, 2100, 2200)
#: Seconds by which a "latest not after" candidate may still follow its anchor (one day).
_NOT_AFTER_TOLERANCE_S = 86_400
#: How a two-digit year's century is chosen (see :func:`parse_times`).
TimeRule = Literal["nearest", "latest_not_after"]


@dataclass
class TimeStats:
    """Counts of date values given with a two-digit year, per ``TABLE.COLUMN``.

    Parameters
    ----------
    two_digit
        Values written with a two-digit year.
    unresolved
        Of those, values left missing for want of a reference time.

    """

    two_digit: dict[str, int]
    unresolved: dict[str, int]

    def add(self, key: str, n_two: int, n_unresolved: int) -> None:
        """Accumulate counts for ``key``."""
        if n_two:
            self.two_digit[key] = self.two_digit.get(key, 0) + n_two
        if n_unresolved:
            self.unresolved[key] = self.unresolved.get(key, 0) + n_unresolved


@dataclass(frozen=True)
class _Origin:
    """Where parsed values come from, to name them in errors."""

    path: Path
    table: str
    column: str
    rows: np.ndarray

    def error(self, message: str, positions: np.ndarray) -> DataError:
        """A DataError for the values at ``positions`` (0-based, into the parsed Series)."""
        return DataError(
            message, file=str(self.path), column=self.column, rows=self.rows[positions].tolist()
        )


@dataclass(frozen=True)
class _MonthFirst:
    """The fields of ``M/D/Y[ H:MM[:SS]]`` values, year text kept apart."""

    index: pd.Index
    month: pd.Series
    day: pd.Series
    hour: pd.Series
    minute: pd.Series
    second: pd.Series

    @classmethod
    def from_parts(cls, parts: pd.DataFrame) -> _MonthFirst:
        """Fields from the groups of :data:`_US_RE` (time of day defaults to midnight)."""
        return cls(
            index=parts.index,
            month=parts[0].astype(int),
            day=parts[1].astype(int),
            hour=parts[3].fillna("0").astype(int),
            minute=parts[4].fillna("0").astype(int),
            second=parts[5].fillna("0").astype(int),
        )

    def compose(self, years: np.ndarray) -> pd.Series:
        """The date/times with the given full years; impossible dates become NaT."""
        text = pd.Series(
            [
                f"{y:04d}-{mo:02d}-{d:02d} {h:02d}:{mi:02d}:{se:02d}"
                for y, mo, d, h, mi, se in zip(
                    years, self.month, self.day, self.hour, self.minute, self.second, strict=True
                )
            ],
            index=self.index,
            dtype="str",
        )
        return pd.to_datetime(text, format="%Y-%m-%d %H:%M:%S", errors="coerce").astype(
            "datetime64[us]"
        )


def parse_times(
    raw: pd.Series,
    *,
    rows: np.ndarray,
    path: Path,
    column: str,
    anchor: pd.Series | None,
    rule: TimeRule,
    stats: TimeStats,
    table: str,
) -> pd.Series:
    """Parse date/time strings; restore the century of two-digit years from ``anchor``.

    ISO values (``YYYY-MM-DD[ HH:MM[:SS]]``) and ``M/D/YYYY[ H:MM[:SS]]`` values are parsed as
    they are. A ``M/D/YY`` value is ambiguous by whole centuries; its year is taken from
    1800-2299 so that the value is the one nearest ``anchor`` (``rule="nearest"``, for
    admission times anchored on the stay's ICU ``INTIME``) or the latest one not after
    ``anchor`` (``rule="latest_not_after"``, for dates of birth anchored on the first ICU
    ``INTIME``). Without an anchor such a value becomes NaT (counted in ``stats``).

    Parameters
    ----------
    raw
        The strings (NaN = missing).
    rows
        1-based data row numbers of ``raw``'s entries, for error messages.
    path, column, table
        Where the values come from, for error messages and ``stats``.
    anchor
        Reference times aligned with ``raw``, or None when there is none.
    rule
        How a two-digit year's century is chosen.
    stats
        Counters updated with the two-digit and unresolved values seen.

    Returns
    -------
    pandas.Series
        ``datetime64[us]`` values aligned with ``raw``.

    Raises
    ------
    DataError
        If a non-missing value is neither ISO nor ``M/D/Y`` (rows named), or two-digit years
        occur where no anchor exists.

    """
    origin = _Origin(path, table, column, rows)
    text = raw.astype("str").str.strip()
    present = text.notna() & (text != "")
    iso = present & text.str.match(_ISO_RE).fillna(False).astype(bool)
    out = pd.Series(pd.NaT, index=raw.index, dtype="datetime64[us]")
    if iso.any():
        out.loc[iso] = pd.to_datetime(text[iso], format="ISO8601", errors="coerce").astype(
            "datetime64[us]"
        )
    rest = present & ~iso
    n_two = n_unresolved = 0
    if rest.any():
        value, n_two, n_unresolved = _parse_month_first(text, rest, anchor, rule, origin)
        out.loc[rest] = value
    bad_iso = iso & out.isna()
    if bad_iso.any():
        bad_pos = np.flatnonzero(bad_iso.to_numpy())
        raise origin.error(f"invalid date in the {table} table", bad_pos)
    stats.add(f"{table}.{column}", n_two, n_unresolved)
    return out


def _parse_month_first(
    text: pd.Series,
    selected: pd.Series,
    anchor: pd.Series | None,
    rule: TimeRule,
    origin: _Origin,
) -> tuple[pd.Series, int, int]:
    """Parse the ``selected`` entries of ``text`` as ``M/D/Y`` values.

    Returns the values (indexed like ``text[selected]``), the number written with a two-digit
    year and the number of those whose century could not be restored.
    """
    table = origin.table
    positions = np.flatnonzero(selected.to_numpy())
    parts = text[selected].str.extract(_US_RE)
    matched = parts[0].notna().to_numpy()
    if not matched.all():
        bad_pos = positions[~matched]
        raise origin.error(
            f"unrecognised date/time in the {table} table (expected YYYY-MM-DD HH:MM:SS)",
            bad_pos,
        )
    fields = _MonthFirst.from_parts(parts)
    year_txt = parts[2]
    two = (year_txt.str.len() == 2).to_numpy()
    n_two = int(two.sum())
    if n_two and anchor is None:
        raise origin.error(
            f"two-digit years in the {table} table cannot be resolved (no reference date); "
            "write full years (YYYY-MM-DD HH:MM:SS)",
            positions[two],
        )
    yy = year_txt.astype(int).to_numpy()
    value = fields.compose(yy)
    n_unresolved = 0
    if n_two:
        assert anchor is not None
        ref = anchor[selected].astype("datetime64[us]").to_numpy()
        value = _restore_century(fields, value, yy, two, ref, rule)
        n_unresolved = int((two & value.isna().to_numpy()).sum())
    invalid = value.isna().to_numpy() & ~two
    if invalid.any():
        bad_pos = positions[invalid]
        raise origin.error(f"invalid date in the {table} table", bad_pos)
    return value, n_two, n_unresolved


def _restore_century(
    fields: _MonthFirst,
    value: pd.Series,
    yy: np.ndarray,
    two: np.ndarray,
    ref: np.ndarray,
    rule: TimeRule,
) -> pd.Series:
    """Give each two-digit year (``two``) the century that best fits ``ref`` under ``rule``.

    Values with a full year keep ``value``; a two-digit value stays NaT when no candidate
    century fits (no reference time, or every candidate is after it under
    ``"latest_not_after"``).
    """
    best = value.to_numpy().copy()
    best[two] = np.datetime64("NaT")
    best_cost = np.full(len(best), np.inf)
    for century in _CENTURIES:
        cand = fields.compose(np.where(two, century + yy, yy)).to_numpy()
        delta = (ref - cand) / np.timedelta64(1, "s")  # ref - candidate, seconds
        ok = two & ~np.isnat(cand) & ~np.isnat(ref)
        if rule == "nearest":
            cost = np.abs(delta)
        else:  # latest candidate not after the anchor (1-day tolerance)
            ok &= delta >= -_NOT_AFTER_TOLERANCE_S
            cost = delta
        take = ok & (cost < best_cost)
        best[take] = cand[take]
        best_cost[take] = cost[take]
    return pd.Series(best, index=fields.index, dtype="datetime64[us]")
