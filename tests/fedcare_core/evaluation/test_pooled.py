import numpy as np
import pytest

from fedcare_core.evaluation.pooled import (
    EvaluationSettings,
    PooledRows,
    pooled_intervals,
    subgroup_results,
)
from fedcare_core.objectives.metrics import auroc


def _rows(n_patients=300, per_patient=1, seed=0):
    rng = np.random.default_rng(seed)
    risk = rng.random(n_patients)
    y = (rng.random(n_patients) < risk).astype(float)
    repeat = lambda a: np.repeat(a, per_patient)  # noqa: E731
    return PooledRows(
        y=repeat(y), p=repeat(risk), groups=repeat(np.arange(n_patients)), subgroups={}
    )


def test_intervals_hold_the_estimate_and_count_patients():
    rows = _rows()
    out = pooled_intervals("binary", rows, EvaluationSettings(bootstrap=200, seed=1))
    assert set(out) == {"auroc", "auprc", "brier"}
    estimate = auroc(rows.y, rows.p).value
    assert out["auroc"]["low"] < estimate < out["auroc"]["high"]
    assert out["auroc"]["patients"] == 300 and out["auroc"]["resamples"] == 200
    assert out["auroc"]["level"] == 0.95
    again = pooled_intervals("binary", rows, EvaluationSettings(bootstrap=200, seed=1))
    assert again == out  # seeded
    assert pooled_intervals("binary", rows, EvaluationSettings(bootstrap=0)) == {}
    mae = pooled_intervals("regression", rows, EvaluationSettings(bootstrap=50))
    assert set(mae) == {"mae_days"}


def test_a_patients_rows_move_together():
    """Five identical stays per patient: resampling rows would pretend 5x the evidence."""
    by_patient = _rows(per_patient=5)
    by_row = PooledRows(
        by_patient.y, by_patient.p, np.arange(len(by_patient.y)), by_patient.subgroups
    )
    settings = EvaluationSettings(bootstrap=300, seed=2)
    wide = pooled_intervals("binary", by_patient, settings)["auroc"]
    narrow = pooled_intervals("binary", by_row, settings)["auroc"]
    assert wide["patients"] == 300 and narrow["patients"] == 1500
    assert (wide["high"] - wide["low"]) > 1.6 * (narrow["high"] - narrow["low"])


def test_subgroups_report_each_group_and_the_largest_gap():
    rng = np.random.default_rng(3)
    n = 600
    group = np.where(np.arange(n) % 3 == 0, "a", np.where(np.arange(n) % 3 == 1, "b", "missing"))
    y = (rng.random(n) < 0.4).astype(float)
    # group a: informative risks; group b: noise
    p = np.where(group == "a", 0.3 + 0.4 * y + 0.05 * rng.random(n), rng.random(n))
    flagged = p >= 0.5
    rows = PooledRows(y, p, np.arange(n), {"sex": group.astype(str)}, flagged)
    out = subgroup_results("binary", rows)["sex"]
    assert [g["group"] for g in out["auroc"]["groups"]] == ["a", "b"]  # missing: no subgroup
    values = {g["group"]: g["value"] for g in out["auroc"]["groups"]}
    assert values["a"] == pytest.approx(1.0) and values["a"] - values["b"] == pytest.approx(
        out["auroc"]["gap"]
    )
    assert (out["auroc"]["highest"], out["auroc"]["lowest"]) == ("a", "b")
    sens = {g["group"]: g["value"] for g in out["sensitivity"]["groups"]}
    for name in ("a", "b"):
        positives = (group == name) & (y > 0.5)
        assert sens[name] == pytest.approx(flagged[positives].mean())


def test_small_subgroups_do_not_count_towards_the_gap():
    y = np.r_[np.tile([0.0, 1.0], 100), [0.0, 1.0, 0.0, 1.0]]
    p = np.r_[np.tile([0.2, 0.8], 100), [0.9, 0.1, 0.9, 0.1]]
    labels = np.array(["big"] * 200 + ["tiny"] * 4)
    out = subgroup_results("regression", PooledRows(y, p, np.arange(204), {"race": labels}))
    report = out["race"]["mae_days"]
    assert report["gap"] is None and not report["groups"][1]["eligible"]
