"""A temporary Prefect server (``prefect_test_harness``) shared by the flow tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest


@pytest.fixture(scope="session")
def prefect_harness() -> Iterator[None]:
    """Run flows against a throw-away Prefect server and database.

    Its API URL is a setting, so the flow's process-pool workers report to it as well.
    """
    from prefect.testing.utilities import prefect_test_harness

    with prefect_test_harness(server_startup_timeout=180):
        yield
