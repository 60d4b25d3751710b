"""The configuration's command-line flags, derived from the settings' declarations.

Each setting declared with a ``flag`` (:mod:`fedcare_core.config.settings`) becomes
``--<flag>``, with its type, its choices, its help and its default in the help, grouped under
its heading; every other setting is reached with ``--set SECTION.KEY=VALUE`` or a ``--config``
file. :func:`build_config` turns the parsed flags into the configuration.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Container
from pathlib import Path
from typing import Any

from fedcare_core.config import (
    ExperimentConfig,
    flagged_settings,
    load_config_file,
    sections_of,
)
from fedcare_core.config.settings import SettingRef
from fedcare_core.errors import ConfigError
from fedcare_core.plugins import entry_names


def choices_of(ref: SettingRef) -> tuple[str, ...] | None:
    """The names setting ``ref`` accepts (its own, or its registry's); None: any."""
    if ref.spec.choices_of is None:
        return ref.spec.choices or None
    return entry_names(ref.spec.choices_of)


def add_setting_flags(
    parser: argparse.ArgumentParser,
    *,
    schema_only: bool = False,
    required: Container[str] = (),
    skip: Container[str] = (),
) -> None:
    """Add ``--<flag>`` for every flagged setting, and ``--set``, grouped by heading.

    Parameters
    ----------
    parser
        The command's parser.
    schema_only
        Only the settings a federation's schema fixes (``fedcare federation init``).
    required
        Flags (``"dataset"``) the command needs.
    skip
        Flags the command adds itself.
    """
    groups: dict[str, Any] = {}
    for ref in flagged_settings(schema_only=schema_only).values():
        flag = str(ref.spec.flag)
        if flag in skip:
            continue
        if ref.spec.group not in groups:
            groups[ref.spec.group] = parser.add_argument_group(ref.spec.group)
        add_declared_flag(groups[ref.spec.group], ref, flag in required)
    parser.add_argument(
        "--set",
        action="append",
        metavar="SECTION.KEY=VALUE",
        dest="set_values",
        help="any configuration setting, e.g. --set stage1.epsilon=1e-6 or --set "
        "model.head_hidden=[32,16] (a JSON value; a bare word is a string); repeatable; "
        "docs/OPTIONS.md lists them all",
    )


def add_declared_flag(group: Any, ref: SettingRef, required: bool) -> None:
    """One declared setting's ``--<flag>`` (None by default: the declared value stands)."""
    name = f"--{ref.spec.flag}"
    shown = not required and ref.default is not None
    text = f"{ref.spec.help} (default {ref.default_text()})" if shown else ref.spec.help
    if ref.base is bool:
        group.add_argument(name, dest=ref.dest, action="store_true", default=None, help=text)
        return
    kind: type = ref.base if ref.base in (int, float) else str
    choices = choices_of(ref)
    metavar = ref.spec.metavar
    if ref.spec.or_file and choices:
        # A file is accepted too: the configuration's check refuses anything else.
        metavar = metavar or "{" + ",".join(choices) + "}|" + ref.spec.or_file
        choices = None
    group.add_argument(
        name,
        dest=ref.dest,
        type=kind,
        choices=choices,
        metavar=metavar,
        required=required,
        help=text,
    )


def setting_values(args: argparse.Namespace) -> dict[str, dict[str, Any]]:
    """The values the command line gives, by section (``""``: the top level).

    ``--set`` values first, the flags on top; a flag's ``also_sets`` fields follow it.

    Raises
    ------
    ConfigError
        A ``--set`` that is not ``SECTION.KEY=VALUE``.
    """
    sections: dict[str, dict[str, Any]] = {}
    for item in getattr(args, "set_values", None) or ():
        path, value = _parse_set(item)
        section, _, key = path.rpartition(".")
        sections.setdefault(section, {})[key] = value
    given = {name: getattr(args, name, None) for name in flagged_settings()}
    for section, values in sections_of(given).items():
        sections.setdefault(section, {}).update(values)
    return sections


def _parse_set(item: str) -> tuple[str, Any]:
    """``SECTION.KEY=VALUE`` as the path and the value (JSON, else the bare string)."""
    path, sep, text = item.partition("=")
    if not sep or not path.strip():
        raise ConfigError(f"--set {item!r}: give SECTION.KEY=VALUE, e.g. stage1.epsilon=1e-6")
    try:
        value = json.loads(text)
    except json.JSONDecodeError:
        value = text
    return path.strip(), value


def build_config(args: argparse.Namespace) -> ExperimentConfig:
    """Merge a config file (``args.config``, if any), a preset and the flags into a config.

    Parameters
    ----------
    args
        The parsed command line: a flag left at ``None``, or one the command does not have
        (``fedcare federation init`` has no ``--clients``), keeps the file's (or the default)
        value.

    Returns
    -------
    ExperimentConfig
        The validated configuration (its algorithm checked against the registry).

    Raises
    ------
    ConfigError
        For an unreadable config file or any invalid value, naming the parameter.
    """
    from fedcare_core.algorithms import validate_config

    config_file: Path | None = getattr(args, "config", None)
    base = ExperimentConfig() if config_file is None else load_config_file(config_file)
    preset = getattr(args, "preset", None)
    if preset is not None:
        from fedcare_core.config.presets import with_preset

        base = with_preset(base, preset)
    sections = setting_values(args)
    top = sections.pop("", {})
    return validate_config(base.with_overrides(**top, **sections))


def refuse_unread_settings(args: argparse.Namespace, config: ExperimentConfig) -> None:
    """Refuse Stage 2 settings given (flags or ``--set stage2.*``) to an algorithm without one.

    Only FedCARE personalises each client from w*: with any other algorithm a Stage 2 setting
    would be silently ignored. A preset's or a ``--config`` file's values are not refused (the
    user did not give them for this run).

    Raises
    ------
    ConfigError
        Naming the settings given and the algorithm.
    """
    from fedcare_core.algorithms import algorithm_names, get_algorithm

    if get_algorithm(config.algorithm).personal_phase == "stage2":
        return
    given = [
        f"--{ref.spec.flag}"
        for name, ref in flagged_settings().items()
        if ref.section == "stage2" and getattr(args, name, None) is not None
    ]
    given += [
        f"--set {item.partition('=')[0].strip()}"
        for item in getattr(args, "set_values", None) or ()
        if item.strip().startswith("stage2.")
    ]
    if given:
        with_stage2 = [n for n in algorithm_names() if get_algorithm(n).personal_phase == "stage2"]
        raise ConfigError(
            f"{', '.join(given)}: algorithm {config.algorithm!r} has no Stage 2, so "
            f"{'it has' if len(given) == 1 else 'they have'} no effect (Stage 2 is "
            f"{', '.join(with_stage2)}'s)"
        )
