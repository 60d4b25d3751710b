"""Names that become file names: one check wherever a site or the coordinator makes a path of one.

A site's name (from its card, its ``site.json``, a sites list or ``--name``), a run's name and
every name the coordinator keeps in its state folder end up as a file or folder name
(``STATE/keys/<site>.pub``, ``STATE/runs/<run>/``) or an argument of the ``flwr`` CLI. A name
that passes :func:`check_name` is 1 to :data:`NAME_MAX` ASCII letters, digits, ``-``, ``_`` and
``.``, starts with a letter or digit, and so cannot leave its folder (no ``/``, no ``..``), be
hidden, be read as an option, or carry a NUL, a newline or a character a terminal interprets.
"""

from __future__ import annotations

import re
from pathlib import Path

from fedcare_core.errors import ConfigError

#: The longest name accepted (far below any file system's limit, with room for a suffix).
NAME_MAX = 64
#: What a name may hold: a letter or digit first, then letters, digits, ``-``, ``_`` and ``.``.
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
#: How messages describe the rule.
_NAME_RULE = f"1-{NAME_MAX} ASCII letters, digits, '-', '_' or '.', starting with a letter or digit"


def is_safe_name(name: object) -> bool:
    """Whether ``name`` is a string :func:`check_name` accepts."""
    return (
        isinstance(name, str)
        and 0 < len(name) <= NAME_MAX
        and _NAME.fullmatch(name) is not None
        and ".." not in name
    )


def check_name(name: object, where: str, what: str = "name") -> str:
    """``name`` if it can safely become a file name, else a one-line refusal naming ``where``.

    Parameters
    ----------
    name
        The value read (from a file, a flag or a state file; any JSON type).
    where
        The file and field, or the flag, the name came from (``--name``, ``site card X``).
    what
        What the name is, in the message (``site name``, ``run name``).

    Returns
    -------
    str
        ``name``, unchanged.

    Raises
    ------
    ConfigError
        ``<where>: <what> <value>: use <rule>``; the value is shown with escapes (``repr``),
        cut at 80 characters, so a newline or a control character cannot forge a second line.
    """
    if is_safe_name(name):
        assert isinstance(name, str)
        return name
    shown = repr(name) if isinstance(name, str) else f"{name!r} (a {type(name).__name__})"
    if len(shown) > 80:
        shown = shown[:77] + "…"
    raise ConfigError(f"{where}: {what} {shown}: use {_NAME_RULE}")


def name_path(folder: Path, name: str, suffix: str, where: str, what: str = "name") -> Path:
    """``folder / (name + suffix)`` for a checked ``name``: a path that stays in ``folder``.

    Raises
    ------
    ConfigError
        As :func:`check_name`.
    """
    return folder / f"{check_name(name, where, what)}{suffix}"
