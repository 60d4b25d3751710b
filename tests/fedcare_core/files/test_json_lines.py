"""Append-only JSON-lines logs: lines added, never rewritten; a torn last line skipped."""

from __future__ import annotations

import stat
from pathlib import Path

from fedcare_core.files.json_lines import append_line, read_lines


def test_lines_are_appended_owner_only_and_read_back_in_order(tmp_path: Path) -> None:
    log = tmp_path / "audit.jsonl"
    assert read_lines(log) == []  # no log yet: nothing recorded
    append_line(log, {"round": "1", "kind": "train", "bytes": 12})
    append_line(log, {"round": "2", "kind": "train", "sha256": "ab"})
    assert stat.S_IMODE(log.stat().st_mode) == 0o600
    assert read_lines(log) == [
        {"round": "1", "kind": "train", "bytes": 12},
        {"round": "2", "kind": "train", "sha256": "ab"},
    ]


def test_a_line_torn_by_a_writer_that_died_is_skipped_and_later_lines_kept(
    tmp_path: Path,
) -> None:
    log = tmp_path / "received.jsonl"
    append_line(log, {"round": "1"})
    with log.open("a") as fh:
        fh.write('{"round": "2", "ki')  # the writer died mid-line
    append_line(log, {"round": "3"})  # the next writer's line starts on a line of its own
    assert read_lines(log) == [{"round": "1"}, {"round": "3"}]
    assert log.read_text().endswith('ki\n{"round": "3"}\n')
