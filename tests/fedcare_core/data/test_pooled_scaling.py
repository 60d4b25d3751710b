import dataclasses

import numpy as np
import pandas as pd
import pytest

from fedcare_core.config import DataConfig
from fedcare_core.data.clients import build_federation
from fedcare_core.data.pooled_scaling import (
    pooled_knots,
    pooled_moments,
    pooled_scales,
    quantile_scores,
)
from fedcare_core.data.preprocess import FeatureEncoder
from tests.fedcare_core.synthetic import PARTITION, make_cohort


def _clients(seed: int = 0) -> list[pd.DataFrame]:
    rng = np.random.default_rng(seed)
    sizes, shifts = (300, 900, 500), (0.0, 2.0, -1.0)
    frames = []
    for n, shift in zip(sizes, shifts, strict=True):
        visits = rng.poisson(0.4, n).astype(float)
        lab = rng.exponential(1.0, n) + shift
        lab[rng.random(n) < 0.1] = np.nan  # missing values send nothing
        frames.append(pd.DataFrame({"visits": visits, "lab": lab}))
    return frames


def test_pooled_moments_are_those_of_every_clients_rows_together():
    frames = _clients()
    scales = pooled_scales(frames, [["visits", "lab"]] * 3, "federated")
    rows = pd.concat(frames)
    for c in ("visits", "lab"):
        x = rows[c].dropna().to_numpy()
        assert scales[c].center == pytest.approx(x.mean(), rel=1e-12)
        assert scales[c].scale == pytest.approx(x.std(), rel=1e-9)
        assert scales[c].knots is None
    # A column only some clients encode is pooled over those alone.
    only = pooled_scales(frames, [["lab"], ["visits", "lab"], ["visits"]], "federated")
    assert only["lab"].center == pytest.approx(pd.concat(frames[:2])["lab"].mean(), rel=1e-12)
    assert pooled_moments([{}]) == {}


def test_pooled_quantiles_match_the_rows_quantiles_within_a_bin():
    frames = _clients(1)
    scales = pooled_scales(frames, [["visits", "lab"]] * 3, "federated-quantile")
    lab = pd.concat(frames)["lab"].dropna().to_numpy()
    knots = scales["lab"].knots
    assert knots is not None and np.all(np.diff(knots) >= 0)
    bin_width = 16 * lab.std() / 2000
    probs = np.linspace(0, 1, len(knots))
    body = (probs >= 0.05) & (probs <= 0.95)  # the tails' rows are sparser than a bin
    np.testing.assert_allclose(knots[body], np.quantile(lab, probs[body]), atol=3 * bin_width)
    assert knots[0] >= lab.min() - bin_width and knots[-1] <= lab.max() + bin_width
    assert scales["lab"].center == pytest.approx(np.median(lab), abs=3 * bin_width)
    # Normal scores: centred, unit spread, monotone, bounded.
    z = quantile_scores(lab, knots)
    assert abs(z.mean()) < 0.02 and 0.95 < z.std() < 1.05
    order = np.argsort(lab)
    assert np.all(np.diff(z[order]) >= -1e-12) and np.abs(z).max() <= 3.1
    assert pooled_knots(np.zeros(10), 0.5, 1.0).tolist() == [0.5] * 201


def test_a_count_mostly_zero_keeps_its_ties_together():
    frames = _clients(2)
    knots = pooled_scales(frames, [["visits"]] * 3, "federated-quantile")["visits"].knots
    visits = pd.concat(frames)["visits"].to_numpy()
    z = quantile_scores(visits, knots)
    for v in np.unique(visits):
        assert np.ptp(z[visits == v]) == 0  # one value, one score
    assert len(np.unique(z)) == len(np.unique(visits))


@pytest.mark.parametrize("scaling", ["federated", "federated-quantile"])
def test_every_client_encodes_a_raw_value_alike_and_the_packaged_encoder_keeps_it(scaling):
    cohort = make_cohort(600)
    config = dataclasses.replace(DataConfig(clients=3), scaling=scaling)
    federation = build_federation(cohort, PARTITION, config, seed=0)
    own = build_federation(cohort, PARTITION, DataConfig(clients=3), seed=0)
    raw = cohort.features.iloc[:50]
    encoded = [c.common_encoder.transform(raw) for c in federation.clients]
    for other in encoded[1:]:
        np.testing.assert_array_equal(other, encoded[0])
    # Each client's own statistics (the default) encode the same rows differently.
    apart = [c.common_encoder.transform(raw) for c in own.clients]
    assert not np.array_equal(apart[0], apart[1])
    encoder = federation.clients[0].common_encoder
    back = FeatureEncoder.from_dict(encoder.to_dict())
    np.testing.assert_array_equal(back.transform(raw), encoded[0])
    assert (encoder.quantiles is not None) == (scaling == "federated-quantile")
