"""Reading a JSON file a user names, with one clear message when it cannot be read."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from fedcare_core.errors import ConfigError


def read_json(path: str | Path, what: str) -> Any:
    """The JSON document in ``path``.

    Parameters
    ----------
    path
        The file.
    what
        How messages name it (``--sites``, ``federation schema``).

    Raises
    ------
    ConfigError
        ``<what> <path>: no such file``, or ``not a readable JSON file (<reason>)``.
    """
    p = Path(path)
    try:
        return json.loads(p.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError(f"{what} {p}: no such file") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ConfigError(f"{what} {p}: not a readable JSON file ({exc})") from None
