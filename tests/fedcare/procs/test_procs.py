"""Marker-based process sweeps and port helpers."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import uuid

from fedcare.procs.marked import alive, marked_processes, terminate_marked
from fedcare.procs.ports import free_port, port_open


def test_a_marked_process_is_found_and_stopped_even_if_it_ignores_sigterm():
    token = uuid.uuid4().hex
    ignore_term = (
        "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); "
        "print('ready', flush=True); time.sleep(60)"
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", ignore_term],
        env={**os.environ, "FEDCARE_TEST_MARK": token},
        stdout=subprocess.PIPE,
    )
    try:
        assert proc.stdout is not None and proc.stdout.readline() == b"ready\n"
        assert marked_processes("FEDCARE_TEST_MARK", token) == [proc.pid]
        assert marked_processes("FEDCARE_TEST_MARK", "other") == []
        assert terminate_marked("FEDCARE_TEST_MARK", token, grace_s=0.5) == [proc.pid]
        assert proc.wait(timeout=5) == -9  # SIGTERM ignored, so SIGKILL ended it
        assert not alive(proc.pid)
    finally:
        proc.kill()


def test_ports():
    port = free_port()
    assert not port_open(port)
    with socket.socket() as server:
        server.bind(("127.0.0.1", port))
        server.listen()
        assert port_open(port)


def test_a_free_port_is_drawn_below_the_ephemeral_range(monkeypatch, tmp_path):
    # An outgoing connection's local port cannot take it between the check and the bind.
    from fedcare.procs import ports

    (tmp_path / "range").write_text("40000\t60999\n")
    monkeypatch.setattr(ports, "_EPHEMERAL_RANGE", tmp_path / "range")
    drawn = {free_port() for _ in range(20)}
    assert all(40000 - ports._SPAN <= p < 40000 for p in drawn) and len(drawn) > 1
    monkeypatch.setattr(ports, "_EPHEMERAL_RANGE", tmp_path / "absent")
    assert not port_open(free_port())  # the kernel's pick, where the range cannot be read
