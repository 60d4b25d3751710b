"""The run folder's modes and the clients' data handover (patient data at rest).

Nothing of a client's rows may lie in a file while a flower-deployment runs: each node reads
its data from an anonymous memory file held by the runner's process, which vanishes with it.
"""

from __future__ import annotations

import os
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from fedcare.flower.flower_options import FlowerConfig
from fedcare.flower.workspace import prepare_workspace, remove_workspace
from fedcare_core.data.client_store import ARRAYS_FILE, META_FILE, load_client_data
from tests.conftest import REPO_ROOT
from tests.fedcare_core.data.test_client_store import _assert_same

#: Names of files that hold a client's rows (and the temporary file of their atomic write).
CLIENT_FILES = {ARRAYS_FILE, META_FILE, f".{ARRAYS_FILE}.tmp", f".{META_FILE}.tmp"}


def client_files(parent: Path) -> list[Path]:
    """Every client data file anywhere under ``parent``."""
    return [p for p in parent.rglob("*") if p.name in CLIENT_FILES]


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def _prepare(fed, cfg, tmp_path, **kwargs):
    flower = FlowerConfig(workdir_parent=str(tmp_path))
    return prepare_workspace(fed, cfg.model, cfg.stage1, cfg.seed, flower, **kwargs)


def test_in_memory_handover_writes_no_client_file_and_frees_it(small_federation, tmp_path):
    cfg, fed = small_federation
    ws = _prepare(fed, cfg, tmp_path, in_memory=True)
    try:
        assert client_files(tmp_path) == []
        assert not ws.clients_dir.exists() and not ws.holds_client_files
        assert _mode(ws.root) == 0o700
        assert _mode(ws.plan_path) == 0o600
        for client in fed.clients:
            path = ws.data_path(client.client_id)
            assert path.startswith(f"/proc/{os.getpid()}/fd/")
            assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
            _assert_same(client, load_client_data(path))
        # Another process (a node) reads it through the path, as the SuperExec does.
        code = "import sys; from pathlib import Path; print(len(Path(sys.argv[1]).read_bytes()))"
        out = subprocess.run(
            [sys.executable, "-c", code, ws.data_path(0)], capture_output=True, text=True
        )
        assert out.returncode == 0 and int(out.stdout) > 0, out.stderr
    finally:
        remove_workspace(ws, keep=False)
    for fd, path in zip(ws.memory_fds, ws.data_paths, strict=True):
        with pytest.raises(OSError):
            os.fstat(fd)
        assert not os.path.exists(path)
    assert list(tmp_path.iterdir()) == []


def test_file_handover_is_owner_only_and_a_kept_folder_says_so(small_federation, tmp_path, capsys):
    cfg, fed = small_federation
    old = os.umask(0o002)  # modes come from the creation calls, not the caller's umask
    try:
        ws = _prepare(fed, cfg, tmp_path)
    finally:
        os.umask(old)
    folders = [p for p in ws.root.rglob("*") if p.is_dir()] + [ws.root]
    files = [p for p in ws.root.rglob("*") if p.is_file()]
    assert len(client_files(ws.root)) == 2 * len(fed.clients)
    assert {_mode(p) for p in folders} == {0o700}
    assert {_mode(p) for p in files} == {0o600}
    assert ws.data_path(1) == str(ws.client_dir(1))
    remove_workspace(ws, keep=True)
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and str(ws.clients_dir) in err[0]
    assert "client data" in err[0] and "owner-only" in err[0]
    remove_workspace(ws, keep=False)
    assert list(tmp_path.iterdir()) == []


_HOLDER = """
import sys, time
from fedcare_core.run.pipeline import prepare_federation
from fedcare.flower.flower_options import FlowerConfig
from fedcare.flower.workspace import prepare_workspace
from tests.fedcare_core.synthetic import PARTITION, make_cohort
from tests.fedcare.flower.conftest import small_config
cfg = small_config()
fed = prepare_federation(make_cohort(300), PARTITION, cfg, None)
flower = FlowerConfig(workdir_parent=sys.argv[1])
ws = prepare_workspace(fed, cfg.model, cfg.stage1, cfg.seed, flower, in_memory=True)
print(" ".join(ws.data_paths), flush=True)
time.sleep(600)
"""


def test_a_sigkilled_holder_leaves_no_client_data(tmp_path):
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(REPO_ROOT), os.environ.get("PYTHONPATH", "")]),
    }
    proc = subprocess.Popen(
        [sys.executable, "-c", _HOLDER, str(tmp_path)], stdout=subprocess.PIPE, text=True, env=env
    )
    try:
        assert proc.stdout is not None
        paths = proc.stdout.readline().split()
        assert len(paths) == 3 and all(os.path.exists(p) for p in paths)
        assert client_files(tmp_path) == []
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    time.sleep(0.1)
    assert not any(os.path.exists(p) for p in paths)
    assert client_files(tmp_path) == []


def test_a_kept_deployment_folder_is_owner_only_and_says_so(small_cohort, tmp_path, capsys):
    from fedcare.flower.deployment import DeploymentStage1Runner
    from fedcare_core.run.pipeline import prepare_federation
    from tests.fedcare.flower.conftest import small_config
    from tests.fedcare_core.synthetic import PARTITION

    cfg = small_config(rounds=1)
    fed = prepare_federation(small_cohort, PARTITION, cfg, None)
    flower = FlowerConfig(workdir_parent=str(tmp_path), shutdown_grace_s=3.0, keep_workdir=True)
    runner = DeploymentStage1Runner(
        flower, on_started=lambda r: os.kill(os.getpid(), signal.SIGINT)
    )
    assert not runner.in_memory  # the user asked to keep the files
    with pytest.raises(KeyboardInterrupt):
        runner(fed, cfg.model, cfg.stage1, cfg.seed, None)
    root = runner.workspace.root
    assert len(client_files(root)) == 2 * len(fed.clients)
    folders = [p for p in root.rglob("*") if p.is_dir()] + [root]
    assert {p: _mode(p) for p in folders if _mode(p) != 0o700} == {}
    # Every file is owner-only, the logs included; only the TLS certificates (public) are not.
    public = {root / "credentials" / "ca.pem", root / "credentials" / "server.pem"}
    files = [p for p in root.rglob("*") if p.is_file() and p not in public]
    assert {p: oct(_mode(p)) for p in files if _mode(p) != 0o600} == {}
    assert any(p.suffix == ".log" for p in files)
    err = capsys.readouterr().err
    assert f"kept {root}: it holds patient-level client data" in err
