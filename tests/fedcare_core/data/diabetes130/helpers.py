"""The tiny Diabetes 130-US fixture and ways to write altered copies of it."""

from __future__ import annotations

import zipfile
from pathlib import Path

from fedcare_core.data.cohort import Cohort
from fedcare_core.data.diabetes130 import DIABETES130_COLUMNS, load_diabetes130

FIXTURE = Path(__file__).parents[1] / "fixtures" / "diabetic_data_tiny.csv"
N_FIXTURE_ROWS = 40


def fixture_bytes() -> bytes:
    return FIXTURE.read_bytes()


def fixture_lines() -> list[str]:
    """Header + data lines of the fixture, without line endings."""
    return FIXTURE.read_text().splitlines()


def write_csv(path: Path, lines: list[str], *, final_newline: bool = True) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    text = "\r\n".join(lines) + ("\r\n" if final_newline else "")
    path.write_bytes(text.encode())
    return path


def set_field(lines: list[str], row: int, column: str, value: str) -> list[str]:
    """Copy of ``lines`` with data row ``row`` (1-based) holding ``value`` in ``column``."""
    out = list(lines)
    fields = out[row].split(",")
    fields[DIABETES130_COLUMNS.index(column)] = value
    out[row] = ",".join(fields)
    return out


def make_zip(path: Path, member: str, data: bytes, extra: dict[str, bytes] | None = None) -> Path:
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        zf.writestr(member, data)
        for name, payload in (extra or {}).items():
            zf.writestr(name, payload)
    return path


def load_tiny(path: Path | str = FIXTURE, **kw: object) -> Cohort:
    return load_diabetes130(path, verify_checksum=False, **kw)  # type: ignore[arg-type]
