"""The coordinator's state files read checked: what the coordinator writes passes, an edited file
is refused naming the file and field before anything acts on it (a signal, a path, flwr)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from fedcare.sites.coordinator_state import RegisteredSite, read_process_record, read_sites
from fedcare_core.errors import ConfigError

DIGEST = "0d1e418b81e6fb3b92437c2f3513668a9e3a7feb62c9fd05ec9af254cc0a3002"
SITES = {
    "north": {
        "objectives": ["readmission"],
        "schema_digest": DIGEST,
        "node_id": 2**64 - 9,
    },
    "south": {"objectives": ["los", "early_discharge"], "schema_digest": DIGEST, "node_id": 7},
}
RECORD = {
    "pid": os.getpid(), "host": "127.0.0.1", "port": 9092,
    "token": "0123456789abcdef0123456789abcdef", "started": "123456",
}  # fmt: skip


def _write(path: Path, doc: Any) -> Path:
    path.write_text(json.dumps(doc))
    return path


def test_what_the_coordinator_writes_reads_back(tmp_path: Path) -> None:
    sites = read_sites(_write(tmp_path / "sites.json", SITES))
    assert sites["north"] == RegisteredSite("north", ("readmission",), DIGEST, 2**64 - 9)
    assert read_sites(tmp_path / "none.json") == {}
    assert read_process_record(_write(tmp_path / "superlink.json", RECORD)) == RECORD
    assert read_process_record(tmp_path / "none.json") is None


@pytest.mark.parametrize(
    ("sites", "message"),
    [
        ({"../../x": SITES["north"]}, "an entry: site name '../../x'"),
        ({"": SITES["north"]}, "an entry: site name ''"),
        ({"north": {**SITES["north"], "node_id": "x"}}, "field 'north.node_id' must be an integer"),
        ({"north": {**SITES["north"], "node_id": -1}}, "field 'north.node_id'"),
        ({"north": {**SITES["north"], "objectives": "los"}}, "field 'north.objectives'"),
        ({"north": {**SITES["north"], "schema_digest": 1}}, "field 'north.schema_digest'"),
        ({"north": [1]}, "field 'north' must be a JSON object"),
        ([], "must be a JSON object, got a JSON array"),
    ],
)
def test_an_edited_sites_file_is_refused(tmp_path: Path, sites: Any, message: str) -> None:
    path = _write(tmp_path / "sites.json", sites)
    with pytest.raises(ConfigError) as exc:
        read_sites(path)
    text = str(exc.value)
    assert text.startswith(f"the coordinator's state file {path}: ") and message in text
    assert text.endswith("the file was not written by `fedcare federation`") and "\n" not in text


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"pid": 1}, "field 'pid' must be an integer and lie in [2, 4,194,304], got 1"),
        ({"pid": 0}, "field 'pid'"),
        ({"pid": "abc"}, "field 'pid'"),
        ({"host": "evil; rm -rf"}, "field 'host' must be an IP address"),
        ({"port": 70_000}, "field 'port'"),
        ({"token": "x"}, "field 'token' must be 32 hexadecimal digits"),
        ({"started": ""}, "field 'started' must be a string of 1-20 characters"),
        ({"started": "later"}, "field 'started' must be the process's start time"),
    ],
)
def test_an_edited_process_record_is_refused_before_any_signal(
    tmp_path: Path, change: dict[str, Any], message: str
) -> None:
    path = _write(tmp_path / "superlink.json", RECORD | change)
    with pytest.raises(ConfigError) as exc:
        read_process_record(path, linux=True)
    text = str(exc.value)
    assert text.startswith(f"the coordinator's state file {path}: ") and message in text
    assert "stop any SuperLink of this folder yourself, then delete it" in text


def test_without_proc_a_record_has_no_start_time(tmp_path: Path) -> None:
    path = _write(tmp_path / "superlink.json", RECORD | {"started": ""})
    assert read_process_record(path, linux=False)["started"] == ""
