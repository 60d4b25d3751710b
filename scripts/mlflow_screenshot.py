"""Screenshots of the MLflow UI in headless Chromium: runs, λ* charts, compare, registry.

``--page runs`` (default) opens the ``fedcare/<dataset>`` experiment in the MLflow UI's chart
view (the runs listed on the left, nested algorithm × seed runs shown, one chart per metric),
narrows the charts to ``--search`` (default ``lambda``: λ*_s per round, one line per run), and
saves a PNG. ``--page compare`` does the same for the runs of one setting (``--setting``,
default ``fedcare-K10-T100``: e.g. two seeds of FedCARE); ``--page table`` opens the runs table
in the saved view "FedCARE: test metrics" (per-objective metric columns); ``--page registry``
the registered models with their ``champion`` versions; ``--page version`` one model version
(its description: per-objective validation and test metrics). Needs a running tracking server
with finished runs (``make run``), the Debian packages ``chromium`` and ``chromium-driver``, and
selenium (``pip install -c constraints/py311-linux.txt -e ".[ui]"``). Nothing is fetched from
the network: the browser runs with background networking, updates and sync off.

    python scripts/mlflow_screenshot.py --tracking-uri http://127.0.0.1:5000 \
        --out docs/mlflow_ui.png
    python scripts/mlflow_screenshot.py --page registry --out docs/mlflow_registry.png
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any
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
#: Runs shown: the algorithm × seed runs (nested under the flow runs), full-size only.
RUN_FILTER = "tags.`fedcare.stage` = 'experiment' and params.`data.clients` = '{clients}'"
#: ``--page compare``: the runs of one setting (its seeds).
SETTING_FILTER = "tags.`fedcare.stage` = 'experiment' and tags.`fedcare.setting` = '{setting}'"
#: ``--page table``: the saved runs-table view (``fedcare.tracking.views.RUNS_VIEW``).
TABLE_VIEW = "fedcare-test-metrics"
#: The UI's model-training mode (``fedcare.tracking.links.MODEL_TRAINING_QUERY``), not GenAI.
MODE = "workflowType=machine_learning"
#: The pages and the element each waits for before its screenshot.
PAGES = ("runs", "compare", "table", "registry", "version")
TABLE_ROW = "[role='row'], tr"


def experiment_id(tracking_uri: str, dataset: str) -> str:
    """The id of ``fedcare/<dataset>`` on the server; exit with a message if there is none."""
    from mlflow.tracking import MlflowClient

    found = MlflowClient(tracking_uri=tracking_uri).get_experiment_by_name(f"fedcare/{dataset}")
    if found is None:
        sys.exit(f"no experiment fedcare/{dataset} at {tracking_uri}: run the flow first")
    return str(found.experiment_id)


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


def screenshot(
    url: str, out: Path, *, width: int, height: int, search: str | None, wait_css: str
) -> None:
    """Load ``url``, close pop-ups, show nested runs, filter the charts by ``search``, save ``out``.

    Parameters
    ----------
    url
        The UI page.
    out
        The PNG to write.
    width, height
        The window's size.
    search
        Chart filter of a chart view (None: the page has no charts).
    wait_css
        An element the page shows once it has loaded.
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
        driver.get(url)
        wait = WebDriverWait(driver, 120)
        wait.until(ec.presence_of_element_located((By.CSS_SELECTOR, wait_css)))
        time.sleep(3)
        _js_click_all(driver, ASSISTANT_CLOSE)  # the assistant panel and the registry's pop-up
        if search is not None:
            wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, RUN_EXPANDER))
            _js_click_all(driver, RUN_EXPANDER)  # the flow runs' nested algorithm × seed runs
            box = driver.find_element(By.CSS_SELECTOR, CHART_SEARCH)
            box.send_keys(search)
            wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, "canvas, svg.main-svg"))
            time.sleep(6)  # charts draw in
        else:
            time.sleep(3)
        out.parent.mkdir(parents=True, exist_ok=True)
        driver.save_screenshot(str(out))
    finally:
        driver.quit()


def page_url(args: argparse.Namespace) -> tuple[str, str | None, str]:
    """The page's URL, its chart filter (None: no charts) and the element to wait for."""
    base = args.tracking_uri.rstrip("/")
    if args.page == "registry":
        return f"{base}/#/models?{MODE}", None, TABLE_ROW
    if args.page == "version":
        model = quote(args.model, safe="")
        return f"{base}/#/models/{model}/versions/{args.version}?{MODE}", None, "h1, h2"
    exp = experiment_id(args.tracking_uri, args.dataset)
    if args.page == "table":
        view = f"{base}/#/experiments/{exp}/runs?viewStateShareKey={TABLE_VIEW}&{MODE}"
        return view, None, TABLE_ROW
    runs = (
        SETTING_FILTER.format(setting=args.setting)
        if args.page == "compare"
        else RUN_FILTER.format(clients=args.clients)
    )
    url = f"{base}/#/experiments/{exp}/runs?compareRunsMode=CHART&searchFilter={quote(runs)}"
    return f"{url}&{MODE}", args.search, CHART_SEARCH


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
        help="--page version: a registered model (default: client 0's after make run)",
    )
    parser.add_argument("--version", default="1", help="--page version: which version")
    parser.add_argument("--search", default="lambda", help="chart filter (default: lambda)")
    parser.add_argument("--clients", type=int, default=10, help="show runs with this K only")
    parser.add_argument("--out", type=Path, default=Path("docs/mlflow_ui.png"))
    parser.add_argument("--width", type=int, default=1600)
    parser.add_argument("--height", type=int, default=1000)
    args = parser.parse_args()
    url, search, wait_css = page_url(args)
    screenshot(
        url, args.out, width=args.width, height=args.height, search=search, wait_css=wait_css
    )
    print(args.out)


if __name__ == "__main__":
    main()
