"""``fedcare data fetch diabetes130`` against the real archive served on loopback."""

from __future__ import annotations

import functools
import http.server
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from fedcare.cli.main import main

pytestmark = pytest.mark.realdata


@pytest.fixture
def archive_url(data_dir: Path) -> Iterator[str]:
    handler = functools.partial(
        http.server.SimpleHTTPRequestHandler, directory=str(data_dir / "diabetes130")
    )
    handler.log_message = lambda *a, **k: None  # type: ignore[attr-defined]
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}/dataset_diabetes.zip"
    finally:
        httpd.shutdown()
        httpd.server_close()


def test_fetch_then_run_from_cache(archive_url: str, tmp_path: Path, capsys) -> None:
    cache = tmp_path / "cache"
    assert (
        main(
            [
                "data",
                "fetch",
                "diabetes130",
                "--cache-dir",
                str(cache),
                "--url",
                archive_url,
                "--quiet",
            ]
        )
        == 0
    )
    csv = Path(capsys.readouterr().out.strip())
    assert csv.name == "diabetic_data.csv" and csv.is_file() and cache in csv.parents
    out = tmp_path / "r.json"
    assert (
        main(
            [
                "run",
                "--dataset",
                "diabetes130",
                "--data-dir",
                str(csv.parent),
                "--clients",
                "3",
                "--rounds",
                "1",
                "--max-patients",
                "1000",
                "--stage2-epochs",
                "1",
                "--quiet",
                "--out",
                str(out),
            ]
        )
        == 0
    )
    assert out.is_file()


def test_fetch_bad_url_fails_cleanly(archive_url: str, tmp_path: Path, capsys) -> None:
    cache = tmp_path / "cache"
    code = main(
        [
            "data",
            "fetch",
            "diabetes130",
            "--cache-dir",
            str(cache),
            "--url",
            archive_url.replace("dataset_diabetes.zip", "missing.zip"),
            "--quiet",
        ]
    )
    assert code == 2
    err = capsys.readouterr().err
    assert "missing.zip" in err and "Traceback" not in err
    assert not cache.exists() or not any(p.is_file() for p in cache.rglob("*"))
