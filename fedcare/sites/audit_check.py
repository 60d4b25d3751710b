"""A site's own check of what left it (``fedcare site audit``).

The site's node appends a line to ``SITE_DIR/audit.jsonl`` for every run it joined or refused
and every reply it sent (round, kind, bytes, SHA-256 of the content); the coordinator appends
the same digest of every reply it received to the run's ``received.jsonl``
(:mod:`fedcare.flower.audit`). Neither holds data, so the coordinator can hand its record to
every site, and each site checks it against its own log here, message by message: a message
the coordinator recorded that the site never sent is a discrepancy; a message the site sent
that the coordinator did not record is a late reply it never pulled (or one lost on the way).
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fedcare_core.errors import ConfigError
from fedcare_core.files.json_lines import read_lines

#: A message as both logs identify it: round, kind and the content's SHA-256.
MessageKey = tuple[str, str, str]


@dataclass(frozen=True)
class RunSent:
    """What the site's audit log says of one run: its decision and the messages it sent."""

    run_name: str
    run_id: str
    decision: str
    rule: str | None
    messages: int
    bytes: int


@dataclass(frozen=True)
class AuditCheck:
    """The coordinator's record of one run, checked against the site's audit log.

    Parameters
    ----------
    run
        The run, as the site's log has it.
    recorded
        Messages from this site the coordinator recorded with a digest.
    never_sent
        Recorded messages the site's log does not hold: the discrepancies.
    unrecorded
        Messages the site sent that the coordinator's record does not hold.
    errors
        Replies from this site the coordinator recorded as errors (a node gone: no content).
    """

    run: RunSent
    recorded: int
    never_sent: tuple[MessageKey, ...]
    unrecorded: tuple[MessageKey, ...]
    errors: int

    @property
    def agrees(self) -> bool:
        """Whether every message the coordinator recorded is one the site sent."""
        return self.recorded > 0 and not self.never_sent


def runs_sent(audit_path: Path) -> list[RunSent]:
    """Every run in the site's audit log, oldest first, with what the site sent in it."""
    return _runs(read_lines(audit_path))


def _runs(lines: list[dict[str, Any]]) -> list[RunSent]:
    """:func:`runs_sent` of an audit log's lines."""
    sent: Counter[str] = Counter()
    size: Counter[str] = Counter()
    for line in lines:
        if "sha256" in line:
            sent[str(line.get("run_id"))] += 1
            size[str(line.get("run_id"))] += int(line.get("bytes", 0))
    out = []
    for x in _first_per_run(lines):
        run_id = str(x["run_id"])
        decision, rule = str(x["decision"]), x.get("rule")
        out.append(RunSent(str(x["run_name"]), run_id, decision, rule, sent[run_id], size[run_id]))
    return out


def check_received(audit_path: Path, site: str, run_name: str, received: Path) -> AuditCheck:
    """Check the coordinator's ``received`` record of run ``run_name`` against the site's log.

    Raises
    ------
    ConfigError
        The record cannot be read (named file and line), or the site's log holds no run of
        that name (the runs it does hold named).
    """
    lines = read_lines(audit_path)
    every = _runs(lines)
    runs = [r for r in every if r.run_name == run_name]
    if not runs:
        names = sorted({r.run_name for r in every})
        raise ConfigError(
            f"--run {run_name}: {audit_path} holds no run of that name "
            f"(runs: {', '.join(names) or 'none'})"
        )
    run = runs[-1]  # a name used again: its latest run
    sent = Counter(_key(x) for x in lines if str(x.get("run_id")) == run.run_id and "sha256" in x)
    mine = [x for x in _record(received) if x["site"] == site]
    got = Counter(_key(x) for x in mine if "sha256" in x)
    return AuditCheck(
        run=run,
        recorded=sum(got.values()),
        never_sent=tuple(sorted((got - sent).elements())),
        unrecorded=tuple(sorted((sent - got).elements())),
        errors=sum(1 for x in mine if "error" in x),
    )


def _first_per_run(lines: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each run's first decision line (a run may ask for the handshake more than once)."""
    seen: dict[str, dict[str, Any]] = {}
    for line in lines:
        if "decision" in line:
            seen.setdefault(str(line.get("run_id")), line)
    return list(seen.values())


def _key(line: dict[str, Any]) -> MessageKey:
    return str(line["round"]), str(line["kind"]), str(line["sha256"])


def _record(path: Path) -> list[dict[str, Any]]:
    """The coordinator's record, read strictly (a torn last line is skipped)."""
    try:
        text = path.read_text()
    except OSError as exc:
        raise ConfigError(f"--received {path}: cannot be read ({exc.strerror})") from None
    rows = text.splitlines()
    out = []
    for number, row in enumerate(rows, start=1):
        try:
            line = json.loads(row)
        except json.JSONDecodeError:
            if number == len(rows) and not text.endswith("\n"):
                continue  # torn by a writer that died mid-line
            raise ConfigError(f"--received {path}, line {number}: not JSON") from None
        if (
            not isinstance(line, dict)
            or not {"site", "round", "kind"} <= line.keys()
            or not ("sha256" in line or "error" in line)
        ):
            raise ConfigError(
                f"--received {path}, line {number}: not a line of a coordinator's record "
                "(site, round, kind and a sha256 or an error code)"
            )
        out.append(line)
    return out
