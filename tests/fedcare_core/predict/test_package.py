"""A client's package scores raw rows: missing columns, unseen categories, empty input, round trip.

On the real Diabetes 130-US file (a small run) and the MIMIC-III demo; skipped without them.
"""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch

from fedcare_core.config import ExperimentConfig
from fedcare_core.data.clients import assign_patients, split_patients
from fedcare_core.data.loading import load_dataset
from fedcare_core.data.rows import row_format
from fedcare_core.errors import ConfigError, DataError
from fedcare_core.predict.package import load_package, save_package
from fedcare_core.predict.predictors import predictor_scorer
from fedcare_core.run.packaging import client_package
from fedcare_core.run.pipeline import run_experiment

pytestmark = pytest.mark.realdata


def _small(dataset: str, **data: object) -> ExperimentConfig:
    return ExperimentConfig.from_dict(
        {
            "seed": 2,
            "data": {"dataset": dataset, **data},
            "stage1": {"rounds": 2},
            "stage2": {"epochs": 2},
        }
    )


@pytest.fixture(scope="module")
def diabetes(data_dir: Path):
    config = _small("diabetes130", clients=3, max_patients=2000)
    loaded = load_dataset(config.data, data_dir)
    result = run_experiment(loaded.cohort, loaded.partition, config, source=loaded.source)
    return result


@pytest.fixture(scope="module")
def raw_rows(data_dir: Path) -> pd.DataFrame:
    """The first 300 rows of ``diabetic_data.csv`` as pandas reads them by default, unlabelled."""
    archive = next(data_dir.glob("diabetes130/*.zip"))
    with zipfile.ZipFile(archive) as z:
        name = next(n for n in z.namelist() if n.endswith("diabetic_data.csv"))
        data = z.read(name)
    rows = pd.read_csv(io.BytesIO(data), nrows=300)
    return rows.drop(columns=["time_in_hospital", "readmitted"])


def test_raw_rows_are_scored_into_named_columns(diabetes, raw_rows):
    for i, client in enumerate(diabetes.federation.clients):
        package = client_package(diabetes, i)
        out = package.score(raw_rows)
        assert list(out.columns) == package.output_columns
        assert out.index.equals(raw_rows.index)
        kinds = package.predictor.kinds
        for column, kind in zip(out.columns[: len(kinds)], kinds, strict=True):
            assert column.endswith("_probability" if kind == "binary" else "_days")
            values = out[column].to_numpy()
            assert np.isfinite(values).all()
            assert ((values > 0) & (values < 1)).all() if kind == "binary" else (values > 0).all()
        for objective in package.regression_objectives:  # then each LOS prediction's interval
            days = out[f"{objective}_days"]
            low, high = out[f"{objective}_days_low"], out[f"{objective}_days_high"]
            assert ((low <= days) & (days <= high)).all() and (low >= 0).all()
        assert len(out.columns) == len(kinds) + 2 * len(package.regression_objectives)
        # Labels present or absent, identifiers, column order: the same predictions.
        shuffled = raw_rows.iloc[:, ::-1].assign(time_in_hospital=3, readmitted="NO")
        pd.testing.assert_frame_equal(package.score(shuffled), out)
        assert set(package.input_columns) <= set(client.common_features + client.private_features)


def test_a_package_saved_and_loaded_predicts_the_same(diabetes, raw_rows, tmp_path):
    package = client_package(diabetes, 1)
    save_package(package, tmp_path / "pkg")
    loaded = load_package(tmp_path / "pkg")
    assert loaded.input_columns == package.input_columns
    pd.testing.assert_frame_equal(loaded.score(raw_rows), package.score(raw_rows))
    text = (tmp_path / "pkg" / "package.json").read_text()
    assert "encounter_id" not in text and "patient_nbr" not in text


class _NotATensor:
    pass


@pytest.mark.parametrize(
    ("content", "words"),
    [
        ("object", "holds objects other than tensors (refused, not loaded)"),
        ("truncated", "not a weights file"),
        ("empty", "not a weights file"),
    ],
)
def test_a_weights_file_that_is_not_one_is_refused_by_name(diabetes, tmp_path, content, words):

    folder = save_package(client_package(diabetes, 0), tmp_path / "pkg")
    weights = folder / "weights.pt"
    if content == "object":  # loading it unrestricted would run the pickle's code
        torch.save({"w": _NotATensor()}, weights)
    else:
        weights.write_bytes(weights.read_bytes()[:200] if content == "truncated" else b"")
    with pytest.raises(ValueError, match=r"weights\.pt: ") as refused:
        load_package(folder)
    assert words in str(refused.value) and "\n" not in str(refused.value)


