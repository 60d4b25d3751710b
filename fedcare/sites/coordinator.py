"""The coordinator of a federation of sites: a long-lived SuperLink and the sites it admits.

State folder (``0700``; private keys ``0600``)::

    STATE/ca.crt            the coordinator's CA certificate: what every site verifies it with
    STATE/tls/              the SuperLink's certificate and key (made, or copied from given ones)
    STATE/flwr-home/        the ``flwr`` CLI's connection to this SuperLink (Control API)
    STATE/superlink.db      the SuperLink's state (registered node keys survive a restart)
    STATE/superlink.json    the running SuperLink: pid, address, start time
    STATE/sites.json        the registered sites: name, objectives, schema digest, node id
    STATE/keys/<site>.pub   each registered site's public key
    STATE/logs/             the SuperLink's log
    STATE/runs/<run>/       each Stage 1 run: its plan, app, result and logs

:meth:`Coordinator.start` starts ``flower-superlink`` detached (its own session, outliving the
command) with TLS and SuperNode authentication: only nodes whose public key was registered
(:meth:`Coordinator.register`, Flower's ``flwr supernode register``) can connect. The
coordinator never holds patient data: the sites send model updates and counts only.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import time
import uuid
from pathlib import Path
from typing import Any

from fedcare.flower.flower_options import FlowerConfig
from fedcare.flower.tls import (
    FOLDER_MODE,
    PRIVATE_MODE,
    PUBLIC_MODE,
    TlsFiles,
    make_tls,
    private_folder,
    write_file,
)
from fedcare.flower.tls_checks import check_server_files
from fedcare.flower.workspace import (
    FLWR_CONNECTION,
    FlowerRunError,
    flower_env,
    write_flwr_home,
    write_private,
)
from fedcare.procs.children import CHILD_UMASK, TOKEN_ENV, executable
from fedcare.procs.marked import alive, terminate_marked
from fedcare.procs.ports import port_open
from fedcare.sites.coordinator_state import (
    PROCESS_FILE,
    SITES_FILE,
    RegisteredSite,
    read_process_record,
    read_sites,
)
from fedcare.sites.site_folder import SiteCard
from fedcare_core.errors import ConfigError
from fedcare_core.files.atomic import write_atomic
from fedcare_core.files.private import keep_out_of_git
from fedcare_core.files.safe_names import check_name, name_path

#: How long a ``flwr`` CLI call may take (an interpreter start and one request).
CLI_TIMEOUT_S = 120.0
#: Validity of a certificate authority the coordinator makes.
_DEFAULT_VALIDITY_DAYS = 365
#: The longest validity accepted (a hundred years; a date past 9999 cannot be written at all).
MAX_VALIDITY_DAYS = 36_500


class CoordinatorError(FlowerRunError):
    """The coordinator cannot do what was asked (the message says why and what to do)."""


class Coordinator:
    """A coordinator's state folder and the SuperLink it runs.

    Parameters
    ----------
    root
        The state folder (created owner-only on :meth:`start`).
    """

    def __init__(self, root: str | Path) -> None:
        # Absolute: the paths below are written into the flwr CLI's config and the SuperLink's
        # arguments, which other processes read from other working folders.
        self.root = Path(root).expanduser().absolute()

    # ---- paths ----------------------------------------------------------------------------

    @property
    def ca_cert(self) -> Path:
        """The CA certificate to give the sites."""
        return self.root / "ca.crt"

    @property
    def flwr_home(self) -> Path:
        """The ``flwr`` CLI's home (its ``config.toml`` names the SuperLink)."""
        return self.root / "flwr-home"

    @property
    def logs_dir(self) -> Path:
        """The SuperLink's log folder."""
        return self.root / "logs"

    @property
    def runs_dir(self) -> Path:
        """One folder per Stage 1 run."""
        return self.root / "runs"

    @property
    def process_file(self) -> Path:
        """The running SuperLink's record."""
        return self.root / PROCESS_FILE

    # ---- the SuperLink --------------------------------------------------------------------

    def running(self) -> dict[str, Any] | None:
        """The running SuperLink's record (pid, host, port), or None if it is not running."""
        record = read_process_record(self.process_file)  # checked: stop signals its pid
        return record if record is not None and _is_our_process(record) else None

    def start(
        self,
        host: str,
        port: int,
        *,
        given: TlsFiles | None = None,
        validity_days: int = _DEFAULT_VALIDITY_DAYS,
        flower: FlowerConfig | None = None,
    ) -> dict[str, Any]:
        """Start the SuperLink on ``host:port`` with TLS and node authentication; wait for it.

        Parameters
        ----------
        host, port
            Where the sites reach it (loopback unless the user names another address).
        given
            Certificates to use instead of making a CA (copied into the state folder).
        validity_days
            Validity of a CA made here.
        flower
            Start-up timeout and teardown grace.

        Raises
        ------
        CoordinatorError
            If a SuperLink of this state folder is running, the port is taken, or the
            SuperLink did not listen in time (its log's tail is in the message).
        """
        flower = flower or FlowerConfig()
        if self.running() is not None:
            raise CoordinatorError(
                f"the coordinator of {self.root} is already running; stop it first "
                f"(fedcare federation stop --state-dir {self.root})"
            )
        if port_open(port, host):
            raise CoordinatorError(f"{host}:{port} is in use; choose another --port")
        self._check_tls(given, validity_days)  # before anything is written
        private_folder(self.root)
        keep_out_of_git(self.root, "the coordinator's state (its TLS private key)", folder=True)
        for sub in ("logs", "runs", "keys"):
            private_folder(self.root / sub)
        tls = self._tls(host, given, validity_days)
        write_flwr_home(self.flwr_home, f"{host}:{port}", {"root-certificates": str(self.ca_cert)})
        token = uuid.uuid4().hex
        argv = [
            executable("flower-superlink"),
            "--ssl-ca-certfile", str(tls.ca_cert),
            "--ssl-certfile", str(tls.server_cert),
            "--ssl-keyfile", str(tls.server_key),
            "--enable-supernode-auth",
            "--database", str(self.root / "superlink.db"),
            "--host", host, "--port", str(port),
            "--disable-runtime-dependency-installation",
        ]  # fmt: skip
        log_path = self.logs_dir / "superlink.log"
        fd = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, PRIVATE_MODE)
        with os.fdopen(fd, "ab") as log:
            proc = subprocess.Popen(
                argv,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                env={**self.env(), TOKEN_ENV: token},
                start_new_session=True,  # outlives this command; one group to stop
                umask=CHILD_UMASK,
            )
        record = {
            "pid": proc.pid,
            "host": host,
            "port": port,
            "token": token,
            "started": _start_time(proc.pid),
        }
        write_private(self.process_file, json.dumps(record) + "\n")
        deadline = time.monotonic() + flower.process_start_timeout_s
        while not port_open(port, host):
            if proc.poll() is not None or time.monotonic() > deadline:
                self.stop(flower.shutdown_grace_s)
                tail = "\n".join(log_path.read_text(errors="replace").splitlines()[-15:])
                raise CoordinatorError(f"flower-superlink did not start on {host}:{port}:\n{tail}")
            time.sleep(0.2)
        return record

    def stop(self, grace_s: float = 10.0) -> bool:
        """Stop the SuperLink and every process it started; False if none was running."""
        record = self.running()
        self.process_file.unlink(missing_ok=True)
        if record is None:
            return False
        pid = int(record["pid"])
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pid, signal.SIGTERM)
        deadline = time.monotonic() + grace_s
        while time.monotonic() < deadline and alive(pid):
            time.sleep(0.1)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pid, signal.SIGKILL)
        terminate_marked(TOKEN_ENV, str(record["token"]), grace_s)
        return True

    def env(self) -> dict[str, str]:
        """The environment of the coordinator's Flower processes and ``flwr`` calls."""
        return flower_env(self.flwr_home)

    def _kept_tls(self) -> TlsFiles:
        folder = self.root / "tls"
        return TlsFiles(folder / "ca.pem", folder / "server.pem", folder / "server.key")

    def _check_tls(self, given: TlsFiles | None, validity_days: int) -> None:
        """Refuse certificates Flower could not use (given, or kept from the last start).

        Raises
        ------
        ConfigError
            Naming the option (or the kept file) and what is wrong with it.
        """
        if not 1 <= validity_days <= MAX_VALIDITY_DAYS:
            raise ConfigError(
                f"--validity-days {validity_days}: give 1 to {MAX_VALIDITY_DAYS:,} days"
            )
        if given is not None:
            check_server_files(given, ("--ca-cert", "--server-cert", "--server-key"))
        elif self._kept_tls().server_key.exists():
            kept = self._kept_tls()
            what = f"the coordinator's kept certificate (in {kept.ca_cert.parent})"
            check_server_files(kept, (what, what, what))

    def _tls(self, host: str, given: TlsFiles | None, validity_days: int) -> TlsFiles:
        folder = private_folder(self.root / "tls")
        if given is not None:
            files = TlsFiles(folder / "ca.pem", folder / "server.pem", folder / "server.key")
            write_file(files.ca_cert, given.ca_cert.read_bytes(), PUBLIC_MODE)
            write_file(files.server_cert, given.server_cert.read_bytes(), PUBLIC_MODE)
            write_file(files.server_key, given.server_key.read_bytes(), PRIVATE_MODE)
        elif (folder / "server.key").exists():
            files = TlsFiles(folder / "ca.pem", folder / "server.pem", folder / "server.key")
        else:
            ips = tuple(dict.fromkeys(("127.0.0.1", host)))
            files = make_tls(folder, ips=ips, validity_days=validity_days)
        write_file(self.ca_cert, files.ca_cert.read_bytes(), PUBLIC_MODE)
        return files

    # ---- sites ----------------------------------------------------------------------------

    def sites(self) -> dict[str, RegisteredSite]:
        """The registered sites by name (``sites.json``, every field checked)."""
        return read_sites(self.root / SITES_FILE)

    def _write_sites(self, sites: dict[str, RegisteredSite]) -> None:
        doc = {
            s.name: {
                "objectives": list(s.objectives),
                "schema_digest": s.schema_digest,
                "node_id": s.node_id,
            }
            for s in sorted(sites.values(), key=lambda s: s.name)
        }
        write_atomic(self.root / SITES_FILE, (json.dumps(doc, indent=1) + "\n").encode())

    def register(self, card: SiteCard) -> RegisteredSite:
        """Register a site's public key with the SuperLink; only registered sites can join.

        Raises
        ------
        CoordinatorError
            If the coordinator is not running, a site of that name is registered (unregister
            it first to rotate its key), or Flower refused the key.
        """
        self.require_running()
        sites = self.sites()
        if card.name in sites:
            raise CoordinatorError(
                f"site {card.name!r} is registered already; to rotate its key, run "
                f"`fedcare federation unregister --state-dir {self.root} --name {card.name}` first"
            )
        key_path = name_path(self.root / "keys", card.name, ".pub", "site card", "site name")
        write_file(key_path, (card.public_key + "\n").encode(), PUBLIC_MODE)
        try:
            out = self.flwr(
                "supernode", "register", str(key_path), FLWR_CONNECTION, "--format", "json",
                "--name", card.name,
            )  # fmt: skip
        except CoordinatorError:
            key_path.unlink(missing_ok=True)  # refused: nothing of the site is kept
            raise
        try:
            node_id = int(_last_json(out)["node-id"])
        except (KeyError, TypeError, ValueError):
            key_path.unlink(missing_ok=True)
            raise CoordinatorError(f"Flower did not register site {card.name!r}:\n{out}") from None
        site = RegisteredSite(card.name, card.objectives, card.schema_digest, node_id)
        sites[card.name] = site
        self._write_sites(sites)
        return site

    def unregister(self, name: str) -> None:
        """Unregister a site: its key no longer admits it (register a new key to rotate)."""
        check_name(name, "--name", "site name")
        self.require_running()
        sites = self.sites()
        if name not in sites:
            raise CoordinatorError(f"no site {name!r} is registered in {self.root}")
        self.flwr("supernode", "unregister", str(sites[name].node_id), FLWR_CONNECTION)
        del sites[name]
        self._write_sites(sites)
        (self.root / "keys" / f"{name}.pub").unlink(missing_ok=True)

    def online_nodes(self) -> set[int]:
        """Node ids the SuperLink reports online."""
        out = self.flwr("supernode", "list", FLWR_CONNECTION, "--format", "json")
        nodes = _last_json(out).get("nodes", [])
        return {int(n["node-id"]) for n in nodes if n.get("status") == "online"}

    def flwr(self, *args: str) -> str:
        """Run the ``flwr`` CLI against this SuperLink; its output, or a CoordinatorError."""
        try:
            done = subprocess.run(
                [executable("flwr"), *args],
                capture_output=True,
                text=True,
                env=self.env(),
                timeout=CLI_TIMEOUT_S,
                check=False,
            )
        except subprocess.TimeoutExpired:
            what = " ".join(args[:2])
            raise CoordinatorError(f"`flwr {what}` took over {CLI_TIMEOUT_S:g} s") from None
        if done.returncode != 0:
            raise CoordinatorError(
                f"`flwr {' '.join(args[:2])}` failed:\n{(done.stdout + done.stderr).strip()}"
            )
        return done.stdout

    def require_running(self) -> dict[str, Any]:
        """The running SuperLink's record, or a CoordinatorError saying how to start it."""
        record = self.running()
        if record is None:
            raise CoordinatorError(
                f"the coordinator of {self.root} is not running; start it with "
                f"`fedcare federation start --state-dir {self.root} --port PORT`"
            )
        return record

    def new_run_dir(self, name: str) -> Path:
        """A new, owner-only folder for run ``name``."""
        path = name_path(self.runs_dir, name, "", "--name", "run name")
        if path.exists():
            raise ConfigError(f"run {name!r} exists in {self.runs_dir}; choose another name")
        path.mkdir(parents=True, mode=FOLDER_MODE)
        return path


def _last_json(text: str) -> dict[str, Any]:
    """The last JSON object printed in ``text`` (``flwr --format json`` output)."""
    start = text.rfind("\n{")
    start = 0 if start < 0 else start + 1
    out: dict[str, Any] = json.loads(text[start:]) if text.strip() else {}
    return out


def _start_time(pid: int) -> str:
    """The process's start time in clock ticks (``/proc/<pid>/stat``; '' elsewhere)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return ""
    return stat.rsplit(")", 1)[1].split()[19]


def _is_our_process(record: dict[str, Any]) -> bool:
    """Whether the recorded pid is still the SuperLink that was started (not a reused pid)."""
    pid = int(record.get("pid", 0))
    if pid <= 0 or not alive(pid):
        return False
    started = str(record.get("started", ""))
    return not started or _start_time(pid) == started
