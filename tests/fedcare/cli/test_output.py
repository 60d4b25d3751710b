"""The results table ``fedcare run`` prints, with its clinical metrics."""

from fedcare.cli.output import privacy_line, results_table


def _doc(objectives):
    return {
        "algorithm": "fedavg",
        "dataset": "diabetes130",
        "clients": [{}, {}],
        "rounds": [{}],
        "timing": {"total_s": 1.0},
        "objectives": objectives,
    }


def test_the_clinical_metrics_follow_the_main_table():
    readmission = {
        "metric": "auroc",
        "pooled": 0.62,
        "mean_over_clients": 0.61,
        "std_over_clients": 0.01,
        "clients": [{}, {}],
        "intervals": {"auroc": {"low": 0.6, "high": 0.64}},
        "subgroups": {"age": {"auroc": {"groups": [{"group": "<50", "value": 0.64, "n": 120},
                                                   {"group": ">=70", "value": 0.6, "n": 340}],
                                        "gap": 0.04, "highest": "<50", "lowest": ">=70"}},
                      "race": {"auroc": {"groups": [], "gap": None}}},
        "clinical": {"auprc": 0.185, "brier": 0.1006, "brier_reference": 0.1032,
                     "calibration_slope": 0.98, "ece": 0.007, "mean_risk": 0.117,
                     "observed_rate": 0.1169, "sensitivity": 0.8, "specificity": 0.35,
                     "ppv": 0.14, "npv": 0.93},
    }  # fmt: skip
    los = {
        "metric": "mae_days",
        "pooled": 2.2,
        "mean_over_clients": 2.1,
        "clients": [{}],
        "clinical": {"bias_days": 0.5, "mae_days_0-3": 1.8, "mae_days_7-inf": 5.4},
    }
    lines = results_table(_doc({"readmission": readmission, "los": los})).splitlines()
    head = next(i for i, line in enumerate(lines) if line.split()[:2] == ["objective", "AUROC"])
    assert lines[head + 2].split() == [
        "readmission", "0.620", "[0.600,", "0.640]", "0.185", "0.101", "(0.103)", "0.98",
        "0.007", "0.117", "/", "0.117", "0.800", "0.350", "0.140", "0.930",
    ]  # fmt: skip
    assert "los: MAE 2.20 d; bias +0.50 d; MAE by length 0-3 d 1.80, 7-inf d 5.40" in lines
    assert (
        "readmission AUROC by age: gap 0.040 (<50 0.640, 120 rows; >=70 0.600, 340 rows)" in lines
    )
    assert lines[-1] == "readmission AUROC by race: fewer than two subgroups to compare"


def test_a_document_without_clinical_metrics_prints_as_before():
    doc = _doc({"los": {"metric": "mae_days", "pooled": 2.2, "mean_over_clients": None,
                        "clients": []}})  # fmt: skip
    assert "clinical" not in results_table(doc) and "bias" not in results_table(doc)


def test_the_privacy_line_names_the_accountant_and_the_other_accountants_epsilon():
    from fedcare_core.config import Stage1Config
    from fedcare_core.privacy.mechanism import privacy_record

    record = privacy_record(Stage1Config(rounds=10, dp_noise_multiplier=1.0).privacy(), 10)
    line = privacy_line(record)
    pld, rdp = record["epsilon_by_accountant"]["pld"], record["epsilon_by_accountant"]["rdp"]
    assert f"ε = {pld:.3f}" in line and "PLD" in line and f"by rdp {rdp:.3f}" in line
    assert pld < rdp and record["dp_accountant"] == "pld"
    rdp_record = privacy_record(
        Stage1Config(rounds=10, dp_noise_multiplier=1.0, dp_accountant="rdp").privacy(), 10
    )
    assert f"by pld {pld:.3f}" in privacy_line(rdp_record) and "RDP" in privacy_line(rdp_record)


def _auroc(values, std):
    return {
        "metric": "auroc",
        "pooled": 0.6,
        "mean_over_clients": 0.6,
        "std_over_clients": std,
        "clients": [{"client": k, "value": v} for k, v in enumerate(values)],
    }


def test_one_client_prints_no_spread_and_a_singular_count():
    doc = _doc({"readmission": _auroc([0.6], 0.0)}) | {"clients": [{}], "rounds": [{}]}
    table = results_table(doc)
    assert table.splitlines()[0].startswith("fedavg on diabetes130: 1 client, 1 round, ")
    assert "±" not in table and "1 clients" not in table and "1 rounds" not in table


def test_the_spread_shows_over_two_clients_and_never_as_zero():
    assert "0.6000 ± 0.012" in results_table(_doc({"readmission": _auroc([0.59, 0.61], 0.0123)}))
    same = results_table(_doc({"readmission": _auroc([0.6, 0.6], 0.0)}))
    assert "± <0.001" in same and "± 0.000" not in same
    undefined = _auroc([0.6, None], 0.0)  # one client scored: no spread to show
    assert "±" not in results_table(_doc({"readmission": undefined}))
    assert results_table(_doc({"readmission": _auroc([0.6, 0.7], 0.05)})).startswith(
        "fedavg on diabetes130: 2 clients, 1 round, "
    )


def test_every_phase_bar_says_what_the_phase_does():
    from fedcare.cli.output import ProgressBars
    from fedcare_core.algorithms import algorithm_names, get_algorithm

    phases = {get_algorithm(n).personal_phase for n in algorithm_names()} - {None}
    assert "own-trees" in phases and "local" in phases
    bars = ProgressBars()
    for phase in sorted(phases | {"stage1"}):
        bars(phase, 0, 3)
    labels = {phase: bar.desc for phase, bar in bars.bars.items()}
    bars.close()
    assert labels["own-trees"] == "Own trees (each client alone)"
    assert all(label != phase and label.strip() for phase, label in labels.items())
    assert bars.bars["local"].unit == "client" and bars.bars["stage1"].unit == "round"