def test_a_missing_column_is_named(diabetes, raw_rows):
    package = client_package(diabetes, 0)
    column = package.input_columns[3]
    with pytest.raises(DataError, match=f"'{column}'") as info:
        package.score(raw_rows.drop(columns=[column]), source="new.csv")
    assert info.value.column == column and info.value.file == "new.csv"
    with pytest.raises(DataError, match="and 4 more"):
        package.score(raw_rows.drop(columns=package.input_columns[:12]))


def test_unseen_categories_follow_the_policy(diabetes, raw_rows):
    package = client_package(diabetes, 0)
    assert package.unseen_categories == "refuse"
    rows = raw_rows.copy()
    rows.loc[[4, 9], "gender"] = "Robot"
    with pytest.raises(DataError, match="outside the column's known categories") as info:
        package.score(rows)
    assert info.value.column == "gender" and info.value.rows == (5, 10)
    assert "Robot" not in str(info.value)
    scored = package.score(rows, unseen_categories="other")
    # Only the two rows change; they are encoded in gender's 'other' indicator.
    same = np.isclose(scored.to_numpy(), package.score(raw_rows).to_numpy(), rtol=0, atol=0)
    assert same.all(axis=1).sum() >= 298
    with pytest.raises(ConfigError, match="unseen_categories"):
        package.score(rows, unseen_categories="guess")


def test_missing_values_are_imputed_as_in_training(diabetes, raw_rows):
    """NaN, '?' and an empty cell are one missing value: its own indicator, not a category."""
    package = client_package(diabetes, 0)
    assert "race" in package.input_columns
    row = raw_rows.iloc[[0, 0, 0, 0]].reset_index(drop=True)
    row["encounter_id"] = [11, 12, 13, 14]  # one encounter per row, as a run requires
    row["race"] = pd.Series([np.nan, "?", "", "Caucasian"], dtype=object)
    got = package.score(row).to_numpy()
    assert (got[1] == got[0]).all() and (got[2] == got[0]).all()
    assert np.isfinite(got).all()
    features = row_format("diabetes130").features(
        row, package.input_columns, package.numeric_columns, None, "refuse"
    )
    encoder = package.common_encoder
    missing = encoder.column_names().index("race=__missing__")
    assert encoder.transform(features)[:, missing].tolist() == [1.0, 1.0, 1.0, 0.0]


def test_a_value_that_cannot_be_scored_names_its_column_and_rows(diabetes, raw_rows):
    package = client_package(diabetes, 0)
    for column, value, words in [
        ("num_medications", "many", "non-numeric"),
        ("num_medications", 2.5, "non-integer"),
        ("num_medications", 5000, "from 0 to 200"),
        ("age", "[70-90)", "ten brackets"),
        ("diag_1", "ABC", "ICD-9-CM"),
        ("admission_source_id", np.nan, "is missing"),
    ]:
        if column not in package.input_columns:
            continue
        rows = raw_rows.copy()
        rows[column] = rows[column].astype(object)
        rows.loc[7, column] = value
        with pytest.raises(DataError, match=words) as info:
            package.score(rows)
        assert info.value.column == column and info.value.rows == (8,)
        assert str(value) not in str(info.value).replace(column, "")


def test_empty_input_and_a_non_table(diabetes, raw_rows):
    package = client_package(diabetes, 0)
    out = package.score(raw_rows.iloc[:0])
    assert out.empty and list(out.columns) == package.output_columns
    with pytest.raises(DataError, match="must be a table"):
        package.score(raw_rows.to_dict("records"))  # type: ignore[arg-type]


def test_scores_equal_the_evaluation_of_the_same_rows(data_dir: Path):
    """MIMIC-III demo: a client's test rows, scored raw, give what the evaluation computed."""
    config = _small("mimic3", clients=3)
    loaded = load_dataset(config.data, data_dir)
    result = run_experiment(loaded.cohort, loaded.partition, config, source=loaded.source)
    cohort = loaded.cohort
    client_of_row = assign_patients(cohort, config.data, config.seed)
    for index, client in enumerate(result.federation.clients):
        rows = np.flatnonzero(client_of_row == client.client_id)
        test = split_patients(cohort.patient[rows], config.data, config.seed, client.client_id)
        test_rows = rows[np.isin(cohort.patient[rows], test["test"])]
        scored = client_package(result, index).score(cohort.features.iloc[test_rows])
        score = predictor_scorer(result.predictors[index])
        for j, s in enumerate(client.objectives):
            np.testing.assert_array_equal(scored.iloc[:, j].to_numpy(), score(client.test, s))
