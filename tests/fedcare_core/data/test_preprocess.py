import numpy as np
import pandas as pd
import pytest

from fedcare_core.data.preprocess import fit_encoder
from fedcare_core.errors import ConfigError


def _frame():
    return pd.DataFrame(
        {
            "x": [1.0, 2.0, np.nan, 5.0],
            "g": pd.Categorical(["a", "b", "a", None], categories=["a", "b", "c"]),
            "s": ["u", "v", "u", None],
        }
    )


def test_numeric_imputed_standardised_with_indicator():
    enc = fit_encoder(_frame(), ["x"], ["x"])
    out = enc.transform(_frame())
    # median of (1, 2, 5) = 2 imputes the NaN; standardised with the filled mean/std
    filled = np.array([1.0, 2.0, 2.0, 5.0])
    np.testing.assert_allclose(out[:, 0], (filled - filled.mean()) / filled.std(), rtol=1e-6)
    np.testing.assert_array_equal(out[:, 1], [0, 0, 1, 0])


def test_declared_vocabulary_is_used_even_for_unseen_categories():
    enc = fit_encoder(_frame(), ["g"], [], shared=["g"])
    assert enc.categorical == (("g", ("a", "b", "c")),)
    out = enc.transform(_frame())
    # columns: a, b, c, other, missing
    np.testing.assert_array_equal(out[3], [0, 0, 0, 0, 1])
    np.testing.assert_array_equal(out[0], [1, 0, 0, 0, 0])


def test_undeclared_vocabulary_comes_from_training_rows_only():
    train = _frame()
    enc = fit_encoder(train, ["s"], [])
    test = pd.DataFrame({"s": ["w"]})  # unseen at training time
    out = enc.transform(test)
    assert enc.categorical == (("s", ("u", "v")),)
    np.testing.assert_array_equal(out[0], [0, 0, 1, 0])


def test_shared_categorical_without_vocabulary_is_rejected():
    with pytest.raises(ConfigError, match="'s'"):
        fit_encoder(_frame(), ["s"], [], shared=["s"])


def test_width_and_names_agree():
    enc = fit_encoder(_frame(), ["x", "g", "s"], ["x"])
    assert enc.width == len(enc.column_names()) == enc.transform(_frame()).shape[1]
