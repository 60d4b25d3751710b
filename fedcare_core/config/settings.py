"""Each configuration setting declared once, on its dataclass field.

A field of a configuration section is declared with :func:`setting`: its default, and a
:class:`Setting` holding its help text, its range (numbers) or its choices (names), and, for a
setting every entry offers, its ``flag``. Everything else is derived from that one declaration:

- the range and choice checks (:func:`fedcare_core.config.fields.check_fields`);
- the ``fedcare run`` flags (``--<flag>``, :mod:`fedcare.cli.setting_flags`);
- the Prefect flow parameters (``<flag>`` with ``-`` as ``_``, :mod:`flows.setting_parameters`),
  with their descriptions in the UI;
- the options table of ``docs/OPTIONS.md`` (:func:`options_table`).

A setting without a flag is reached the same way from every entry: a ``--config`` file, the
``--set SECTION.KEY=VALUE`` flag, or the flow's ``overrides``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator
from dataclasses import MISSING, dataclass
from typing import Any

from fedcare_core.config.fields import FieldKind, Range, check_fields, check_value, field_kinds
from fedcare_core.errors import ConfigError

#: The key of a field's :class:`Setting` in its ``dataclasses.field`` metadata.
SETTING = "fedcare.setting"


@dataclass(frozen=True)
class Setting:
    """What one configuration field is, for every entry that offers it.

    Parameters
    ----------
    help
        One sentence for ``--help``, the flow's parameter form and the docs (no default: the
        default is added from the field).
    range
        The values a number accepts.
    choices
        The names a string accepts (empty: any, or a registry decides, see ``choices_of``).
    noun
        How a refusal names the setting (``unknown feature set 'x' (data.features)``).
    flag
        Offered by ``fedcare run`` as ``--<flag>`` and by the flow as parameter ``<flag>`` with
        ``-`` as ``_``; None: through a config file, ``--set`` or ``overrides`` only.
    group
        Heading of the setting in ``--help`` and in the options table.
    metavar
        The value's name in ``--help``.
    choices_of
        The extension kind whose installed names are the choices (``"algorithm"``,
        ``"dataset"``: :mod:`fedcare_core.plugins`), read by the entries that list them.
    also_sets
        Further fields (``"stage2.solver"``) the flag sets to the same value.
    in_schema
        Whether a federation's schema fixes it (``fedcare federation init`` offers it); False
        for what each run or site decides (clients, splits, subsampling).
    or_file
        Besides its choices, a file of this kind is accepted (``"FILE.yaml"``: a dataset
        definition); the choices are then checked with the configuration, not by the flag.
    needs
        Fields of the same section of which one must be set (not None, false or empty) for
        this one to have an effect: a value other than its default with none of them set is
        refused, not silently ignored (``dp_delta`` without ``dp_epsilon`` or
        ``dp_noise_multiplier``: no privacy, so no δ).
    needs_why
        Why, for the refusal.
    """

    help: str
    range: Range | None = None
    choices: tuple[str, ...] = ()
    noun: str = ""
    flag: str | None = None
    group: str = "configuration"
    metavar: str | None = None
    choices_of: str | None = None
    also_sets: tuple[str, ...] = ()
    in_schema: bool = True
    or_file: str = ""
    needs: tuple[str, ...] = ()
    needs_why: str = ""


def setting(
    default: Any = MISSING,
    *,
    help: str,
    default_factory: Callable[[], Any] | Any = MISSING,
    **spec: Any,
) -> Any:
    """A dataclass field declared with its :class:`Setting` (keywords as its attributes).

    Returns
    -------
    dataclasses.Field
        For the class body: ``rounds: int = setting(100, help=..., flag="rounds")``.
    """
    metadata = {SETTING: Setting(help=help, **spec)}
    if default_factory is not MISSING:
        return dataclasses.field(default_factory=default_factory, metadata=metadata)
    return dataclasses.field(default=default, metadata=metadata)


@dataclass(frozen=True)
class SettingRef:
    """One declared setting where it sits: its section, field, type and default."""

    section: str
    name: str
    kind: FieldKind
    default: Any
    spec: Setting

    @property
    def base(self) -> type:
        """Its type (``int``, ``float``, ``bool``, ``str``, ``tuple``), ``| None`` unwrapped."""
        return self.kind.base

    @property
    def optional(self) -> bool:
        """Whether it may be ``None``."""
        return self.kind.optional

    def check(self, label: str, value: Any) -> Any:
        """``value`` checked against its type and range, a refusal naming ``label``.

        Raises
        ------
        ConfigError
            ``<label> must lie in [1, 100,000], got 0``.
        """
        return check_value(label, value, self.kind, self.spec.range)

    @property
    def path(self) -> str:
        """Its name in documents and messages: ``stage1.rounds``, or ``seed`` at the top."""
        return f"{self.section}.{self.name}" if self.section else self.name

    @property
    def dest(self) -> str | None:
        """The flag as a Python name (``stage2_epochs``): argparse's dest, the flow parameter."""
        return None if self.spec.flag is None else self.spec.flag.replace("-", "_")

    def default_text(self) -> str:
        """The default as the help and the docs show it."""
        if self.default is None or self.default == "":
            return "none"
        if isinstance(self.default, bool):
            return str(self.default).lower()
        if isinstance(self.default, tuple):
            return ",".join(str(v) for v in self.default)
        return f"{self.default:g}" if isinstance(self.default, float) else str(self.default)


