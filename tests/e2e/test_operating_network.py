"""Operating a real three-site network (issue 33): policies, k of n, audit, live view, re-training.

Three hospital files of the real Diabetes 130 file (2,000 encounters each), each site prepared
and joined as its own process following the federation (``site join --personalise``, its own
MLflow store). Then, with the README's commands:

1. site A requires secure aggregation: a plain run is refused, naming site A and the rule;
2. site B caps ε at 3, below the schema's 8: a secure run is refused, naming site B and the
   rule (policies are read at every run: the operators edit them between runs);
3. the operators drop those rules; site C is slowed (its processes stopped for a while, as a
   hung machine) and ``--min-sites-per-round 2 --round-deadline S`` closes that round at its
   deadline with A and B. Meanwhile the coordinator's MLflow run shows rounds before the run
   ends (polled), and ``federation status --watch`` prints the round advancing;
4. the sites' audit logs hold what the coordinator recorded receiving, digest for digest;
5. every following site re-trained itself on the new ``w*``: a champion in its own store, and
   the reason in the version's ``fedcare.promotion`` tag.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from fedcare.procs.ports import free_port
from fedcare_core.files.json_lines import read_lines
from tests.e2e.test_multisite_federation import audits_match, fedcare, prepare_sites, stop

pytestmark = [pytest.mark.slow, pytest.mark.realdata]
DEADLINE_S = "15"


def _join(folder: Path, port: int, ca: Path, log: Path) -> subprocess.Popen[bytes]:
    """``site join --personalise`` in a session of its own, with the site's own store."""
    with open(log, "wb") as fh:
        return subprocess.Popen(
            [sys.executable, "-m", "fedcare.cli", "site", "join", "--site", str(folder),
             "--superlink", f"127.0.0.1:{port}", "--root-certificates", str(ca),
             "--personalise", "--tracking-uri", f"sqlite:///{folder / 'mlflow.db'}"],
            stdout=fh, stderr=subprocess.STDOUT, start_new_session=True,
        )  # fmt: skip


def _run(state: Path, schema: Path, out: Path, name: str, *extra: str) -> list[str]:
    return ["federation", "run", "--state-dir", str(state), "--schema", str(schema),
            "--min-sites", "3", "--rounds", "3", "--seed", "0", "--out", str(out), "--quiet",
            "--name", name, "--startup-timeout", "120", *extra]  # fmt: skip


def _rounds(state: Path, name: str) -> list[dict]:
    return read_lines(state / "runs" / name / "result" / "rounds.jsonl")


def test_policies_quorum_audit_live_view_and_retraining(data_dir: Path, tmp_path: Path) -> None:
    root = tmp_path
    schema, sites = prepare_sites(root, data_dir, "--dp-epsilon", "8", encounters=2000)
    a, b, c = sorted(sites)
    state, port = root / "state", free_port()
    fedcare("federation", "start", "--state-dir", str(state), "--port", str(port))
    for folder in sites.values():
        fedcare("federation", "register", "--state-dir", str(state),
                "--site", str(folder / "site-card.json"))  # fmt: skip
    joins = {n: _join(sites[n], port, state / "ca.crt", root / f"join-{n}.log") for n in sites}
    try:
        (sites[a] / "policy.yaml").write_text("require_secagg: true\n")
        plain = fedcare(*_run(state, schema, root / "x.json", "plain"), check=False)
        assert plain.returncode == 2 and not (root / "x.json").exists()
        assert f"site {a!r} refused the run by its policy's rule require_secagg" in plain.stderr
        (sites[b] / "policy.yaml").write_text("max_epsilon: 3\n")
        secure = fedcare(*_run(state, schema, root / "x.json", "secure", "--secagg"), check=False)
        assert secure.returncode == 2
        assert f"site {b!r} refused the run by its policy's rule max_epsilon" in secure.stderr
        assert "it caps ε at 3 (pld); the run has ε = 8" in secure.stderr
        for name in (a, b):
            (sites[name] / "policy.yaml").unlink()  # the operators drop the rule
        _slowed_quorum_run(root, state, schema, sites[c])
        _retrained(sites, root)
    finally:
        codes = {name: stop(proc) for name, proc in joins.items()}
        fedcare("federation", "stop", "--state-dir", str(state), check=False)
    assert codes == {name: 130 for name in joins}, codes
    doc = json.loads((root / "stage1.json").read_text())
    assert doc["rounds_run"] == 3 and doc["participation"]["min_sites_per_round"] == 2
    assert [r["participant_sites"] for r in doc["rounds"]][:2] == [[a, b, c], [a, b]]
    assert any(f"site {c!r}" in n and "deadline" in n for n in doc["notes"]), doc["notes"]
    assert doc["privacy"]["epsilon_by_accountant"]["pld"] <= 8.0
    audits_match(state / "runs" / "quorum", sites, slow=c)
    for folder in sites.values():
        refused = {x["run_name"]: x["rule"] for x in read_lines(folder / "audit.jsonl")
                   if x.get("decision") == "refused"}  # fmt: skip
        assert set(refused) <= {"plain", "secure"}


