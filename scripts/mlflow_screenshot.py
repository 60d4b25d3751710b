"""Screenshot of the MLflow UI in headless Chromium: the experiment's runs and the λ* charts.

Opens the ``fedcare/<dataset>`` experiment in the MLflow UI's chart view (the runs listed on
the left, one chart per metric), narrows the charts to ``lambda`` (λ*_s per round, one line per
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


def experiment_id(tracking_uri: str, dataset: str) -> str:
    """The id of ``fedcare/<dataset>`` on the server; exit with a message if there is none."""
    from mlflow.tracking import MlflowClient

    found = MlflowClient(tracking_uri=tracking_uri).get_experiment_by_name(f"fedcare/{dataset}")
    if found is None:
        sys.exit(f"no experiment fedcare/{dataset} at {tracking_uri}: run the flow first")
    return str(found.experiment_id)


def screenshot(url: str, out: Path, *, width: int, height: int, search: str) -> None:
    """Load ``url``, filter the charts by ``search``, and save the window as ``out``."""
    os.environ.setdefault("SE_AVOID_STATS", "true")  # Selenium Manager: no usage statistics
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys
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
        wait = WebDriverWait(driver, 90)
        box = wait.until(
            ec.presence_of_element_located(
                (By.CSS_SELECTOR, "input[placeholder*='Search metric charts' i]")
            )
        )
        box.click()
        box.send_keys(search, Keys.ENTER)
        wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, "canvas, svg.main-svg"))
        time.sleep(5)  # charts animate in
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
    parser.add_argument("--out", type=Path, default=Path("docs/mlflow_ui.png"))
    parser.add_argument("--width", type=int, default=1600)
    parser.add_argument("--height", type=int, default=1000)
    args = parser.parse_args()
    exp = experiment_id(args.tracking_uri, args.dataset)
    url = f"{args.tracking_uri.rstrip('/')}/#/experiments/{exp}?compareRunsMode=CHART"
    screenshot(url, args.out, width=args.width, height=args.height, search=args.search)
    print(args.out)


if __name__ == "__main__":
    main()
