"""Each method's own options, declared in its folder and found by entry point.

A method with settings of its own (FedProx's μ, PAFNet's latent width, fedxgb's trees) declares
them as a frozen dataclass subclassing :class:`MethodOptions`, each field a
:func:`~fedcare_core.config.settings.setting`, in a light module of its folder, and names the
class in the ``fedcare.options`` entry-point group (:mod:`fedcare_core.plugins`). The
configuration's ``baselines`` section is the shared local-training settings
(:class:`~fedcare_core.config.sections.BaselineConfig`) with every installed method's fields
added (:func:`baselines_class`): set, checked, documented and recorded as every other setting,
and a method reads its own as a typed object (:meth:`MethodOptions.of`).
"""

from __future__ import annotations

import dataclasses
import typing
from functools import cache
from typing import Any, TypeVar

from fedcare_core.config.sections import BaselineConfig
from fedcare_core.plugins import PluginError, entry_names, load_entry

#: The extension kind (:data:`fedcare_core.plugins.GROUPS`).
KIND = "options"

_Options = TypeVar("_Options", bound="MethodOptions")
#: The composed section's class name (``fedcare_core.config.method_options.Baselines``).
_COMPOSED = "Baselines"


class MethodOptions:
    """The base of a method's options (a frozen dataclass of settings)."""

    @classmethod
    def of(cls: type[_Options], section: object) -> _Options:
        """The method's options as ``section`` (the ``baselines`` section) holds them."""
        return cls(**{f.name: getattr(section, f.name) for f in dataclasses.fields(cls)})  # type: ignore[arg-type]

    def quick(self) -> dict[str, Any]:
        """The values ``FEDCARE_QUICK`` caps (:mod:`fedcare_core.config.quick`); none here."""
        return {}


def options_classes() -> tuple[type[MethodOptions], ...]:
    """Every installed method's options class, in entry order.

    Raises
    ------
    PluginError
        An entry that does not load a :class:`MethodOptions` dataclass.
    """
    out: list[type[MethodOptions]] = []
    for name in entry_names(KIND):
        cls = load_entry(KIND, name)
        if not (isinstance(cls, type) and issubclass(cls, MethodOptions)):
            raise PluginError(f"the {KIND} entry {name!r} does not load a MethodOptions class")
        if not dataclasses.is_dataclass(cls):
            raise PluginError(f"the {KIND} entry {name!r} ({cls.__name__}) is not a dataclass")
        out.append(cls)
    return tuple(out)


@cache
def baselines_class() -> type[BaselineConfig]:
    """The ``baselines`` section: the shared settings and every installed method's options.

    Raises
    ------
    PluginError
        Two methods (or a method and the shared settings) declaring one field name.
    """
    held = {f.name: "the shared settings" for f in dataclasses.fields(BaselineConfig)}
    added: list[tuple[str, Any, dataclasses.Field[Any]]] = []
    for cls in options_classes():
        hints = typing.get_type_hints(cls)
        for f in dataclasses.fields(cls):  # type: ignore[arg-type]
            if f.name in held:
                raise PluginError(
                    f"option {f.name!r} is declared by both {held[f.name]} and {cls.__name__}"
                )
            held[f.name] = cls.__name__
            copy: dataclasses.Field[Any] = dataclasses.field(default=f.default, metadata=f.metadata)
            added.append((f.name, hints[f.name], copy))
    composed = dataclasses.make_dataclass(_COMPOSED, added, bases=(BaselineConfig,), frozen=True)
    composed.__module__ = __name__
    composed.__doc__ = BaselineConfig.__doc__
    return composed


def __getattr__(name: str) -> Any:
    """The composed section by its name here, as pickle finds it (a grid's workers)."""
    if name == _COMPOSED:
        return baselines_class()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def baselines(**values: Any) -> BaselineConfig:
    """A ``baselines`` section: ``values`` over the defaults (:func:`baselines_class`)."""
    return baselines_class()(**values)


def forget_options() -> None:
    """Compose the section again at the next use (after installing a method with options)."""
    baselines_class.cache_clear()
