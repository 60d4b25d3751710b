"""``fedcare site join``: a site's SuperNode and warm executor, until it is stopped.

The site's node (:class:`~fedcare.flower.site_node.SiteNode`) connects to the coordinator's
SuperLink over TLS verified with the coordinator's CA, authenticated with the site's own key,
and serves the site's data from its folder. It runs in the foreground until Ctrl-C (or
SIGTERM): then the node and its executor are stopped and the join's working folder
(``SITE_DIR/.join``: the node's loopback certificate, its node config and logs) is deleted; the
site folder keeps what it held, plus the broadcast ``w*`` once Stage 1 ends. One join runs per
site folder at a time (a lock).

Network breaks: Flower's SuperNode retries the SuperLink until it answers. Should the SuperNode
process itself end, it is started again (after :data:`_RESTART_DELAY_S`), unless it ended within
:data:`_FAILED_START_S` of its start, which means it cannot connect at all (e.g. this site's key
is not registered with the coordinator): then the command stops with the node's last log lines.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from fedcare.flower.flower_options import FlowerConfig
from fedcare.flower.site_node import SiteNode
from fedcare.flower.tls import make_tls
from fedcare.flower.workspace import FlowerRunError, flower_env, write_private
from fedcare.procs.children import ProcessSupervisor, signals_blocked
from fedcare.procs.ports import LOOPBACK, free_port
from fedcare.sites.site_folder import STAGE1_DOC, SiteFolder

#: A SuperNode that ends this soon after its start could not join at all.
_FAILED_START_S = 20.0
#: Wait before a SuperNode that ended is started again.
_RESTART_DELAY_S = 5.0
#: How often the node's processes and the site's ``w*`` are checked.
_WATCH_S = 0.5
#: The join's working folder in the site folder: the node's loopback certificate, its node
#: config and its logs (no patient data); deleted when the join ends, and at the next join's
#: start if a killed one left it.
JOIN_DIR = ".join"
#: Held while a join runs: one ``site join`` per site folder.
_JOIN_LOCK = ".join.lock"


class SiteJoinError(FlowerRunError):
    """The site's node cannot join the coordinator (the node's log says why)."""


def join_federation(
    site: SiteFolder,
    superlink: str,
    root_certificates: Path,
    *,
    flower: FlowerConfig | None = None,
    say: Callable[[str], None] = print,
    stop_when: Callable[[], bool] = lambda: False,
) -> None:
    """Run the site's node until interrupted (KeyboardInterrupt) or ``stop_when()``.

    Raises
    ------
    SiteJoinError
        If the node ends right after its start (it cannot connect or is refused).
    """
    flower = flower or FlowerConfig()
    if not root_certificates.is_file():
        raise SiteJoinError(f"--root-certificates {root_certificates}: no such file")
    with _join_lock(site):
        tmp = site.root / JOIN_DIR
        shutil.rmtree(tmp, ignore_errors=True)  # what a killed `site join` left behind
        tmp.mkdir(mode=0o700)
        _join(site, tmp, superlink, root_certificates, flower, say, stop_when)


@contextlib.contextmanager
def _join_lock(site: SiteFolder) -> Iterator[None]:
    """Hold the site's join lock: one ``site join`` per site folder at a time.

    Raises
    ------
    SiteJoinError
        If another ``fedcare site join`` holds it.
    """
    fd = os.open(site.root / _JOIN_LOCK, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise SiteJoinError(
                f"site {site.name}: another `fedcare site join` runs for {site.root}"
            ) from None
        yield
    finally:
        os.close(fd)  # releases the lock


def _join(
    site: SiteFolder,
    tmp: Path,
    superlink: str,
    root_certificates: Path,
    flower: FlowerConfig,
    say: Callable[[str], None],
    stop_when: Callable[[], bool],
) -> None:
    """The site's node with its working folder ``tmp``, until stopped; ``tmp`` removed after."""
    info = site.info()
    try:
        node = SiteNode(
            name=str(info["name"]),
            data_path=str(site.data_dir),
            superlink=superlink,
            root_certificates=root_certificates,
            private_key=site.private_key,
            runtime_tls=make_tls(tmp / "runtime-tls", ips=(LOOPBACK,)),
            node_port=free_port(),
            schema_digest=str(info["schema_digest"]),
            stage1_path=site.stage1_dir,
            site_path=site.root,
        )
        (tmp / "logs").mkdir(mode=0o700)
        sup = ProcessSupervisor(tmp / "logs", _env(tmp), flower.shutdown_grace_s)
        try:
            _serve(node, sup, tmp, flower, say, stop_when, site)
        finally:
            with signals_blocked():
                sup.stop_all(["supernode", "superexec"])
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _serve(
    node: SiteNode,
    sup: ProcessSupervisor,
    tmp: Path,
    flower: FlowerConfig,
    say: Callable[[str], None],
    stop_when: Callable[[], bool],
    site: SiteFolder,
) -> None:
    config = write_private(tmp / "node.toml", node.node_config())
    warm = flower.client_exec == "warm"
    received = _received_at(site)
    starts = 0
    while True:
        starts += 1
        name = "supernode" if starts == 1 else f"supernode-{starts}"
        proc = sup.start(name, node.supernode_argv(config, None, warm))
        if warm:
            sup.start(f"superexec-{starts}", node.superexec_argv(proc.pid))
        started = time.monotonic()
        say(f"site {node.name}: node started, connecting to {node.superlink}")
        while proc.poll() is None:
            if stop_when():
                return
            now_received = _received_at(site)
            if now_received != received:
                received = now_received
                say(f"site {node.name}: received the Stage 1 model (w*) in {site.stage1_dir}")
            time.sleep(_WATCH_S)
        sup.stop([f"superexec-{starts}"])
        tail = sup.log_tail(name, 20)
        if time.monotonic() - started < _FAILED_START_S:
            raise SiteJoinError(
                f"site {node.name}: the node ended {time.monotonic() - started:.0f} s after its "
                "start: it cannot join the coordinator (is this site's key registered, the "
                f"address right, the CA the coordinator's?). Its log:\n{tail}"
            )
        say(f"site {node.name}: the node ended; starting it again in {_RESTART_DELAY_S:g} s")
        time.sleep(_RESTART_DELAY_S)


def _received_at(site: SiteFolder) -> float | None:
    path = site.stage1_dir / STAGE1_DOC
    try:
        return path.stat().st_mtime
    except OSError:
        return None


def _env(tmp: Path) -> dict[str, str]:
    home = tmp / "flwr-home"
    home.mkdir(mode=0o700)
    return flower_env(home)
