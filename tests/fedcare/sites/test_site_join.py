"""``site join``'s guards: one join per site folder, and nothing left from a killed one."""

from __future__ import annotations

import pytest

from fedcare.flower.tls import make_tls
from fedcare.procs.ports import free_port
from fedcare.sites.site_folder import create_site_folder
from fedcare.sites.site_join import JOIN_DIR, SiteJoinError, _join_lock, join_federation
from fedcare_core.config import ExperimentConfig
from fedcare_core.sites.schema import schema_for


@pytest.fixture
def site(small_federation, tmp_path):
    _, fed = small_federation
    schema = schema_for(ExperimentConfig())
    return create_site_folder(
        tmp_path / "north", fed.clients[0], schema, name="north", seed=0, source_sha256="cd" * 32
    )


def test_a_second_join_of_the_same_site_is_refused(site, tmp_path):
    ca = make_tls(tmp_path / "ca").ca_cert
    with _join_lock(site), pytest.raises(SiteJoinError, match="another `fedcare site join`"):
        join_federation(site, f"127.0.0.1:{free_port()}", ca, say=lambda line: None)


def test_what_a_killed_join_left_is_removed_and_its_own_folder_too(site, tmp_path):
    stale = site.root / JOIN_DIR / "logs"
    stale.mkdir(parents=True)
    (stale / "supernode.log").write_text("from a join that was SIGKILLed\n")
    ca = make_tls(tmp_path / "ca").ca_cert
    said: list[str] = []
    checks = iter([False, True])  # one look at the running node, then stop
    join_federation(
        site, f"127.0.0.1:{free_port()}", ca, say=said.append, stop_when=lambda: next(checks)
    )
    assert not (site.root / JOIN_DIR).exists()
    assert said and "node started" in said[0]
    with pytest.raises(SiteJoinError, match="no such file"):
        join_federation(site, "127.0.0.1:1", tmp_path / "absent.crt")
