"""Type and range checks of the configuration dataclasses' fields, generic over their fields.

Every field of a configuration section is checked against its declared type (``int``,
``float``, ``bool``, ``str``, a tuple of ints, or ``X | None``) and, for numbers, against a
:class:`Range`. A value from JSON, a flag or a Prefect parameter is checked as it arrives
(:func:`coerce_section`), and a constructed dataclass again in its ``validate()``
(:func:`check_fields`). Messages name the parameter (``stage1.local_lr``) and the value.

Policy: a bool is not a number; an integral float (``2.0``) is not silently an integer (it is
refused, as ``2.5`` is); an integer is accepted where a float belongs; NaN and ±inf are
refused for every float field; a JSON array or object is refused where a scalar belongs.
"""

from __future__ import annotations

import math
import numbers
import types
import typing
from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any

from fedcare_core.errors import ConfigError


@dataclass(frozen=True)
class Range:
    """The values a number field accepts: ``low``/``high`` bounds, each closed or open."""

    low: float | None = None
    high: float | None = None
    low_open: bool = False
    high_open: bool = False

    def contains(self, value: float) -> bool:
        """Whether ``value`` lies in the range."""
        if self.low is not None and (value <= self.low if self.low_open else value < self.low):
            return False
        return not (
            self.high is not None and (value >= self.high if self.high_open else value > self.high)
        )

    def text(self) -> str:
        """The range in words, e.g. ``≥ 1`` or ``in (0, 1)``."""
        if self.low is not None and self.high is not None:
            left, right = "(" if self.low_open else "[", ")" if self.high_open else "]"
            return f"lie in {left}{_bound(self.low)}, {_bound(self.high)}{right}"
        if self.low is not None:
            return f"be {'>' if self.low_open else '≥'} {_bound(self.low)}"
        if self.high is not None:
            return f"be {'<' if self.high_open else '≤'} {_bound(self.high)}"
        return "be finite"


def _num(value: float) -> str:
    """A number as messages write it (integers without a decimal point)."""
    if isinstance(value, int) or (
        math.isfinite(value) and value == int(value) and abs(value) < 1e15
    ):
        return str(int(value))
    return f"{value:g}"


def _bound(value: float) -> str:
    """A range's bound as messages write it: :func:`_num`, large integers grouped (100,000)."""
    text = _num(value)
    return f"{int(text):,}" if text.lstrip("-").isdigit() and abs(int(text)) >= 10_000 else text


#: Common ranges.
AT_LEAST_1 = Range(1)
NON_NEGATIVE = Range(0)
POSITIVE = Range(0, low_open=True)
ANY_FINITE = Range()
OPEN_UNIT = Range(0, 1, low_open=True, high_open=True)
CLOSED_UNIT = Range(0, 1)
HALF_OPEN_UNIT = Range(0, 1, high_open=True)


@dataclass(frozen=True)
class FieldKind:
    """A field's declared type: its base (``X | None`` unwrapped), optionality, tuple length."""

    base: type
    optional: bool
    length: int | None = None  # tuples: how many ints


_KINDS: dict[type, dict[str, FieldKind]] = {}


def field_kinds(cls: type) -> dict[str, FieldKind]:
    """Each field of dataclass ``cls`` with its declared base type (``X | None`` unwrapped)."""
    if cls in _KINDS:
        return _KINDS[cls]
    hints = typing.get_type_hints(cls)
    kinds: dict[str, FieldKind] = {}
    for f in fields(cls):
        hint = hints[f.name]
        optional = False
        if typing.get_origin(hint) in (types.UnionType, typing.Union):
            args = [a for a in typing.get_args(hint) if a is not type(None)]
            optional, hint = len(args) < len(typing.get_args(hint)), args[0]
        if typing.get_origin(hint) is tuple:
            kinds[f.name] = FieldKind(tuple, optional, len(typing.get_args(hint)))
        else:
            kinds[f.name] = FieldKind(hint, optional)
    _KINDS[cls] = kinds
    return kinds


