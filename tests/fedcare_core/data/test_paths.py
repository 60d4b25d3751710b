"""Where the data is read from, and what a run says when it is given none."""

from __future__ import annotations

from pathlib import Path

import pytest

from fedcare_core.data.paths import checked_data_dir, no_data_message
from fedcare_core.errors import DataError


def test_a_variable_naming_nothing_is_refused_naming_the_variable(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("FEDCARE_DATA_DIR", str(tmp_path / "gone"))
    with pytest.raises(DataError) as caught:
        checked_data_dir(None)
    message = str(caught.value)
    assert message.startswith(f"FEDCARE_DATA_DIR={tmp_path / 'gone'}: no such file or folder")
    assert "--data-dir DIR" in message and "unset it" in message
    # An explicit path wins and is the source's to check; a definition file looks beside itself.
    assert checked_data_dir(tmp_path / "given") == tmp_path / "given"
    assert checked_data_dir(None, looks_elsewhere=True) == tmp_path / "gone"
    (tmp_path / "gone").mkdir()
    assert checked_data_dir(None) == tmp_path / "gone"


def test_no_variable_and_no_path_is_none(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("FEDCARE_DATA_DIR", raising=False)
    assert checked_data_dir(None) is None and checked_data_dir("") is None


def test_the_message_names_every_way_to_give_the_data(tmp_path: Path) -> None:
    fetchable = no_data_message("diabetes130", fetch_into=tmp_path / "cache")
    for way in ("--data-dir DIR", "FEDCARE_DATA_DIR=DIR", "'fedcare data fetch diabetes130'"):
        assert way in fetchable
    assert str(tmp_path / "cache") in fetchable and "\n" not in fetchable
    credentialed = no_data_message("mimic3")
    assert "--data-dir DIR" in credentialed and "FEDCARE_DATA_DIR=DIR" in credentialed
    assert "fetch" not in credentialed
