"""Links into MLflow: the UI routes MLflow 3.17 knows, and the server's artifact download."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import urlsplit

import pytest

import fedcare.tracking  # noqa: F401  (MLflow environment defaults before mlflow loads)
from fedcare.tracking.links import (
    artifact_download_url,
    artifact_url,
    experiment_url,
    report_location,
    run_url,
    ui_base,
)
from tests.mlflow_server import mlflow_server, route_of, ui_bundle, ui_chunk_with, ui_routes

SERVER = "http://127.0.0.1:5000/"
#: Every UI link opens the page in the UI's model-training mode.
MODE = "?workflowType=machine_learning"


def test_links_name_the_experiment_and_run() -> None:
    assert ui_base(SERVER) == "http://127.0.0.1:5000"
    assert run_url(SERVER, "7", "abc") == f"http://127.0.0.1:5000/#/experiments/7/runs/abc{MODE}"
    assert experiment_url(SERVER, "7") == f"http://127.0.0.1:5000/#/experiments/7/runs{MODE}"
    assert artifact_url(SERVER, "7", "abc", "validation/raw/index.html") == (
        f"http://127.0.0.1:5000/#/experiments/7/runs/abc/artifacts/validation/raw/index.html{MODE}"
    )
    assert (
        artifact_download_url(SERVER, "abc", "validation/raw/index.html")
        == "http://127.0.0.1:5000/get-artifact?path=validation%2Fraw%2Findex.html&run_uuid=abc"
    )
    where = report_location(SERVER, "7", "abc", "validation/raw", "index.html")
    assert where.startswith("[validation/raw/index.html in the MLflow UI](http://127.0.0.1")


def test_a_local_store_has_no_links() -> None:
    uri = "sqlite:////tmp/m/mlflow.db"
    assert ui_base(uri) is None and run_url(uri, "1", "abc") is None
    assert experiment_url(uri, "1") is None
    assert artifact_url(uri, "1", "abc", "p") is None
    assert artifact_download_url(uri, "abc", "p") is None
    assert report_location(uri, "1", "abc", "validation/raw", "index.html") == (
        f"run abc, artifacts/validation/raw/index.html ({uri})"
    )


def test_the_installed_ui_takes_its_mode_from_the_workflow_type_parameter() -> None:
    """MLflow's UI bundle: GenAI or model training is the URL's `workflowType`, else the browser's.

    Why the links carry ``workflowType=machine_learning``: the mode comes from the URL
    parameter, then the choice remembered in the browser (local storage), then GenAI.
    """
    import mlflow

    build = Path(mlflow.__file__).parent / "server" / "js" / "build" / "static" / "js"
    (main,) = build.glob("main.*.js")
    source = main.read_text(errors="replace")
    assert 'e.GENAI="genai",e.MACHINE_LEARNING="machine_learning"' in source
    assert 'key:"mlflow.workflowType",version:1,initialValue:c' in source  # c: GenAI
    assert 'e.get("workflowType");return n===l.GENAI||n===l.MACHINE_LEARNING?n:t' in source
    # The experiment link's page is a route of this UI (the run links are checked on a server).
    page = (experiment_url(SERVER, "7") or "").partition("#")[2].partition("?")[0]
    assert route_of(page, ui_routes(source)) == "/experiments/:experimentId/runs"


@pytest.mark.slow
def test_links_open_the_run_and_its_report_on_a_real_mlflow_server(tmp_path: Path) -> None:
    import httpx
    from mlflow.tracking import MlflowClient

    report = tmp_path / "report"
    report.mkdir()
    (report / "index.html").write_text("<html><body>Data checks passed</body></html>\n")
    with mlflow_server(tmp_path / "server") as url:
        mc = MlflowClient(tracking_uri=url)
        experiment_id = mc.create_experiment("links")
        run_id = mc.create_run(experiment_id).info.run_id
        mc.log_artifacts(run_id, str(report), artifact_path="validation/raw")
        bundle = ui_bundle(url)
        routes = ui_routes(bundle)

        # The UI pages: the fragment after '#' is a route of the served bundle's router.
        # (The router matches the path; the query after it sets the UI's mode.)
        page, _, query = urlsplit(run_url(url, experiment_id, run_id) or "").fragment.partition("?")
        assert route_of(page, routes) == "/experiments/:experimentId/runs/:runUuid"
        assert query == MODE[1:]
        opened = artifact_url(url, experiment_id, run_id, "validation/raw/index.html")
        fragment = urlsplit(opened or "").fragment.partition("?")[0]
        assert route_of(fragment, routes) == "/experiments/:experimentId/runs/:runUuid/*"
        # ... whose artifact browser selects what follows /artifacts/ (the run page's
        # `location.pathname.match(/\/(?:artifactPath|artifacts)\/(.+)/)`).
        assert ui_chunk_with(url, r"match(/\/(?:artifactPath|artifacts)\/(.+)/)") is not None
        # The old link, /runs/<run>/artifacts/<path>, matched no route: the UI's 404 page.
        assert route_of(f"/runs/{run_id}/artifacts/validation/raw", routes) is None

        # The report file itself, from the download link.
        reply = httpx.get(
            artifact_download_url(url, run_id, "validation/raw/index.html") or "", timeout=30
        )
        assert reply.status_code == 200
        assert reply.text == (report / "index.html").read_text()
        assert reply.headers["content-type"].startswith("text/html")
        # What `make run` prints: the dataset's experiment in model-training mode, if it exists.
        from fedcare.tracking import store

        page_id = mc.create_experiment("fedcare/links-page")
        assert store.experiment_page(url, "links-page") == experiment_url(url, page_id)
        assert store.experiment_page(url, "absent") == url
        # The experiment id in the UI link is the run's own.
        got = httpx.get(f"{url}/api/2.0/mlflow/runs/get", params={"run_id": run_id}, timeout=30)
        assert got.json()["run"]["info"]["experiment_id"] == experiment_id
