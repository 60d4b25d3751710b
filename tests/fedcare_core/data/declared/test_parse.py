"""Reading a dataset definition: the example parses; every malformed file is one DefinitionError.

Each malformed definition is :data:`SMALL_DEFINITION` with one change; the refusal names the
file and the key at fault, says what is wrong, and writes nothing next to the file.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest

from fedcare_core.data.cohort import Objective
from fedcare_core.data.declared import definition_schema, read_definition
from fedcare_core.data.declared.model import Combine, Compare, Value
from fedcare_core.errors import ConfigError, DefinitionError
from tests.fedcare_core.data.declared.helpers import (
    EXAMPLE_DEFINITION,
    SMALL_DEFINITION,
    changed,
    write,
)

S = SMALL_DEFINITION
AGE = "AGE: {type: integer, range: [18, 110], known_at: admission}"
SEX = "SEX: {type: categorical, vocabulary: [F, M], known_at: admission}"
LOS_LABEL = "label: {days_between: [ADMIT, DISCH]}"
MORTALITY_LABEL = "label: {column: DISPO, eq: EXPIRED}"
POOLS = "    mortality: [SRC]\n    readmission: [LAB, CODE]\n    los: [SRC]\n"


def test_the_example_parses() -> None:
    d = read_definition(EXAMPLE_DEFINITION)
    assert d.name == "riverside"
    assert d.path == EXAMPLE_DEFINITION
    assert d.text == EXAMPLE_DEFINITION.read_text(encoding="utf-8")
    assert [o.objective for o in d.objectives] == [
        Objective("mortality", "binary", "died in hospital"),
        Objective("readmission", "binary", "readmitted within 30 days of discharge"),
        Objective("los", "regression", "length of stay in days"),
    ]
    assert [o.predicted_at for o in d.objectives] == ["admission", "discharge", "admission"]
    assert d.identifiers == ("CSN", "MRN")  # the row's, then its patient's
    assert d.strata == "ADMIT_SRC"
    assert d.include == Compare("DISCH_DISPO", "ne", "AMA")
    assert d.objectives[1].exclude == Compare(
        "DISCH_DISPO", "in", ("EXPIRED", "HOSPICE", "TRANSFER")
    )
    assert d.objectives[2].label == Value(("ADMIT_DTTM", "DISCH_DTTM"), "days")
    assert d.partition.common[:3] == ("AGE_YRS", "SEX", "ADMIT_TYPE")
    assert set(d.partition.private) == {"mortality", "readmission", "los"}
    assert d.partition.private["mortality"] == ("BMI", "HBA1C_PCT")
    assert "SMOKING_STATUS" in d.partition.private_only
    assert "SMOKING_STATUS" in d.partition.private["readmission"]
    assert d.source.files == ("encounters.csv.gz",)
    assert d.source.missing_values == ("", "NA", "NULL")
    # the date-times and the labels' sources are declared columns, not features
    features = {c.name for c in d.features}
    assert {"ADMIT_DTTM", "DISCH_DTTM", "DISCH_DISPO", "READMIT_30D"}.isdisjoint(features)
    assert set(d.partition.all_features) == features
    dx = d.columns["PRIN_DX_ICD10"]
    assert dx.groups is not None and dx.groups.by == "prefix"
    assert dx.feature_vocabulary is not None and dx.feature_vocabulary[-1] == "other"
    assert d.columns["AGE_YRS"].range == (18.0, 110.0)


def test_the_small_definition_parses(tmp_path: Path) -> None:
    d = read_definition(write(tmp_path / "tiny.yaml", S))
    assert d.name == "tiny" and d.title == "A tiny ward"
    assert d.include == Compare("DISPO", "ne", "AMA")
    assert d.partition.private_only == ("CODE",)
    assert [c.name for c in d.features] == ["AGE", "SEX", "SRC", "LAB", "CODE"]


def test_a_share_of_values_present_is_read(tmp_path: Path) -> None:
    text = changed(
        S, "gaps: true, known_at: stay", "gaps: true, present_at_least: 0.9, known_at: stay"
    )
    d = read_definition(write(tmp_path / "d.yaml", text))
    assert d.columns["LAB"].present_at_least == 0.9
    assert d.columns["CODE"].present_at_least is None


def test_the_schema_is_published() -> None:
    schema = definition_schema()
    assert schema["$schema"].endswith("2020-12/schema")
    assert "identifiers" in schema["required"]


def test_an_objective_without_a_pool_has_an_empty_one(tmp_path: Path) -> None:
    d = read_definition(write(tmp_path / "d.yaml", changed(S, "    los: [SRC]\n", "")))
    assert d.partition.private["los"] == ()
    assert list(d.partition.private) == ["mortality", "readmission", "los"]


def test_conditions_nest(tmp_path: Path) -> None:
    text = changed(
        S,
        "include: {column: DISPO, ne: AMA}",
        "include: {all: [{not: {column: DISPO, eq: AMA}}, {any: [{column: AGE, ge: 18}, "
        "{column: LAB, missing: true}]}]}",
    )
    d = read_definition(write(tmp_path / "d.yaml", text))
    assert d.include == Combine(
        "all",
        (
            Combine("not", (Compare("DISPO", "eq", "AMA"),)),
            Combine("any", (Compare("AGE", "ge", 18), Compare("LAB", "missing", True))),
        ),
    )


def _one(old: str, new: str) -> Callable[[], str]:
    return lambda: changed(S, old, new)


#: (what, the malformed text, the key at fault, a word of the message)
MALFORMED: list[tuple[str, Callable[[], str], str | None, str]] = [
    ("unknown column type", _one(SEX, SEX.replace("categorical", "text")), "columns.SEX.type",
     "unknown value"),
    ("label over an undeclared column", _one(MORTALITY_LABEL, "label: {column: OUTCOME, eq: X}"),
     "objectives[0].label", "not a declared column"),
    ("label over an identifier", _one(MORTALITY_LABEL, "label: {column: PID, eq: p1}"),
     "objectives[0].label", "identifier"),
    ("label over a feature", _one(MORTALITY_LABEL, "label: {column: SEX, eq: F}"),
     "objectives[0].label", "feature"),
    ("a feature known after its prediction time", _one(AGE, AGE.replace("admission", "stay")),
     "partition", "predicted at admission"),
    ("a late common feature, an objective with no pool",
     lambda: changed(changed(changed(S, "    los: [SRC]\n", ""), AGE,
                             AGE.replace("admission", "stay")),
                     "    predicted_at: admission\n    label: {column: DISPO",
                     "    predicted_at: discharge\n    label: {column: DISPO"),
     "partition", "'los' is predicted at admission"),
    ("a column written twice", _one(f"  {SEX}\n", f"  {SEX}\n  {SEX}\n"), "columns.SEX",
     "line 17"),
    ("a key written twice in an objective", _one("    kind: regression\n",
                                                 "    kind: regression\n    kind: binary\n"),
     "objectives[2].kind", "written twice"),
    ("objective declared twice", _one("  - name: readmission", "  - name: mortality"),
     "objectives[1].name", "declared twice"),
    ("a vocabulary with repeats", _one("vocabulary: [F, M]", "vocabulary: [F, M, F]"),
     "columns.SEX.vocabulary", "twice"),
    ("unknown top-level key", lambda: S + "colour: blue\n", "colour", "unknown key"),
    ("unknown column key", _one(SEX, SEX.replace("known_at", "colour: x, known_at")),
     "columns.SEX.colour", "unknown key"),
    ("missing identifiers", _one("identifiers:\n  patient: PID\n  encounter: EID\n", ""),
     "identifiers", "missing key"),
    ("missing column type", _one(SEX, SEX.replace("type: categorical, ", "")), "columns.SEX.type",
     "missing key"),
    ("version 2", _one("version: 1", "version: 2"), "version", "unsupported"),
    ("integer column without range", _one(AGE, AGE.replace("range: [18, 110], ", "")),
     "columns.AGE", "range"),
    ("range low above high", _one("[18, 110]", "[110, 18]"), "columns.AGE.range", "above"),
    ("fractional integer range", _one("[18, 110]", "[18.5, 110]"), "columns.AGE.range",
     "whole numbers"),
    ("pattern on an integer column",
     _one(AGE, AGE.replace("known_at", "pattern: '[0-9]+', known_at")),
     "columns.AGE.pattern", "takes no"),
    ("vocabulary on a float column",
     _one("LAB: {type: float,", "LAB: {type: float, vocabulary: [a],"),
     "columns.LAB.vocabulary", "takes no"),
    ("invalid regular expression", _one("pattern: '[A-Z][0-9]{2}'", "pattern: '[A-Z'"),
     "columns.CODE.pattern", "regular expression"),
    ("lt on a categorical column",
     _one("include: {column: DISPO, ne: AMA}", "include: {column: DISPO, lt: 3}"),
     "cohort.include", "numbers only"),
    ("a value outside the vocabulary", _one(MORTALITY_LABEL, "label: {column: DISPO, eq: DIED}"),
     "objectives[0].label", "never holds"),
    ("a value outside the vocabulary of an exclusion",
     _one("exclude: {column: DISPO, eq: EXPIRED}", "exclude: {column: DISPO, in: [HOME, GONE]}"),
     "objectives[1].exclude", "never holds"),
    ("text compared with a number",
     _one("include: {column: DISPO, ne: AMA}", "include: {column: AGE, eq: old}"),
     "cohort.include", "numbers"),
    ("a date-time compared", _one("include: {column: DISPO, ne: AMA}",
                                 "include: {column: ADMIT, eq: '2024-01-01'}"),
     "cohort.include", "only test missing"),
    ("binary objective with days_between",
     _one(MORTALITY_LABEL, "label: {days_between: [ADMIT, DISCH]}"),
     "objectives[0].label", "condition"),
    ("regression with a condition label", _one(LOS_LABEL, "label: {column: DISPO, eq: EXPIRED}"),
     "objectives[2].label", "regression"),
    ("days_between over a categorical", _one(LOS_LABEL, "label: {days_between: [ADMIT, DISPO]}"),
     "objectives[2].label", "datetime"),
    ("an unknown label form", _one(LOS_LABEL, "label: {days: [ADMIT, DISCH]}"),
     "objectives[2].label", "none of the accepted forms"),
    ("wrong metric", _one("    kind: regression\n", "    kind: regression\n    metric: auroc\n"),
     "objectives[2].metric", "mae_days"),
    ("partition naming a non-feature", _one("common: [AGE, SEX]", "common: [AGE, SEX, DISPO]"),
     "partition.common", "not a feature"),
    ("a feature in no partition",
     _one(f"  {SEX}\n", f"  {SEX}\n  BMI: {{type: float, range: [10, 90], known_at: admission}}\n"),
     "partition", "no partition"),
    ("a feature common and pooled", _one("mortality: [SRC]", "mortality: [SRC, AGE]"),
     "partition.private.mortality", "common already"),
    ("a feature twice in a pool", _one("mortality: [SRC]", "mortality: [SRC, SRC]"),
     "partition.private.mortality", "twice"),
    ("a pool of an unknown objective", _one("    los: [SRC]\n", "    stay_length: [SRC]\n"),
     "partition.private.stay_length", "not a declared objective"),
    ("a move too early",
     _one(POOLS, POOLS + "  moves_at_prediction_time:\n    mortality: [LAB]\n"),
     "partition", "known at stay"),
    ("an open vocabulary in the common set", _one("common: [AGE, SEX]", "common: [AGE, SEX, CODE]"),
     "partition.common", "no vocabulary"),
    ("a date-time with known_at",
     _one("ADMIT: {type: datetime}", "ADMIT: {type: datetime, known_at: admission}"),
     "columns.ADMIT.known_at", "date-time"),
    ("strata naming a number", _one("strata: SRC", "strata: AGE"), "strata", "categorical"),
    ("strata naming nothing declared", _one("strata: SRC", "strata: WARD"), "strata",
     "categorical"),
    ("an identifier under columns", _one(f"  {SEX}\n", f"  {SEX}\n  PID: {{type: categorical}}\n"),
     "identifiers.patient", "also declared"),
    ("encounter and patient one column", _one("encounter: EID", "encounter: PID"),
     "identifiers.encounter", "are one"),
    ("a group named like other",
     _one("CODE: {type: categorical, pattern: '[A-Z][0-9]{2}',",
          "CODE: {type: categorical, groups: {by: prefix, map: {other: [A]}},"),
     "columns.CODE.groups.map.other", "every other value"),
    ("a range group of text",
     _one("CODE: {type: categorical, pattern: '[A-Z][0-9]{2}',",
          "CODE: {type: categorical, groups: {by: range, map: {low: [a]}},"),
     "columns.CODE.groups.map.low", "pairs of numbers"),
    ("a bad dataset name", _one("name: tiny", "name: Tiny Ward"), "name", "expected form"),
    ("no objectives",
     lambda: S[: S.index("objectives:")] + "objectives: []\n" + S[S.index("partition:") :],
     "objectives", "at least 1"),
    ("a bad sha256", _one("files: [rows.csv]", "files: [rows.csv]\n  sha256: abc"),
     "source.sha256", "expected form"),
    ("a sha256 of two files",
     _one("files: [rows.csv]", f"files: [rows.csv, more.csv]\n  sha256: '{'a' * 64}'"),
     "source.sha256", "reads 2 files"),
    ("present_at_least on a column without gaps",
     _one(SEX, SEX.replace("known_at", "present_at_least: 0.9, known_at")),
     "columns.SEX.present_at_least", "without gaps"),
    ("present_at_least above 1", _one("gaps: true, known_at: stay",
                                      "gaps: true, present_at_least: 95, known_at: stay"),
     "columns.LAB.present_at_least", "maximum"),
    ("present_at_least of 0", _one("gaps: true, known_at: stay",
                                   "gaps: true, present_at_least: 0, known_at: stay"),
     "columns.LAB.present_at_least", "minimum of 0"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("make", "key", "word"),
    [pytest.param(make, key, word, id=what) for what, make, key, word in MALFORMED],
)
def test_a_malformed_definition_is_refused(
    tmp_path: Path, make: Callable[[], str], key: str, word: str
) -> None:
    path = write(tmp_path / "definition.yaml", make())
    before = sorted(os.listdir(tmp_path))
    with pytest.raises(DefinitionError) as ei:
        read_definition(path)
    assert ei.value.file == str(path)
    assert ei.value.key == key
    assert word in ei.value.message
    assert str(path) in str(ei.value) and f"key {key}" in str(ei.value)
    assert sorted(os.listdir(tmp_path)) == before


def test_enough_malformed_files() -> None:
    assert len(MALFORMED) >= 25
    assert len({what for what, *_ in MALFORMED}) == len(MALFORMED)


def test_an_unquoted_yes_no_is_a_boolean(tmp_path: Path) -> None:
    path = write(tmp_path / "d.yaml", changed(S, "vocabulary: [Y, N]", "vocabulary: [yes, no]"))
    with pytest.raises(DefinitionError) as ei:
        read_definition(path)
    assert ei.value.file == str(path)
    # either boolean is at fault; the schema's best match names one of them
    assert ei.value.key in ("columns.READMIT.vocabulary[0]", "columns.READMIT.vocabulary[1]")
    assert "boolean" in ei.value.message and "quote it" in ei.value.message
    assert os.listdir(tmp_path) == ["d.yaml"]


@pytest.mark.parametrize(
    ("content", "word"),
    [
        pytest.param("- a\n- b\n", "a YAML mapping", id="a list"),
        pytest.param("just words\n", "a YAML mapping", id="a string"),
        pytest.param("", "holds one YAML document, this holds 0", id="empty"),
        pytest.param("# only a comment\n", "this holds 0", id="only a comment"),
        pytest.param("a: [1, 2\n", "not valid YAML at line 2", id="not YAML"),
        pytest.param("a: 1\n---\nb: 2\n", "this holds 2", id="two documents"),
        pytest.param("? [a, b]\n: 1\n", "unhashable", id="an unhashable key"),
        pytest.param("a: !!python/object:os.system x\n", "not valid YAML", id="a python tag"),
    ],
)
def test_a_file_that_is_no_definition(tmp_path: Path, content: str, word: str) -> None:
    path = write(tmp_path / "d.yaml", content)
    with pytest.raises(DefinitionError) as ei:
        read_definition(path)
    assert ei.value.file == str(path)
    assert ei.value.key is None
    assert word in ei.value.message
    assert os.listdir(tmp_path) == ["d.yaml"]


def test_not_utf8(tmp_path: Path) -> None:
    path = tmp_path / "d.yaml"
    path.write_bytes(S.encode("utf-8").replace(b"tiny ward", b"tiny w\xe4rd"))
    with pytest.raises(DefinitionError, match="not UTF-8") as ei:
        read_definition(path)
    assert ei.value.file == str(path) and ei.value.key is None


def test_a_missing_file(tmp_path: Path) -> None:
    path = tmp_path / "nowhere.yaml"
    with pytest.raises(DefinitionError) as ei:
        read_definition(path)
    assert ei.value.file == str(path) and ei.value.key is None
    assert "no such dataset definition" in ei.value.message
    assert os.listdir(tmp_path) == []


def test_a_folder(tmp_path: Path) -> None:
    folder = tmp_path / "def.yaml"
    folder.mkdir()
    with pytest.raises(DefinitionError) as ei:
        read_definition(folder)
    assert ei.value.file == str(folder) and ei.value.key is None
    assert "folder" in ei.value.message
    assert os.listdir(tmp_path) == ["def.yaml"] and os.listdir(folder) == []


def test_a_definition_error_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError):
        read_definition(tmp_path / "nowhere.yaml")
