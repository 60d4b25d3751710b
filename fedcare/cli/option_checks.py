"""Checks every command's parsed options get before the command does anything.

:func:`check_parsed` runs once the command line is parsed and before the command starts a
process, creates a file, folder or store, or takes a lock (:func:`fedcare.cli.main.main`). It
applies to every command, from what the parser declares:

- a **port** option (``type=port``) lies in [1, 65535], and the ports one command is given
  are distinct (two services cannot listen on one port);
- a **path** option (``type=Path``, or ``--data-dir``) cannot lie under a file: the first
  existing folder above it must be a folder, so ``--state-dir somefile/STATE`` is one line
  naming the option, not a ``NotADirectoryError`` once the command has started;
- a **folder** option (``--state-dir``, ``--mlflow-dir``, ``--cache-dir`` …) that exists is
  a folder;
- an option that only matters with another (:func:`declare_needs`): ``site join
  --promotion-margin`` without ``--personalise`` is refused, not silently ignored.

Every refusal is a :class:`~fedcare_core.errors.ConfigError`: one line naming the option.
"""

from __future__ import annotations

import argparse
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fedcare_core.errors import ConfigError

#: The TCP ports a server may listen on (and a client dial): [1, 65535].
PORTS = (1, 65_535)
#: Where a parser keeps its :class:`Needs` rules (``parser.set_defaults``).
_NEEDS = "option_needs"
#: Options that name a path without ``type=Path`` (kept as strings for the services they feed).
_PATH_DESTS = frozenset({"data_dir"})
#: Options that name a folder: one that exists must be a folder.
_FOLDER_DESTS = frozenset({"state_dir", "mlflow_dir", "cache_dir", "federation_state_dir"})


def port(text: str) -> int:
    """``type=port``: a TCP port, bounded to [1, 65535] by :func:`check_parsed`.

    Raises
    ------
    argparse.ArgumentTypeError
        Not an integer (argparse names the option in its refusal).
    """
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a port number, got {text!r}") from None


@dataclass(frozen=True)
class Needs:
    """Option ``option`` has an effect only with one of ``needs`` given too.

    Parameters
    ----------
    option
        The option's spelling (``--promotion-margin``).
    needs
        The options (spellings) of which one must be given with it.
    why
        What it does with them, for the refusal.
    """

    option: str
    needs: tuple[str, ...]
    why: str


def declare_needs(parser: argparse.ArgumentParser, option: str, *needs: str, why: str) -> None:
    """Declare that ``option`` of ``parser`` has an effect only with one of ``needs``.

    The rule is kept in the parser's defaults, so the parsed command carries its own rules
    and :func:`check_parsed` refuses ``option`` given alone.

    Raises
    ------
    ValueError
        ``option`` or one of ``needs`` is not an option of ``parser`` (a programming error).
    """
    known = {spelling for action in parser._actions for spelling in action.option_strings}
    unknown = [name for name in (option, *needs) if name not in known]
    if unknown:
        raise ValueError(f"{parser.prog}: no option {', '.join(unknown)}")
    rules = (*(parser.get_default(_NEEDS) or ()), Needs(option, tuple(needs), why))
    parser.set_defaults(**{_NEEDS: rules})


def check_parsed(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """Refuse, before any work, options the command's parser declares wrong together.

    Parameters
    ----------
    parser
        The whole ``fedcare`` parser that parsed ``args``.
    args
        The parsed command line.

    Raises
    ------
    ConfigError
        One line naming the first option at fault (see the module's description).
    """
    actions = {action.dest: action for action in _leaf(parser, args)._actions}
    for rule in getattr(args, _NEEDS, None) or ():
        _check_needs(rule, actions, args)
    _check_ports(actions, args)
    for action in actions.values():
        value = getattr(args, action.dest, None)
        if isinstance(value, (str, Path)) and str(value) and _is_path(action):
            _check_path(_spelling(action), Path(value), action.dest in _FOLDER_DESTS)


def given(action: argparse.Action, args: argparse.Namespace) -> bool:
    """Whether the command line gave option ``action`` (its value is not its default)."""
    value = getattr(args, action.dest, None)
    return value not in (None, False, [], ()) and value != action.default


def _leaf(parser: argparse.ArgumentParser, args: argparse.Namespace) -> argparse.ArgumentParser:
    """The (sub-)parser of the command ``args`` holds (``fedcare site join``'s)."""
    while True:
        chosen = next(_chosen_subparsers(parser, args), None)
        if chosen is None:
            return parser
        parser = chosen


def _chosen_subparsers(
    parser: argparse.ArgumentParser, args: argparse.Namespace
) -> Iterator[argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            name = getattr(args, action.dest, None)
            if name in action.choices:
                yield action.choices[name]


def _spelling(action: argparse.Action) -> str:
    return action.option_strings[-1] if action.option_strings else action.dest.upper()


def _check_needs(
    rule: Needs, actions: dict[str, argparse.Action], args: argparse.Namespace
) -> None:
    by_spelling = {s: a for a in actions.values() for s in a.option_strings}
    if not given(by_spelling[rule.option], args):
        return
    if any(given(by_spelling[name], args) for name in rule.needs):
        return
    raise ConfigError(f"{rule.option} has no effect without {' or '.join(rule.needs)}: {rule.why}")


def _check_ports(actions: dict[str, argparse.Action], args: argparse.Namespace) -> None:
    """Refuse a port outside [1, 65535], or one port given to two options of the command."""
    # Imported here: the configuration's package loads numpy, and ``fedcare --help`` must not.
    from fedcare.cli.options import bounded
    from fedcare_core.config.fields import Range

    seen: dict[int, str] = {}
    for action in actions.values():
        value = getattr(args, action.dest, None)
        if action.type is not port or value is None:
            continue
        bounded(_spelling(action), value, Range(*PORTS))
        if value in seen:
            raise ConfigError(
                f"{seen[value]} and {_spelling(action)} are both {value}: two servers cannot "
                "listen on one port; give each its own"
            )
        seen[value] = _spelling(action)


def _is_path(action: argparse.Action) -> bool:
    kind: Any = action.type
    return kind is Path or action.dest in _PATH_DESTS


def _check_path(flag: str, path: Path, folder: bool) -> None:
    """Refuse ``path`` under a file (or, for a folder option, a file itself)."""
    if folder and path.exists() and not path.is_dir():
        raise ConfigError(f"{flag} {path}: a file, not a folder")
    for above in path.expanduser().absolute().parents:
        if above.exists():
            if not above.is_dir():
                raise ConfigError(f"{flag} {path}: {above} is a file, not a folder")
            return