def show(value: object) -> str:
    """A value as a message shows it (JSON words for arrays, objects and null)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return f"{str(value).lower()} (a boolean)"
    if isinstance(value, str):
        return f"{value!r} (a string)"
    if isinstance(value, list | tuple):
        return f"a JSON array {list(value)!r}"
    if isinstance(value, Mapping):
        return "a JSON object"
    return repr(value) if not isinstance(value, float) else f"{value:g}"


def _is_int(value: object) -> bool:
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def _is_real(value: object) -> bool:
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


def check_value(path: str, value: Any, kind: FieldKind, limits: Range | None) -> Any:
    """``value`` checked against the field's type and range, as the field stores it.

    Raises
    ------
    ConfigError
        Naming ``path`` and the value.
    """
    if value is None:
        if kind.optional:
            return None
        raise ConfigError(f"{path} must not be null")
    if kind.base is bool:
        if not isinstance(value, bool):
            raise ConfigError(f"{path} must be true or false, got {show(value)}")
        return value
    if kind.base is str:
        if not isinstance(value, str):
            raise ConfigError(f"{path} must be a string, got {show(value)}")
        return value
    if kind.base is tuple:
        n = kind.length
        if not isinstance(value, list | tuple) or len(value) != n or not all(map(_is_int, value)):
            raise ConfigError(f"{path} must be a list of {n} integers, got {show(value)}")
        for item in value:
            _check_range(path, int(item), limits)
        return tuple(int(item) for item in value)
    if kind.base is int:
        if not _is_int(value):
            raise ConfigError(f"{path} must be an integer, got {show(value)}")
        return _check_range(path, int(value), limits)
    if kind.base is float:
        if not _is_real(value):
            raise ConfigError(f"{path} must be a number, got {show(value)}")
        number = float(value)
        if not math.isfinite(number):
            raise ConfigError(f"{path} must be a finite number, got {number}")
        return _check_range(path, number, limits)
    raise TypeError(f"{path}: unsupported field type {kind.base!r}")  # pragma: no cover


def _check_range(path: str, value: float, limits: Range | None) -> Any:
    if limits is not None and not limits.contains(value):
        raise ConfigError(f"{path} must {limits.text()}, got {_num(value)}")
    return value


def coerce_section(
    cls: type, prefix: str, raw: object, ranges: Mapping[str, Range]
) -> dict[str, Any]:
    """The keyword arguments of section ``cls`` from ``raw`` (JSON, flags, parameters), checked.

    Parameters
    ----------
    cls
        The section's dataclass.
    prefix
        Its name in messages (``"stage1"``).
    raw
        The values given; must be a mapping of known field names.
    ranges
        Each number field's range.

    Raises
    ------
    ConfigError
        A non-mapping, an unknown key, a wrong type or a value out of range.
    """
    if not isinstance(raw, Mapping):
        raise ConfigError(
            f"configuration section {prefix!r} must be a JSON object, got {show(raw)}"
        )
    kinds = field_kinds(cls)
    unknown = sorted(str(k) for k in raw if k not in kinds)
    if unknown:
        raise ConfigError(f"unknown {prefix} configuration key(s): {unknown}")
    return {
        key: check_value(f"{prefix}.{key}", value, kinds[key], ranges.get(key))
        for key, value in raw.items()
    }


def check_fields(obj: object, prefix: str, ranges: Mapping[str, Range]) -> None:
    """Check every field of a constructed configuration dataclass (types and ranges).

    Raises
    ------
    ConfigError
        Naming the first field at fault.
    """
    for name, kind in field_kinds(type(obj)).items():
        path = f"{prefix}.{name}" if prefix else name
        value = getattr(obj, name)
        if kind.base is tuple and isinstance(value, list):
            raise ConfigError(f"{path} must be a tuple of {kind.length} integers, got a list")
        check_value(path, value, kind, ranges.get(name))
