"""MIMIC-III demo cases: missing and broken tables, impossible times, keys, codes and values.

Each case copies the four required tables (``ADMISSIONS``, ``PATIENTS``, ``ICUSTAYS``,
``LABEVENTS``) into its input folder, changes one, and runs ``fedcare run --dataset mimic3``.
The stay changed is ICUSTAYS data row 10 (an adult in the cohort); rows are 1-based, header
excluded.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from case_model import (
    OUT_FILE,
    SMALL,
    Builder,
    Case,
    Sources,
    copy_mimic,
    mimic_csv,
)

CATEGORY = "mimic"
VALID = "mimic-valid"
J, J2 = 10, 11  # ICUSTAYS data rows
Edit = Callable[[list[str], list[list[str]]], object]


def mimic_argv(data: str = "{in}") -> tuple[str, ...]:
    """``fedcare run`` on a MIMIC-III folder with the small settings."""
    return ("run", "--dataset", "mimic3", "--data-dir", data, *SMALL, "--out", OUT_FILE)


def edit_table(table: str, edit: Edit, *, eol: str = "\n") -> Builder:
    """A builder copying the tables and rewriting ``table`` after ``edit(header, rows)``."""

    def build(inp: Path, src: Sources) -> None:
        copy_mimic(inp, src, skip=(table,))
        header, rows = src.mimic_table(table)
        edit(header, rows)
        (inp / f"{table}.csv").write_text(mimic_csv(header, rows, eol), encoding="utf-8")

    return build


def raw_table(table: str, make: Callable[[bytes], bytes]) -> Builder:
    """A builder writing ``make(original bytes)`` as ``table``'s file."""

    def build(inp: Path, src: Sources) -> None:
        copy_mimic(inp, src, skip=(table,))
        data = (src.mimic_dir / f"{table}.csv").read_bytes()
        (inp / f"{table}.csv").write_bytes(make(data))

    return build


def set_col(column: str, value: str | Callable[[str], str], *rows: int) -> Edit:
    """An edit setting ``column`` in data ``rows`` (1-based) to ``value`` (or ``value(old)``)."""

    def edit(header: list[str], table_rows: list[list[str]]) -> None:
        k = header.index(column)
        for r in rows:
            old = table_rows[r - 1][k]
            table_rows[r - 1][k] = value(old) if callable(value) else value

    return edit


def swap_cols(a: str, b: str, row: int) -> Edit:
    """An edit swapping two columns' values in one data row."""

    def edit(header: list[str], rows: list[list[str]]) -> None:
        ia, ib = header.index(a), header.index(b)
        rows[row - 1][ia], rows[row - 1][ib] = rows[row - 1][ib], rows[row - 1][ia]

    return edit


def drop_col(column: str) -> Edit:
    """An edit removing a column from the header and every row."""

    def edit(header: list[str], rows: list[list[str]]) -> None:
        k = header.index(column)
        del header[k]
        for r in rows:
            del r[k]

    return edit


def _cut(data: bytes) -> bytes:
    cut = data.rfind(b"\n", 0, int(len(data) * 0.6))
    return data[: cut + 1 + 25]


class Keys:
    """Identifiers of the stays the cases change, found in the real tables."""

    def __init__(self, src: Sources) -> None:
        header, rows = src.mimic_table("ICUSTAYS")
        self.icu_header = header
        stay = dict(zip(header, rows[J - 1], strict=True))
        other = dict(zip(header, rows[J2 - 1], strict=True))
        self.subject, self.hadm, self.icustay = (
            stay["SUBJECT_ID"],
            stay["HADM_ID"],
            stay["ICUSTAY_ID"],
        )
        self.other_hadm, self.other_icustay = other["HADM_ID"], other["ICUSTAY_ID"]
        self.other_subject = other["SUBJECT_ID"]
        self.intime_year = int(stay["INTIME"][:4])
        self.adm_row = self._row(src, "ADMISSIONS", "HADM_ID", self.hadm)
        self.adm_row2 = self._row(src, "ADMISSIONS", "HADM_ID", self.other_hadm)
        self.pat_row = self._row(src, "PATIENTS", "SUBJECT_ID", self.subject)
        self.pat_row2 = self._row(src, "PATIENTS", "SUBJECT_ID", self.other_subject)
        self.lab_row = self._row(src, "LABEVENTS", "HADM_ID", self.hadm)
        self.secrets = (
            self.subject,
            self.hadm,
            self.icustay,
            self.other_hadm,
            self.other_icustay,
            self.other_subject,
        )

    @staticmethod
    def _row(src: Sources, table: str, column: str, value: str) -> int:
        header, rows = src.mimic_table(table)
        k = header.index(column)
        return next(i + 1 for i, r in enumerate(rows) if r[k] == value)


def _case(
    cid: str,
    build: Builder,
    names: tuple[str, ...],
    keys: Keys,
    *,
    rows: tuple[int, ...] = (),
    note: str = "",
    data: str = "{in}",
    nobody: bool = False,
    extra_secrets: tuple[str, ...] = (),
) -> Case:
    return Case(
        cid,
        CATEGORY,
        "refused",
        mimic_argv(data),
        build,
        names=names,
        rows=rows,
        secrets=keys.secrets + extra_secrets,
        note=note,
        as_nobody=nobody,
    )


