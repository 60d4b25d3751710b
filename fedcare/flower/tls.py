"""Per-run credentials of ``flower-deployment``: a TLS CA, the SuperLink's certificate, node keys.

Each run makes its own short-lived certificate authority with the ``cryptography`` package,
signs one server certificate for the loopback address (and the SuperLink's bind address, when
the user named another) with it, and (with SuperNode
authentication) one EC key pair per SuperNode in the OpenSSH format Flower 1.42 reads
(``flower-supernode --auth-supernode-private-key``, ``flwr supernode register``). Everything is
written into a folder of the run's working folder: the folder is ``0700``, private keys
``0600``, certificates and public keys ``0644``. Nothing is reused across runs, so nothing
needs revoking: the files are deleted with the working folder.
"""

from __future__ import annotations

import datetime
import ipaddress
import os
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from fedcare.procs.ports import LOOPBACK

#: Validity of the per-run CA and certificates. A run that outlives it fails at the next
#: handshake; a day is far above any Stage 1 run here, and short enough not to matter if leaked.
_VALIDITY = datetime.timedelta(days=1)
#: Backdating of ``not_valid_before``, for clocks of processes that differ slightly.
_CLOCK_SKEW = datetime.timedelta(minutes=5)
#: Curve of every key: P-256 for TLS; Flower's node authentication accepts NIST curves only.
_CURVE = ec.SECP256R1()
PRIVATE_MODE = 0o600
PUBLIC_MODE = 0o644
FOLDER_MODE = 0o700


@dataclass(frozen=True)
class TlsFiles:
    """Paths of a run's TLS material (PEM files).

    Attributes
    ----------
    ca_cert
        The run's CA certificate: what every client verifies the server with.
    server_cert
        The server certificate (SAN ``IP:127.0.0.1``, ``DNS:localhost``, and the SuperLink's
        bind address if another), signed by the CA.
    server_key
        The server certificate's private key (mode ``0600``).
    """

    ca_cert: Path
    server_cert: Path
    server_key: Path


@dataclass(frozen=True)
class _NodeKeys:
    """One SuperNode's authentication key pair (OpenSSH format, EC on a NIST curve)."""

    private_key: Path
    public_key: Path


def private_folder(path: Path) -> Path:
    """Create ``path`` (and parents) and make it owner-only (``0700``)."""
    path.mkdir(parents=True, exist_ok=True)
    os.chmod(path, FOLDER_MODE)
    return path