def declared(cls: type, section: str) -> Iterator[SettingRef]:
    """The declared settings of dataclass ``cls`` (fields without a :class:`Setting` skipped)."""
    kinds = field_kinds(cls)
    for f in dataclasses.fields(cls):
        spec = f.metadata.get(SETTING)
        if spec is None:
            continue
        default = f.default if f.default is not MISSING else None
        kind = kinds[f.name]
        yield SettingRef(section, f.name, kind, default, spec)


def ranges_of(cls: type) -> dict[str, Range]:
    """Each number field's declared range, by field name."""
    return {ref.name: ref.spec.range for ref in declared(cls, "") if ref.spec.range is not None}


def spec_of(cls: type, name: str) -> Setting | None:
    """The :class:`Setting` of field ``name`` of ``cls`` (None: not declared)."""
    for f in dataclasses.fields(cls):
        if f.name == name:
            spec = f.metadata.get(SETTING)
            return spec if isinstance(spec, Setting) else None
    return None


def check_section(obj: object, prefix: str, *, skip_choices: tuple[str, ...] = ()) -> None:
    """Check every declared field of a section: its type and range, then its choices.

    Parameters
    ----------
    obj
        A constructed configuration section.
    prefix
        Its name in messages (``"stage1"``).
    skip_choices
        Fields whose choices the section checks itself (a dataset's own feature sets).

    Raises
    ------
    ConfigError
        Naming the first field at fault: ``unknown solver 'x' (stage1.solver); expected one
        of exact, slsqp``.
    """
    cls = type(obj)
    check_fields(obj, prefix, ranges_of(cls))
    check_choices(obj, prefix, skip_choices=skip_choices)
    check_effects(obj, prefix)


def check_effects(obj: object, prefix: str) -> None:
    """Refuse a field set away from its default while the fields it ``needs`` are all unset.

    Parameters
    ----------
    obj, prefix
        As for :func:`check_section`.

    Raises
    ------
    ConfigError
        ``stage1.dp_delta (--dp-delta) has no effect without stage1.dp_epsilon (--dp-epsilon)
        or stage1.dp_noise_multiplier (--dp-noise-multiplier): ...``.
    """
    refs = {ref.name: ref for ref in declared(type(obj), prefix)}
    for ref in refs.values():
        if not ref.spec.needs or getattr(obj, ref.name) == ref.default:
            continue
        if any(getattr(obj, name) not in (None, False, "", ()) for name in ref.spec.needs):
            continue
        others = " or ".join(_named(refs[name]) for name in ref.spec.needs)
        why = f": {ref.spec.needs_why}" if ref.spec.needs_why else ""
        raise ConfigError(f"{_named(ref)} has no effect without {others}{why}")


def _named(ref: SettingRef) -> str:
    """A setting as a refusal names it: its path, and its flag if it has one."""
    return ref.path if ref.spec.flag is None else f"{ref.path} (--{ref.spec.flag})"


def check_choices(obj: object, prefix: str, *, skip_choices: tuple[str, ...] = ()) -> None:
    """Check that every declared field with choices holds one of them (None passes).

    Parameters
    ----------
    obj, prefix, skip_choices
        As for :func:`check_section`.

    Raises
    ------
    ConfigError
        As for :func:`check_section`.
    """
    for ref in declared(type(obj), prefix):
        value = getattr(obj, ref.name)
        if not ref.spec.choices or ref.name in skip_choices or value is None:
            continue
        if value not in ref.spec.choices:
            raise ConfigError(
                f"unknown {ref.spec.noun or ref.path} {value!r} ({ref.path}); expected one of "
                f"{', '.join(ref.spec.choices)}"
            )