def _impossible_time_cases(k: Keys) -> list[Case]:
    """Times in the wrong order, and ages no patient has."""
    y = k.intime_year
    e, c = edit_table, _case
    return [
        c(
            "m-dischtime-before-admittime",
            e("ADMISSIONS", swap_cols("ADMITTIME", "DISCHTIME", k.adm_row)),
            ("ADMISSIONS", "DISCHTIME|ADMITTIME"),
            k,
            rows=(k.adm_row,),
        ),
        c(
            "m-outtime-before-intime",
            e("ICUSTAYS", swap_cols("INTIME", "OUTTIME", J)),
            ("ICUSTAYS", "OUTTIME|INTIME"),
            k,
            rows=(J,),
        ),
        c(
            "m-dod-before-dob",
            e("PATIENTS", set_col("DOD", "1800-01-01 00:00:00", k.pat_row)),
            ("PATIENTS", "DOD|DOB"),
            k,
            rows=(k.pat_row,),
        ),
        c(
            "m-dob-after-intime",
            e("PATIENTS", set_col("DOB", f"{y + 5}-01-01 00:00:00", k.pat_row)),
            ("PATIENTS", "DOB"),
            k,
            rows=(k.pat_row,),
            note="a negative age at the ICU stay",
        ),
        c(
            "m-age-150",
            e("PATIENTS", set_col("DOB", f"{y - 150}-06-01 00:00:00", k.pat_row)),
            ("PATIENTS", "DOB"),
            k,
            rows=(k.pat_row,),
            note="150 years old: neither a real age nor MIMIC's 300-year shift of the over-89s",
        ),
        c(
            "m-icu-stay-outside-admission",
            e("ICUSTAYS", set_col("INTIME", lambda v: f"{int(v[:4]) + 3}{v[4:]}", J)),
            ("ICUSTAYS", "INTIME"),
            k,
            rows=(J,),
            note="ICU stay 3 years after its admission",
        ),
    ]


def _key_cases(k: Keys) -> list[Case]:
    """Duplicated identifiers and keys that point to no row, or to another patient's."""
    e, c = edit_table, _case
    return [
        c(
            "m-duplicate-icustay-id",
            e("ICUSTAYS", set_col("ICUSTAY_ID", k.icustay, J2)),
            ("ICUSTAYS", "ICUSTAY_ID"),
            k,
            rows=(J, J2),
        ),
        c(
            "m-duplicate-hadm-id",
            e("ADMISSIONS", set_col("HADM_ID", k.hadm, k.adm_row2)),
            ("ADMISSIONS", "HADM_ID"),
            k,
            rows=(k.adm_row, k.adm_row2),
        ),
        c(
            "m-duplicate-subject-id",
            e("PATIENTS", set_col("SUBJECT_ID", k.subject, k.pat_row2)),
            ("PATIENTS", "SUBJECT_ID"),
            k,
            rows=(k.pat_row, k.pat_row2),
        ),
        c(
            "m-icu-hadm-not-in-admissions",
            e("ICUSTAYS", set_col("HADM_ID", "999001", J)),
            ("ICUSTAYS|ADMISSIONS", "HADM_ID"),
            k,
            extra_secrets=("999001",),
            note="cross-table key",
        ),
        c(
            "m-icu-subject-not-in-patients",
            e("ICUSTAYS", set_col("SUBJECT_ID", "99901", J)),
            ("ICUSTAYS|PATIENTS", "SUBJECT_ID"),
            k,
            extra_secrets=("99901",),
        ),
        c(
            "m-icu-hadm-of-other-subject",
            e("ICUSTAYS", set_col("HADM_ID", k.other_hadm, J)),
            ("ICUSTAYS|ADMISSIONS", "HADM_ID|SUBJECT_ID"),
            k,
            note="the stay's admission belongs to another patient",
        ),
        c(
            "m-patient-row-deleted",
            e("PATIENTS", lambda h, r: r.pop(k.pat_row - 1)),
            ("PATIENTS|ICUSTAYS", "SUBJECT_ID"),
            k,
            note="a stay's patient is not in PATIENTS",
        ),
    ]


def _unparsable_time_cases(k: Keys) -> list[Case]:
    """Dates and times that cannot be read."""
    e, c = edit_table, _case
    return [
        c(
            "m-admittime-unparsable",
            e("ADMISSIONS", set_col("ADMITTIME", "notadate", k.adm_row)),
            ("ADMISSIONS", "ADMITTIME"),
            k,
            rows=(k.adm_row,),
        ),
        c(
            "m-intime-impossible-date",
            e("ICUSTAYS", set_col("INTIME", "2164-13-45 25:00:00", J)),
            ("ICUSTAYS", "INTIME"),
            k,
            rows=(J,),
        ),
        c(
            "m-dob-unparsable",
            e("PATIENTS", set_col("DOB", "yesterday", k.pat_row)),
            ("PATIENTS", "DOB"),
            k,
            rows=(k.pat_row,),
        ),
        c(
            "m-lab-charttime-unparsable",
            e("LABEVENTS", set_col("CHARTTIME", "xx", k.lab_row)),
            ("LABEVENTS", "CHARTTIME"),
            k,
            rows=(k.lab_row,),
        ),
    ]


