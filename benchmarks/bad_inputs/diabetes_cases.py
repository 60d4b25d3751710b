"""Diabetes 130-US cases about cell contents: counts, labels, categories, codes, identifiers.

Every case changes a few cells of the published ``diabetic_data.csv`` (rows far apart, none in
the first few hundred, so a check on a sample or on the first chunk only misses them) and runs
``fedcare run --no-verify`` on the copy: the checksum would refuse any change, and the content
checks are what is under test.
"""

from __future__ import annotations

from pathlib import Path

from case_model import OUT_FILE, SMALL, Builder, Case, Sources, write_diabetes

#: Data rows (1-based, header excluded) the corruptions go into.
R1, R2, R3 = 4321, 57005, 98765
CSV = "diabetic_data.csv"

COUNT_COLUMNS = (
    "num_lab_procedures",
    "num_procedures",
    "num_medications",
    "number_outpatient",
    "number_emergency",
    "number_inpatient",
    "number_diagnoses",
)
MEDICATIONS = (
    "metformin",
    "repaglinide",
    "nateglinide",
    "chlorpropamide",
    "glimepiride",
    "acetohexamide",
    "glipizide",
    "glyburide",
    "tolbutamide",
    "pioglitazone",
    "rosiglitazone",
    "acarbose",
    "miglitol",
    "troglitazone",
    "tolazamide",
    "examide",
    "citoglipton",
    "insulin",
    "glyburide-metformin",
    "glipizide-metformin",
    "glimepiride-pioglitazone",
    "metformin-rosiglitazone",
    "metformin-pioglitazone",
)


def diabetes_argv(data: str = "{in}/" + CSV, *, verify: bool = False) -> tuple[str, ...]:
    """``fedcare run`` on a Diabetes 130 copy with the small settings and an ``--out`` file."""
    flags = () if verify else ("--no-verify",)
    return (
        "run",
        "--dataset",
        "diabetes130",
        "--data-dir",
        data,
        *flags,
        "--max-patients",
        "2000",
        *SMALL,
        "--out",
        OUT_FILE,
    )


def set_cells(changes: dict[tuple[int, str], str]) -> Builder:
    """A builder writing the published file with ``{(row, column): value}`` replaced."""

    def build(inp: Path, src: Sources) -> None:
        lines = list(src.diabetes_lines)
        header = src.diabetes_header
        for (row, column), value in changes.items():
            parts = lines[row].split(",")
            parts[header.index(column)] = value
            lines[row] = ",".join(parts)
        write_diabetes(inp, lines)

    return build


def _leaky(value: str) -> tuple[str, ...]:
    """The injected value, where it is distinctive enough to spot in a message."""
    return (value,) if len(value) >= 4 and any(c.isalpha() for c in value) else ()


def cell_case(
    src: Sources,
    cid: str,
    column: str,
    value: str,
    *,
    rows: tuple[int, ...] = (R1,),
    category: str = "diabetes-content",
    note: str = "",
) -> Case:
    """A refused case: ``column`` set to ``value`` in ``rows``; the message names file+column."""
    return Case(
        id=cid,
        category=category,
        expect="refused",
        argv=diabetes_argv(),
        build=set_cells({(r, column): value for r in rows}),
        names=(CSV, column),
        rows=rows,
        secrets=src.diabetes_ids(*rows) + _leaky(value),
        note=note,
    )


def _slug(text: str) -> str:
    return "".join(c if c.isalnum() else "-" for c in text.lower()).strip("-")


def count_cases(src: Sources) -> list[Case]:
    """Negative, absurd, fractional, non-numeric and infinite counts in every count column."""
    cases = []
    for col in COUNT_COLUMNS:
        short = _slug(col)
        cases.append(cell_case(src, f"d-neg-{short}", col, "-3", note="a count below zero"))
        cases.append(
            cell_case(
                src,
                f"d-absurd-{short}",
                col,
                "100000",
                rows=(R1, R2),
                note="100,000 in one encounter",
            )
        )
        cases.append(cell_case(src, f"d-frac-{short}", col, "2.5", note="counts are whole"))
    cases.append(cell_case(src, "d-text-num-medications", "num_medications", "many"))
    cases.append(cell_case(src, "d-text-number-inpatient", "number_inpatient", "two"))
    cases.append(cell_case(src, "d-inf-num-lab-procedures", "num_lab_procedures", "inf"))
    cases.append(
        cell_case(
            src,
            "d-nan-number-emergency",
            "number_emergency",
            "NaN",
            note="NaN is not '?' (the file's missing marker)",
        )
    )
    return cases


def label_cases(src: Sources) -> list[Case]:
    """Out-of-domain ``time_in_hospital`` and ``readmitted``."""
    tih = "time_in_hospital"
    return [
        cell_case(src, "d-tih-zero", tih, "0", note="recorded range is 1..14 days"),
        cell_case(src, "d-tih-15", tih, "15"),
        cell_case(src, "d-tih-negative", tih, "-2"),
        cell_case(src, "d-tih-fraction", tih, "3.5"),
        cell_case(src, "d-tih-text", tih, "three"),
        cell_case(src, "d-tih-missing", tih, "?", note="the label source may not be missing"),
        cell_case(src, "d-readmitted-yes", "readmitted", "YES"),
        cell_case(src, "d-readmitted-lt31", "readmitted", "<31"),
        cell_case(src, "d-readmitted-lower", "readmitted", "no"),
        cell_case(src, "d-readmitted-missing", "readmitted", "?"),
    ]


