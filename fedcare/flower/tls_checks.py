"""Certificates and keys checked before any Flower process is given them.

Flower reads a certificate or a key only once its process runs: a file that is not PEM makes
``flower-superlink`` print its stack frames, and makes ``flower-supernode`` retry its TLS
handshake forever (``fedcare site join`` would wait, saying nothing). So every certificate and
key a user names (``--root-certificates``; ``--ca-cert``/``--server-cert``/``--server-key``),
every one the coordinator reuses from its state folder, and a site's node key are parsed here
first with the ``cryptography`` package; a refusal is one line naming the option or the file
and what is wrong (not PEM, expired, the key not the certificate's, a key Flower cannot use).
"""

from __future__ import annotations

import datetime
from pathlib import Path

from cryptography import x509
from cryptography.exceptions import InvalidSignature, UnsupportedAlgorithm
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.types import PrivateKeyTypes

from fedcare.flower.tls import TlsFiles
from fedcare_core.errors import ConfigError

#: The largest certificate or key file read (a chain of a few certificates is a few KiB).
_MAX_PEM_BYTES = 1 << 20
#: The curves Flower 1.42's node authentication accepts (NIST curves).
_NODE_CURVES = (ec.SECP256R1, ec.SECP384R1, ec.SECP521R1)


def _detail(exc: Exception) -> str:
    """The library's reason, short: its first sentence, no link."""
    text = " ".join(str(exc).split()).split(" See http")[0]
    return text[:120] or type(exc).__name__


def read_key_file(path: Path, where: str) -> bytes:
    """The bytes of a certificate or key file, or a refusal naming ``where``.

    Raises
    ------
    ConfigError
        If the file is missing, a folder, empty, larger than :data:`_MAX_PEM_BYTES` or
        unreadable.
    """
    try:
        if path.is_dir():
            raise ConfigError(f"{where} {path}: a folder, not a file")
        if not path.is_file():
            raise ConfigError(f"{where} {path}: no such file")
        size = path.stat().st_size
        if not 0 < size <= _MAX_PEM_BYTES:
            raise ConfigError(f"{where} {path}: {size:,} bytes; not a certificate or key file")
        return path.read_bytes()
    except OSError as exc:
        raise ConfigError(f"{where} {path}: cannot read it ({exc.strerror or exc})") from None


def check_certificates(path: Path, where: str) -> list[x509.Certificate]:
    """The PEM certificates in ``path``, each valid now.

    Raises
    ------
    ConfigError
        If the file holds no PEM certificate, or one that is expired or not yet valid.
    """
    data = read_key_file(path, where)
    try:
        certs = x509.load_pem_x509_certificates(data)
    except ValueError as exc:
        detail = _detail(exc)
        raise ConfigError(f"{where} {path}: not a PEM certificate ({detail})") from None
    now = datetime.datetime.now(datetime.UTC)
    for cert in certs:
        if cert.not_valid_after_utc < now:
            raise ConfigError(
                f"{where} {path}: the certificate expired on {cert.not_valid_after_utc:%Y-%m-%d}"
            )
        if cert.not_valid_before_utc > now:
            raise ConfigError(
                f"{where} {path}: the certificate is valid only from "
                f"{cert.not_valid_before_utc:%Y-%m-%d %H:%M} UTC"
            )
    return certs


def check_private_key(path: Path, where: str) -> PrivateKeyTypes:
    """The unencrypted PEM private key in ``path``.

    Raises
    ------
    ConfigError
        If it is not a PEM private key, or is protected by a passphrase (Flower reads none).
    """
    data = read_key_file(path, where)
    try:
        key = serialization.load_pem_private_key(data, password=None)
    except TypeError:
        raise ConfigError(
            f"{where} {path}: the key is protected by a passphrase; Flower needs it unencrypted"
        ) from None
    except (ValueError, UnsupportedAlgorithm) as exc:
        detail = _detail(exc)
        raise ConfigError(f"{where} {path}: not a PEM private key ({detail})") from None
    return key


def _issued_by(cert: x509.Certificate, cas: list[x509.Certificate]) -> bool:
    for ca in cas:
        try:
            cert.verify_directly_issued_by(ca)
        except (ValueError, TypeError, InvalidSignature, UnsupportedAlgorithm):
            continue
        return True
    return False


def check_server_files(files: TlsFiles, names: tuple[str, str, str]) -> None:
    """A CA certificate, a server certificate it issued and that certificate's key.

    Parameters
    ----------
    files
        The three files.
    names
        How messages name each (``--ca-cert``, ``--server-cert``, ``--server-key``).

    Raises
    ------
    ConfigError
        Naming the file at fault: not PEM, expired, the key not the certificate's, or the
        server certificate not issued by a certificate of the CA file.
    """
    cas = check_certificates(files.ca_cert, names[0])
    chain = check_certificates(files.server_cert, names[1])
    key = check_private_key(files.server_key, names[2])
    spki = (serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
    if key.public_key().public_bytes(*spki) != chain[0].public_key().public_bytes(*spki):
        raise ConfigError(
            f"{names[2]} {files.server_key}: not the key of the certificate in {files.server_cert}"
        )
    if not any(_issued_by(cert, cas) for cert in chain):
        raise ConfigError(
            f"{names[1]} {files.server_cert}: not issued by the CA certificate in {files.ca_cert} "
            f"({names[0]}); the sites would refuse it"
        )


def check_node_key(path: Path, where: str) -> None:
    """A SuperNode's private key as Flower reads it: OpenSSH, elliptic curve, a NIST curve.

    Raises
    ------
    ConfigError
        Naming ``where`` and the file.
    """
    data = read_key_file(path, where)
    try:
        key = serialization.load_ssh_private_key(data, password=None)
    except (ValueError, TypeError, UnsupportedAlgorithm) as exc:
        detail = _detail(exc)
        raise ConfigError(
            f"{where} {path}: not an unencrypted OpenSSH private key ({detail}); make a new "
            "pair with `fedcare site rotate-key`"
        ) from None
    if not isinstance(key, ec.EllipticCurvePrivateKey) or not isinstance(key.curve, _NODE_CURVES):
        raise ConfigError(
            f"{where} {path}: Flower's node authentication needs an elliptic-curve key on a NIST "
            "curve (P-256, P-384, P-521)"
        )


def check_node_public_key(text: str, where: str) -> str:
    """A SuperNode's public key (one OpenSSH line, EC on a NIST curve), stripped.

    Raises
    ------
    ConfigError
        Naming ``where``.
    """
    line = text.strip()
    try:
        if "\n" in line or len(line) > 4096:
            raise ValueError("not one line of at most 4,096 characters")
        key = serialization.load_ssh_public_key(line.encode("ascii"))
    except (ValueError, UnicodeEncodeError, UnsupportedAlgorithm) as exc:
        detail = _detail(exc)
        raise ConfigError(f"{where}: not an OpenSSH public key ({detail})") from None
    if not isinstance(key, ec.EllipticCurvePublicKey) or not isinstance(key.curve, _NODE_CURVES):
        raise ConfigError(
            f"{where}: Flower's node authentication needs an elliptic-curve key on a NIST curve "
            "(ecdsa-sha2-nistp256/384/521)"
        )
    return line
