"""The screenshot script dismisses the pop-ups MLflow's UI shows a fresh browser."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path
from types import ModuleType

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "mlflow_screenshot.py"


def _script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("mlflow_screenshot", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _ui_bundle() -> str:
    import mlflow

    build = Path(mlflow.__file__).parent / "server" / "js" / "build" / "static" / "js"
    return "".join(p.read_text(errors="replace") for p in sorted(build.glob("*.js")))


def test_the_registry_modal_is_dismissed_under_the_key_the_installed_ui_reads() -> None:
    """The UI keeps the promotion modal's dismissal as ``<key>_v<version>`` in local storage."""
    script = _script()
    source = _ui_bundle()
    assert "Flexible, governed deployments with the new Model Registry UI" in source
    found = re.search(
        r'key:"(_mlflow_model_registry_promo_modal_dismissed)",version:(\d+),initialValue:!1',
        source,
    )
    assert found is not None
    assert re.search(r"=\((\w),(\w)\)=>`\$\{\1\}_v\$\{\2\}`", source)  # the stored key
    key = f"{found.group(1)}_v{found.group(2)}"
    assert script.DISMISSED_POPUPS == {key: "true"}
    assert f'localStorage.setItem("{key}", "true");' in script._dismissed_popups_script()
