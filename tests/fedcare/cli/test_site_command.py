"""``fedcare site join`` and ``rotate-key``: a certificate, a key, an address or a site folder
Flower could not use is refused in one line before any process starts (a CA that is not PEM used
to make the node retry its handshake for ever), and a refused rotation keeps the old key."""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

import pytest

from fedcare.cli.main import main
from fedcare.flower.tls import make_tls
from tests.fedcare.cli.refusals import refused
from tests.fedcare.cli.test_site_prepare import init_schema, prepare, synthetic_site


@pytest.fixture(scope="module")
def prepared(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("prepared")
    schema = init_schema(root / "federation.json")
    data = synthetic_site(root / "north.csv")
    assert prepare(schema, data, root / "north", "readmission") == 0
    return root / "north"


@pytest.fixture
def site(prepared: Path, tmp_path: Path) -> Path:
    shutil.copytree(prepared, tmp_path / "north")
    make_tls(tmp_path / "coordinator")  # tmp_path/coordinator/ca.pem: a real CA certificate
    return tmp_path / "north"


def join(site: Path, ca: Path, superlink: str = "127.0.0.1:9092") -> list[str]:
    return ["site", "join", "--site", str(site), "--superlink", superlink,
            "--root-certificates", str(ca)]  # fmt: skip


def _edit(path: Path, **changes: object) -> None:
    path.write_text(json.dumps(json.loads(path.read_text()) | changes))


def test_a_root_certificate_or_node_key_flower_cannot_read_is_refused_at_once(
    site: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ca = tmp_path / "coordinator" / "ca.pem"
    garbage = tmp_path / "garbage.crt"
    garbage.write_text("garbage\n")
    started = time.monotonic()
    refused(capsys, tmp_path, join(site, garbage), f"--root-certificates {garbage}", "PEM")
    refused(capsys, tmp_path, join(site, tmp_path), "--root-certificates", "a folder")
    (site / "keys" / "node.key").write_text("garbage\n")
    refused(capsys, tmp_path, join(site, ca), "the node key", "not an unencrypted OpenSSH")
    assert time.monotonic() - started < 30  # no node was started, nothing waited


@pytest.mark.parametrize(
    ("superlink", "part"),
    [
        ("127.0.0.1:0", "the port must lie in [1, 65535]"),
        ("127.0.0.1:99999", "the port must lie in [1, 65535]"),
        ("127.0.0.1", "give HOST:PORT"),
        ("http://x:9092", "give HOST:PORT"),
        ("a b:9092", "give HOST:PORT"),
    ],
)
def test_a_superlink_address_flower_cannot_parse_is_refused(
    site: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], superlink: str, part: str
) -> None:
    ca = tmp_path / "coordinator" / "ca.pem"
    refused(capsys, tmp_path, join(site, ca, superlink), f"--superlink {superlink!r}", part)


@pytest.mark.parametrize(
    ("file", "changes", "part"),
    [
        ("site.json", {"name": "../../x"}, "site.json: field 'name': site name '../../x'"),
        ("site.json", {"schema_digest": 5}, "site.json: field 'schema_digest'"),
        ("site-card.json", {"name": "south"}, "site-card.json: field 'name' differs"),
        ("site-card.json", {"objectives": []}, "site-card.json: field 'objectives'"),
    ],
)
def test_a_site_folder_edited_by_hand_is_refused(
    site: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    file: str,
    changes: dict[str, object],
    part: str,
) -> None:
    _edit(site / file, **changes)
    refused(capsys, tmp_path, join(site, tmp_path / "coordinator" / "ca.pem"), part)
    refused(capsys, tmp_path, ["site", "rotate-key", "--site", str(site)], part)


def test_rotate_key_keeps_the_key_when_the_card_cannot_be_read(
    site: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (site / "site-card.json").write_text("{")
    refused(capsys, tmp_path, ["site", "rotate-key", "--site", str(site)], "site-card.json")
    (site / "site-card.json").unlink()
    refused(capsys, tmp_path, ["site", "rotate-key", "--site", str(site)], "(no site-card.json)")
    assert main(["site", "rotate-key", "--site", str(tmp_path / "nowhere")]) == 2
    assert "not a site folder (no site.json)" in capsys.readouterr().err


def test_a_broken_policy_stops_the_join_naming_the_file_and_key(
    site: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (site / "policy.yaml").write_text("max_epsilon: lots\n")
    ca = tmp_path / "coordinator" / "ca.pem"
    refused(capsys, tmp_path, join(site, ca), f"site policy {site / 'policy.yaml'}: max_epsilon")


def test_pending_runs_are_listed_and_approved_by_name(
    site: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from fedcare.flower.site_rules import decide
    from fedcare_core.sites.policy import RunTerms

    (site / "policy.yaml").write_text("require_approval: true\nmax_rounds: 200\n")
    terms = RunTerms("nightly-7", "fedcare", ("readmission",), 100, True, 6.0, 1e-5)
    assert decide(site, terms).rule == "require_approval"
    assert main(["site", "pending", "--site", str(site)]) == 0
    out = capsys.readouterr().out
    assert "nightly-7: fedcare, 100 rounds, objectives readmission" in out
    assert "secure aggregation on, DP z 6, δ 1e-05, ε" in out
    refused(capsys, tmp_path, ["site", "approve", "--site", str(site), "--run", "other"],
            "--run 'other': no such pending run (pending: nightly-7)")  # fmt: skip
    assert main(["site", "approve", "--site", str(site), "--run", "nightly-7"]) == 0
    assert "approved run nightly-7" in capsys.readouterr().out
    assert decide(site, terms) is None
    renamed = RunTerms("nightly-8", *list(terms.__dict__.values())[1:])
    assert decide(site, renamed) is None  # the same terms under another name
    longer = RunTerms("nightly-9", "fedcare", ("readmission",), 150, True, 6.0, 1e-5)
    assert decide(site, longer).rule == "require_approval"  # new terms: a new approval
    assert main(["site", "pending", "--site", str(site)]) == 0
    assert "nightly-9" in capsys.readouterr().out
    (torn,) = (site / "approvals" / "pending").glob("*.json")
    torn.write_text('{"run_name": "nightly-9", "algo')
    refused(capsys, tmp_path, ["site", "pending", "--site", str(site)],
            f"pending run {torn}: not a run's terms")  # fmt: skip


def test_following_the_federation_needs_the_sites_store_and_a_sane_margin(
    site: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ca = tmp_path / "coordinator" / "ca.pem"
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    refused(
        capsys, tmp_path, [*join(site, ca), "--personalise"], "--personalise needs --tracking-uri"
    )
    refused(
        capsys,
        tmp_path,
        [*join(site, ca), "--tracking-uri", uri],
        "--tracking-uri has no effect without --personalise",
    )
    margin = [*join(site, ca), "--promotion-margin", "0.1"]
    refused(capsys, tmp_path, margin, "--promotion-margin has no effect without --personalise")
    bad = [*join(site, ca), "--personalise", "--tracking-uri", uri, "--promotion-margin", "-1"]
    refused(capsys, tmp_path, bad, "--promotion-margin must lie in [0, 1,000,000]")


def test_site_audit_lists_what_left_and_checks_a_coordinators_record(
    site: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from fedcare_core.files.json_lines import append_line

    audit = ["site", "audit", "--site", str(site)]
    assert main(audit) == 0
    assert "no audit log yet" in capsys.readouterr().out
    log = site / "audit.jsonl"
    append_line(log, {"run_id": 9, "run_name": "plain", "decision": "refused",
                      "rule": "require_secagg"})  # fmt: skip
    append_line(log, {"run_id": 11, "run_name": "weekly", "decision": "joined", "rule": None})
    for round_, digest in (("1", "a" * 64), ("2", "b" * 64)):
        append_line(log, {"run_id": 11, "round": round_, "kind": "train", "bytes": 1000,
                          "sha256": digest})  # fmt: skip
    assert main(audit) == 0
    out = capsys.readouterr().out
    assert "plain (Flower run 9): refused by its rule require_secagg; 0 message(s)" in out
    assert "weekly (Flower run 11): joined; 2 message(s) sent, 2,000 bytes" in out
    record = tmp_path / "received.jsonl"
    append_line(record, {"site": "north", "round": "1", "kind": "train", "sha256": "a" * 64})
    append_line(record, {"site": "south", "round": "1", "kind": "train", "sha256": "c" * 64})
    check = [*audit, "--run", "weekly", "--received", str(record)]
    assert main(check) == 0  # round 2's reply came late and was never pulled: noted only
    out = capsys.readouterr().out
    assert "the coordinator recorded 1 message(s) from this site, 1 of them as" in out
    assert "sent, not in the record (a late reply never pulled?): round 2 train" in out
    append_line(record, {"site": "north", "round": "3", "kind": "train", "sha256": "d" * 64})
    assert main(check) == 1
    assert f"NOT SENT by this site: round 3 train sha256 {'d' * 64}" in capsys.readouterr().out
    refused(capsys, tmp_path, [*audit, "--run", "weekly"], "--run and --received go together")
    refused(capsys, tmp_path, [*audit, "--run", "weekly", "--received", str(tmp_path / "no")],
            "--received", "cannot be read")  # fmt: skip
