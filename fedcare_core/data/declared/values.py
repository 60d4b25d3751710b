"""A declared column's raw values checked and typed: categories, numbers, date-times.

Each check refuses with one :class:`~fedcare_core.errors.DataError` naming the file, the column
and the rows (:class:`~.reading.TableRows`), never a value: a gap where none is allowed, text in
a number, a fraction in an integer, a number outside its plausible range, a category outside
its vocabulary (unless ``unseen_categories="other"``) or not of its declared form, a date-time
that does not parse. The loader and the rows a packaged model scores share these checks.
"""

from __future__ import annotations

import re
from typing import cast

import numpy as np
import pandas as pd

from fedcare_core.data.categories import unseen_categories_message
from fedcare_core.data.declared.model import Column, Groups
from fedcare_core.data.declared.reading import TableRows

__all__ = ["column_values", "recode_groups", "text_of"]


def text_of(raw: pd.Series) -> pd.Series:
    """A column as stripped strings (object dtype); missing and empty cells are None."""
    # Each distinct value once (a column holds few), then spread back: None for missing.
    codes, uniques = pd.factorize(raw.astype(object), use_na_sentinel=True)
    texts = [_text(v) for v in uniques]
    spread = np.array([*(t if t != "" else None for t in texts), None], dtype=object)
    return pd.Series(spread[codes], index=raw.index, dtype=object, name=raw.name)


def _text(value: object) -> str:
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value).strip()


def column_values(
    raw: pd.Series,
    column: Column,
    rows: TableRows,
    unseen_categories: str,
    notes: list[str],
    *,
    missing_message: str | None = None,
    fields: int = 0,
) -> pd.Series:
    """``raw`` checked against ``column``'s declaration and typed.

    Parameters
    ----------
    raw
        The column as read (text from CSV, typed from Parquet).
    column
        Its declaration.
    rows
        Where each row came from (messages).
    unseen_categories
        ``"refuse"`` or ``"other"``: a category outside the declared vocabulary.
    notes
        Appended to: what ``"other"`` kept.
    missing_message
        What a gap where none is allowed says (None: a default naming the column).
    fields
        How many columns a row holds (a message on a gap in a label's source says a row may
        have fewer); 0: not said.

    Returns
    -------
    pandas.Series
        Numbers as float64 and date-times as ``datetime64[ns]`` (NaN/NaT missing); categories
        as ``str`` (recoded into their groups, if declared; NaN missing).

    Raises
    ------
    DataError
        Naming the file, the column and the rows.
    """
    if column.numeric:
        values = _numbers(raw, column, rows)
    elif column.type == "datetime":
        values = _datetimes(raw, column, rows)
    elif column.known_at is None and column.vocabulary is not None:
        values = _source_categories(raw, column, rows, fields)
    else:
        values = _categories(raw, column, rows, unseen_categories, notes)
    missing = values.isna().to_numpy()
    if not column.gaps and missing.any():
        raise rows.error(
            missing_message
            or f"{column.name} is missing; its definition allows no gaps (gaps: true allows them)",
            column.name,
            missing,
        )
    return values


def _source_categories(raw: pd.Series, column: Column, rows: TableRows, fields: int) -> pd.Series:
    """A category read by labels or rules only: refused outside its vocabulary.

    Whatever the unseen-category policy, which is about encoding features.
    """
    assert column.vocabulary is not None
    text = text_of(raw)
    text = _recoded(text, column)
    missing = text.isna().to_numpy() & (not column.gaps)
    bad = (text.notna().to_numpy() & ~text.isin(column.vocabulary).to_numpy()) | missing
    if bad.any():
        hint = (
            f" (missing or empty: a row may be truncated or have fewer than {fields} fields)"
            if missing.any() and fields
            else ""
        )
        raise rows.error(
            f"{column.name} must be one of {', '.join(column.vocabulary)}{hint}", column.name, bad
        )
    return text.astype("str").rename(column.name)


