"""The federation service opens the live view, marks it failed when the run fails, and builds
the Stage 1 document: what ``federation run`` and the flow's task both get."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from fedcare.app import federation
from fedcare.flower.flower_options import FlowerConfig
from fedcare.sites import federation_run
from fedcare_core.config import ExperimentConfig
from fedcare_core.errors import ConfigError
from fedcare_core.sites.schema import schema_for


class _Live:
    def __init__(self) -> None:
        self.lines: list[Any] = []
        self.failed = False

    def __call__(self, line: Any) -> None:
        self.lines.append(line)

    def fail(self) -> None:
        self.failed = True


def _call(monkeypatch: pytest.MonkeyPatch, outcome: Any, live: _Live) -> Any:
    heads: list[dict[str, Any]] = []

    def fake_run(coordinator: Any, schema: Any, **kw: Any) -> Any:
        kw["on_round"]({"round": 1})
        if isinstance(outcome, BaseException):
            raise outcome
        return outcome

    monkeypatch.setattr(federation_run, "run_federation", fake_run)
    monkeypatch.setattr(federation_run, "stage1_document", lambda run, schema: {"run": run.name})

    def opener(head: dict[str, Any]) -> _Live:
        heads.append(head)
        return live

    result = federation.federated_stage1(
        None, schema_for(ExperimentConfig()), min_sites=2, rounds=3, seed=7,  # type: ignore[arg-type]
        flower=FlowerConfig(), run_name="nightly", open_live=opener,
    )  # fmt: skip
    assert heads and heads[0]["run_name"] == "nightly"
    return result


def test_a_finished_run_gives_its_document_result_folder_and_live_view(monkeypatch, tmp_path):
    live = _Live()
    run = SimpleNamespace(name="nightly", run_dir=tmp_path)
    result = _call(monkeypatch, run, live)
    assert result.document == {"run": "nightly"}
    assert result.result_dir == Path(tmp_path) / "result"
    assert result.live is live and live.lines == [{"round": 1}] and not live.failed


def test_a_failed_run_marks_its_live_view_failed_and_raises(monkeypatch):
    live = _Live()
    with pytest.raises(ConfigError, match="sites offline"):
        _call(monkeypatch, ConfigError("sites offline"), live)
    assert live.failed and live.lines == [{"round": 1}]
