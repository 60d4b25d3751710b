"""Judging one case's outcome against the promise of issue 14.

A refused case *holds* when the command exits 2 with one message line (argparse's usage lines
aside) that names every expected file/column/parameter and, where rows are expected, one of
them; with no ``Traceback``, no identifier or row value from the data, and no file written or
changed in the case's folder. An accepted case holds when it exits 0 and writes its outputs.
Anything else is *broken*, and the kinds say which way.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

#: Kinds of breakage, most serious first (the first one found is the case's primary kind).
KIND_ORDER = (
    "timeout",
    "traceback",
    "wrong-success",
    "wrong-refusal",
    "wrong-exit",
    "partial-output",
    "stray-process",
    "leak",
    "unclear",
    "no-output",
)
#: A long digit run standing alone: looks like an encounter/patient number, never a row count.
_LONG_ID = re.compile(r"(?<![0-9A-Za-z_.])\d{7,}(?![0-9A-Za-z_])")
_ARGPARSE_ERROR = re.compile(r"^fedcare[\w -]*: error: ")


@dataclass
class Outcome:
    """What happened in one case."""

    case_id: str
    category: str
    expect: str
    rc: int | None
    seconds: float
    line: str
    kinds: list[str] = field(default_factory=list)
    details: list[str] = field(default_factory=list)
    command: str = ""
    note: str = ""

    @property
    def held(self) -> bool:
        """Whether the promise held."""
        return not self.kinds

    @property
    def primary(self) -> str:
        """The most serious kind of breakage ('' when held)."""
        for kind in KIND_ORDER:
            if kind in self.kinds:
                return kind
        return self.kinds[0] if self.kinds else ""


def message_lines(stderr: str) -> list[str]:
    """Non-empty stderr lines less argparse's usage block (``usage: ...`` up to its error)."""
    kept: list[str] = []
    in_usage = False
    for raw in stderr.splitlines():
        line = raw.strip()
        if not line:
            continue
        if line.startswith("usage:"):
            in_usage = True
            continue
        if in_usage and not _ARGPARSE_ERROR.match(line):
            continue
        in_usage = False
        kept.append(line)
    return kept


def first_line(stderr: str, stdout: str) -> str:
    """The line to show: the first error-looking message line, else the first of any."""
    lines = message_lines(stderr)
    for line in lines:
        if "error" in line.lower() or "traceback" in line.lower():
            return line
    if lines:
        return lines[0]
    out = [ln for ln in stdout.splitlines() if ln.strip()]
    return out[0].strip() if out else ""


def token_in(token: str, text: str, *, ignore_case: bool = True) -> bool:
    """Whether ``token`` occurs in ``text`` as a whole word (case-insensitive by default)."""
    pattern = r"(?<![A-Za-z0-9_])" + re.escape(token) + r"(?![A-Za-z0-9_])"
    return re.search(pattern, text, flags=re.IGNORECASE if ignore_case else 0) is not None


def names_missing(message: str, names: tuple[str, ...]) -> list[str]:
    """The expected names (``a|b``: either) that the message does not contain."""
    missing = []
    for name in names:
        options = name.split("|")
        if not any(token_in(opt, message) for opt in options):
            missing.append(name)
    return missing


def rows_named(message: str, rows: tuple[int, ...]) -> bool:
    """Whether the message names at least one of ``rows`` after the word 'row'."""
    after = re.split(r"\brows?\b", message, maxsplit=1, flags=re.IGNORECASE)
    if len(after) < 2:
        return False
    return any(token_in(str(r), after[1]) for r in rows)


def leaks(text: str, secrets: tuple[str, ...], scan_ids: bool) -> list[str]:
    """Identifiers or row values from the data found in ``text``.

    ``scan_ids`` also flags any free-standing run of 7+ digits (data cases only: a
    configuration message may rightly quote a large number the user gave).
    """
    # Exact case: a row value is leaked as written (``caucasian`` injected is not leaked by a
    # message listing the documented value ``Caucasian``).
    found = [s for s in secrets if s and token_in(s, text, ignore_case=False)]
    if scan_ids:
        found += [m.group(0) for m in _LONG_ID.finditer(text) if m.group(0) not in found]
    return found


def judge(
    out: Outcome,
    *,
    timed_out: bool,
    stdout: str,
    stderr: str,
    names: tuple[str, ...],
    rows: tuple[int, ...],
    secrets: tuple[str, ...],
    scan_ids: bool,
    changed: list[str],
    missing_outputs: list[str],
) -> Outcome:
    """Fill ``out.kinds``/``out.details`` from the raw results of the command."""
    both = stdout + "\n" + stderr
    if timed_out:
        out.kinds.append("timeout")
    if "Traceback (most recent call last)" in both:
        out.kinds.append("traceback")
    found = leaks(both, secrets, scan_ids)
    if found:
        out.kinds.append("leak")
        out.details.append("printed from the data: " + ", ".join(found[:5]))
    if out.expect == "accepted":
        if not timed_out and out.rc != 0:
            out.kinds.append("wrong-refusal")
        elif missing_outputs:
            out.kinds.append("no-output")
            out.details.append("not written: " + ", ".join(missing_outputs))
        return out
    if timed_out:
        return out
    if out.rc == 0:
        out.kinds.append("wrong-success")
    elif out.rc != 2:
        out.kinds.append("wrong-exit")
        out.details.append(f"exit status {out.rc}")
    if changed:
        out.kinds.append("partial-output")
        out.details.append("written/changed: " + ", ".join(changed[:6]))
    if out.rc not in (0, None):
        lines = message_lines(stderr)
        message = " ".join(lines)
        if len(lines) != 1:
            out.kinds.append("unclear")
            out.details.append(f"{len(lines)} message lines on stderr")
        missing = names_missing(message, names)
        if missing:
            if "unclear" not in out.kinds:
                out.kinds.append("unclear")
            out.details.append("does not name " + ", ".join(missing))
        if rows and not rows_named(message, rows):
            if "unclear" not in out.kinds:
                out.kinds.append("unclear")
            out.details.append("names none of rows " + ", ".join(map(str, rows)))
    return out
