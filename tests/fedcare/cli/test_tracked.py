"""The MLflow store a command logs to: checked before any work, creating nothing.

:func:`check_store` refuses what could not be opened (one line naming the option) and leaves
the disk as it was; the store is made only when the finished run is logged.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from fedcare.cli.tracked import ChosenStore, check_chosen_store, check_store
from fedcare_core.errors import ConfigError


def listing(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*"))


def test_a_new_sqlite_store_is_checked_not_made(tmp_path: Path) -> None:
    check_store(f"sqlite:///{tmp_path}/new/deeper/mlflow.db")
    check_store(f"sqlite:///{tmp_path}/mlflow.db")
    assert listing(tmp_path) == []


def test_an_existing_store_or_an_empty_database_is_accepted_unchanged(tmp_path: Path) -> None:
    (tmp_path / "empty.db").write_bytes(b"")  # `sqlite3 empty.db ''`: a new store
    with sqlite3.connect(tmp_path / "mlflow.db") as con:
        con.execute("CREATE TABLE experiments (id INTEGER)")
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
    check_store(f"sqlite:///{tmp_path}/empty.db")
    check_store(f"sqlite:///{tmp_path}/mlflow.db")
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == before


@pytest.mark.parametrize(
    ("make", "uri", "part"),
    [
        (lambda d: (d / "plain").write_text("x"), "sqlite:///{d}/plain/m.db", "is not a folder"),
        (lambda d: (d / "text.db").write_text("not sqlite"), "sqlite:///{d}/text.db",
         "is not an SQLite database"),
        (lambda d: (d / "m.db").mkdir(), "sqlite:///{d}/m.db", "is not a readable and writable"),
        (lambda d: sqlite3.connect(d / "other.db").execute("CREATE TABLE t (x)").connection
         .commit(), "sqlite:///{d}/other.db", "another program's tables"),
        (lambda d: (d / "runs").write_text("x"), "file://{d}/runs", "is a file"),
        (lambda d: None, "http://127.0.0.1:9/", "cannot open the MLflow store"),
    ],
)  # fmt: skip
def test_a_store_that_cannot_be_opened_is_refused_naming_the_option(
    tmp_path: Path, make: object, uri: str, part: str
) -> None:
    make(tmp_path)  # type: ignore[operator]
    before = {p.name: p.stat().st_mtime_ns for p in tmp_path.iterdir()}
    with pytest.raises(ConfigError) as exc:
        check_store(uri.format(d=tmp_path))
    message = str(exc.value)
    assert message.startswith("--tracking-uri ") and part in message and "\n" not in message
    assert {p.name: p.stat().st_mtime_ns for p in tmp_path.iterdir()} == before


def test_the_environments_store_is_named_as_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    assert check_chosen_store(None) is None
    uri = f"sqlite:///{tmp_path}/m.db"
    assert check_chosen_store(uri) == ChosenStore(uri, "--tracking-uri")
    monkeypatch.setenv("MLFLOW_TRACKING_URI", f"sqlite:///{tmp_path}/f/m.db")
    (tmp_path / "f").write_text("a file")
    with pytest.raises(ConfigError, match=r"^MLFLOW_TRACKING_URI sqlite:///"):
        check_chosen_store(None)
