"""Fixtures of the multi-site tests: the Flower layer's (a small synthetic federation, one torch
thread, no telemetry, a task identity)."""

from tests.fedcare.flower.conftest import (  # noqa: F401
    _no_telemetry,
    _torch_single_thread,
    small_cohort,
    small_federation,
    task_identity,
)
