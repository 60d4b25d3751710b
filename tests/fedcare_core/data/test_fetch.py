"""Tests of downloading and caching, against a local HTTP server (no internet needed)."""

from __future__ import annotations

import hashlib
import http.server
import threading
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from fedcare_core.data.diabetes130 import load_diabetes130
from fedcare_core.data.fetch import (
    default_cache_dir,
    download,
    fetch_diabetes130,
    sha256_file,
)
from fedcare_core.data.paths import resolve_data_dir
from fedcare_core.errors import ChecksumError, DataError

FIXTURE = Path(__file__).parent / "fixtures" / "diabetic_data_tiny.csv"
CSV_BYTES = FIXTURE.read_bytes()
CSV_SHA = hashlib.sha256(CSV_BYTES).hexdigest()


def zip_bytes(members: dict[str, bytes], tmp: Path) -> bytes:
    path = tmp / "build.zip"
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        for name, data in members.items():
            zf.writestr(name, data)
    data = path.read_bytes()
    path.unlink()
    return data


@dataclass
class Server:
    base: str
    files: dict[str, bytes] = field(default_factory=dict)
    requests: list[str] = field(default_factory=list)

    def url(self, name: str) -> str:
        return f"{self.base}/{name}"


@pytest.fixture
def server() -> Iterator[Server]:
    state = Server(base="")

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            state.requests.append(self.path)
            body = state.files.get(self.path.lstrip("/"))
            if body is None:
                self.send_error(404, "Not Found")
                return
            self.send_response(200)
            self.send_header("Content-Type", "application/zip")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:
            pass

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    state.base = f"http://127.0.0.1:{httpd.server_address[1]}"
    thread = threading.Thread(target=httpd.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield state
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(timeout=5)


def files_under(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*") if p.is_file()) if root.exists() else []


# ---------------------------------------------------------------------------------------------
# download()
# ---------------------------------------------------------------------------------------------


def test_download_ok_with_progress(server: Server, tmp_path: Path) -> None:
    body = b"x" * 3_000_000
    server.files["blob.bin"] = body
    seen: list[tuple[int, int | None]] = []
    dest = tmp_path / "sub" / "blob.bin"
    out = download(
        server.url("blob.bin"),
        dest,
        expected_sha256=hashlib.sha256(body).hexdigest(),
        progress=lambda done, total: seen.append((done, total)),
    )
    assert out == dest and dest.read_bytes() == body
    assert seen[-1] == (len(body), len(body))
    assert all(total == len(body) for _, total in seen)
    assert [done for done, _ in seen] == sorted(done for done, _ in seen)
    assert files_under(tmp_path) == [dest]  # no temporary file left


def test_download_without_checksum(server: Server, tmp_path: Path) -> None:
    server.files["a"] = b"abc"
    assert download(server.url("a"), tmp_path / "a", expected_sha256=None).read_bytes() == b"abc"


def test_download_wrong_checksum_leaves_nothing(server: Server, tmp_path: Path) -> None:
    server.files["a"] = b"abc"
    url = server.url("a")
    with pytest.raises(ChecksumError) as ei:
        download(url, tmp_path / "a", expected_sha256="0" * 64)
    msg = str(ei.value)
    assert url in msg and "0" * 64 in msg and hashlib.sha256(b"abc").hexdigest() in msg
    assert files_under(tmp_path) == []


def test_download_wrong_checksum_keeps_previous_file(server: Server, tmp_path: Path) -> None:
    dest = tmp_path / "a"
    dest.write_bytes(b"old")
    server.files["a"] = b"new"
    with pytest.raises(ChecksumError):
        download(server.url("a"), dest, expected_sha256="0" * 64)
    assert dest.read_bytes() == b"old"
    assert files_under(tmp_path) == [dest]


def test_download_404(server: Server, tmp_path: Path) -> None:
    url = server.url("missing.zip")
    with pytest.raises(DataError) as ei:
        download(url, tmp_path / "cache" / "x.zip", expected_sha256=None)
    assert url in str(ei.value) and "404" in str(ei.value)
    assert not isinstance(ei.value, ChecksumError)
    assert files_under(tmp_path) == []
    assert not (tmp_path / "cache").exists()


def test_download_connection_refused(tmp_path: Path) -> None:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    url = f"http://127.0.0.1:{port}/x"
    with pytest.raises(DataError) as ei:
        download(url, tmp_path / "x", expected_sha256=None, timeout=5)
    assert url in str(ei.value)
    assert files_under(tmp_path) == []


# ---------------------------------------------------------------------------------------------
# fetch_diabetes130()
# ---------------------------------------------------------------------------------------------


def test_fetch_extracts_verifies_and_caches(server: Server, tmp_path: Path) -> None:
    # The official archive's inner layout may differ: put the CSV somewhere unusual.
    server.files["d130.zip"] = zip_bytes(
        {
            "diabetes 130/nested/diabetic_data.csv": CSV_BYTES,
            "diabetes 130/IDs_mapping.csv": b"admission_type_id,description\r\n",
        },
        tmp_path,
    )
    cache = tmp_path / "cache"
    url = server.url("d130.zip")
    got = fetch_diabetes130(cache, url=url, expected_csv_sha256=CSV_SHA)
    assert got == cache / "diabetes130" / "diabetic_data.csv"
    assert got.read_bytes() == CSV_BYTES
    assert len(server.requests) == 1
    # Only the CSV was extracted (the archive is kept beside it); no temporary files.
    assert [p.name for p in files_under(cache)] == ["diabetes130.zip", "diabetic_data.csv"]

    again = fetch_diabetes130(cache, url=url, expected_csv_sha256=CSV_SHA)
    assert again == got
    assert len(server.requests) == 1  # served from the cache

    cohort = load_diabetes130(cache, verify_checksum=False)
    assert cohort.n_rows == 40
    assert cohort.source_sha256 == CSV_SHA


def test_fetch_redownloads_a_corrupted_cache(server: Server, tmp_path: Path) -> None:
    server.files["d.zip"] = zip_bytes({"diabetic_data.csv": CSV_BYTES}, tmp_path)
    cache = tmp_path / "cache"
    csv = cache / "diabetes130" / "diabetic_data.csv"
    csv.parent.mkdir(parents=True)
    csv.write_bytes(CSV_BYTES[:100])
    got = fetch_diabetes130(cache, url=server.url("d.zip"), expected_csv_sha256=CSV_SHA)
    assert len(server.requests) == 1
    assert sha256_file(got) == CSV_SHA


def test_fetch_wrong_checksum_leaves_nothing(server: Server, tmp_path: Path) -> None:
    server.files["d.zip"] = zip_bytes({"x/diabetic_data.csv": CSV_BYTES}, tmp_path)
    cache = tmp_path / "cache"
    url = server.url("d.zip")
    with pytest.raises(ChecksumError) as ei:
        fetch_diabetes130(cache, url=url, expected_csv_sha256="f" * 64)
    msg = str(ei.value)
    assert url in msg and "f" * 64 in msg and CSV_SHA in msg
    assert files_under(tmp_path) == []


def test_fetch_404_leaves_nothing(server: Server, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    url = server.url("gone.zip")
    with pytest.raises(DataError) as ei:
        fetch_diabetes130(cache, url=url, expected_csv_sha256=CSV_SHA)
    assert url in str(ei.value) and "404" in str(ei.value)
    assert files_under(tmp_path) == []


def test_fetch_archive_without_csv(server: Server, tmp_path: Path) -> None:
    server.files["d.zip"] = zip_bytes({"IDs_mapping.csv": b"a\r\n"}, tmp_path)
    cache = tmp_path / "cache"
    with pytest.raises(DataError) as ei:
        fetch_diabetes130(cache, url=server.url("d.zip"), expected_csv_sha256=CSV_SHA)
    assert "diabetic_data.csv" in str(ei.value) and server.url("d.zip") in str(ei.value)
    assert files_under(tmp_path) == []


def test_fetch_not_a_zip(server: Server, tmp_path: Path) -> None:
    server.files["d.zip"] = b"<html>maintenance</html>"
    cache = tmp_path / "cache"
    with pytest.raises(DataError) as ei:
        fetch_diabetes130(cache, url=server.url("d.zip"), expected_csv_sha256=CSV_SHA)
    assert "zip" in str(ei.value)
    assert files_under(tmp_path) == []


def test_fetch_default_cache_dir_from_env(
    server: Server, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FEDCARE_CACHE_DIR", str(tmp_path / "envcache"))
    server.files["d.zip"] = zip_bytes({"diabetic_data.csv": CSV_BYTES}, tmp_path)
    got = fetch_diabetes130(url=server.url("d.zip"), expected_csv_sha256=CSV_SHA)
    assert got == tmp_path / "envcache" / "diabetes130" / "diabetic_data.csv"


# ---------------------------------------------------------------------------------------------
# default_cache_dir() and resolve_data_dir()
# ---------------------------------------------------------------------------------------------


def test_default_cache_dir(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("FEDCARE_CACHE_DIR", raising=False)
    assert default_cache_dir() == Path.home() / ".cache" / "fedcare"
    monkeypatch.setenv("FEDCARE_CACHE_DIR", str(tmp_path))
    assert default_cache_dir() == tmp_path


def test_resolve_data_dir(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("FEDCARE_DATA_DIR", raising=False)
    assert resolve_data_dir(None) is None
    assert resolve_data_dir(tmp_path) == tmp_path
    assert resolve_data_dir(str(tmp_path)) == tmp_path
    monkeypatch.setenv("FEDCARE_DATA_DIR", str(tmp_path / "env"))
    assert resolve_data_dir(None) == tmp_path / "env"
    assert resolve_data_dir(tmp_path / "arg") == tmp_path / "arg"  # the argument wins
    monkeypatch.setenv("FEDCARE_DATA_DIR", "")
    assert resolve_data_dir(None) is None