def _parsed_numbers(raw: pd.Series, name: str, rows: TableRows, *, whole: bool) -> np.ndarray:
    """``raw`` as float64 (NaN missing); text, true/false, ±inf (and fractions) refused."""
    if pd.api.types.is_bool_dtype(raw.dtype):
        raise rows.error("true/false value(s) in a numeric column", name, raw.notna())
    if raw.dtype == object:
        flags = raw.map(lambda v: isinstance(v, bool | np.bool_)).to_numpy(dtype=bool)
        if flags.any():
            raise rows.error("true/false value(s) in a numeric column", name, flags)
    if pd.api.types.is_numeric_dtype(raw.dtype):
        values = raw.astype("float64")
    else:
        text = text_of(raw)
        values = pd.to_numeric(text, errors="coerce").astype("float64")
        bad = (text.notna() & values.isna()).to_numpy()
        if bad.any():
            raise rows.error("non-numeric value(s) in a numeric column", name, bad)
    array = values.to_numpy()
    if np.isinf(array).any():
        raise rows.error("infinite value(s) in a numeric column", name, np.isinf(array))
    if whole:
        present = ~np.isnan(array)
        fractional = present & (array != np.floor(np.where(present, array, 0.0)))
        if fractional.any():
            raise rows.error("non-integer value(s) in an integer column", name, fractional)
    return np.asarray(array, dtype=np.float64)


#: An interval as ``[low-high)``.
_INTERVAL = r"^\s*\[\s*(-?\d+(?:\.\d+)?)\s*-\s*(-?\d+(?:\.\d+)?)\s*\)\s*$"


def _interval_midpoints(raw: pd.Series, column: Column, rows: TableRows) -> np.ndarray:
    """``[70-80)`` → 75.0 (missing: NaN); what is not a (declared) interval is refused."""
    name = column.name
    text = text_of(raw)
    present = text.notna().to_numpy()
    if column.vocabulary is not None:
        unknown = present & ~text.isin(column.vocabulary).to_numpy()
        if unknown.any():
            vocabulary = column.vocabulary
            raise rows.error(
                f"{name} must be one of the {_count_word(len(vocabulary))} brackets "
                f"{vocabulary[0]} … {vocabulary[-1]}",
                name,
                unknown,
            )
    codes, uniques = pd.factorize(text, use_na_sentinel=True)
    parts = pd.Series(np.asarray(uniques, dtype=object), dtype="str").str.extract(_INTERVAL)
    low = pd.to_numeric(parts[0], errors="coerce").to_numpy(dtype="float64")
    high = pd.to_numeric(parts[1], errors="coerce").to_numpy(dtype="float64")
    bad_unique = np.isnan(low) | np.isnan(high) | (high < low)
    bad = (codes >= 0) & bad_unique[np.maximum(codes, 0)] if len(uniques) else present & False
    if np.asarray(bad).any():
        raise rows.error(f"{name} must be an interval such as '[70-80)'", name, bad)
    middle = np.append((low + high) / 2.0, np.nan)  # code -1 → NaN
    return np.asarray(middle[codes], dtype=np.float64)


def _numbers(raw: pd.Series, column: Column, rows: TableRows) -> pd.Series:
    name = column.name
    if column.parse == "interval_midpoint":
        array = _interval_midpoints(raw, column, rows)
    else:
        array = _parsed_numbers(raw, name, rows, whole=column.type == "integer")
    present = ~np.isnan(array)
    assert column.range is not None  # checked with the definition
    low, high = column.range
    outside = present & ((array < low) | (array > high))
    if column.known_at is None and not column.gaps:
        outside |= ~present  # a label's source: missing is as wrong as out of range
    if outside.any():
        raise rows.error(_range_message(column, low, high), name, outside)
    return pd.Series(array, index=raw.index, name=name, dtype="float64")


