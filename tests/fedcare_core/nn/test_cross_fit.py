import numpy as np
import pytest
import torch

from fedcare_core.data.clients import SplitArrays
from fedcare_core.nn.cross_fit import FoldSelection, validation_folds


def _split(n: int, groups: np.ndarray | None = None) -> SplitArrays:
    x = np.arange(n, dtype=np.float32).reshape(n, 1)
    return SplitArrays(x, np.zeros((n, 0), np.float32), np.zeros((n, 1), np.float32), groups)


def test_folds_cover_the_rows_once_and_keep_a_patients_rows_together():
    groups = np.repeat(np.arange(20), 3)
    folds = validation_folds(_split(60, groups), seed=4, client_id=2, folds=5)
    assert len(folds) == 5
    assert sorted(np.concatenate(folds).tolist()) == list(range(60))
    assert {len(f) for f in folds} == {12}
    for rows in folds:
        other = np.setdiff1d(np.arange(60), rows)
        assert not set(groups[rows]) & set(groups[other])


def test_folds_are_keyed_by_seed_and_client():
    split = _split(40)
    first = validation_folds(split, seed=0, client_id=1)
    again = validation_folds(split, seed=0, client_id=1)
    assert all(np.array_equal(a, b) for a, b in zip(first, again, strict=True))
    assert not np.array_equal(first[0], validation_folds(split, seed=0, client_id=2)[0])
    assert not np.array_equal(first[0], validation_folds(split, seed=1, client_id=1)[0])


def test_too_few_patients_give_no_folds():
    assert validation_folds(_split(9), seed=0, client_id=0, folds=5) == []
    assert validation_folds(_split(30, np.zeros(30, np.int64)), seed=0, client_id=0) == []
    with pytest.raises(ValueError, match="at least two folds"):
        validation_folds(_split(30), seed=0, client_id=0, folds=1)


def test_each_fold_is_predicted_by_the_epoch_the_other_folds_kept():
    model = torch.nn.Linear(1, 1, bias=False)
    split = _split(6)
    folds = [np.array([0, 3]), np.array([1, 4]), np.array([2, 5])]
    select = FoldSelection(model, folds)
    assert [s.tolist() for s in select.selecting] == [[1, 2, 4, 5], [0, 2, 3, 5], [0, 1, 3, 4]]
    # Epoch weights 1..4; the loss over each fold's selecting rows (the other folds'):
    # fold 0's is lowest at weight 2, fold 1's at weight 3 (a NaN never wins), fold 2's at 4.
    epochs = {
        1.0: (5.0, 5.0, 5.0),
        2.0: (1.0, 4.0, 4.0),
        3.0: (2.0, 1.0, float("nan")),
        4.0: (3.0, float("nan"), 0.5),
    }
    for weight, losses in epochs.items():
        model.weight.data.fill_(weight)
        select.update(losses)

    def predict(rows: SplitArrays) -> dict[str, np.ndarray]:
        with torch.no_grad():
            return {"s": model(torch.from_numpy(rows.x_common))[:, 0].double().numpy()}

    out = select.out_of_fold(split, predict)["s"]
    x = np.arange(6.0)
    for rows, weight in zip(folds, (2.0, 3.0, 4.0), strict=True):
        np.testing.assert_allclose(out[rows], weight * x[rows])


def test_fold_selection_needs_two_folds():
    with pytest.raises(ValueError, match="at least two folds"):
        FoldSelection(torch.nn.Linear(1, 1), [np.arange(3)])
