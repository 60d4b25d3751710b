"""Reading the installed extensions: entry points by group, names first, code on first use."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from importlib.metadata import EntryPoint, entry_points
from typing import Any

from fedcare_core.errors import ConfigError

#: Extension kind → its entry-point group.
GROUPS: dict[str, str] = {
    "algorithm": "fedcare.algorithms",
    "backend": "fedcare.backends",
    "dataset": "fedcare.datasets",
    "extractor": "fedcare.extractors",
    "federated_rounds": "fedcare.federated_rounds",
    "objective_kind": "fedcare.objective_kinds",
    "options": "fedcare.options",
    "predictor": "fedcare.predictors",
    "raw_checks": "fedcare.raw_checks",
}
#: The distribution whose entries are listed first (FedCARE's own).
_HOME = "fedcare"


class PluginError(ConfigError):
    """An extension that cannot be used: unknown, declared twice, or failing to load."""


@dataclass(frozen=True)
class Entry:
    """One declared extension: its name, what it loads and which distribution declared it."""

    name: str
    value: str
    distribution: str

    def load(self) -> Any:
        """Import and return what the entry names."""
        return EntryPoint(self.name, self.value, "").load()


@cache
def _entries(group: str) -> dict[str, Entry]:
    """The group's entries by name: FedCARE's in name order, then the others'.

    Raises
    ------
    PluginError
        Two distributions declaring one name.
    """
    found: dict[str, Entry] = {}
    for ep in entry_points(group=group):
        dist = ep.dist.name if ep.dist is not None else "?"
        held = found.get(ep.name)
        if held is not None and held.distribution != dist:
            raise PluginError(
                f"{group}: {ep.name!r} is declared by two installed distributions, "
                f"{held.distribution} ({held.value}) and {dist} ({ep.value}); uninstall one"
            )
        found[ep.name] = Entry(ep.name, ep.value, dist)
    order = sorted(found.values(), key=lambda e: (_norm(e.distribution) != _HOME, e.name))
    return {e.name: e for e in order}


def _norm(distribution: str) -> str:
    return distribution.lower().replace("_", "-")


def _group(kind: str) -> str:
    if kind not in GROUPS:
        raise ValueError(f"unknown extension kind {kind!r}; expected one of {sorted(GROUPS)}")
    return GROUPS[kind]


def entry_names(kind: str) -> tuple[str, ...]:
    """The names of every installed extension of ``kind`` (nothing is imported).

    Parameters
    ----------
    kind
        One of :data:`GROUPS`' keys.
    """
    return tuple(_entries(_group(kind)))


def entry_of(kind: str, name: str) -> Entry:
    """The entry of the extension of ``kind`` called ``name``.

    Raises
    ------
    PluginError
        No installed extension of that kind has that name (the message lists those that do).
    """
    entries = _entries(_group(kind))
    if name not in entries:
        raise PluginError(f"unknown {kind} {name!r}; expected one of {', '.join(entries)}")
    return entries[name]


@cache
def load_entry(kind: str, name: str) -> Any:
    """What the extension of ``kind`` called ``name`` declares, imported now (once).

    Raises
    ------
    PluginError
        Unknown, or its module fails to import or lacks the name its entry gives (the
        message names the entry, its distribution and the error).
    """
    entry = entry_of(kind, name)
    try:
        return entry.load()
    except (ImportError, AttributeError) as exc:
        raise PluginError(
            f"{kind} {name!r} ({entry.value}, from {entry.distribution}) cannot be loaded: "
            f"{type(exc).__name__}: {exc}"
        ) from exc


def forget_installed() -> None:
    """Read the installed extensions again at the next use (after installing one)."""
    _entries.cache_clear()
    load_entry.cache_clear()
