"""Clinically impossible or unknown values in diabetic_data.csv are refused, rows named."""

from __future__ import annotations

from pathlib import Path

import pytest

from fedcare_core.data.diabetes130 import COUNT_RANGES, DIABETES130_VOCABULARIES
from fedcare_core.errors import DataError
from tests.fedcare_core.data.diabetes130.helpers import (
    fixture_lines,
    load_tiny,
    set_field,
    write_csv,
)


def refusal(tmp_path: Path, lines: list[str], **kw: object) -> DataError:
    path = write_csv(tmp_path / "diabetic_data.csv", lines)
    with pytest.raises(DataError) as err:
        load_tiny(path, **kw)
    assert err.value.file is not None and "diabetic_data.csv" in err.value.file
    return err.value


@pytest.mark.parametrize("column", sorted(COUNT_RANGES))
@pytest.mark.parametrize("kind", ["negative", "absurd", "fractional", "missing"])
def test_implausible_counts_are_refused(tmp_path: Path, column: str, kind: str) -> None:
    hi = COUNT_RANGES[column][1]
    value = {"negative": "-50", "absurd": str(hi * 10), "fractional": "2.5", "missing": "?"}[kind]
    err = refusal(tmp_path, set_field(fixture_lines(), 7, column, value))
    assert err.column == column and err.rows == (7,)
    assert value not in str(err).replace(str(tmp_path), "")  # the value itself is never shown


def test_counts_at_the_bounds_are_accepted(tmp_path: Path) -> None:
    lines = fixture_lines()
    for i, (column, (lo, hi)) in enumerate(sorted(COUNT_RANGES.items())):
        lines = set_field(lines, 2 + i, column, str(lo))
        lines = set_field(lines, 12 + i, column, str(hi))
    cohort = load_tiny(write_csv(tmp_path / "diabetic_data.csv", lines))
    assert cohort.n_rows == 40


@pytest.mark.parametrize(
    ("column", "value"),
    [
        ("race", "Martian"),
        ("gender", "X"),
        ("admission_type_id", "99"),
        ("discharge_disposition_id", "31"),
        ("admission_source_id", "0"),
        ("metformin", "Sideways"),
        ("insulin", "yes"),
        ("A1Cresult", ">9"),
        ("max_glu_serum", "High"),
        ("change", "Changed"),
        ("diabetesMed", "Maybe"),
        ("payer_code", "ZZ"),
    ],
)
def test_unknown_categories_are_refused_unless_mapped(
    tmp_path: Path, column: str, value: str
) -> None:
    lines = set_field(set_field(fixture_lines(), 3, column, value), 9, column, value)
    err = refusal(tmp_path, lines)
    assert err.column == column and err.rows == (3, 9)
    assert "--unseen-categories other" in str(err) and repr(value) not in str(err)
    cohort = load_tiny(tmp_path / "diabetic_data.csv", unseen_categories="other")
    assert any(column in n and "2 value(s)" in n for n in cohort.notes)
    assert (cohort.features[column] == value).sum() == 2  # encoded as 'other' downstream
    assert set(DIABETES130_VOCABULARIES[column]).isdisjoint({value})


def test_repeated_encounter_ids_are_refused(tmp_path: Path) -> None:
    lines = fixture_lines()
    encounter = lines[4].split(",")[0]
    err = refusal(tmp_path, set_field(lines, 20, "encounter_id", encounter))
    assert err.column == "encounter_id" and err.rows == (4, 20)
    assert encounter not in str(err).replace(str(tmp_path), "")


@pytest.mark.parametrize(
    ("column", "value"),
    [
        ("age", "[100-110)"),
        ("age", "[0-500)"),
        ("diag_1", "heart"),
        ("diag_3", "25O.1"),
        ("diag_1", "1234.5"),
        ("diag_2", "V999"),
        ("diag_3", "E12345"),
        ("diag_1", "250.8.3"),
        ("diag_2", "0"),
        ("diag_3", "250.833"),
        ("metformin", "?"),
        ("A1Cresult", ""),
        ("gender", "?"),
        ("encounter_id", "0"),
        ("encounter_id", "12.0"),
        ("patient_nbr", "-7"),
    ],
)
def test_malformed_values_are_refused(tmp_path: Path, column: str, value: str) -> None:
    err = refusal(tmp_path, set_field(fixture_lines(), 11, column, value))
    assert err.column == column and err.rows == (11,)


def test_an_expired_encounter_cannot_be_readmitted(tmp_path: Path) -> None:
    lines = set_field(fixture_lines(), 5, "discharge_disposition_id", "11")
    load_tiny(write_csv(tmp_path / "ok.csv", set_field(lines, 5, "readmitted", "NO")))
    err = refusal(tmp_path, set_field(lines, 5, "readmitted", "<30"))
    assert err.column == "readmitted" and err.rows == (5,)
    assert "expired" in str(err)


def test_an_archive_with_two_candidate_files_is_refused(tmp_path: Path) -> None:
    from tests.fedcare_core.data.diabetes130.helpers import fixture_bytes, make_zip

    data = fixture_bytes()
    archive = make_zip(tmp_path / "data.zip", "a/diabetic_data.csv", data)
    assert load_tiny(archive).n_rows == 40
    make_zip(
        archive,
        "a/diabetic_data.csv",
        data,
        {"b/diabetic_data.csv": data, "__MACOSX/a/diabetic_data.csv": b"\x00"},
    )
    with pytest.raises(DataError, match=r"2 files named diabetic_data\.csv") as err:
        load_tiny(archive)
    assert err.value.file == str(archive)
