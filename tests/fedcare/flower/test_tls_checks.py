"""Certificates and keys are parsed before Flower gets them: what Flower can use passes, the rest
is refused naming the option or file (Flower's node would otherwise retry a bad CA forever)."""

from __future__ import annotations

import datetime
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.x509.oid import NameOID

from fedcare.flower.tls import TlsFiles, make_node_keys, make_tls
from fedcare.flower.tls_checks import (
    check_certificates,
    check_node_key,
    check_node_public_key,
    check_private_key,
    check_server_files,
)
from fedcare_core.errors import ConfigError

NAMES = ("--ca-cert", "--server-cert", "--server-key")


def _expired_certificate(path: Path) -> Path:
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "old CA")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder().subject_name(name).issuer_name(name)
        .public_key(key.public_key()).serial_number(1)
        .not_valid_before(now - datetime.timedelta(days=30))
        .not_valid_after(now - datetime.timedelta(days=1))
        .sign(key, hashes.SHA256())
    )  # fmt: skip
    path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    return path


def test_what_make_tls_and_make_node_keys_write_passes(tmp_path: Path) -> None:
    tls = make_tls(tmp_path / "tls", ips=("127.0.0.1", "10.0.0.5"), validity_days=365)
    check_server_files(tls, NAMES)
    assert len(check_certificates(tls.ca_cert, "--root-certificates")) == 1
    keys = make_node_keys(tmp_path / "keys", "node")
    check_node_key(keys.private_key, "the node key")
    line = check_node_public_key(keys.public_key.read_text() + "\n", "--public-key")
    assert line.startswith("ecdsa-sha2-nistp256 ") and "\n" not in line


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"garbage\n", "not a PEM certificate"),
        (b"", "0 bytes; not a certificate or key file"),
        (b"-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n", "not a PEM"),
    ],
)
def test_a_root_certificate_that_is_not_one_is_refused(
    tmp_path: Path, content: bytes, message: str
) -> None:
    path = tmp_path / "ca.crt"
    path.write_bytes(content)
    with pytest.raises(ConfigError) as exc:
        check_certificates(path, "--root-certificates")
    assert str(exc.value).startswith(f"--root-certificates {path}: ") and message in str(exc.value)
    assert "\n" not in str(exc.value)


def test_an_expired_a_missing_or_a_folder_certificate_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"ca.crt: the certificate expired on \d{4}-"):
        check_certificates(_expired_certificate(tmp_path / "ca.crt"), "--root-certificates")
    with pytest.raises(ConfigError, match=r"nowhere.crt: no such file"):
        check_certificates(tmp_path / "nowhere.crt", "--root-certificates")
    with pytest.raises(ConfigError, match="a folder, not a file"):
        check_certificates(tmp_path, "--root-certificates")


def test_server_files_that_do_not_belong_together_are_refused(tmp_path: Path) -> None:
    ours, theirs = make_tls(tmp_path / "a"), make_tls(tmp_path / "b")
    with pytest.raises(ConfigError, match=r"^--server-key .*: not the key of the certificate"):
        check_server_files(TlsFiles(ours.ca_cert, ours.server_cert, theirs.server_key), NAMES)
    with pytest.raises(ConfigError, match=r"^--server-cert .*: not issued by the CA certificate"):
        check_server_files(TlsFiles(theirs.ca_cert, ours.server_cert, ours.server_key), NAMES)
    with pytest.raises(ConfigError, match=r"^--server-key .*: not a PEM private key"):
        check_server_files(TlsFiles(ours.ca_cert, ours.server_cert, ours.server_cert), NAMES)


def test_a_key_with_a_passphrase_is_refused(tmp_path: Path) -> None:
    key = ec.generate_private_key(ec.SECP256R1())
    path = tmp_path / "server.key"
    path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.BestAvailableEncryption(b"secret"),
        )
    )
    with pytest.raises(ConfigError, match="protected by a passphrase"):
        check_private_key(path, "--server-key")


def test_a_node_key_flower_cannot_use_is_refused(tmp_path: Path) -> None:
    rsa_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    path = tmp_path / "node.key"
    path.write_bytes(
        rsa_key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.OpenSSH,
            serialization.NoEncryption(),
        )
    )
    with pytest.raises(ConfigError, match="needs an elliptic-curve key on a NIST curve"):
        check_node_key(path, "the node key")
    path.write_text("garbage\n")
    with pytest.raises(ConfigError, match=r"not an unencrypted OpenSSH private key .*rotate-key"):
        check_node_key(path, "the node key")
    public = rsa_key.public_key().public_bytes(
        serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH
    )
    with pytest.raises(ConfigError, match=r"^--public-key k.pub: Flower's node authentication"):
        check_node_public_key(public.decode(), "--public-key k.pub")
    with pytest.raises(ConfigError, match="not an OpenSSH public key"):
        check_node_public_key("ecdsa-sha2-nistp256 AAAA\nsecond line", "--public-key k.pub")
