"""One site's Flower processes: its SuperNode and, warm, the SuperExec beside it.

:class:`SiteNode` says how a site joins a SuperLink; ``fedcare site join`` and the loopback
deployment (:mod:`fedcare.flower.deployment`, one node per client of a cohort) start the same
commands:

* the SuperNode (Flower's ``flower-supernode``, or :mod:`fedcare.flower.supernode` with its
  polls capped), over TLS verified with the coordinator's CA, authenticated with the site's
  private key, its node config naming only the site's data, its name and schema digest, and
  where the broadcast ``w*`` is kept; its runtime API (towards its SuperExec) on loopback,
  with a certificate of the site's own (``runtime_tls``);
* with ``warm``, :mod:`fedcare.flower.warm_exec`, which forks each ClientApp task from a
  process that has the site's data loaded.

Flower's SuperNode reconnects by itself after a network break (no ``--max-retries``: it
retries until stopped).
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

import tomli_w

from fedcare.flower.audit import AUDIT_FILE, AUDIT_PATH_KEY
from fedcare.flower.client_app import SCHEMA_DIGEST_KEY, SITE_NAME_KEY
from fedcare.flower.node_paths import DATA_PATH_KEY, SITE_PATH_KEY, STAGE1_PATH_KEY
from fedcare.flower.tls import TlsFiles
from fedcare.procs.children import executable
from fedcare.procs.ports import LOOPBACK

#: Node-config key with the client's id (informational: the handshake's site name decides).
_CLIENT_ID_KEY = "client-id"


def supernode_program(poll_s: float | None) -> list[str]:
    """Flower's stock ``flower-supernode`` (``poll_s`` None) or the poll-capped wrapper."""
    if poll_s is None:
        return [executable("flower-supernode")]
    return [sys.executable, "-m", "fedcare.flower.supernode", "--poll-s", f"{poll_s:g}", "--"]


@dataclass(frozen=True)
class SiteNode:
    """How one site's node joins a SuperLink.

    Parameters
    ----------
    name
        The site's name (what its handshake says).
    data_path
        Where the node loads the site's data (a folder, or a memory file's path).
    superlink
        The SuperLink's ``HOST:PORT``.
    root_certificates
        The coordinator's CA certificate (None: plain HTTP, loopback only).
    private_key
        The site's node key (None: no node authentication).
    runtime_tls
        The certificate of the SuperNode's loopback runtime API (None: plain HTTP).
    node_port
        The runtime API's loopback port.
    schema_digest
        The schema the site was prepared for ("" for a cohort's clients).
    stage1_path
        Where the node keeps the broadcast ``w*`` (None: it keeps nothing).
    client_id
        Informational node-config entry.
    site_path
        The site's folder: its policy decides on each run and its audit log records every
        message the node sends (None: a cohort's client, no policy, no log).
    """

    name: str
    data_path: str
    superlink: str
    root_certificates: Path | None
    private_key: Path | None
    runtime_tls: TlsFiles | None
    node_port: int
    schema_digest: str = ""
    stage1_path: Path | None = None
    client_id: int | None = None
    site_path: Path | None = None

    def node_config(self) -> str:
        """The node config as TOML (paths need no shell quoting)."""
        doc: dict[str, str | int] = {
            SITE_NAME_KEY: self.name,
            SCHEMA_DIGEST_KEY: self.schema_digest,
            DATA_PATH_KEY: self.data_path,
        }
        if self.stage1_path is not None:
            doc[STAGE1_PATH_KEY] = str(self.stage1_path)
        if self.site_path is not None:
            doc[SITE_PATH_KEY] = str(self.site_path)
            doc[AUDIT_PATH_KEY] = str(self.site_path / AUDIT_FILE)
        if self.client_id is not None:
            doc[_CLIENT_ID_KEY] = self.client_id
        return tomli_w.dumps(doc)

    def link_security_args(self) -> list[str]:
        """TLS towards the SuperLink and the node's key."""
        if self.root_certificates is None:
            args = ["--insecure"]
        else:
            args = ["--root-certificates", str(self.root_certificates)]
        if self.private_key is not None:
            args += ["--auth-supernode-private-key", str(self.private_key)]
        return args

    def runtime_server_args(self) -> list[str]:
        """The runtime API's certificate (empty: plain HTTP on loopback)."""
        tls = self.runtime_tls
        if tls is None:
            return []
        return [
            "--ssl-ca-certfile", str(tls.ca_cert),
            "--ssl-certfile", str(tls.server_cert),
            "--ssl-keyfile", str(tls.server_key),
        ]  # fmt: skip

    def supernode_argv(self, node_config: Path, poll_s: float | None, warm: bool) -> list[str]:
        """The SuperNode's command line (``node_config``: :meth:`node_config` written out)."""
        argv = [
            *supernode_program(poll_s),
            *self.link_security_args(),
            "--superlink", self.superlink,
            "--host", LOOPBACK,
            "--port", str(self.node_port),
            *self.runtime_server_args(),
            "--node-config", str(node_config),
        ]  # fmt: skip
        if warm:
            argv += ["--isolation", "process"]
        return argv

    def superexec_argv(self, node_pid: int) -> list[str]:
        """The warm SuperExec's command line, beside the SuperNode of pid ``node_pid``."""
        tls = self.runtime_tls
        security = ["--insecure"] if tls is None else ["--root-certificates", str(tls.ca_cert)]
        return [
            sys.executable, "-m", "fedcare.flower.warm_exec", *security,
            "--runtime-api-address", f"{LOOPBACK}:{self.node_port}",
            "--parent-pid", str(node_pid),
            "--data-path", self.data_path,
        ]  # fmt: skip
