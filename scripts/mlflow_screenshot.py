"""Screenshots of the MLflow UI in headless Chromium: runs, λ* charts, compare, registry, card.

``--page runs`` (default) opens the ``fedcare/<dataset>`` experiment in the MLflow UI's chart
view (the runs listed on the left, nested algorithm × seed runs shown, one chart per metric),
narrows the charts to ``--search`` (default ``lambda``: λ*_s per round, one line per run), and
saves a PNG. ``--page compare`` does the same for the runs of one setting (``--setting``,
default ``fedcare-K10-T100``: e.g. two seeds of FedCARE); ``--page table`` opens the runs table
in the saved view "FedCARE: test metrics" (per-objective metric columns); ``--page registry``
the registered models with their ``champion`` versions; ``--page version`` one model version
(its description: per-objective validation and test metrics); ``--page card`` the model card of
one registered model version as the UI renders it: the Artifacts tab of the version's logged
model (the version page's source model) with ``artifacts/client<k>.html`` selected, the window
grown until the whole card shows. Needs a running tracking server with finished runs
(``make run``), the Debian packages ``chromium`` and ``chromium-driver``, and
selenium (``pip install -c constraints/py311-linux.txt -e ".[ui]"``). Nothing is fetched from
the network: the browser runs with background networking, updates and sync off.

    python scripts/mlflow_screenshot.py --tracking-uri http://127.0.0.1:5000 \
        --out docs/mlflow_ui.png
    python scripts/mlflow_screenshot.py --page registry --out docs/mlflow_registry.png
    python scripts/mlflow_screenshot.py --page card --width 1600 --out docs/mlflow_model_card.png
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, NamedTuple
from urllib.parse import quote

import fedcare.tracking  # noqa: F401  (MLflow telemetry off before mlflow loads)

#: Chromium flags: headless, no sandbox (root in a container), nothing in the background.
CHROMIUM_FLAGS = (
    "--headless=new",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
    "--hide-scrollbars",
)
CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
#: MLflow 3.17 UI elements: the metric-chart filter, a run's "show nested runs" toggle, and the
#: assistant panel's close button.
CHART_SEARCH = "input[placeholder='Search metric charts']"
RUN_EXPANDER = "button[data-component-id*='runnamecellrenderer']"
ASSISTANT_CLOSE = "button[aria-label='Close']"
#: The pop-ups' close buttons: the assistant panel's, and a modal's (the registry's "new Model
#: Registry UI" promotion, shown to a fresh browser over the registered models).
POPUP_CLOSE = f"{ASSISTANT_CLOSE}, .ant-modal-close, [role='dialog'] button[aria-label='Close']"
#: The MLflow 3.17 UI's own record that a pop-up was dismissed (its ``useLocalStorage`` keys,
#: ``<key>_v<version>``, read from the UI bundle): set before any page script runs, so a fresh
#: browser profile opens the registry without the promotion modal.
DISMISSED_POPUPS = {"_mlflow_model_registry_promo_modal_dismissed_v1": "true"}
#: Runs shown: the algorithm × seed runs (nested under the flow runs), full-size only.
RUN_FILTER = "tags.`fedcare.stage` = 'experiment' and params.`data.clients` = '{clients}'"
#: ``--page compare``: the runs of one setting (its seeds).
SETTING_FILTER = "tags.`fedcare.stage` = 'experiment' and tags.`fedcare.setting` = '{setting}'"
#: ``--page table``: the saved runs-table view (``fedcare.tracking.views.RUNS_VIEW``).
TABLE_VIEW = "fedcare-test-metrics"
#: The UI's model-training mode (``fedcare.tracking.links.MODEL_TRAINING_QUERY``), not GenAI.
MODE = "workflowType=machine_learning"
#: The pages and the element each waits for before its screenshot.
PAGES = ("runs", "compare", "table", "registry", "version", "card")
TABLE_ROW = "[role='row'], tr"
#: ``--page card``: a node of the artifact tree, the iframe the UI renders an HTML artifact in,
#: and the artifact folder a logged model keeps its ``artifacts=`` in (the card among them).
TREE_NODE = "[data-testid='artifact-tree-node'][artifact-name=\"{name}\"]"
HTML_IFRAME = "iframe.mlflow-html-iframe"
MODEL_ARTIFACTS = "artifacts"
#: The card's document has loaded: parsed, its heading there, every figure decoded.
CARD_LOADED = (
    "return document.readyState === 'complete' && document.querySelector('h1') !== null"
    " && Array.from(document.images).every(i => i.complete && i.naturalWidth > 0)"
)


class Page(NamedTuple):
    """A UI page to capture and how to tell it has loaded."""

    url: str
    #: Chart filter of a chart view (None: the page has no charts).
    search: str | None
    #: An element the page shows once it has loaded.
    wait_css: str
    #: The artifact-tree nodes to click, in order, to show an HTML artifact (empty: none).
    artifact: tuple[str, ...] = ()


def experiment_id(tracking_uri: str, dataset: str) -> str:
    """The id of ``fedcare/<dataset>`` on the server; exit with a message if there is none."""
    from mlflow.tracking import MlflowClient

    found = MlflowClient(tracking_uri=tracking_uri).get_experiment_by_name(f"fedcare/{dataset}")
    if found is None:
        sys.exit(f"no experiment fedcare/{dataset} at {tracking_uri}: run the flow first")
    return str(found.experiment_id)


def card_page(tracking_uri: str, model: str, version: str) -> tuple[str, tuple[str, ...]]:
    """The Artifacts tab of a registered model version's logged model and its card's tree path.

    Exit with a message if the version is not a logged model (``models:/<id>``) or carries no
    HTML artifact (a backbone has no card).
    """
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=tracking_uri)
    found = client.get_model_version(model, version)
    model_id = found.model_id or (found.source or "").removeprefix("models:/")
    if not model_id.startswith("m-"):
        sys.exit(f"{model} version {version} is not a logged model (source {found.source})")
    logged = client.get_logged_model(model_id)
    cards = [
        a.path.rsplit("/", 1)[-1]
        for a in client.list_logged_model_artifacts(model_id, MODEL_ARTIFACTS)
        if not a.is_dir and a.path.endswith(".html")
    ]
    if not cards:
        sys.exit(f"{model} version {version} ({model_id}) carries no model card")
    base = tracking_uri.rstrip("/")
    url = f"{base}/#/experiments/{logged.experiment_id}/models/{model_id}/artifacts?{MODE}"
    return url, (MODEL_ARTIFACTS, cards[0])


def _show_artifact(driver: Any, wait: Any, nodes: tuple[str, ...], height: int) -> None:
    """Click ``nodes`` in the artifact tree, wait for the HTML artifact, fit the window to it.

    The artifact's iframe fills the page below the tree's header, so growing the window by what
    the document overflows shows all of it (never below ``height``).
    """
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as ec

    for name in nodes:
        node = wait.until(
            ec.presence_of_element_located((By.CSS_SELECTOR, TREE_NODE.format(name=name)))
        )
        driver.execute_script("arguments[0].click()", node)
        time.sleep(1.5)
    for _ in range(3):  # the layout may shift once the window grows
        frame = wait.until(ec.presence_of_element_located((By.CSS_SELECTOR, HTML_IFRAME)))
        driver.switch_to.frame(frame)
        try:
            wait.until(lambda d: d.execute_script(CARD_LOADED))
            needed = int(driver.execute_script("return document.documentElement.scrollHeight"))
        finally:
            driver.switch_to.default_content()
        shown = int(frame.size["height"])
        if needed <= shown:
            return
        size = driver.get_window_size()
        driver.set_window_size(size["width"], max(height, size["height"] + needed - shown + 8))
        time.sleep(2)


def _dismissed_popups_script() -> str:
    """JavaScript that records every pop-up of :data:`DISMISSED_POPUPS` as dismissed."""
    import json

    sets = "".join(
        f"localStorage.setItem({json.dumps(k)}, {json.dumps(v)});"
        for k, v in DISMISSED_POPUPS.items()
    )
    return f"try {{ {sets} }} catch (e) {{}}"


def _close_popups(driver: Any, most: int = 5) -> int:
    """Close the pop-ups shown (:data:`POPUP_CLOSE`), one at a time; how many were clicked.

    Each click re-finds the buttons still shown: closing one removes it from the page, so a
    list found before the first click would skip the next.
    """
    from selenium.webdriver.common.by import By

    clicked = 0
    for _ in range(most):
        shown = [b for b in driver.find_elements(By.CSS_SELECTOR, POPUP_CLOSE) if b.is_displayed()]
        if not shown:
            break
        driver.execute_script("arguments[0].click()", shown[0])
        clicked += 1
        time.sleep(1.5)
    return clicked


def _js_click_all(driver: Any, selector: str) -> int:
    """Click every element matching ``selector`` once (re-found after each click)."""
    from selenium.webdriver.common.by import By

    count = len(driver.find_elements(By.CSS_SELECTOR, selector))
    for i in range(count):
        found = driver.find_elements(By.CSS_SELECTOR, selector)
        if i < len(found):
            driver.execute_script("arguments[0].click()", found[i])
            time.sleep(1.5)
    return count


def screenshot(page: Page, out: Path, *, width: int, height: int) -> None:
    """Load ``page``, close pop-ups, show nested runs, filter the charts, save ``out``.

    Parameters
    ----------
    page
        The UI page: its URL, chart filter, the element it shows once loaded, and the
        HTML artifact to open (the window then grows until all of it shows).
    out
        The PNG to write.
    width, height
        The window's size (its height the least one with an HTML artifact).
    """
    os.environ.setdefault("SE_AVOID_STATS", "true")  # Selenium Manager: no usage statistics
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as ec
    from selenium.webdriver.support.ui import WebDriverWait

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    profile = tempfile.mkdtemp(prefix="fedcare-chromium-")
    for flag in (*CHROMIUM_FLAGS, f"--user-data-dir={profile}", f"--window-size={width},{height}"):
        options.add_argument(flag)
    driver = webdriver.Chrome(options=options, service=Service(executable_path=CHROMEDRIVER))
    try:
        # Before the UI's scripts run: the pop-ups a fresh profile would show are dismissed.
        driver.execute_cdp_cmd(
            "Page.addScriptToEvaluateOnNewDocument", {"source": _dismissed_popups_script()}
        )
        driver.get(page.url)
        wait = WebDriverWait(driver, 120)
        wait.until(ec.presence_of_element_located((By.CSS_SELECTOR, page.wait_css)))
        time.sleep(3)
        _close_popups(driver)  # the assistant panel, and any modal still shown
        if page.artifact:
            _show_artifact(driver, wait, page.artifact, height)
            time.sleep(2)
        elif page.search is not None:
            wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, RUN_EXPANDER))
            _js_click_all(driver, RUN_EXPANDER)  # the flow runs' nested algorithm × seed runs
            box = driver.find_element(By.CSS_SELECTOR, CHART_SEARCH)
            box.send_keys(page.search)
            wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, "canvas, svg.main-svg"))
            time.sleep(6)  # charts draw in
        else:
            time.sleep(3)
        out.parent.mkdir(parents=True, exist_ok=True)
        driver.save_screenshot(str(out))
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)


def page_url(args: argparse.Namespace) -> Page:
    """The page to capture: URL, chart filter, the element to wait for, an artifact to open."""
    base = args.tracking_uri.rstrip("/")
    if args.page == "registry":
        return Page(f"{base}/#/models?{MODE}", None, TABLE_ROW)
    if args.page == "version":
        model = quote(args.model, safe="")
        return Page(f"{base}/#/models/{model}/versions/{args.version}?{MODE}", None, "h1, h2")
    if args.page == "card":
        url, nodes = card_page(args.tracking_uri, args.model, args.version)
        return Page(url, None, TREE_NODE.format(name=nodes[0]), nodes)
    exp = experiment_id(args.tracking_uri, args.dataset)
    if args.page == "table":
        view = f"{base}/#/experiments/{exp}/runs?viewStateShareKey={TABLE_VIEW}&{MODE}"
        return Page(view, None, TABLE_ROW)
    runs = (
        SETTING_FILTER.format(setting=args.setting)
        if args.page == "compare"
        else RUN_FILTER.format(clients=args.clients)
    )
    url = f"{base}/#/experiments/{exp}/runs?compareRunsMode=CHART&searchFilter={quote(runs)}"
    return Page(f"{url}&{MODE}", args.search, CHART_SEARCH)


def main() -> None:
    """Command-line entry point."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--tracking-uri", default=os.environ.get("MLFLOW_TRACKING_URI", "http://127.0.0.1:5000")
    )
    parser.add_argument("--page", choices=PAGES, default="runs")
    parser.add_argument("--dataset", default="diabetes130")
    parser.add_argument("--setting", default="fedcare-K10-T100", help="--page compare: its runs")
    parser.add_argument(
        "--model",
        default="fedcare-diabetes130-fedcare-early_discharge-client0",
        help="--page version, card: a registered model (default: client 0's after make run)",
    )
    parser.add_argument("--version", default="1", help="--page version, card: which version")
    parser.add_argument("--search", default="lambda", help="chart filter (default: lambda)")
    parser.add_argument("--clients", type=int, default=10, help="show runs with this K only")
    parser.add_argument("--out", type=Path, default=Path("docs/mlflow_ui.png"))
    parser.add_argument("--width", type=int, default=1600)
    parser.add_argument("--height", type=int, default=1000)
    args = parser.parse_args()
    screenshot(page_url(args), args.out, width=args.width, height=args.height)
    print(args.out)


if __name__ == "__main__":
    main()
