"""The model card of a client's deployed model: what a clinician reviewing it needs."""

from __future__ import annotations

import datetime as dt
import re

from fedcare.tracking.model_card import model_card_html


def test_the_card_says_what_when_how_well_and_how_calibrated(logged):
    result = logged.result
    doc = result.to_dict()
    for index, client in enumerate(result.federation.clients):
        page = model_card_html(result, index, written=dt.date(2026, 12, 4))
        assert "<h2>Intended use</h2>" in page and "<h2>How it was chosen</h2>" in page
        assert f"{client.train.n} / {client.val.n} / {client.test.n}" in page
        assert "2026-12-04" in page
        for objective in client.objectives:
            entry = doc["objectives"][objective]
            mine = next(c for c in entry["clients"] if c["client"] == client.client_id)
            section = page.split(f"<h2>{objective}</h2>")[1].split("<h2>")[0]
            label = "AUROC" if entry["metric"] == "auroc" else "MAE (days)"
            value = mine["value"]
            shown = "n/a" if value is None else f"{value:.3f}"
            assert f"<td>{label}</td><td>{shown}</td>" in section
            if entry["metric"] == "auroc":
                calibrator = result.predictors[index].calibration[objective]
                assert f"<b>Calibration:</b> {calibrator.update}" in section
                assert "Brier score of the base rate" in section and "sensitivity" in section
            else:
                assert "bias (days)" in section
                interval = result.predictors[index].intervals[objective]
                low, high = (
                    f"<code>{objective}_days_low</code>",
                    f"<code>{objective}_days_high</code>",
                )
                assert low in section and high in section
                assert f"a 90 % prediction interval fitted on this site's {interval.n} " in section
                assert "<td>prediction interval coverage (nominal 90 %)</td>" in section
                covered = mine["clinical"]["interval_coverage"]
                assert f"<td>{covered:.3f}</td>" in section
                assert "prediction interval mean width (days)" in section
        # tiny synthetic test sets: the card says their metrics are uncertain
        assert "test rows; its metrics are uncertain" in page


def test_the_card_holds_no_row_and_escapes_text(logged):
    page = model_card_html(logged.result, 0)
    assert "<script" not in page
    assert not re.search(r"patient_?(nbr|id)\s*[=:]", page, re.IGNORECASE)


def test_a_real_sites_card_has_intervals_subgroups_and_curves(data_dir):
    from fedcare_core.config import ExperimentConfig
    from fedcare_core.data.loading import load_dataset
    from fedcare_core.run.pipeline import run_experiment

    config = ExperimentConfig.from_dict(
        {
            "algorithm": "fedavg",
            "data": {"clients": 3, "max_patients": 5000},
            "stage1": {"rounds": 8},
        }
    )
    loaded = load_dataset(config.data, data_dir)
    result = run_experiment(loaded.cohort, loaded.partition, config)
    binary = next(i for i, c in enumerate(result.federation.clients) if c.objectives[0] != "los")
    page = model_card_html(result, binary)
    assert "<b>Subgroups</b>" in page and "<td>50-70</td>" in page and "<td>race</td>" in page
    assert re.search(r"<td>AUROC</td><td>[0-9.]+</td><td>[0-9.]+ \[[0-9.]+, [0-9.]+\]</td>", page)
    assert 'src="data:image/png;base64,' in page
    assert "Predicted at:</b> " in page and "not declared" not in page


def test_the_card_states_the_sites_preference_for_an_objective():
    from fedcare.tracking.model_card import _preference_text
    from fedcare_core.config.preferences import Preference

    assert "plain" in _preference_text(None)
    assert "weighs 3 times more" in _preference_text(Preference("sensitivity", 3.0))
    fair = _preference_text(Preference("fair", 0.5, "race", "auroc"))
    assert "fair(race)" in fair and "0.5 × the gap in auroc between the race subgroups" in fair
