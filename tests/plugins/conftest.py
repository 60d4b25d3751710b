"""The outside method kept under ``tests/plugins``, installed by pip for a test module."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.installed_plugins import pip_installed

#: The outside method's package: its own ``pyproject.toml`` declares its entry point.
PACKAGE = Path(__file__).parent / "fedcare-median"


@pytest.fixture(scope="module")
def median(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """``fedmedian``, pip-installed into a folder of its own for the module's tests."""
    with pip_installed(PACKAGE, tmp_path_factory.mktemp("fedmedian")):
        yield "fedmedian"
