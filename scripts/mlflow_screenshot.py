"""Screenshot of the MLflow UI in headless Chromium: the experiment's runs and the λ* charts.

Opens the ``fedcare/<dataset>`` experiment in the MLflow UI's chart view (the runs listed on
the left, nested algorithm × seed runs shown, one chart per metric), narrows the charts to
``lambda`` (λ*_s per round, one line per
run), and saves a PNG. Needs a running tracking server with at least one finished flow run
(``make run``), the Debian packages ``chromium`` and ``chromium-driver``, and selenium
(``pip install -c constraints/py311-linux.txt -e ".[ui]"``). Nothing is fetched from the
network: the browser runs with background networking, updates and sync off.

    python scripts/mlflow_screenshot.py --tracking-uri http://127.0.0.1:5000 \
        --out docs/mlflow_ui.png
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

import fedcare_tracking  # noqa: F401  (MLflow telemetry off before mlflow loads)

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


def screenshot(url: str, out: Path, *, width: int, height: int, search: str) -> None:
    """Load ``url``, show the nested runs, filter the charts by ``search``, save ``out``."""
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
        box = wait.until(ec.presence_of_element_located((By.CSS_SELECTOR, CHART_SEARCH)))
        wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, RUN_EXPANDER))
        time.sleep(3)
        _js_click_all(driver, ASSISTANT_CLOSE)  # the assistant side panel hides the charts
        _js_click_all(driver, RUN_EXPANDER)  # the flow runs' nested algorithm × seed runs
        box = driver.find_element(By.CSS_SELECTOR, CHART_SEARCH)
        box.send_keys(search)
        wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, "canvas, svg.main-svg"))
        time.sleep(6)  # charts draw in
        out.parent.mkdir(parents=True, exist_ok=True)
        driver.save_screenshot(str(out))
    finally:
        driver.quit()


def main() -> None:
    """Command-line entry point."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--tracking-uri", default=os.environ.get("MLFLOW_TRACKING_URI", "http://127.0.0.1:5000")
    )
    parser.add_argument("--dataset", default="diabetes130")
    parser.add_argument("--search", default="lambda", help="chart filter (default: lambda)")
    parser.add_argument("--clients", type=int, default=10, help="show runs with this K only")
    parser.add_argument("--out", type=Path, default=Path("docs/mlflow_ui.png"))
    parser.add_argument("--width", type=int, default=1600)
    parser.add_argument("--height", type=int, default=1000)
    args = parser.parse_args()
    exp = experiment_id(args.tracking_uri, args.dataset)
    runs = quote(RUN_FILTER.format(clients=args.clients))
    url = f"{args.tracking_uri.rstrip('/')}/#/experiments/{exp}/runs?compareRunsMode=CHART"
    url += f"&searchFilter={runs}"
    screenshot(url, args.out, width=args.width, height=args.height, search=args.search)
    print(args.out)


if __name__ == "__main__":
    main()