def write_file(path: Path, data: bytes, mode: int) -> Path:
    """Write ``data`` to a new file created with ``mode`` (no window with wider permissions)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    os.chmod(path, mode)  # the umask may have narrowed the public files' mode
    return path


def _name(common_name: str) -> x509.Name:
    return x509.Name(
        [
            x509.NameAttribute(NameOID.ORGANIZATION_NAME, "FedCARE run"),
            x509.NameAttribute(NameOID.COMMON_NAME, common_name),
        ]
    )


def _key_pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )


def make_tls(
    folder: Path,
    ips: tuple[str, ...] = (LOOPBACK,),
    dns_names: tuple[str, ...] = ("localhost",),
    validity_days: int | None = None,
) -> TlsFiles:
    """A fresh CA and a server certificate for ``ips``/``dns_names``, written into ``folder``.

    Parameters
    ----------
    folder
        Created if needed and made owner-only; receives ``ca.pem``, ``server.pem`` and
        ``server.key``.
    ips, dns_names
        The server certificate's subject alternative names (what clients connect to).
    validity_days
        How long the CA and certificate are valid (None: :data:`_VALIDITY`, a run's day).

    Returns
    -------
    TlsFiles
        The paths written.
    """
    private_folder(folder)
    now = datetime.datetime.now(datetime.UTC)
    validity = _VALIDITY if validity_days is None else datetime.timedelta(days=validity_days)
    start, end = now - _CLOCK_SKEW, now + validity
    ca_key = ec.generate_private_key(_CURVE)
    ca_name = _name("FedCARE per-run CA")
    ca_cert = (
        x509.CertificateBuilder()
        .subject_name(ca_name)
        .issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(start)
        .not_valid_after(end)
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=False,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=True,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), False)
        .sign(ca_key, hashes.SHA256())
    )
    server_key = ec.generate_private_key(_CURVE)
    sans: list[x509.GeneralName] = [x509.IPAddress(ipaddress.ip_address(ip)) for ip in ips]
    sans += [x509.DNSName(name) for name in dns_names]
    server_cert = (
        x509.CertificateBuilder()
        .subject_name(_name(ips[0] if ips else dns_names[0]))
        .issuer_name(ca_name)
        .public_key(server_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(start)
        .not_valid_after(end)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.SubjectAlternativeName(sans), critical=False)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), False
        )
        .sign(ca_key, hashes.SHA256())
    )
    # The CA's key is never written: nothing else is signed with it after this function.
    pem = serialization.Encoding.PEM
    return TlsFiles(
        ca_cert=write_file(folder / "ca.pem", ca_cert.public_bytes(pem), PUBLIC_MODE),
        server_cert=write_file(folder / "server.pem", server_cert.public_bytes(pem), PUBLIC_MODE),
        server_key=write_file(folder / "server.key", _key_pem(server_key), PRIVATE_MODE),
    )


def make_node_keys(folder: Path, name: str) -> _NodeKeys:
    """A SuperNode key pair ``<name>.key``/``<name>.pub`` in ``folder`` (OpenSSH, EC P-256).

    Flower 1.42 reads the private key with ``load_ssh_private_key`` (it must be an EC key) and
    registers the public key with ``load_ssh_public_key`` (a NIST curve).
    """
    private_folder(folder)
    key = ec.generate_private_key(_CURVE)
    private = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.OpenSSH,
        serialization.NoEncryption(),
    )
    public = key.public_key().public_bytes(
        serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH
    )
    return _NodeKeys(
        private_key=write_file(folder / f"{name}.key", private, PRIVATE_MODE),
        public_key=write_file(folder / f"{name}.pub", public + b"\n", PUBLIC_MODE),
    )


class RunSecurity:
    """The TLS and node-authentication arguments of one ``flower-deployment`` run.

    Parameters
    ----------
    folder
        Where the run's credentials are written (made owner-only).
    insecure
        Plain HTTP everywhere (the explicit opt-out): no files are made.
    node_auth
        SuperNode authentication: the SuperLink accepts only nodes whose public key was
        registered; one key pair per node is made by :meth:`node_keys`. Needs TLS.
    bind_address
        The SuperLink's address: the server certificate names it beside ``127.0.0.1`` and
        ``localhost`` (the SuperNodes' runtime APIs, on loopback, use the same certificate).
    """

    def __init__(
        self, folder: Path, *, insecure: bool, node_auth: bool, bind_address: str = LOOPBACK
    ) -> None:
        if insecure and node_auth:
            raise ValueError("SuperNode authentication needs TLS (drop --insecure)")
        if insecure and not ipaddress.ip_address(bind_address).is_loopback:
            raise ValueError(f"{bind_address} is not loopback: it needs TLS (drop --insecure)")
        self.folder = folder
        self.insecure = insecure
        self.node_auth = node_auth
        ips = tuple(dict.fromkeys((LOOPBACK, bind_address)))  # loopback first, no repeat
        self.tls = None if insecure else make_tls(folder, ips=ips)
        self.nodes: dict[int, _NodeKeys] = {}

    def client_args(self) -> list[str]:
        """How a client of a TLS server verifies it: ``--root-certificates ca.pem``."""
        if self.tls is None:
            return ["--insecure"]
        return ["--root-certificates", str(self.tls.ca_cert)]

    def server_args(self) -> list[str]:
        """The certificate arguments of a server (SuperLink or a SuperNode's runtime API)."""
        if self.tls is None:
            return ["--insecure"]
        return [
            "--ssl-ca-certfile",
            str(self.tls.ca_cert),
            "--ssl-certfile",
            str(self.tls.server_cert),
            "--ssl-keyfile",
            str(self.tls.server_key),
        ]

    def runtime_server_args(self) -> list[str]:
        """A SuperNode's runtime API (towards its SuperExec) with the run's certificate.

        Empty when insecure: the SuperNode's ``--insecure`` covers its SuperLink connection
        only, and its runtime API is plain HTTP on loopback unless certificates are given.
        """
        return [] if self.tls is None else self.server_args()

    def superlink_args(self) -> list[str]:
        """``flower-superlink``'s security arguments."""
        auth = ["--enable-supernode-auth"] if self.node_auth else []
        return [*self.server_args(), *auth]

    def node_keys(self, client_id: int) -> _NodeKeys:
        """Client ``client_id``'s key pair (made on first use)."""
        if client_id not in self.nodes:
            self.nodes[client_id] = make_node_keys(self.folder / "nodes", f"node-{client_id}")
        return self.nodes[client_id]

    def supernode_args(self, client_id: int) -> list[str]:
        """``flower-supernode``'s security arguments towards the SuperLink (and its key)."""
        args = self.client_args()
        if self.node_auth:
            args += ["--auth-supernode-private-key", str(self.node_keys(client_id).private_key)]
        return args

    def connection(self) -> dict[str, str | bool]:
        """The security keys of ``flwr``'s ``config.toml`` connection."""
        if self.tls is None:
            return {"insecure": True}
        return {"root-certificates": str(self.tls.ca_cert)}
