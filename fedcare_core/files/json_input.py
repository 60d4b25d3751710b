"""Reading a JSON file a user or another party hands over, with one clear message per fault.

:func:`read_json` reads a document (missing, unreadable, oversized or malformed: one line naming
the file). :class:`JsonObject` takes the fields of an object out of it *checked*: each accessor
says what the field must be, and a refusal names the file and the field
(``site card X: field 'objectives' must be a non-empty list of distinct names, got 'los' (a
string)``). Every file a site or the coordinator reads (site cards, ``site.json``, the
broadcast ``w*``'s document, the coordinator's state files) is read through it, so a wrong type,
a missing field or an out-of-range number is refused before it is used.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NoReturn

from fedcare_core.config.fields import Range, show
from fedcare_core.errors import ConfigError
from fedcare_core.files.safe_names import check_name, is_safe_name

#: Default cap on a JSON file's size: far above any file FedCARE writes, far below memory.
_MAX_JSON_BYTES = 64 * 2**20
#: A SHA-256 digest as FedCARE writes it (64 lower-case hexadecimal digits).
_DIGEST = re.compile(r"[0-9a-f]{64}")
#: How many characters of a refused value a message shows.
_SHOWN = 80


def read_json(path: str | Path, what: str, max_bytes: int = _MAX_JSON_BYTES) -> Any:
    """The JSON document in ``path``.

    Parameters
    ----------
    path
        The file.
    what
        How messages name it (``--sites``, ``federation schema``).
    max_bytes
        Larger files are refused before they are read.

    Raises
    ------
    ConfigError
        ``<what> <path>: no such file``, ``not a file``, ``larger than …``, or ``not a readable
        JSON file (<reason>)``.
    """
    p = Path(path)
    try:
        if p.is_dir():
            raise ConfigError(f"{what} {p}: a folder, not a file")
        size = p.stat().st_size
        if size > max_bytes:
            raise ConfigError(f"{what} {p}: {size:,} bytes, larger than {max_bytes:,}")
        return json.loads(p.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError(f"{what} {p}: no such file") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError, RecursionError) as exc:
        detail = " ".join(str(exc).split())[:200] or type(exc).__name__
        raise ConfigError(f"{what} {p}: not a readable JSON file ({detail})") from None


def _shown(value: Any) -> str:
    big = isinstance(value, int) and not isinstance(value, bool) and abs(value) >= 10_000
    text = f"{value:,}" if big else show(value)  # grouped: never read as an identifier
    return text if len(text) <= _SHOWN else text[: _SHOWN - 1] + "…"


class JsonObject:
    """A JSON object whose fields are read checked; refusals name ``where`` and the field.

    Parameters
    ----------
    raw
        The parsed value (refused unless it is an object).
    where
        The file, as messages name it (``site card /x/site-card.json``).
    prefix
        The field path of a nested object (``rows.``), for messages.
    """

    def __init__(self, raw: Any, where: str, prefix: str = "") -> None:
        if not isinstance(raw, dict):
            at = f"field {prefix.rstrip('.')!r} " if prefix else ""
            raise ConfigError(f"{where}: {at}must be a JSON object, got {_shown(raw)}")
        self.raw: dict[str, Any] = raw
        self.where = where
        self.prefix = prefix

    @classmethod
    def read(cls, path: str | Path, what: str, max_bytes: int = _MAX_JSON_BYTES) -> JsonObject:
        """The object in file ``path`` (``what``: how messages name the file)."""
        return cls(read_json(path, what, max_bytes), f"{what} {Path(path)}")

    # ---- refusals -------------------------------------------------------------------------

    def field_name(self, key: str) -> str:
        """The field's path as messages write it."""
        return f"{self.prefix}{key}"

    def refuse(self, key: str, rule: str) -> NoReturn:
        """Refuse field ``key``: ``<where>: field '<key>' must <rule>, got <value>``."""
        value = self.raw.get(key)
        got = "nothing (missing)" if key not in self.raw else _shown(value)
        raise ConfigError(f"{self.where}: field {self.field_name(key)!r} must {rule}, got {got}")

    def _get(self, key: str, rule: str) -> Any:
        if key not in self.raw:
            self.refuse(key, rule)
        return self.raw[key]

    # ---- fields ---------------------------------------------------------------------------

    def expect_format(self, expected: str, key: str = "format") -> None:
        """Refuse a document whose ``format`` is not ``expected``."""
        if self.raw.get(key) != expected:
            self.refuse(key, f"be {expected!r}")

    def text(self, key: str, max_len: int = 1_000, *, empty: bool = False) -> str:
        """A string field of at most ``max_len`` characters (non-empty unless ``empty``)."""
        rule = f"be a string of {'0' if empty else '1'}-{max_len} characters"
        value = self._get(key, rule)
        if not isinstance(value, str) or len(value) > max_len or (not value and not empty):
            self.refuse(key, rule)
        return value

    def name(self, key: str, what: str = "name") -> str:
        """A name that may become a file name (:func:`fedcare_core.files.safe_names.check_name`)."""
        value = self._get(key, "be a name")
        return check_name(value, f"{self.where}: field {self.field_name(key)!r}", what)

    def digest(self, key: str) -> str:
        """A SHA-256 digest (64 lower-case hexadecimal digits)."""
        rule = "be a SHA-256 digest (64 lower-case hexadecimal digits)"
        value = self._get(key, rule)
        if not isinstance(value, str) or _DIGEST.fullmatch(value) is None:
            self.refuse(key, rule)
        return value

    def integer(self, key: str, limits: Range) -> int:
        """An integer (not a boolean, not a float) in ``limits``."""
        rule = f"be an integer and {limits.text()}"
        value = self._get(key, rule)
        if isinstance(value, bool) or not isinstance(value, int) or not limits.contains(value):
            self.refuse(key, rule)
        return value

    def number(self, key: str, limits: Range, *, nullable: bool = False) -> float | None:
        """A finite number in ``limits`` (``null`` too when ``nullable``: None)."""
        rule = f"be a finite number that must {limits.text()}" + (" (or null)" if nullable else "")
        value = self._get(key, rule)
        if value is None and nullable:
            return None
        ok = isinstance(value, int | float) and not isinstance(value, bool)
        if not ok or not math.isfinite(value) or not limits.contains(value):
            self.refuse(key, rule)
        return float(value)

    def boolean(self, key: str) -> bool:
        """``true`` or ``false``."""
        value = self._get(key, "be true or false")
        if not isinstance(value, bool):
            self.refuse(key, "be true or false")
        return value

    def names(self, key: str, *, allow_empty: bool = False) -> tuple[str, ...]:
        """A list of distinct names (each checked by ``sites.safe_names.check_name``)."""
        rule = f"be a {'' if allow_empty else 'non-empty '}list of distinct names"
        value = self._get(key, rule)
        ok = isinstance(value, list) and (allow_empty or value)
        if not ok or not all(is_safe_name(v) for v in value) or len(set(value)) != len(value):
            self.refuse(key, rule)
        return tuple(value)

    def strings(self, key: str, max_len: int = 200) -> tuple[str, ...]:
        """A list of non-empty strings of at most ``max_len`` characters each."""
        rule = f"be a list of strings of 1-{max_len} characters"
        value = self._get(key, rule)
        ok = isinstance(value, list) and all(isinstance(v, str) and v for v in value)
        if not ok or any(len(v) > max_len for v in value):
            self.refuse(key, rule)
        return tuple(value)

    def string_lists(self, key: str, max_len: int = 200) -> dict[str, tuple[str, ...]]:
        """An object of strings to lists of strings (each as :meth:`strings` asks)."""
        inner = self.obj(key)
        return {k: inner.strings(k, max_len) for k in inner.raw}

    def integers(self, key: str, limits: Range) -> tuple[int, ...]:
        """A list of integers, each in ``limits``."""
        rule = f"be a list of integers that {limits.text()}"
        value = self._get(key, rule)
        ok = isinstance(value, list) and all(
            isinstance(v, int) and not isinstance(v, bool) and limits.contains(v) for v in value
        )
        if not ok:
            self.refuse(key, rule)
        return tuple(value)

    def numbers(self, key: str, limits: Range, *, finite: bool = True) -> dict[str, float]:
        """An object of names to numbers in ``limits`` (NaN and ±inf too unless ``finite``)."""
        rule = f"be an object of names to {'finite ' if finite else ''}numbers that {limits.text()}"
        value = self._get(key, rule)
        if not isinstance(value, dict):
            self.refuse(key, rule)
        for name, number in value.items():
            ok = is_safe_name(name) and isinstance(number, int | float)
            if not ok or isinstance(number, bool):
                self.refuse(key, rule)
            if math.isfinite(number) and not limits.contains(number):
                self.refuse(key, rule)
            if finite and not math.isfinite(number):
                self.refuse(key, rule)
        return {str(k): float(v) for k, v in value.items()}

    def obj(self, key: str) -> JsonObject:
        """A nested object (its fields named ``key.<field>``)."""
        self._get(key, "be a JSON object")
        return JsonObject(self.raw[key], self.where, f"{self.field_name(key)}.")

    def objects(self, key: str) -> list[JsonObject]:
        """A list of objects (each named ``key[i].<field>``)."""
        value = self._get(key, "be a list of JSON objects")
        if not isinstance(value, list):
            self.refuse(key, "be a list of JSON objects")
        name = self.field_name(key)
        return [JsonObject(v, self.where, f"{name}[{i}].") for i, v in enumerate(value)]

    def entries(self, what: str = "name") -> Iterator[tuple[str, JsonObject]]:
        """Each key (a checked name) with its value as an object: a document keyed by name."""
        for key, value in self.raw.items():
            name = check_name(key, f"{self.where}: an entry", what)
            yield name, JsonObject(value, self.where, f"{self.prefix}{key}.")
