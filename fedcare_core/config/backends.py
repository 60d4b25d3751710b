"""Backends: where a run's federated rounds execute, by name.

A backend is a :class:`BackendSpec` (its name, what it can do, the type of its options and a
factory that builds its Stage 1 runner) declared as an entry point of the ``fedcare.backends``
group (:mod:`fedcare_core.plugins`): the core's in-process loop is :data:`LOCAL`, Flower's are
declared beside their runners in the federation layer, an outside backend in its own package.
Options type and factory are named by import path, in the backend's own module, and loaded only
when a run uses the backend, so the core never imports Flower. Every entry
(``fedcare run --backend``, the flows' ``backend``, the grids) reads the installed backends; no
backend name is compared anywhere else.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from fedcare_core.errors import ConfigError
from fedcare_core.plugins import entry_names, load_entry


@dataclass(frozen=True)
class BackendSpec:
    """One backend.

    Parameters
    ----------
    name
        Its name (``--backend NAME``).
    summary
        One line for ``--help`` and the flows' parameter form.
    factory
        ``"module:callable"``: called with the options object, returns the Stage 1 runner;
        None: the core's in-process loop (no runner).
    options
        ``"module:Class"`` of its options (``FlowerConfig``); None: it takes none. The class
        has ``from_options(mapping)`` and ``validate()``.
    secagg
        Whether it sums rounds with secure aggregation (``stage1.secagg``).
    federated
        Whether its rounds cross a process boundary (only algorithms with federated rounds
        run on it; the others run in process only).
    network
        Whether its parties talk over sockets (TLS, node authentication, a bind address).
    """

    name: str
    summary: str
    factory: str | None = None
    options: str | None = None
    secagg: bool = False
    federated: bool = True
    network: bool = False

    def options_from(
        self, values: Mapping[str, Any] | None, names: Mapping[str, str] | None = None
    ) -> Any:
        """The backend's options object from ``values``, checked (None: it takes none).

        Parameters
        ----------
        values
            Option name → value (JSON, a flow parameter, the command line's).
        names
            What a message calls each option (``--round-timeout``); its own name otherwise.

        Raises
        ------
        ConfigError
            An unknown or invalid option, naming it; options for a backend that has none.
        """
        if self.options is None:
            if values:
                raise ConfigError(f"backend {self.name!r} takes no options, got {sorted(values)}")
            return None
        return _load(self.options).from_options(dict(values or {}), names)

    def packages(self) -> tuple[str, ...]:
        """The package holding its runner (Flower's backends: their layer's); none in process.

        Part of a cached Stage 1's key: a change to the code that ran the rounds is a miss.
        """
        if self.factory is None:
            return ()
        return (self.factory.partition(":")[0].rpartition(".")[0],)

    def build(self, options: Any = None) -> Any:
        """The Stage 1 runner, given :meth:`options_from`'s object (None: the in-process loop).

        Imports the backend's module now (Flower for the Flower backends).
        """
        return None if self.factory is None else _load(self.factory)(options)


def _load(path: str) -> Any:
    """The object at ``"module:name"``."""
    module, _, name = path.partition(":")
    return getattr(importlib.import_module(module), name)


#: The extension kind of backends (:data:`fedcare_core.plugins.GROUPS`).
KIND = "backend"


def get_backend(name: str) -> BackendSpec:
    """The installed backend called ``name``.

    Raises
    ------
    ConfigError
        ``unknown backend 'x'; expected one of flower-deployment, flower-sim, local``, or an
        entry that loads something other than that backend's spec.
    """
    spec = load_entry(KIND, name)
    if not isinstance(spec, BackendSpec) or spec.name != name:
        raise ConfigError(f"the {KIND} entry {name!r} does not load backend {name!r}'s spec")
    return spec


def backend_names() -> tuple[str, ...]:
    """Every installed backend's name: FedCARE's in name order, then the others'."""
    return entry_names(KIND)


def secagg_backends() -> tuple[str, ...]:
    """The backends that sum rounds with secure aggregation."""
    return tuple(name for name in backend_names() if get_backend(name).secagg)


#: The core's in-process loop.
LOCAL = BackendSpec("local", "in this process (the core's loop)", federated=False)
