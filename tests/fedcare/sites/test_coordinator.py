"""The coordinator's SuperLink and its register of sites, with the real Flower processes."""

from __future__ import annotations

import json
import stat

import pytest

from fedcare.flower.tls import make_node_keys
from fedcare.procs.ports import free_port, port_open
from fedcare.sites.coordinator import Coordinator, CoordinatorError
from fedcare.sites.site_folder import SiteCard


@pytest.fixture
def coordinator(tmp_path):
    coord = Coordinator(tmp_path / "state")
    yield coord
    coord.stop(grace_s=5)


def _card(tmp_path, name):
    keys = make_node_keys(tmp_path / "keys", name)
    return SiteCard(name, ("los",), "ab" * 32, keys.public_key.read_text().strip())


def test_start_register_unregister_and_stop(coordinator, tmp_path):
    port = free_port()
    record = coordinator.start("127.0.0.1", port)
    assert port_open(port) and coordinator.running()["pid"] == record["pid"]
    assert stat.S_IMODE(coordinator.root.stat().st_mode) == 0o700
    assert coordinator.ca_cert.read_text().startswith("-----BEGIN CERTIFICATE-----")
    assert stat.S_IMODE((coordinator.root / "tls" / "server.key").stat().st_mode) == 0o600
    with pytest.raises(CoordinatorError, match="already running"):
        coordinator.start("127.0.0.1", free_port())
    site = coordinator.register(_card(tmp_path, "north"))
    assert site.node_id > 0 and coordinator.sites() == {"north": site}
    with pytest.raises(CoordinatorError, match="registered already; to rotate its key"):
        coordinator.register(_card(tmp_path, "north"))
    assert coordinator.online_nodes() == set()  # registered, not connected
    doc = json.loads((coordinator.root / "sites.json").read_text())
    assert doc["north"]["objectives"] == ["los"] and "public_key" not in doc["north"]
    bad = SiteCard("forged", ("los",), "ab" * 32, "ecdsa-sha2-nistp256 AAAAnotakey")
    with pytest.raises(CoordinatorError, match="supernode register"):
        coordinator.register(bad)
    assert "forged" not in coordinator.sites()
    assert not (coordinator.root / "keys" / "forged.pub").exists()
    coordinator.unregister("north")
    assert coordinator.sites() == {}
    rotated = coordinator.register(_card(tmp_path, "north"))  # a new key for the same site
    assert rotated.node_id != site.node_id
    assert coordinator.stop() and coordinator.running() is None and not port_open(port)
    assert coordinator.stop() is False


def test_what_needs_a_running_coordinator_says_how_to_start_it(coordinator, tmp_path):
    with pytest.raises(CoordinatorError, match="fedcare federation start"):
        coordinator.register(_card(tmp_path, "north"))


def test_a_port_in_use_is_refused_before_anything_starts(coordinator, tmp_path):
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        with pytest.raises(CoordinatorError, match="in use"):
            coordinator.start("127.0.0.1", port)
    assert coordinator.running() is None


def test_a_relative_state_folder_works_from_another_working_folder(tmp_path, monkeypatch):
    # `fedcare federation start --state-dir STATE`, then `register --state-dir STATE`: the flwr
    # CLI's config written at start names the CA by an absolute path, so registering works
    # whatever folder the later command (and the flwr CLI it runs) starts in.
    monkeypatch.chdir(tmp_path)
    coord = Coordinator("STATE")
    assert coord.root == tmp_path / "STATE"
    try:
        coord.start("127.0.0.1", free_port())
        config = (coord.flwr_home / "config.toml").read_text()
        assert str(tmp_path / "STATE" / "ca.crt") in config
        (tmp_path / "elsewhere").mkdir()
        monkeypatch.chdir(tmp_path / "elsewhere")
        assert Coordinator(tmp_path / "STATE").register(_card(tmp_path, "north")).node_id > 0
    finally:
        coord.stop(grace_s=5)
