import numpy as np
import pytest

from fedcare_core.objectives.metrics import auroc, mae


def test_auroc_hand_made():
    y = np.array([0, 0, 1, 1])
    assert auroc(y, np.array([0.1, 0.4, 0.35, 0.8])).value == pytest.approx(0.75)
    assert auroc(y, np.array([0.1, 0.2, 0.3, 0.4])).value == 1.0
    # ties count half
    assert auroc(y, np.array([0.5, 0.5, 0.5, 0.5])).value == 0.5


def test_auroc_single_class_is_none_with_reason():
    m = auroc(np.array([1.0, 1.0, np.nan]), np.array([0.2, 0.3, 0.4]))
    assert m.value is None and "no negative" in m.reason


def test_mae_ignores_unlabelled_rows():
    m = mae(np.array([1.0, np.nan, 3.0]), np.array([2.0, 100.0, 1.0]))
    assert m.value == pytest.approx(1.5) and m.n == 2
