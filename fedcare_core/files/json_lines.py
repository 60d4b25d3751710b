"""JSON-lines logs: one JSON object a line, appended and never rewritten.

Audit logs, a run's round log, a coordinator's record of replies: each line is written with one
``O_APPEND`` write (a reader never sees a line half-written by another writer), and a reader
skips a torn last line left by a writer that died mid-line.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any


def append_line(path: Path, line: Mapping[str, Any]) -> None:
    """Append one JSON line to ``path`` (created owner-only; O_APPEND: never rewritten).

    After a line torn by a writer that died mid-line, the new line starts on a line of its
    own: the torn one is lost, not the next.
    """
    fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        size = os.fstat(fd).st_size
        torn = size > 0 and os.pread(fd, 1, size - 1) != b"\n"
        os.write(fd, ("\n" if torn else "").encode() + (json.dumps(line) + "\n").encode())
    finally:
        os.close(fd)


def read_lines(path: Path) -> list[dict[str, Any]]:
    """The complete lines of a JSON-lines log (an audit log, a round log).

    A torn last line, from a writer that died mid-line, is skipped.
    """
    if not path.exists():
        return []
    out = []
    for text in path.read_text().splitlines():
        try:
            out.append(json.loads(text))
        except json.JSONDecodeError:
            continue
    return out