def _site_processes(folder: Path) -> list[int]:
    """The site's node processes (its SuperNode, SuperExec and tasks name its folder)."""
    out = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and int(entry.name) != os.getpid():
            try:
                cmdline = (entry / "cmdline").read_bytes().decode(errors="replace")
            except OSError:
                continue
            if str(folder) in cmdline and "site join" not in cmdline.replace("\0", " "):
                out.append(int(entry.name))
    return out


def _signal_all(pids: list[int], sig: int) -> None:
    for pid in pids:
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            pass


def _slowed_quorum_run(root: Path, state: Path, schema: Path, slow: Path) -> None:
    """Run 3 rounds k = 2 of 3; stop site C's processes after round 1, resume after round 2;
    poll the MLflow store and ``federation status --watch`` while the run goes on."""
    uri = f"sqlite:///{root / 'coordinator-mlflow.db'}"
    run = subprocess.Popen(
        [sys.executable, "-m", "fedcare.cli",
         *_run(state, schema, root / "stage1.json", "quorum", "--min-sites-per-round", "2",
               "--round-deadline", DEADLINE_S, "--tracking-uri", uri)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    watch = subprocess.Popen(
        [sys.executable, "-m", "fedcare.cli", "federation", "status", "--state-dir", str(state),
         "--watch", "--interval", "0.5"],
        stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    stopped: list[int] = []
    try:
        _wait(lambda: len(_rounds(state, "quorum")) >= 1, run)
        stopped = _site_processes(slow)
        assert stopped
        _signal_all(stopped, signal.SIGSTOP)  # a hung machine: no reply
        _wait(lambda: _live_rounds(uri) >= 1, run, limit_s=30)  # MLflow shows rounds mid-run
        _wait(lambda: len(_rounds(state, "quorum")) >= 2, run)
        _signal_all(stopped, signal.SIGCONT)
        stopped = []
        _, err = run.communicate(timeout=600)
        assert run.returncode == 0, err
    finally:
        _signal_all(stopped, signal.SIGCONT)
        if run.poll() is None:
            run.kill()
        watch.terminate()
        shown, _ = watch.communicate(timeout=30)
    for t in (1, 2, 3):
        assert f"run quorum: in progress, round {t} of 3" in shown or t == 3, shown
    assert "run quorum: finished, round 3 of 3" in shown, shown


def _wait(ready, run: subprocess.Popen[str], limit_s: float = 600) -> None:
    deadline = time.monotonic() + limit_s
    while not ready():
        assert run.poll() is None, run.communicate()
        assert time.monotonic() < deadline
        time.sleep(0.2)


def _live_rounds(uri: str) -> int:
    """Rounds the coordinator's MLflow run holds while it is still RUNNING (0 before it opens)."""
    from mlflow.tracking import MlflowClient

    client = MlflowClient(uri)
    experiments = [e.experiment_id for e in client.search_experiments()]
    runs = client.search_runs(experiments, "attributes.status = 'RUNNING'")
    assert len(runs) <= 1, runs
    if not runs:  # the coordinator opens its run a moment after round 1 is on disk
        return 0
    keys = [k for k in runs[0].data.metrics if k.startswith("lambda/")]
    return len(client.get_metric_history(runs[0].info.run_id, keys[0])) if keys else 0


def _retrained(sites: dict[str, Path], root: Path) -> None:
    """Every site followed the federation: its new model is its champion, with the reason."""
    from mlflow.tracking import MlflowClient

    for name, folder in sites.items():
        store = f"sqlite:///{folder / 'mlflow.db'}"
        client = MlflowClient(store, registry_uri=store)  # not a registry a test before set
        deadline = time.monotonic() + 300
        while not client.search_registered_models():
            assert time.monotonic() < deadline, (root / f"join-{name}.log").read_text()
            time.sleep(1)
        (model,) = client.search_registered_models()
        while "champion" not in client.get_registered_model(model.name).aliases:
            assert time.monotonic() < deadline, (root / f"join-{name}.log").read_text()
            time.sleep(1)  # the version is registered a moment before its alias is set
        champion = client.get_model_version_by_alias(model.name, "champion")
        assert "no champion yet" in champion.tags["fedcare.promotion"]
        log = root / f"join-{name}.log"
        while "(challenger)" not in log.read_text():  # the join says so once Stage 2 ended
            assert time.monotonic() < deadline, log.read_text()
            time.sleep(1)
