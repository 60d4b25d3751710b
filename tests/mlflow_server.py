"""A real ``mlflow server`` on a free loopback port, and the UI's route table, for link tests."""

from __future__ import annotations

import re
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx

from fedcare.procs.ports import free_port
from fedcare.procs.services import start_detached, stop_group, wait_http
from fedcare.stack.settings import LOOPBACK, OFFLINE_ENV

#: A route of the UI's router, as the minified bundle declares it: ``static get runPage(){return
#: (0,r.Oz)("/experiments/:experimentId/runs/:runUuid")}``.
_ROUTE = re.compile(r'static get \w+\(\)\{return\(0,\w+\.\w+\)\("(/[^"]*)"\)\}')


@contextmanager
def mlflow_server(folder: Path) -> Iterator[str]:
    """Start ``mlflow server`` (SQLite store, proxied artifacts) as the stack does; its URL."""
    import os

    port = free_port(LOOPBACK)
    store = folder / "mlflow"
    store.mkdir(parents=True, exist_ok=True)
    argv = [
        str(Path(sys.executable).with_name("mlflow")), "server",
        "--host", LOOPBACK, "--port", str(port), "--workers", "1",
        "--backend-store-uri", f"sqlite:///{store / 'mlflow.db'}",
        "--artifacts-destination", str(store / "artifacts"), "--serve-artifacts",
    ]  # fmt: skip
    env = {**os.environ, **OFFLINE_ENV}
    log = folder / "mlflow-server.log"
    pid = start_detached(argv, env=env, log=log, pid_file=folder / "mlflow.pid", cwd=folder)
    url = f"http://{LOOPBACK}:{port}"
    try:
        assert wait_http(f"{url}/health", 180, pid=pid), log.read_text()[-3000:]
        yield url
    finally:
        stop_group(pid)


def ui_bundle(url: str) -> str:
    """The main JavaScript bundle of the UI the server at ``url`` serves."""
    index = httpx.get(f"{url}/", timeout=30)
    assert index.status_code == 200
    (bundle,) = set(re.findall(r'src="/?([^"]*static/js/main\.[0-9a-f]+\.js)"', index.text))
    reply = httpx.get(f"{url}/{bundle}", timeout=60)
    assert reply.status_code == 200
    return reply.text


def ui_chunk_with(url: str, text: str) -> str | None:
    """The served UI script (main bundle or a lazily loaded chunk) whose source holds ``text``.

    The chunks are found in the installed ``mlflow/server/js/build`` (the folder the server
    serves) and fetched from the server.
    """
    import mlflow.server

    build = Path(mlflow.server.__file__).parent / "js" / "build"
    for script in sorted((build / "static" / "js").glob("*.js")):
        if text in script.read_text(errors="replace"):
            reply = httpx.get(f"{url}/static-files/static/js/{script.name}", timeout=60)
            assert reply.status_code == 200 and text in reply.text
            return script.name
    return None


def ui_routes(bundle: str) -> list[str]:
    """The route patterns of the UI's router, from its bundle."""
    return _ROUTE.findall(bundle)


def route_of(fragment: str, routes: list[str]) -> str | None:
    """The first pattern (react-router style: ``:param`` one segment, ``*`` the rest) matching."""
    for pattern in routes:
        parts = []
        for segment in pattern.strip("/").split("/"):
            if segment == "*":
                parts.append(".+")
            elif segment.startswith(":"):
                parts.append("[^/]+")
            else:
                parts.append(re.escape(segment))
        if re.fullmatch("/" + "/".join(parts), fragment):
            return pattern
    return None
