"""``fedcare federation``: hostile inputs of every sub-command are refused in one line naming the
option or the file and field, exit 2, before any process starts and with nothing written.

No coordinator runs here: every check comes before the one that asks for a running SuperLink,
so a refusal that names the card (not "not running") shows the card was checked first.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from fedcare.flower.tls import make_node_keys, make_tls
from fedcare_core.config import ExperimentConfig
from fedcare_core.sites.schema import schema_for
from tests.fedcare.cli.refusals import refused

SCHEMA = schema_for(ExperimentConfig())


@pytest.fixture
def card(tmp_path: Path) -> Callable[..., Path]:
    """Write a site card as a site would send it, with ``changes``; its path."""
    key = make_node_keys(tmp_path / "keys", "node").public_key.read_text().strip()
    good = {
        "format": "fedcare-site-card/1", "name": "north", "objectives": ["readmission"],
        "schema_digest": SCHEMA.digest(), "public_key": key,
    }  # fmt: skip

    def write(**changes: Any) -> Path:
        path = tmp_path / "north-site-card.json"
        path.write_text(json.dumps(good | changes))
        return path

    return write


@pytest.mark.parametrize(
    ("changes", "parts"),
    [
        ({"name": "../../x"}, ("field 'name': site name '../../x'",)),
        ({"name": "/etc/x"}, ("site name '/etc/x'",)),
        ({"name": ""}, ("site name ''",)),
        ({"name": "a\nb"}, (r"site name 'a\nb'",)),
        ({"name": "a\x00b"}, (r"site name 'a\x00b'",)),
        ({"name": "n" * 5000}, ("site name 'nnn",)),
        ({"objectives": "los"}, ("field 'objectives' must be a non-empty list",)),
        ({"schema_digest": 12}, ("field 'schema_digest'",)),
        ({"public_key": "hello"}, ("field 'public_key': not an OpenSSH public key",)),
    ],
)
def test_a_hostile_card_is_refused_before_the_coordinator_is_asked(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], card: Any, changes: Any, parts: Any
) -> None:
    path = card(**changes)
    argv = ["federation", "register", "--state-dir", str(tmp_path / "STATE"), "--site", str(path)]
    refused(capsys, tmp_path, argv, f"site card {path}: ", *parts)


def test_a_public_key_that_is_not_one_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    schema = SCHEMA.write(tmp_path / "federation.json")
    (tmp_path / "k.pub").write_text("garbage\n")
    argv = ["federation", "register", "--state-dir", str(tmp_path / "STATE"), "--schema"]
    argv += [str(schema), "--objectives", "los", "--public-key", str(tmp_path / "k.pub")]
    refused(capsys, tmp_path, [*argv, "--name", "north"], "--public-key", "not an OpenSSH")
    refused(capsys, tmp_path, [*argv, "--name", "../x"], "--name: site name '../x'")


@pytest.mark.parametrize(
    ("extra", "parts"),
    [
        (["--validity-days", str(10**9)], ("--validity-days must lie in [1, 36,500]",)),
        (["--port", "70000"], ("--port must lie in [1, 65,535], got 70,000",)),
        (["--host", "nowhere"], ("--host 'nowhere': give an IP address",)),
    ],
)
def test_start_refuses_numbers_that_would_overflow_later(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], extra: list[str], parts: Any
) -> None:
    argv = ["federation", "start", "--state-dir", str(tmp_path / "STATE"), "--port", "9092"]
    refused(capsys, tmp_path, [*argv, *extra], *parts)


def test_start_refuses_certificates_flower_could_not_use(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ours, theirs = make_tls(tmp_path / "ours"), make_tls(tmp_path / "theirs")
    (tmp_path / "garbage.pem").write_text("not a certificate\n")
    argv = ["federation", "start", "--state-dir", str(tmp_path / "STATE"), "--port", "9092"]

    def given(ca: Path, cert: Path, key: Path) -> list[str]:
        return [*argv, "--ca-cert", str(ca), "--server-cert", str(cert), "--server-key", str(key)]

    garbage = tmp_path / "garbage.pem"
    refused(capsys, tmp_path, given(garbage, ours.server_cert, ours.server_key), "--ca-cert", "PEM")
    refused(capsys, tmp_path, given(ours.ca_cert, garbage, ours.server_key), "--server-cert")
    refused(capsys, tmp_path, given(ours.ca_cert, ours.server_cert, theirs.server_key),
            "--server-key", "not the key of the certificate")  # fmt: skip
    refused(capsys, tmp_path, given(theirs.ca_cert, ours.server_cert, ours.server_key),
            "--server-cert", "not issued by the CA certificate")  # fmt: skip
    (tmp_path / "STATE").write_text("a file")
    refused(capsys, tmp_path, argv, "--state-dir", "a file, not a folder")


def test_a_state_folder_edited_by_hand_is_refused_before_anything_acts_on_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    state = tmp_path / "STATE"
    state.mkdir()
    record = {"pid": 1, "host": "127.0.0.1", "port": 9092, "token": "0" * 32, "started": ""}
    (state / "superlink.json").write_text(json.dumps(record))  # stop would signal init's group
    stop = ["federation", "stop", "--state-dir", str(state)]
    refused(capsys, tmp_path, stop, "superlink.json: field 'pid'", "delete it")
    (state / "superlink.json").write_text(json.dumps(record | {"pid": os.getpid()}))
    refused(capsys, tmp_path, stop, "superlink.json: field 'started'")  # a pid reused: not ours
    (state / "superlink.json").unlink()
    sites = {"../../x": {"objectives": ["los"], "schema_digest": SCHEMA.digest(), "node_id": 3}}
    (state / "sites.json").write_text(json.dumps(sites))
    status = ["federation", "status", "--state-dir", str(state)]
    refused(capsys, tmp_path, status, "sites.json: an entry: site name '../../x'")
    sites = {"north": {"objectives": ["los"], "schema_digest": SCHEMA.digest(), "node_id": "x"}}
    (state / "sites.json").write_text(json.dumps(sites))
    refused(capsys, tmp_path, status, "sites.json: field 'north.node_id'")
    unregister = ["federation", "unregister", "--state-dir", str(state), "--name", "../../x"]
    refused(capsys, tmp_path, unregister, "--name: site name '../../x'")


@pytest.mark.parametrize(
    ("extra", "parts"),
    [
        (["--min-sites", str(10**9)], ("--min-sites must lie in [2, 1000]",)),
        (["--rounds", "0"], ("--rounds must lie in [1, 100,000], got 0",)),
        (["--seed", "-1"], ("--seed must lie in [0, 4,294,967,295], got -1",)),
        (["--name", "../../escaped"], ("--name: run name '../../escaped'",)),
        (["--round-timeout", "1e300"], ("--round-timeout must lie in (0, 2,592,000]",)),
        (["--startup-timeout", "inf"], ("--startup-timeout must be a finite number",)),
        (["--round-deadline", "5", "--secagg"], ("--round-deadline with secagg",)),
        (["--min-sites-per-round", "3", "--round-deadline", "5"], ("3: more than the run's 2",)),
        (["--min-sites-per-round", "1"], ("--min-sites-per-round 1: a round needs at least 2",)),
        (
            ["--min-sites-per-round", "2", "--round-deadline", "900"],
            ("--round-deadline 900 s is beyond --round-timeout 600 s",),
        ),
        (
            ["--min-sites-per-round", "2", "--round-deadline", "5", "--secagg"],
            ("--min-sites-per-round with secagg",),
        ),
    ],
)
def test_federation_run_refuses_options_before_it_waits_for_sites(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], extra: list[str], parts: Any
) -> None:
    schema = SCHEMA.write(tmp_path / "federation.json")
    argv = ["federation", "run", "--state-dir", str(tmp_path / "STATE"), "--schema", str(schema)]
    argv += ["--min-sites", "2", "--rounds", "1", "--seed", "0"]
    refused(capsys, tmp_path, [*argv, "--out", str(tmp_path / "stage1.json"), *extra], *parts)
