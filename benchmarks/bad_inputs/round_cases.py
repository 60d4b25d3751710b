"""Rounds over live sites (issue 52, point 2): a refused or absent site stops the run.

Each case starts a coordinator (``{in}/ST``), registers two prepared sites (``north``,
``south``), starts a ``fedcare site join`` for each (its own session, ``{in}/join-<site>.log``)
and waits until both are online, then writes ``south``'s policy (a site's policy is read at
every decision); then ``fedcare federation run --min-sites 2`` must end with
status 2 and one line naming the site and why, before its timeouts, and write no Stage 1
document, when ``south``'s policy file cannot be read or awaits its operator's approval; and
nothing of the site's folder (its ``policy.yaml``, its audit log) may be named. A valid case
(both sites willing) must write the document. The teardown stops the joins, then the
coordinator. What the live processes keep writing (the SuperLink's files, the run's folder,
the sites' audit logs, approvals and join folders) is ``volatile``.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from case_model import Builder, Case, Sources
from ops_cases import run_fedcare
from site_fixtures import SUPERLINK_VOLATILE, copy, start_coordinator, steps, stop_coordinator

SITES = ("north", "south")
#: Files the live coordinator and sites keep writing during the command.
VOLATILE = (
    *SUPERLINK_VOLATILE, "in/ST/runs/*", "in/*/audit.jsonl", "in/*/.join*", "in/*/approvals*",
    "in/*/stage1/*", "in/join-*.log", "in/joins.json",
)  # fmt: skip
OUT = "{work}/out/stage1.json"
#: Seconds the sites have to come online after their joins start.
_ONLINE_S = 180.0


def _join_sites(inp: Path, _src: Sources) -> None:
    """Register both sites, start their joins (pids in ``joins.json``), wait until online."""
    record = json.loads((inp / "ST" / "superlink.json").read_text())
    python = os.environ.get("BADINPUTS_PYTHON", sys.executable)
    pids = []
    for name in SITES:
        run_fedcare(["federation", "register", "--state-dir", str(inp / "ST"), "--site",
                     str(inp / name / "site-card.json")], inp)  # fmt: skip
        with open(inp / f"join-{name}.log", "wb") as log:
            proc = subprocess.Popen(
                [python, "-m", "fedcare.cli", "site", "join", "--site", str(inp / name),
                 "--superlink", f"127.0.0.1:{record['port']}", "--root-certificates",
                 str(inp / "ST" / "ca.crt")],
                cwd=inp, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
            )  # fmt: skip
        pids.append(proc.pid)
    (inp / "joins.json").write_text(json.dumps(pids))
    deadline = time.monotonic() + _ONLINE_S
    while time.monotonic() < deadline:
        status = subprocess.run(
            [python, "-m", "fedcare.cli", "federation", "status", "--state-dir", str(inp / "ST")],
            capture_output=True, text=True, timeout=60, cwd=inp,
        ).stdout  # fmt: skip
        if all(f"{name}: online" in status for name in SITES):
            return
        time.sleep(2.0)
    raise RuntimeError(f"the sites were not online within {_ONLINE_S:g} s")


def _stop_all(inp: Path) -> None:
    """Ctrl-C each join (its own teardown), then stop the coordinator."""
    path = inp / "joins.json"
    pids = json.loads(path.read_text()) if path.exists() else []
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pid, signal.SIGINT)
    deadline = time.monotonic() + 60
    for pid in pids:
        while time.monotonic() < deadline and _alive(pid):
            time.sleep(0.2)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pid, signal.SIGKILL)
    stop_coordinator(inp)


def _alive(pid: int) -> bool:
    with contextlib.suppress(ChildProcessError):
        if os.waitpid(pid, os.WNOHANG) != (0, 0):
            return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def _policy(text: str) -> Builder:
    def build(inp: Path, _src: Sources) -> None:
        (inp / "south" / "policy.yaml").write_text(text)

    return build


def _round(cid: str, expect: str, policy: Builder, names: tuple[str, ...], note: str) -> Case:
    argv = ("federation", "run", "--state-dir", "{in}/ST", "--schema", "{in}/fed.json",
            "--min-sites", "2", "--rounds", "2", "--seed", "0", "--out", OUT, "--quiet",
            "--name", "r1", "--startup-timeout", "30", "--round-timeout", "60")  # fmt: skip
    # the policy written once the sites are joined (a broken one stops `site join` at its start)
    build = steps(copy("sites/north", "sites/south", "fed.json"), start_coordinator, _join_sites,
                  policy)  # fmt: skip
    return Case(
        cid, "federation-rounds" + ("-valid" if expect == "accepted" else ""), expect, argv,
        build, names=names, secrets=("policy.yaml", "audit.jsonl"), teardown=_stop_all,
        volatile=VOLATILE, timeout=300, note=note,
        outputs=(OUT,) if expect == "accepted" else (),
    )  # fmt: skip


def round_cases(_src: Sources) -> list[Case]:
    """``federation run --min-sites 2`` over two live sites, one refusing or awaiting approval."""
    return [
        _round("rnd-policy-unreadable", "refused", _policy("max_epsilon: [3\n"),
               ("south", "policy_unreadable"),
               "the site's policy file is not YAML: refused by rule, its path kept at the site"),
        _round("rnd-policy-not-a-mapping", "refused", _policy("- require_secagg\n"),
               ("south", "policy_unreadable"), "a policy file that is a list, not rules"),
        _round("rnd-awaits-approval", "refused", _policy("require_approval: true\n"),
               ("south", "approval", "1 of the 2"),
               "the start-up ends after --startup-timeout 30 with 1 of the 2 sites needed"),
        _round("rnd-policy-refuses", "refused", _policy("require_secagg: true\n"),
               ("south", "require_secagg"), "a valid rule the run breaks"),
        _round("rnd-ok-two-sites", "accepted", _policy("max_rounds: 5\n"), (),
               "both sites take part: the document is written"),
    ]  # fmt: skip
