import numpy as np
import pytest
import xgboost as xgb

from fedcare_core.algorithms.fedxgb.trees import Ensemble, TreeSettings, boost, target


def _rows(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, 4)).astype(np.float32)
    return x, (x[:, 0] + rng.normal(size=n) > 0.8).astype(np.float64)


def test_round_one_base_is_the_row_weighted_mean_of_the_clients_bases():
    (xa, ya), (xb, yb) = _rows(300, 0), _rows(900, 1)
    settings = TreeSettings("binary", 0.1, 3)
    a, b = boost(xa, ya, None, settings, 1), boost(xb, yb, None, settings, 1)
    ensemble = Ensemble.first("binary", [(a, 300), (b, 900)])

    def logit(p: float) -> float:
        return float(np.log(p / (1 - p)))

    # XGBoost starts a logistic model from the rows' positive rate.
    expected = (300 * logit(ya.mean()) + 900 * logit(yb.mean())) / 1200
    assert ensemble.base == pytest.approx(expected, abs=1e-4)
    assert len(ensemble.trees) == 2


def test_a_margin_kept_and_extended_by_new_rounds_equals_a_fresh_one_exactly():
    x, y = _rows(800, 2)
    settings = TreeSettings("binary", 0.2, 3)
    ensemble = Ensemble.first("binary", [(boost(x, y, None, settings, 2), len(y))])
    before = ensemble.margin(x)
    ensemble.append_round([boost(x, y, before, settings, 3), boost(x, y, before, settings, 1)])
    assert len(ensemble.trees) == 6 and ensemble.bounds == [2, 6]
    after = ensemble.margin(x)
    np.testing.assert_array_equal(ensemble.margin(x, 1, before), after)
    # The whole ensemble as one XGBoost model scores the same rows alike (float32 sums).
    np.testing.assert_allclose(
        ensemble.booster().predict(xgb.DMatrix(x), output_margin=True), after, atol=1e-5
    )
    # The new trees fit the residual: the training loss falls.

    def loss(m: np.ndarray) -> float:
        return float(np.mean(np.logaddexp(0, m) - y * m))

    assert loss(after) < loss(before)


def test_the_packaged_bytes_are_the_same_model():
    x, _ = _rows(500, 3)
    days = np.exp(x[:, 1]) * 3
    settings = TreeSettings("regression", 0.3, 4)
    ensemble = Ensemble.first(
        "regression", [(boost(x, target("regression", days), None, settings, 4), 500)]
    )
    loaded = xgb.Booster()
    loaded.load_model(bytearray(ensemble.to_bytes()))
    np.testing.assert_allclose(
        loaded.predict(xgb.DMatrix(x), output_margin=True), ensemble.margin(x), atol=1e-6
    )
    # reg:absoluteerror starts from the median of log1p(days).
    assert ensemble.base == pytest.approx(np.median(np.log1p(days)), abs=1e-3)


def test_an_ensemble_survives_its_message_form():
    x, y = _rows(600, 4)
    settings = TreeSettings("binary", 0.2, 3)
    ensemble = Ensemble.first("binary", [(boost(x, y, None, settings, 3), 600)])
    ensemble.append_round([boost(x, y, ensemble.margin(x), settings, 2)])
    back = Ensemble.from_json("binary", ensemble.to_json())
    assert len(back.trees) == 5 and back.bounds == [3, 5]
    assert back.base == ensemble.base  # exactly: the message carries it beside XGBoost's
    np.testing.assert_array_equal(back.margin(x), ensemble.margin(x))
    assert back.to_json() == ensemble.to_json()
    assert back.truncated(3).bounds == [3] and len(back.truncated(3).trees) == 3
