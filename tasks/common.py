"""Settings shared by every task: no input caching, retries only for I/O failures."""

from __future__ import annotations

import logging
from typing import Any

from prefect import get_run_logger
from prefect.cache_policies import NO_CACHE
from prefect.exceptions import MissingContextError

from fedcare_core.errors import FedcareError

__all__ = ["IO_RETRIES", "IO_RETRY_DELAY_S", "NO_CACHE", "retry_on_io_error", "run_logger"]

# Every task but FedCARE's stage1 (tasks.stage1_cache) passes cache_policy=NO_CACHE and
# persist_result=False: inputs are large in-memory objects (cohorts, federations), not worth
# hashing, and results stay in memory.
#: Retries of an I/O task (a flaky disk or tracking server), and the delay between them.
IO_RETRIES = 2
IO_RETRY_DELAY_S = 2.0


def retry_on_io_error(task: Any, task_run: Any, state: Any) -> bool:
    """Retry condition of I/O tasks: retry an ``OSError``-like failure, never a bad input.

    Parameters
    ----------
    task, task_run
        Unused (Prefect's signature).
    state
        The failed state.

    Returns
    -------
    bool
        True when the failure is worth retrying: not a :class:`FedcareError` (bad data or
        configuration, which a retry cannot fix) and not a programming error.
    """
    try:
        state.result()
    except FedcareError:
        return False
    except (TypeError, ValueError, KeyError, AttributeError, NotImplementedError):
        return False
    except Exception:
        return True
    return False


def run_logger() -> logging.Logger | logging.LoggerAdapter[logging.Logger]:
    """Prefect's run logger inside a flow or task run; a module logger elsewhere (``.fn`` calls)."""
    try:
        return get_run_logger()
    except MissingContextError:
        return logging.getLogger("fedcare.tasks")
