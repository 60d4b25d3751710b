"""The LOS intervals' test coverage and width, per client and pooled, in the evaluation report."""

from __future__ import annotations

import numpy as np
import pytest

from fedcare_core.config import DataConfig
from fedcare_core.data.clients import build_federation
from fedcare_core.evaluation.clients import evaluate
from fedcare_core.evaluation.conformal import ConformalInterval, interval_metrics
from fedcare_core.evaluation.interval_report import INTERVAL_KEYS, with_interval_metrics
from tests.fedcare_core.synthetic import PARTITION, make_cohort

#: Half-width (log1p-days) of each LOS client's interval; None: no interval.
HALF_WIDTHS = {0: 0.3, 1: 0.8, 5: None}


@pytest.fixture(scope="module")
def federation():
    fed = build_federation(make_cohort(600), PARTITION, DataConfig(clients=6), 3)
    los = [c.client_id for c in fed.clients if "los" in c.objectives]
    assert los == sorted(HALF_WIDTHS)  # seed 3: three clients pursue length of stay
    return fed


def _point(split, objective):
    n = split.n
    return np.full(n, 3.0) if objective == "los" else np.linspace(0.05, 0.95, n)


def _interval_scorer(client_id):
    q = HALF_WIDTHS.get(client_id)
    interval = ConformalInterval(0.9, q, 50, "test")

    def score(split, objective):
        return interval.bounds(_point(split, objective))

    return score


def _rows(client):
    y = client.test.y[:, client.objectives.index("los")]
    keep = np.isfinite(y)
    low, high = ConformalInterval(0.9, HALF_WIDTHS[client.client_id], 50).bounds(
        np.full(len(y), 3.0)
    )
    return y[keep], low[keep], high[keep]


@pytest.fixture(scope="module")
def reports(federation):
    before = evaluate(federation, [_point] * len(federation.clients))
    scorers = [_interval_scorer(c.client_id) for c in federation.clients]
    return before, with_interval_metrics(before, federation, scorers, level=0.9)


def test_each_client_with_an_interval_gets_its_coverage_and_width(federation, reports):
    _, after = reports
    los = after.get("los")
    for entry in los.clients:
        client = next(c for c in federation.clients if c.client_id == entry.client_id)
        if HALF_WIDTHS[entry.client_id] is None:
            assert not set(INTERVAL_KEYS) & set(entry.clinical)
            continue
        expected = interval_metrics(*_rows(client))
        assert entry.clinical["interval_coverage"] == expected.coverage
        assert entry.clinical["interval_width_days"] == expected.mean_width_days
        assert 0.0 < expected.coverage < 1.0
        assert "mae_days_0-3" in entry.clinical  # the LOS metrics are kept


def test_the_pooled_values_pool_the_rows_of_clients_with_an_interval(federation, reports):
    _, after = reports
    los = after.get("los")
    parts = [_rows(c) for c in federation.clients if HALF_WIDTHS.get(c.client_id) is not None]
    pooled = interval_metrics(*(np.concatenate([p[i] for p in parts]) for i in range(3)))
    assert los.clinical["interval_coverage"] == pooled.coverage
    assert los.clinical["interval_width_days"] == pooled.mean_width_days
    assert los.clinical["interval_level"] == 0.9
    assert los.clinical_spread["interval_coverage"]["n"] == 2
    widths = [c.clinical["interval_width_days"] for c in los.clients if c.client_id != 5]
    assert los.clinical_spread["interval_width_days"]["max"] == max(widths)
    assert widths[1] > widths[0]  # the wider half-width


def test_binary_objectives_are_left_as_they_were(reports):
    before, after = reports
    assert [o.name for o in after.objectives] == [o.name for o in before.objectives]
    for old, new in zip(before.objectives, after.objectives, strict=True):
        if old.name != "los":
            assert new == old
        else:
            assert {k: v for k, v in new.clinical.items() if not k.startswith("interval_")} == (
                old.clinical
            )


def test_no_interval_anywhere_gives_undefined_values(federation, reports):
    before, _ = reports
    nothing = [_interval_scorer(5)] * len(federation.clients)
    after = with_interval_metrics(before, federation, nothing)
    los = after.get("los")
    assert los.clinical["interval_coverage"] is None
    assert "interval_level" not in los.clinical
    assert "interval_coverage" not in los.clinical_spread
    assert all("interval_coverage" not in c.clinical for c in los.clients)
