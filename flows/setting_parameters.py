"""The flow parameters of the configuration's settings, derived from their declarations.

Every setting offered by name (:func:`fedcare_core.config.flagged_settings`) is a parameter of
the ``fedcare`` flow, as it is a ``fedcare run`` flag: :func:`with_setting_parameters` adds one
keyword parameter per setting (``None`` by default: the configuration's value stands) to the
flow function's signature, which Prefect reads for the deployment's form and its validation,
and :func:`setting_descriptions` gives each its description there from the same declaration.
"""

from __future__ import annotations

import inspect
import typing
from collections.abc import Callable, Container
from typing import Any, TypeVar

from fedcare_core.config import flagged_settings
from fedcare_core.config.settings import SettingRef

F = TypeVar("F", bound=Callable[..., Any])


def _annotation(ref: SettingRef) -> Any:
    """The parameter's type as Prefect validates it: the field's, or None."""
    return ref.base | None


def _offered_settings() -> dict[str, SettingRef]:
    """Every setting offered by name, by parameter: the configuration's and the Flower options'.

    A Flower option (``round_timeout``, …: :func:`fedcare.flower.flower_options.flagged_options`)
    is a flow parameter as it is a ``fedcare run`` flag, for the Flower backends.
    """
    from fedcare.flower.flower_options import flagged_options

    flower = {str(ref.dest): ref for ref in flagged_options()}
    return {**flagged_settings(), **flower}


def setting_parameters(skip: Container[str]) -> list[inspect.Parameter]:
    """One keyword-only parameter per offered setting not in ``skip``, ``None`` by default."""
    return [
        inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=None,
                          annotation=_annotation(ref))
        for name, ref in _offered_settings().items()
        if name not in skip
    ]  # fmt: skip


def setting_descriptions(skip: Container[str] = ()) -> dict[str, str]:
    """Each setting parameter's description: its help, its choices and its default."""
    out: dict[str, str] = {}
    for name, ref in _offered_settings().items():
        if name in skip:
            continue
        text = ref.spec.help[:1].upper() + ref.spec.help[1:]
        if ref.spec.choices:
            text += f" (one of {', '.join(ref.spec.choices)})"
        out[name] = f"{text}; null: the configuration's ({ref.default_text()})."
    return out


def with_setting_parameters(skip: Container[str]) -> Callable[[F], F]:
    """Decorator (under ``@flow``): the function's signature gains the setting parameters.

    The function takes them as ``**settings``; its other parameters become keyword-only (so
    that Prefect passes every parameter by name). Annotations are resolved to types, as
    Prefect builds the deployment's schema and validates a run's parameters from them.

    Parameters
    ----------
    skip
        Settings the function takes as parameters of its own (``dataset``, ``algorithm``).

    Returns
    -------
    callable
        The decorator; it returns a wrapper with the extended signature.
    """

    def decorate(fn: F) -> F:
        hints = typing.get_type_hints(fn)
        own = [
            p.replace(kind=inspect.Parameter.KEYWORD_ONLY, annotation=hints.get(p.name, Any))
            for p in inspect.signature(fn).parameters.values()
            if p.kind is not inspect.Parameter.VAR_KEYWORD
        ]
        added = setting_parameters(skip)
        signature = inspect.Signature(own + added, return_annotation=hints.get("return", Any))

        def wrapper(**parameters: Any) -> Any:
            return fn(**parameters)

        for attribute in ("__module__", "__name__", "__qualname__", "__doc__"):
            setattr(wrapper, attribute, getattr(fn, attribute))
        wrapper.__signature__ = signature  # type: ignore[attr-defined]
        wrapper.__annotations__ = {p.name: p.annotation for p in signature.parameters.values()}
        return typing.cast(F, wrapper)

    return decorate
