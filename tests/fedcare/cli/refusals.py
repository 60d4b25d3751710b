"""A refusal at the command line, as every CLI test checks it: one line, nothing changed."""

from __future__ import annotations

from pathlib import Path

import pytest

from fedcare.cli.main import main


def snapshot(root: Path) -> dict[str, tuple[int, int]]:
    """Every path under ``root`` with its size and modification time."""
    return {
        str(p.relative_to(root)): (p.stat().st_size, p.stat().st_mtime_ns)
        for p in sorted(root.rglob("*"))
    }


def refused(capsys: pytest.CaptureFixture[str], root: Path, argv: list[str], *parts: str) -> str:
    """Run ``fedcare argv``: exit 2, one line holding every part, nothing under ``root`` changed."""
    before = snapshot(root)
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("fedcare: error: ") and err.count("\n") == 1, err
    for part in parts:
        assert part in err, err
    assert snapshot(root) == before
    return err
