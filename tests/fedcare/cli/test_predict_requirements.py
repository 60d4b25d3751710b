"""``fedcare predict`` compares the model's pinned requirements with this environment itself."""

from __future__ import annotations

import sys
from importlib import metadata
from pathlib import Path

from fedcare.cli.predict import requirement_mismatches


def write_requirements(folder: Path, lines: list[str]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "requirements.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return folder


def test_the_environment_the_model_was_logged_in_matches() -> None:
    running = f"{sys.version_info.major}.{sys.version_info.minor}.{sys.version_info.micro}"
    folder = Path(__file__).parent  # no requirements.txt: nothing to compare
    assert requirement_mismatches(folder, running) == []


def test_each_mismatch_is_named_once(tmp_path: Path) -> None:
    pandas = metadata.version("pandas")
    folder = write_requirements(
        tmp_path / "model",
        [
            "# written by MLflow",
            f"pandas=={pandas}",
            "numpy==0.0.1",
            "fedcare-no-such-package==1.0",
            "-r other.txt",
            "torch>=1.0",
            'numpy==0.0.2; python_version < "3"',
            "",
        ],
    )
    found = requirement_mismatches(folder, "2.7.18")
    numpy = metadata.version("numpy")
    running = f"{sys.version_info.major}.{sys.version_info.minor}"
    assert found == [
        f"logged with Python 2.7.18, running Python {running}",
        f"numpy {numpy}, the model needs numpy==0.0.1",
        "fedcare-no-such-package not installed, the model needs fedcare-no-such-package==1.0",
    ]


def test_the_models_python_is_compared_by_major_and_minor_version(tmp_path: Path) -> None:
    folder = write_requirements(tmp_path / "model", [])
    same = f"{sys.version_info.major}.{sys.version_info.minor}.0"
    assert requirement_mismatches(folder, same) == []
    assert requirement_mismatches(folder, None) == []
