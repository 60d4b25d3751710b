"""A real multi-site federation with the README's commands, checked against ``fedcare run --sites``.

The real Diabetes 130 file is split into three hospital files (``fedcare data split-sites``);
each site is prepared in a folder of its own (``fedcare site prepare``), a TLS coordinator with
node authentication starts on loopback (``fedcare federation start``) and registers the three
site cards; each site's node runs as its own ``fedcare site join`` process given only its own
folder; ``fedcare federation run --secagg`` runs Stage 1 for 3 rounds summed by Flower's
SecAgg+ (the coordinator holds only sums), then ``fedcare federation run`` without it, each
broadcasting ``w*``; each site personalises at home (``fedcare site personalise``) from the
plain run's ``w*``. λ* per round must agree with ``fedcare run --sites`` on the same files
within 1e-5 (1e-4 under SecAgg+, whose grid rounds each sum; its ``w*`` within 1e-6 of the
plain one) and each site's metrics within 1e-4. (Stage 2 from the secure ``w*``, one float32
step away, can differ by ~1e-3 in a metric: Stage 2's training is not smooth in ``w*``.)

Each site's audit log holds what the coordinator recorded receiving from it, digest for digest,
for the secure run (every SecAgg+ stage) as for the plain one. A site whose key the
coordinator never registered is refused; a site that drops out mid-run is
handled as a killed SuperNode is (skipped, dropped, noted; with ``--min-sites-per-round 2`` the
run finishes with the others: ``test_multisite_round_floor.py`` has the run that may not).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from fedcare.flower.audit import AUDIT_FILE, RECEIVED_FILE
from fedcare.procs.children import TOKEN_ENV
from fedcare.procs.marked import marked_processes
from fedcare.procs.ports import free_port
from fedcare_core.files.json_lines import read_lines

pytestmark = [pytest.mark.slow, pytest.mark.realdata, pytest.mark.xdist_group("multisite")]
ROUNDS = "3"
JOIN_STOP_S = 60.0


def fedcare(
    *args: str, check: bool = True, timeout: float = 900
) -> subprocess.CompletedProcess[str]:
    """``fedcare ARGS`` as a user types it (a subprocess of this interpreter's environment)."""
    done = subprocess.run(
        [sys.executable, "-m", "fedcare.cli", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    if check and done.returncode != 0:
        raise AssertionError(f"fedcare {' '.join(args)} exited {done.returncode}:\n{done.stderr}")
    return done


def join(site: Path, port: int, ca: Path, log: Path) -> subprocess.Popen[bytes]:
    """``fedcare site join`` for one site, in a session of its own (as a site's own machine)."""
    with open(log, "wb") as fh:
        return subprocess.Popen(
            [sys.executable, "-m", "fedcare.cli", "site", "join", "--site", str(site),
             "--superlink", f"127.0.0.1:{port}", "--root-certificates", str(ca)],
            stdout=fh, stderr=subprocess.STDOUT, start_new_session=True,
        )  # fmt: skip


def stop(proc: subprocess.Popen[bytes]) -> int:
    """Ctrl-C a ``site join`` and wait for it."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGINT)
    try:
        return proc.wait(timeout=JOIN_STOP_S)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        return proc.wait()


def prepare_sites(
    root: Path, data_dir: Path, *init: str, encounters: int | None = None
) -> tuple[Path, dict[str, Path]]:
    """Three hospital files of the real file, a schema (``init``: more ``federation init``
    options) and each site prepared in its own folder under ``root``.

    ``encounters``: keep each hospital file's first this many encounters (None: all).
    """
    zip_path = data_dir / "diabetes130" / "dataset_diabetes.zip"
    fedcare("data", "split-sites", "--dataset", "diabetes130", "--data", str(zip_path),
            "--sites", "3", "--seed", "0", "--out", str(root / "hospitals"))  # fmt: skip
    if encounters is not None:
        for path in (root / "hospitals").glob("site-*.csv"):
            lines = path.read_text().splitlines()
            path.write_text("\n".join(lines[: encounters + 1]) + "\n")
    schema = root / "federation.json"
    fedcare("federation", "init", "--dataset", "diabetes130", *init, "--out", str(schema))
    sites = {}
    for entry in json.loads((root / "hospitals" / "sites.json").read_text()):
        folder = root / entry["name"]
        fedcare("site", "prepare", "--schema", str(schema),
                "--data", str(root / "hospitals" / entry["data"]),
                "--objectives", ",".join(entry["objectives"]), "--out", str(folder))  # fmt: skip
        sites[entry["name"]] = folder
    return schema, sites


@pytest.fixture(scope="module")
def federation(data_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict]:
    """Three prepared sites, a running coordinator with their cards registered."""
    root = tmp_path_factory.mktemp("multisite")
    # 12,000 encounters a hospital (about a third of each file): agreement, not quality, is tested.
    schema, sites = prepare_sites(root, data_dir, encounters=12000)
    state, port = root / "state", free_port()
    fedcare("federation", "start", "--state-dir", str(state), "--port", str(port))
    try:
        for folder in sites.values():
            card = folder / "site-card.json"
            fedcare("federation", "register", "--state-dir", str(state), "--site", str(card))
        yield {"root": root, "schema": schema, "sites": sites, "state": state, "port": port}
    finally:
        fedcare("federation", "stop", "--state-dir", str(state), check=False)


def test_three_sites_match_the_in_process_federation(federation: dict) -> None:
    root, state, port = federation["root"], federation["state"], federation["port"]
    ca = state / "ca.crt"
    joins = {
        name: join(folder, port, ca, root / f"join-{name}.log")
        for name, folder in federation["sites"].items()
    }
    try:
        stage1, secure = root / "stage1.json", root / "stage1-secure.json"
        fedcare("federation", "run", "--state-dir", str(state), "--schema",
                str(federation["schema"]), "--min-sites", "3", "--rounds", ROUNDS, "--seed", "0",
                "--out", str(secure), "--quiet", "--secagg", "--name", "secure")  # fmt: skip
        fedcare("federation", "run", "--state-dir", str(state), "--schema",
                str(federation["schema"]), "--min-sites", "3", "--rounds", ROUNDS, "--seed", "0",
                "--out", str(stage1), "--quiet", "--name", "plain")  # fmt: skip
    finally:
        codes = {name: stop(proc) for name, proc in joins.items()}
    assert codes == {name: 130 for name in joins}, codes
    doc, secure_doc = json.loads(stage1.read_text()), json.loads(secure.read_text())
    assert doc["rounds_run"] == secure_doc["rounds_run"] == int(ROUNDS)
    assert [s["name"] for s in doc["sites"]] == sorted(federation["sites"])
    assert secure_doc["secure_aggregation"] is True and doc["secure_aggregation"] is False
    for run in ("secure", "plain"):  # every SecAgg+ stage's reply too, as it left each site
        audits_match(state / "runs" / run, federation["sites"])
    name, folder = sorted(federation["sites"].items())[0]  # the site's own check agrees
    record = state / "runs" / "secure" / "result" / "received.jsonl"
    said = fedcare("site", "audit", "--site", str(folder), "--run", "secure", "--received",
                   str(record)).stdout  # fmt: skip
    assert f"site {name}: the coordinator recorded" in said and "NOT SENT" not in said
    with (
        np.load(state / "runs" / "plain" / "result" / "stage1.npz") as plain_w,
        np.load(state / "runs" / "secure" / "result" / "stage1.npz") as secure_w,
    ):
        assert np.abs(plain_w["params"] - secure_w["params"]).max() <= 1e-6
    local = root / "local.json"
    fedcare("run", "--sites", str(root / "hospitals" / "sites.json"), "--schema",
            str(federation["schema"]), "--rounds", ROUNDS, "--seed", "0", "--out", str(local),
            "--quiet")  # fmt: skip
    expected = json.loads(local.read_text())
    for got, summed, want in zip(
        doc["rounds"], secure_doc["rounds"], expected["rounds"], strict=True
    ):
        assert (
            got["participant_sites"] == summed["participant_sites"] == sorted(federation["sites"])
        )
        for objective, value in want["lambda"].items():
            assert abs(got["lambda"][objective] - value) <= 1e-5
            assert abs(summed["lambda"][objective] - value) <= 1e-4
    for client_id, (name, folder) in enumerate(sorted(federation["sites"].items())):
        assert (folder / "stage1" / "stage1.json").exists()
        result = root / f"result-{name}.json"
        fedcare("site", "personalise", "--site", str(folder), "--out", str(result), "--quiet")
        site_doc = json.loads(result.read_text())
        assert site_doc["site"]["client_id"] == client_id
        assert sorted(site_doc["objectives"]) == sorted(site_doc["site"]["objectives"])
        for objective, report in site_doc["objectives"].items():
            (mine,) = report["clients"]
            (theirs,) = [
                c for c in expected["objectives"][objective]["clients"] if c["client"] == client_id
            ]
            assert abs(mine["value"] - theirs["value"]) <= 1e-4, (name, objective)
    text = "".join((root / f"join-{n}.log").read_text() for n in federation["sites"])
    assert "received the Stage 1 model" in text
    assert not _federation_processes(root)


def test_an_unregistered_site_is_refused(federation: dict) -> None:
    root, state, port = federation["root"], federation["state"], federation["port"]
    hospital = root / "hospitals" / "site-0.csv"
    intruder = root / "intruder"
    fedcare("site", "prepare", "--schema", str(federation["schema"]), "--data", str(hospital),
            "--objectives", "los", "--out", str(intruder))  # fmt: skip
    started = time.monotonic()
    proc = join(intruder, port, state / "ca.crt", root / "join-intruder.log")
    code = proc.wait(timeout=180)
    log = (root / "join-intruder.log").read_text()
    assert code == 2, log
    assert "cannot join the coordinator" in log and "registered" in log
    assert "Traceback" not in log.split("Its log:")[0]
    assert time.monotonic() - started < 120
    status = fedcare("federation", "status", "--state-dir", str(state)).stdout
    assert "intruder" not in status


def test_a_site_that_drops_out_mid_run_is_noted_and_the_others_finish(federation: dict) -> None:
    root, state, port = federation["root"], federation["state"], federation["port"]
    ca = state / "ca.crt"
    names = sorted(federation["sites"])
    joins = {
        name: join(federation["sites"][name], port, ca, root / f"drop-{name}.log") for name in names
    }
    leaving = names[-1]
    out = root / "stage1-drop.json"
    run = subprocess.Popen(
        [sys.executable, "-m", "fedcare.cli", "federation", "run", "--state-dir", str(state),
         "--schema", str(federation["schema"]), "--min-sites", "3", "--rounds", "6",
         "--min-sites-per-round", "2",  # without it, a round of 2 of the 3 stops the run
         "--seed", "1", "--out", str(out), "--round-timeout", "30", "--quiet",
         "--name", "dropout"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        rounds_log = state / "runs" / "dropout" / "result" / "rounds.jsonl"
        deadline = time.monotonic() + 600
        while not (rounds_log.exists() and len(rounds_log.read_text().splitlines()) >= 2):
            assert run.poll() is None, run.communicate()
            assert time.monotonic() < deadline
            time.sleep(0.5)
        os.killpg(joins[leaving].pid, signal.SIGKILL)  # the site's machine goes away
        _, err = run.communicate(timeout=900)
    finally:
        for proc in joins.values():
            stop(proc)
    assert run.returncode == 0, err
    doc = json.loads(out.read_text())
    assert doc["rounds_run"] == 6
    assert doc["rounds"][0]["participant_sites"] == names
    assert leaving not in doc["rounds"][-1]["participant_sites"]
    assert any(f"site {leaving!r}" in note for note in doc["notes"]), doc["notes"]
    assert not _federation_processes(root)


def audits_match(run: Path, sites: dict[str, Path], slow: str | None = None) -> None:
    """Each site's audit log against the coordinator's record of the run, digest for digest.

    ``run``: the run's folder in the coordinator's state. What the coordinator recorded is
    exactly what each site sent; a ``slow`` site may also have sent a reply after its round
    closed that the coordinator never pulled (the run had ended).
    """
    received = read_lines(run / "result" / RECEIVED_FILE)
    for name, folder in sites.items():
        lines = read_lines(folder / AUDIT_FILE)
        (joined,) = [x for x in lines if x.get("run_name") == run.name]
        assert joined["decision"] == "joined"
        sent = [
            (x["round"], x["kind"], x["sha256"])
            for x in lines
            if x.get("run_id") == joined["run_id"] and "sha256" in x
        ]
        got = [
            (x["round"], x["kind"], x["sha256"])
            for x in received
            if x["site"] == name and "sha256" in x
        ]
        assert got and all(m in sent for m in got), name
        unrecorded = [m for m in sent if m not in got]
        if name != slow:
            assert not unrecorded, (name, unrecorded)
        assert all(kind == "train" for _, kind, _ in unrecorded), unrecorded


def _federation_processes(root: Path) -> list[str]:
    """Live processes whose command line names a folder of this test, but the coordinator's
    (its SuperLink and what it started, marked with its token): none may be left."""
    record = json.loads((root / "state" / "superlink.json").read_text())
    coordinator = set(marked_processes(TOKEN_ENV, record["token"]))
    out = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) in coordinator:
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().decode(errors="replace")
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if str(root) in cmdline and state != "Z":
            out.append(f"{entry.name}: {cmdline.replace(chr(0), ' ')}")
    return out


def test_a_site_reconnects_after_a_network_break(federation: dict) -> None:
    """The coordinator's SuperLink goes away for a while and comes back on the same address:
    the sites' nodes, never restarted, take part in the next run."""
    root, state, port = federation["root"], federation["state"], federation["port"]
    names = sorted(federation["sites"])[:2]
    joins = {
        name: join(federation["sites"][name], port, state / "ca.crt", root / f"break-{name}.log")
        for name in names
    }
    try:
        one_round = ["federation", "run", "--state-dir", str(state), "--schema",
                     str(federation["schema"]), "--min-sites", "2", "--rounds", "1",
                     "--seed", "2", "--quiet", "--startup-timeout", "180"]  # fmt: skip
        fedcare(*one_round, "--out", str(root / "before.json"))
        fedcare("federation", "stop", "--state-dir", str(state))
        time.sleep(15)  # the break: the nodes retry all along
        fedcare("federation", "start", "--state-dir", str(state), "--port", str(port))
        fedcare(*one_round, "--out", str(root / "after.json"))
        assert all(proc.poll() is None for proc in joins.values())
    finally:
        for proc in joins.values():
            stop(proc)
    logs = "".join((root / f"break-{name}.log").read_text() for name in names)
    assert "starting it again" not in logs  # the same node processes, reconnected
    before = json.loads((root / "before.json").read_text())
    after = json.loads((root / "after.json").read_text())
    assert after["rounds"][0]["participant_sites"] == names
    assert after["rounds"][0]["lambda"] == before["rounds"][0]["lambda"]
