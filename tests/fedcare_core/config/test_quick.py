"""FEDCARE_QUICK caps rounds, epochs, patients and seeds, and changes nothing without it."""

from __future__ import annotations

from fedcare.experiments.cells import experiment_cells
from fedcare_core.algorithms import validate_config
from fedcare_core.config import ExperimentConfig, quick


def test_without_the_variable_nothing_changes(monkeypatch):
    monkeypatch.delenv(quick.QUICK_ENV, raising=False)
    config = ExperimentConfig()
    assert validate_config(config) is config
    monkeypatch.setenv(quick.QUICK_ENV, "0")
    assert validate_config(config) is config
    assert len({c.config(config).seed for c in experiment_cells("comparison", 3)}) == 3


def test_with_it_every_validated_configuration_is_capped(monkeypatch, capsys):
    monkeypatch.setenv(quick.QUICK_ENV, "1")
    monkeypatch.setattr(quick, "_said", False)
    big = ExperimentConfig().with_overrides(stage1={"rounds": 100}, data={"max_patients": 50000})
    small = validate_config(big)
    assert small.stage1.rounds == quick.QUICK_ROUNDS
    assert small.stage2.epochs == quick.QUICK_EPOCHS
    assert small.baselines.bound_epochs == quick.QUICK_EPOCHS
    assert small.data.max_patients == quick.QUICK_PATIENTS
    assert small.stage1.local_steps == big.stage1.local_steps  # only the sizes
    tiny = big.with_overrides(
        stage1={"rounds": 1}, stage2={"epochs": 1}, baselines={"bound_epochs": 2},
        data={"max_patients": 100},
    )  # fmt: skip
    assert validate_config(tiny) == tiny  # already smaller: kept
    cells = experiment_cells("comparison", 10)
    assert {c.config(big).seed for c in cells} == {0}
    # A grid's cell loads and runs at the quick size (not only its validation).
    assert {c.config(big).data.max_patients for c in cells} == {quick.QUICK_PATIENTS}
    assert {c.config(big).stage1.rounds for c in cells} == {quick.QUICK_ROUNDS}
    assert capsys.readouterr().err.count(quick.QUICK_ENV) == 1  # said once