def _range_message(column: Column, low: float, high: float) -> str:
    """``x must lie in [0, 9] mg/dL``, ``n must be a whole number of days from 1 to 14``.

    The column's description, if any, follows in parentheses.
    """
    if column.type == "integer":
        unit = f" of {column.unit}" if column.unit else ""
        text = f"{column.name} must be a whole number{unit} from {low:g} to {high:g}"
    else:
        unit = f" {column.unit}" if column.unit else ""
        text = f"{column.name} must lie in [{low:g}, {high:g}]{unit}"
    return text + (f" ({column.description})" if column.description else "")


_WORDS = ("no", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten")


def _count_word(n: int) -> str:
    return _WORDS[n] if n < len(_WORDS) else str(n)


def _datetimes(raw: pd.Series, column: Column, rows: TableRows) -> pd.Series:
    if pd.api.types.is_datetime64_any_dtype(raw.dtype):
        values = pd.to_datetime(raw, utc=True).dt.tz_localize(None)
    else:
        text = text_of(raw)
        fmt = column.format or "ISO8601"
        values = pd.to_datetime(text, format=fmt, errors="coerce", utc=True).dt.tz_localize(None)
        bad = (text.notna() & values.isna()).to_numpy()
        if bad.any():
            shape = f"the format {column.format!r}" if column.format else "ISO 8601"
            raise rows.error(f"value(s) that are not a date-time in {shape}", column.name, bad)
    return values.astype("datetime64[ns]").rename(column.name)


def _categories(
    raw: pd.Series, column: Column, rows: TableRows, unseen_categories: str, notes: list[str]
) -> pd.Series:
    text = text_of(raw)
    if column.integer_codes:
        numbers = _parsed_numbers(raw, column.name, rows, whole=True)
        text = pd.Series(
            [None if np.isnan(v) else str(int(v)) for v in numbers], index=raw.index, dtype=object
        )
    text = _recoded(text, column)
    present = text.notna().to_numpy()
    if column.pattern is not None:
        form = re.compile(column.pattern)
        wrong = present & ~text.map(lambda v: isinstance(v, str) and form.fullmatch(v) is not None)
        if np.asarray(wrong, dtype=bool).any():
            raise rows.error(
                f"{column.name} must be {column.form}"
                if column.form
                else f"value(s) not of the column's declared form ({column.pattern})",
                column.name,
                np.asarray(wrong, dtype=bool),
            )
    if column.vocabulary is not None:
        unseen = present & ~text.isin(column.vocabulary).to_numpy()
        if unseen.any():
            if unseen_categories != "other":
                raise rows.error(
                    unseen_categories_message(int(unseen.sum()), column.vocabulary),
                    column.name,
                    unseen,
                )
            notes.append(
                f"{rows.source_name(column.name)}: {int(unseen.sum())} value(s) outside its "
                "known categories "
                "encoded as 'other' (--unseen-categories other)"
            )
    if column.groups is not None:
        text = recode_groups(text, column.groups)
    return text.astype("str").rename(column.name)


def _recoded(text: pd.Series, column: Column) -> pd.Series:
    """``text`` with the files' own codes read as the values they mean (``recode``)."""
    if column.recode is None:
        return text
    recode = column.recode
    return text.map(lambda v: recode.get(v, v) if isinstance(v, str) else v)


def recode_groups(text: pd.Series, groups: Groups) -> pd.Series:
    """Each value's group (the first that matches; ``groups.other`` if none); None stays None."""
    codes, uniques = pd.factorize(text, use_na_sentinel=True)
    mapped = np.array([_group_of(str(u), groups) for u in uniques] + [None], dtype=object)
    return pd.Series(mapped[codes], index=text.index, dtype=object)


def _group_of(value: str, groups: Groups) -> str:
    if groups.by == "prefix":
        for name, prefixes in groups.groups:
            if any(value.startswith(str(p)) for p in prefixes):
                return name
        return groups.other
    try:
        whole = float(np.floor(float(value)))
    except ValueError:
        return groups.other
    for name, ranges in groups.groups:
        for member in ranges:
            low, high = cast(tuple[float, float], member)
            if low <= whole <= high:
                return name
    return groups.other