def _unknown_code_cases(k: Keys) -> list[Case]:
    """Coded fields (gender, expire flag, admission type, insurance, care unit) out of range."""
    e, c = edit_table, _case
    return [
        c(
            "m-gender-unknown",
            e("PATIENTS", set_col("GENDER", "X", k.pat_row)),
            ("PATIENTS", "GENDER"),
            k,
            rows=(k.pat_row,),
        ),
        c(
            "m-gender-word",
            e("PATIENTS", set_col("GENDER", "Male", k.pat_row)),
            ("PATIENTS", "GENDER"),
            k,
            rows=(k.pat_row,),
        ),
        c(
            "m-expire-flag-2",
            e("ADMISSIONS", set_col("HOSPITAL_EXPIRE_FLAG", "2", k.adm_row)),
            ("ADMISSIONS", "HOSPITAL_EXPIRE_FLAG"),
            k,
            rows=(k.adm_row,),
        ),
        c(
            "m-expire-flag-text",
            e("ADMISSIONS", set_col("HOSPITAL_EXPIRE_FLAG", "yes", k.adm_row)),
            ("ADMISSIONS", "HOSPITAL_EXPIRE_FLAG"),
            k,
            rows=(k.adm_row,),
        ),
        c(
            "m-admission-type-unknown",
            e("ADMISSIONS", set_col("ADMISSION_TYPE", "TELEPORTED", k.adm_row)),
            ("ADMISSIONS", "ADMISSION_TYPE"),
            k,
            rows=(k.adm_row,),
            extra_secrets=("TELEPORTED",),
        ),
        c(
            "m-insurance-unknown",
            e("ADMISSIONS", set_col("INSURANCE", "Barter", k.adm_row)),
            ("ADMISSIONS", "INSURANCE"),
            k,
            rows=(k.adm_row,),
            extra_secrets=("Barter",),
        ),
        c(
            "m-first-careunit-unknown",
            e("ICUSTAYS", set_col("FIRST_CAREUNIT", "XICU", J)),
            ("ICUSTAYS", "FIRST_CAREUNIT"),
            k,
            rows=(J,),
            extra_secrets=("XICU",),
        ),
    ]


def _measurement_cases(k: Keys) -> list[Case]:
    """Non-numeric, infinite or absurd measurements and identifiers."""
    e, c = edit_table, _case
    return [
        c(
            "m-lab-valuenum-text",
            e("LABEVENTS", set_col("VALUENUM", "abc", k.lab_row)),
            ("LABEVENTS", "VALUENUM"),
            k,
            rows=(k.lab_row,),
        ),
        c(
            "m-lab-valuenum-inf",
            e("LABEVENTS", set_col("VALUENUM", "inf", k.lab_row)),
            ("LABEVENTS", "VALUENUM"),
            k,
            rows=(k.lab_row,),
        ),
        c(
            "m-lab-itemid-text",
            e("LABEVENTS", set_col("ITEMID", "creat", k.lab_row)),
            ("LABEVENTS", "ITEMID"),
            k,
            rows=(k.lab_row,),
        ),
        c(
            "m-lab-hadm-fraction",
            e("LABEVENTS", set_col("HADM_ID", "157235.5", k.lab_row)),
            ("LABEVENTS", "HADM_ID"),
            k,
            rows=(k.lab_row,),
        ),
        c(
            "m-los-negative",
            e("ICUSTAYS", set_col("LOS", "-1.5", J)),
            ("ICUSTAYS", "LOS"),
            k,
            rows=(J,),
            note="DESIGN.md: LOS <= 0 becomes NaN silently; the promise says refuse",
        ),
        c(
            "m-los-text",
            e("ICUSTAYS", set_col("LOS", "long", J)),
            ("ICUSTAYS", "LOS"),
            k,
            rows=(J,),
        ),
        c(
            "m-los-absurd",
            e("ICUSTAYS", set_col("LOS", "1000", J)),
            ("ICUSTAYS", "LOS"),
            k,
            rows=(J,),
            note="1000 days, against a 1-day INTIME..OUTTIME",
        ),
        c(
            "m-icustay-id-fraction",
            e("ICUSTAYS", set_col("ICUSTAY_ID", "254543.5", J)),
            ("ICUSTAYS", "ICUSTAY_ID"),
            k,
            rows=(J,),
        ),
        c(
            "m-subject-id-negative",
            e("ICUSTAYS", set_col("SUBJECT_ID", "-10033", J)),
            ("ICUSTAYS", "SUBJECT_ID"),
            k,
            rows=(J,),
        ),
    ]


def value_cases(src: Sources, k: Keys) -> list[Case]:
    """Impossible times, broken keys, unknown codes and non-numeric measurements."""
    return (
        _impossible_time_cases(k)
        + _key_cases(k)
        + _unparsable_time_cases(k)
        + _unknown_code_cases(k)
        + _measurement_cases(k)
    )
