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
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
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
#: Where a following site's re-training results go, in its folder.
_RESULTS_DIR = "results"
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
    follow: Following | None = None,
) -> None:
    """Run the site's node until interrupted (KeyboardInterrupt) or ``stop_when()``.

    With ``follow`` the site re-trains itself: each new ``w*`` starts ``fedcare site
    personalise`` with the site's store and promotion margin (:class:`Following`).

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
        _join(site, tmp, superlink, root_certificates, flower, say, stop_when, follow)


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
    follow: Following | None = None,
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
            _serve(node, sup, tmp, flower, say, stop_when, site, follow)
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
    follow: Following | None = None,
) -> None:
    config = write_private(tmp / "node.toml", node.node_config())
    retrain = _Retraining(site, sup, say, follow) if follow is not None else None
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
                if retrain is not None:
                    retrain.start()
            if retrain is not None:
                retrain.check()
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


@dataclass(frozen=True)
class Following:
    """A site that re-trains itself when a new ``w*`` arrives (``site join --personalise``).

    Parameters
    ----------
    tracking_uri
        The site's own MLflow store: the new model is registered there as the challenger.
    margin
        It becomes the champion unless its validation score is worse than the champion's by
        more than this.
    """

    tracking_uri: str
    margin: float = 0.0


class _Retraining:
    """``fedcare site personalise`` as a child of the join, one at a time, reported when done."""

    def __init__(
        self, site: SiteFolder, sup: ProcessSupervisor, say: Callable[[str], None], how: Following
    ) -> None:
        self.site, self.sup, self.say, self.how = site, sup, say, how
        self.count = 0
        self.queued = False
        self.reported = 0  # the runs whose outcome was said

    def start(self) -> None:
        """Start Stage 2 on the new ``w*`` (after the running one, if one runs)."""
        if self.count > self.reported:  # one runs: the newest w* after it
            self.queued = True
            return
        self.count += 1
        out = self.site.root / _RESULTS_DIR / f"personalise-{self.count}-{int(time.time())}.json"
        out.parent.mkdir(exist_ok=True, mode=0o700)
        self.say(f"site {self.site.name}: Stage 2 on the new w* (results: {out})")
        self.sup.start(self._name, [
            sys.executable, "-m", "fedcare.cli", "site", "personalise", "--site",
            str(self.site.root), "--out", str(out), "--tracking-uri", self.how.tracking_uri,
            "--promotion-margin", f"{self.how.margin!r}", "--quiet",
        ])  # fmt: skip

    def check(self) -> None:
        """Report a finished Stage 2 (its registration lines, or why it failed)."""
        proc = self.sup.procs.get(self._name)
        if proc is None or proc.poll() is None or self.reported == self.count:
            return
        self.reported = self.count
        tail = self.sup.log_tail(self._name, 40).splitlines()
        if proc.returncode == 0:
            for line in tail:
                if "(challenger)" in line or line.startswith("registered "):
                    self.say(f"site {self.site.name}: {line}")
        else:
            self.say(f"site {self.site.name}: Stage 2 failed ({proc.returncode}): {tail[-1:]}")
        if self.queued:
            self.queued = False
            self.start()

    @property
    def _name(self) -> str:
        return f"personalise-{self.count}"


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