def category_cases(src: Sources) -> list[Case]:
    """Values outside the declared vocabulary of every categorical column."""
    spec = [
        ("race", "Martian", "race-unknown"),
        ("race", "caucasian", "race-lowercase"),
        ("gender", "Robot", "gender-unknown"),
        ("gender", "F", "gender-letter"),
        ("age", "[100-110)", "age-bracket-over-100"),
        ("age", "[70-80", "age-bracket-malformed"),
        ("age", "seventy", "age-text"),
        ("weight", "[200-225)", "weight-unknown"),
        ("admission_type_id", "9", "admission-type-9"),
        ("admission_type_id", "0", "admission-type-0"),
        ("admission_type_id", "urgent", "admission-type-text"),
        ("discharge_disposition_id", "31", "discharge-31"),
        ("discharge_disposition_id", "0", "discharge-0"),
        ("admission_source_id", "27", "admission-source-27"),
        ("admission_source_id", "-1", "admission-source-negative"),
        ("payer_code", "ZZ", "payer-unknown"),
        ("max_glu_serum", ">400", "max-glu-serum-unknown"),
        ("A1Cresult", ">9", "a1cresult-unknown"),
        ("A1Cresult", "high", "a1cresult-text"),
        ("change", "Yes", "change-unknown"),
        ("diabetesMed", "Maybe", "diabetesmed-unknown"),
    ]
    cases = [cell_case(src, f"d-{cid}", col, value) for col, value, cid in spec]
    for med in MEDICATIONS:
        cases.append(
            cell_case(
                src,
                f"d-med-{_slug(med)}",
                med,
                "Sideways",
                note="medication levels are No/Steady/Up/Down",
            )
        )
    cases.append(cell_case(src, "d-med-insulin-lowercase", "insulin", "steady"))
    cases.append(
        cell_case(
            src,
            "d-med-metformin-empty",
            "metformin",
            "",
            note="an empty medication field is not a level",
        )
    )
    return cases


def diagnosis_cases(src: Sources) -> list[Case]:
    """Malformed ICD-9 codes in ``diag_1..3``."""
    spec = [
        ("diag_1", "ABC", "letters"),
        ("diag_2", "25O.01", "letter-o"),
        ("diag_3", "1234.5", "four-digits"),
        ("diag_1", "V999", "v-code-too-long"),
        ("diag_2", "-250", "negative"),
        ("diag_3", "E12345", "e-code-too-long"),
        ("diag_1", "250.8.3", "two-dots"),
        ("diag_2", "0", "zero"),
    ]
    return [
        cell_case(
            src, f"d-icd9-{cid}-{col.replace('_', '')}", col, value, note="not an ICD-9-CM code"
        )
        for col, value, cid in spec
    ]


def identifier_cases(src: Sources) -> list[Case]:
    """Broken and duplicated ``encounter_id`` / ``patient_nbr``."""

    def duplicate_row(same_content: bool) -> Builder:
        def build(inp: Path, s: Sources) -> None:
            lines = list(s.diabetes_lines)
            if same_content:
                lines.insert(R2 + 1, lines[R1])
            else:
                parts = lines[R2].split(",")
                parts[0] = lines[R1].split(",")[0]
                lines[R2] = ",".join(parts)
            write_diabetes(inp, lines)

        return build

    ids = src.diabetes_ids(R1, R2)
    return [
        cell_case(src, "d-encounter-id-text", "encounter_id", "ENC-X"),
        cell_case(src, "d-encounter-id-fraction", "encounter_id", "12.5"),
        cell_case(src, "d-encounter-id-missing", "encounter_id", "?"),
        cell_case(src, "d-encounter-id-negative", "encounter_id", "-17"),
        cell_case(src, "d-patient-nbr-missing", "patient_nbr", "?"),
        cell_case(src, "d-patient-nbr-text", "patient_nbr", "PAT-X"),
        Case(
            "d-duplicate-row",
            "diabetes-content",
            "refused",
            diabetes_argv(),
            duplicate_row(True),
            names=(CSV, "encounter_id"),
            rows=(R1, R2 + 1),
            secrets=ids,
            note="the same encounter twice: a copy-paste error that doubles its weight",
        ),
        Case(
            "d-duplicate-encounter-id",
            "diabetes-content",
            "refused",
            diabetes_argv(),
            duplicate_row(False),
            names=(CSV, "encounter_id"),
            rows=(R1, R2),
            secrets=ids,
            note="two different encounters with one id",
        ),
    ]


def diabetes_content_cases(src: Sources) -> list[Case]:
    """All cell-content cases."""
    return (
        count_cases(src)
        + label_cases(src)
        + category_cases(src)
        + diagnosis_cases(src)
        + identifier_cases(src)
    )
