"""The clinical label options on a synthetic table: every discharge disposition, short and long.

Each of the 30 discharge dispositions appears twice, a 2-day and a 5-day stay, copied from the
fixture's first row (no real encounter). The stays are readmitted within 30 days (2 days) or
later (5 days), the expired ones never (the definition refuses an expired encounter marked
readmitted).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from fedcare_core.config import (
    EARLY_DISCHARGE_DEFINITIONS,
    READMISSION_DEFINITIONS,
    READMISSION_EXCLUSIONS,
)
from fedcare_core.data.cohort import Cohort
from fedcare_core.data.diabetes130 import DIABETES130_COLUMNS
from fedcare_core.data.diabetes130 import loader as diabetes130_loader
from fedcare_core.errors import ConfigError
from tests.fedcare_core.data.diabetes130.helpers import fixture_lines, load_tiny, write_csv

HOME = {1, 6, 8}
EXPIRED = {11, 19, 20, 21}
HOSPICE = {13, 14}
AMA = {7}
TRANSFER = {2}  # to another short-term (acute) hospital
OTHER_FACILITIES = {3, 4, 5, 9, 10, 12, 15, 16, 17, 22, 23, 24, 27, 28, 29, 30}
UNKNOWN = {18, 25, 26}
DISPOSITIONS = range(1, 31)
assert HOME | EXPIRED | HOSPICE | AMA | TRANSFER | OTHER_FACILITIES | UNKNOWN == set(DISPOSITIONS)


def _rows() -> list[tuple[int, int, str]]:
    """(disposition, days, readmitted) per row."""
    rows = []
    for disposition in DISPOSITIONS:
        for days in (2, 5):
            readmitted = "NO" if disposition in EXPIRED else ("<30" if days == 2 else ">30")
            rows.append((disposition, days, readmitted))
    return rows


ROWS = _rows()
DISPOSITION = np.array([r[0] for r in ROWS])
SHORT = np.array([r[1] <= 3 for r in ROWS])


@pytest.fixture(scope="module")
def table(tmp_path_factory: pytest.TempPathFactory) -> Path:
    header, template = fixture_lines()[:2]
    lines = [header]
    for i, (disposition, days, readmitted) in enumerate(ROWS):
        fields = template.split(",")
        for column, value in (
            ("encounter_id", str(1000 + i)),
            ("patient_nbr", str(5000 + i)),
            ("discharge_disposition_id", str(disposition)),
            ("time_in_hospital", str(days)),
            ("readmitted", readmitted),
        ):
            fields[DIABETES130_COLUMNS.index(column)] = value
        lines.append(",".join(fields))
    return write_csv(tmp_path_factory.mktemp("options") / "diabetic_data.csv", lines)


def _load(table: Path, **options: str) -> Cohort:
    return load_tiny(table, **options)


def _expected(positive: np.ndarray, excluded: set[int]) -> np.ndarray:
    label = positive.astype(float)
    label[np.isin(DISPOSITION, sorted(excluded))] = np.nan
    return label


def _same(got: pd.Series, want: np.ndarray) -> None:
    np.testing.assert_array_equal(got.to_numpy(), want)


def test_los_is_every_stay_of_at_most_three_days(table: Path) -> None:
    cohort = _load(table, early_discharge="los")
    _same(cohort.labels["early_discharge"], _expected(SHORT, set()))
    # deaths, AMA and transfers count as early discharges here: the paper's label
    positives = set(DISPOSITION[cohort.labels["early_discharge"].to_numpy() == 1])
    assert EXPIRED | AMA | TRANSFER <= positives
    assert "early_discharge label: time_in_hospital <= 3 (default)" in cohort.notes


def test_home_is_discharged_home_alive_within_three_days(table: Path) -> None:
    cohort = _load(table, early_discharge="home")
    excluded = set(DISPOSITIONS) - HOME
    label = cohort.labels["early_discharge"]
    _same(label, _expected(SHORT, excluded))
    # positive: home within 3 days; negative: home after more; every other disposition: none
    assert set(DISPOSITION[label.to_numpy() == 1]) == HOME
    assert set(DISPOSITION[label.to_numpy() == 0]) == HOME
    for gone in (EXPIRED, HOSPICE, AMA, TRANSFER, OTHER_FACILITIES, UNKNOWN):
        assert label[np.isin(DISPOSITION, sorted(gone))].isna().all()
    assert any(
        n.startswith("early_discharge: 54 rows have no label (discharge_disposition_id not in "
                     "[1, 6, 8]); exclusion: variant home")
        for n in cohort.notes
    )  # fmt: skip
    assert "early_discharge: 6 rows labelled, 3 positive (50.0%)" in cohort.notes


def test_home_or_not_has_the_same_positives_and_every_other_stay_negative(table: Path) -> None:
    cohort = _load(table, early_discharge="home-or-not")
    label = cohort.labels["early_discharge"]
    _same(label, _expected(SHORT & np.isin(DISPOSITION, sorted(HOME)), set()))
    home = _load(table, early_discharge="home").labels["early_discharge"]
    assert (label == 1).tolist() == (home == 1).tolist()
    assert label.notna().all()
    assert any("(variant home-or-not)" in n for n in cohort.notes)


@pytest.mark.parametrize("readmission", READMISSION_DEFINITIONS)
@pytest.mark.parametrize("exclude", READMISSION_EXCLUSIONS)
def test_readmission_exclusions(table: Path, readmission: str, exclude: str) -> None:
    cohort = _load(table, readmission=readmission, readmission_exclude=exclude)
    readmitted = np.array([r[2] for r in ROWS])
    positive = readmitted == "<30" if readmission == "30d" else readmitted != "NO"
    excluded = EXPIRED | HOSPICE | (AMA | TRANSFER if exclude == "deaths-ama-transfers" else set())
    _same(cohort.labels["readmission"], _expected(positive, excluded))
    # early discharge and LOS are untouched by the readmission options
    _same(cohort.labels["early_discharge"], _expected(SHORT, set()))
    origin = "default" if exclude == "deaths" else f"variant {exclude}"
    assert any(f"exclusion: {origin}" in n for n in cohort.notes if n.startswith("readmission:"))


def test_the_options_combine_and_leave_los_alone(table: Path) -> None:
    cohort = _load(
        table, early_discharge="home", readmission="any", readmission_exclude="deaths-ama-transfers"
    )
    _same(cohort.labels["los"], np.array([float(r[1]) for r in ROWS]))
    assert cohort.labels["early_discharge"].notna().sum() == 2 * len(HOME)
    assert cohort.labels["readmission"].notna().sum() == 2 * 30 - 2 * 8


@pytest.mark.parametrize(
    ("option", "value"),
    [("early_discharge", "short"), ("readmission_exclude", "deaths-only"), ("readmission", "60d")],
)
def test_an_unknown_choice_is_refused_naming_the_option(option: str, value: str) -> None:
    with pytest.raises(ConfigError, match=f"{option} must be one of .*got '{value}'"):
        load_tiny(**{option: value})


def test_the_loader_offers_the_configuration_choices() -> None:
    loader = diabetes130_loader
    assert loader._EARLY_DISCHARGE_DEFINITIONS == EARLY_DISCHARGE_DEFINITIONS
    assert loader._READMISSION_EXCLUSIONS == READMISSION_EXCLUSIONS
    assert loader._READMISSION_DEFINITIONS == READMISSION_DEFINITIONS
    # every non-default choice is a variant the definition declares
    declared = {name for o in loader.diabetes130_declaration().objectives for name in o.variants}
    defaults = {"30d", "los", "deaths"}
    choices = {*EARLY_DISCHARGE_DEFINITIONS, *READMISSION_EXCLUSIONS, *READMISSION_DEFINITIONS}
    assert declared == choices - defaults
