from fedcare.tracking.objective_metrics import objective_values

DOC = {
    "objectives": {
        "readmission": {
            "metric": "auroc",
            "pooled": 0.62,
            "mean_over_clients": 0.61,
            "std_over_clients": 0.02,
            "clients": [{"client": 0, "value": 0.6}, {"client": 1, "value": None}],
            "clinical": {"brier": 0.1, "brier_reference": 0.103, "sensitivity": 0.8},
            "clinical_spread": {"brier": {"mean": 0.11, "std": 0.01, "min": 0.1, "max": 0.12}},
            "intervals": {"auroc": {"low": 0.6, "high": 0.64, "level": 0.95}},
            "subgroups": {"age": {"auroc": {"gap": 0.03}, "sensitivity": {"gap": None}}},
        },
        "los": {
            "metric": "mae_days",
            "pooled": 2.1,
            "clients": [],
            "clinical": {"bias_days": -0.4},
        },
    }
}


def test_clinical_metrics_are_logged_beside_the_main_metric():
    values = {k: v for k, v, step in objective_values(DOC)}
    assert values["test/readmission.auroc.pooled"] == 0.62
    assert values["test_by_client/readmission.auroc.client0"] == 0.6
    assert values["test/readmission.brier.pooled"] == 0.1
    assert values["test/readmission.brier_reference.pooled"] == 0.103
    assert values["test/readmission.sensitivity.pooled"] == 0.8
    assert values["test/readmission.brier.mean_over_clients"] == 0.11
    assert values["test/readmission.brier.std_over_clients"] == 0.01
    assert values["test/los.bias_days.pooled"] == -0.4
    assert "test/readmission.brier.max_over_clients" not in values
    assert values["test/readmission.auroc.pooled_low"] == 0.6
    assert values["test/readmission.auroc.pooled_high"] == 0.64
    assert values["test/readmission.auroc.gap_age"] == 0.03
    assert values["test/readmission.sensitivity.gap_age"] is None  # the logger skips it
    assert all(step == 0 for _, _, step in objective_values(DOC))
