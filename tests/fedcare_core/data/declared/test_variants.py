"""Label variants: a label, an exclusion, or both, selected by name; checked, loaded, noted.

The definition is :data:`SMALL_DEFINITION` without its cohort rule, with a readmission that
declares a label variant (``any``), an exclusion variant (``strict``) and one giving both
(``late``); the rows are made up.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from fedcare_core.data.declared import DeclaredSource, read_definition
from fedcare_core.data.declared.labels import label_columns
from fedcare_core.data.declared.loader import load_declared
from fedcare_core.data.declared.model import Compare, DatasetDeclaration, Variant
from fedcare_core.errors import ConfigError, DefinitionError
from tests.fedcare_core.data.declared.helpers import SMALL_DEFINITION, changed, write

READMISSION = """\
    label: {column: READMIT, eq: "Y"}
    exclude: {column: DISPO, eq: EXPIRED}
"""
VARIANTS = """\
    variants:
      any: {column: READMIT, ne: "N"}
      strict:
        exclude: {column: DISPO, in: [EXPIRED, AMA, TRANSFER]}
      late:
        label: {column: READMIT, eq: LATE}
        exclude: {column: DISPO, eq: TRANSFER}
"""
DISPO = "DISPO: {type: categorical, vocabulary: [HOME, AMA, EXPIRED]}"
READMIT = "READMIT: {type: categorical, vocabulary: [Y, N]}"


def _text() -> str:
    text = changed(SMALL_DEFINITION, "cohort:\n  include: {column: DISPO, ne: AMA}\n", "")
    text = changed(text, DISPO, DISPO.replace("EXPIRED]", "EXPIRED, TRANSFER]"))
    text = changed(text, READMIT, READMIT.replace("[Y, N]", "[Y, LATE, N]"))
    return changed(text, READMISSION, READMISSION + VARIANTS)


#: Made-up rows: (DISPO, READMIT) per encounter.
ROWS = [
    ("HOME", "Y"),
    ("HOME", "LATE"),
    ("HOME", "N"),
    ("AMA", "Y"),
    ("TRANSFER", "LATE"),
    ("EXPIRED", "N"),
]


def _rows() -> str:
    lines = ["PID,EID,ADMIT,DISCH,AGE,SEX,SRC,LAB,CODE,DISPO,READMIT"]
    for i, (dispo, readmit) in enumerate(ROWS):
        lines.append(f"p{i},e{i},2024-01-01T08:00,2024-01-03T08:00,50,F,ED,2,A01,{dispo},{readmit}")
    return "\n".join(lines) + "\n"


@pytest.fixture
def definition(tmp_path: Path) -> DatasetDeclaration:
    write(tmp_path / "rows.csv", _rows())
    return read_definition(write(tmp_path / "d.yaml", _text()))


def test_a_variant_is_a_label_an_exclusion_or_both(definition: DatasetDeclaration) -> None:
    variants = definition.objectives[1].variants
    assert variants["any"] == Variant(label=Compare("READMIT", "ne", "N"))
    assert variants["strict"] == Variant(
        exclude=Compare("DISPO", "in", ("EXPIRED", "AMA", "TRANSFER"))
    )
    assert variants["late"] == Variant(
        Compare("READMIT", "eq", "LATE"), Compare("DISPO", "eq", "TRANSFER")
    )


@pytest.mark.parametrize(
    ("selected", "label", "exclude"),
    [
        ((), None, None),
        ("any", "any", None),  # one name, as a string
        (("30d", "los", "deaths"), None, None),  # names it does not declare change nothing
        (("strict",), None, "strict"),
        (("any", "strict"), "any", "strict"),  # a label and an exclusion combine
        (("strict", "any"), "any", "strict"),
        (("late", "any"), "any", "late"),  # the first *declared* variant selected wins
        (("late",), "late", "late"),
        (("strict", "late"), "late", "strict"),
    ],
)
def test_the_first_declared_variant_selected_gives_the_label_and_the_exclusion(
    definition: DatasetDeclaration, selected: tuple[str, ...], label: str, exclude: str
) -> None:
    readmission = definition.objectives[1]
    chosen = readmission.labelling(selected)
    assert (chosen.label_variant, chosen.exclude_variant) == (label, exclude)
    variants = readmission.variants
    assert chosen.label == (readmission.label if label is None else variants[label].label)
    assert chosen.exclude == (readmission.exclude if exclude is None else variants[exclude].exclude)
    assert readmission.label_of(selected) == chosen.label


nan = np.nan


@pytest.mark.parametrize(
    ("selected", "want"),
    [
        # rows: HOME Y, HOME LATE, HOME N, AMA Y, TRANSFER LATE, EXPIRED N
        ((), [1, 0, 0, 1, 0, nan]),
        (("any",), [1, 1, 0, 1, 1, nan]),
        (("strict",), [1, 0, 0, nan, nan, nan]),
        (("any", "strict"), [1, 1, 0, nan, nan, nan]),
        (("late",), [0, 1, 0, 0, nan, 0]),  # its exclusion replaces the objective's
    ],
)
def test_the_selected_variants_label_the_rows(
    definition: DatasetDeclaration, tmp_path: Path, selected: tuple[str, ...], want: list
) -> None:
    cohort, _ = load_declared(definition, tmp_path, variants=selected)
    np.testing.assert_array_equal(cohort.labels["readmission"].to_numpy(), np.array(want))
    # the other objectives declare no variant: their labels stay
    np.testing.assert_array_equal(cohort.labels["mortality"].to_numpy(), [0, 0, 0, 0, 0, 1])


def test_the_notes_say_which_variant_and_how_many_rows(
    definition: DatasetDeclaration, tmp_path: Path
) -> None:
    cohort, _ = load_declared(definition, tmp_path, variants=("any", "strict"))
    notes = cohort.notes
    assert "readmission label: READMIT != 'N' (variant any)" in notes
    assert (
        "readmission: 3 rows have no label (DISPO in ['EXPIRED', 'AMA', 'TRANSFER']); "
        "exclusion: variant strict; by DISPO: AMA (1), EXPIRED (1), TRANSFER (1)"
    ) in notes
    assert "readmission: 3 rows labelled, 2 positive (66.7%)" in notes
    assert "mortality label: DISPO == 'EXPIRED' (default)" in notes
    default, _ = load_declared(definition, tmp_path)
    assert (
        "readmission: 1 rows have no label (DISPO == 'EXPIRED'); exclusion: default; "
        "by DISPO: EXPIRED (1)"
    ) in default.notes


def test_the_label_columns_include_every_variant(definition: DatasetDeclaration) -> None:
    assert set(label_columns(definition)) == {"ADMIT", "DISCH", "DISPO", "READMIT"}


#: (what, the variants written, the key at fault, a word of the message)
MALFORMED = [
    ("an exclusion over an unknown column",
     "      x:\n        exclude: {column: WARD, eq: A}\n",
     "objectives[1].variants.x.exclude", "'WARD' is not a declared column"),
    ("an exclusion over an identifier",
     "      x:\n        exclude: {column: PID, eq: p1}\n",
     "objectives[1].variants.x.exclude", "identifier"),
    ("an exclusion comparing a value its column cannot hold",
     "      x:\n        exclude: {column: DISPO, eq: GONE}\n",
     "objectives[1].variants.x.exclude", "never holds 'GONE'"),
    ("a label over an unknown column",
     "      x:\n        label: {column: OUTCOME, eq: Y}\n",
     "objectives[1].variants.x.label", "not a declared column"),
    ("a plain label over an unknown column", "      x: {column: OUTCOME, eq: Y}\n",
     "objectives[1].variants.x", "not a declared column"),
    ("a regression label for a binary objective", "      x:\n        label: {value: AGE}\n",
     "objectives[1].variants.x.label", "condition"),
    ("a key a variant does not take",
     "      x:\n        label: {column: READMIT, eq: Y}\n        include: {column: SEX, eq: F}\n",
     "objectives[1].variants.x", ""),
    ("an empty variant", "      x: {}\n", "objectives[1].variants.x", ""),
]  # fmt: skip


@pytest.mark.parametrize(
    ("variants", "key", "word"),
    [pytest.param(v, k, w, id=what) for what, v, k, w in MALFORMED],
)
def test_a_malformed_variant_is_refused(tmp_path: Path, variants: str, key: str, word: str) -> None:
    text = changed(_text(), VARIANTS, "    variants:\n" + variants)
    path = write(tmp_path / "d.yaml", text)
    with pytest.raises(DefinitionError) as ei:
        read_definition(path)
    assert ei.value.file == str(path)
    assert ei.value.key == key
    assert word in ei.value.message


MORTALITY = "    label: {column: DISPO, eq: EXPIRED}\n"


def test_a_label_over_a_feature_known_when_predicted_is_refused(tmp_path: Path) -> None:
    # SEX is known at admission, when mortality is predicted: the model would see the answer
    text = changed(
        _text(), MORTALITY, MORTALITY + "    variants:\n      sex: {column: SEX, eq: F}\n"
    )
    with pytest.raises(DefinitionError) as ei:
        read_definition(write(tmp_path / "d.yaml", text))
    assert ei.value.key == "objectives[0].variants.sex"
    assert "a feature known when the objective is predicted" in ei.value.message


def test_a_label_over_a_later_feature_is_refused_where_the_model_sees_it(
    tmp_path: Path,
) -> None:
    # LAB is known during the stay, after mortality is predicted (admission); it sits in
    # readmission's pool, so mortality's model sees it only where a client holds both pools.
    variant = "    variants:\n      lab:\n        label: {column: LAB, gt: 10}\n"
    text = changed(_text(), MORTALITY, MORTALITY + variant)
    source = DeclaredSource(read_definition(write(tmp_path / "d.yaml", text)))
    source.check_label_sources(("lab",), "paper")
    source.check_label_sources(("lab",), "admission")
    source.check_label_sources((), "paper", wide=True)  # the default label reads no feature
    with pytest.raises(ConfigError, match="'LAB', a feature mortality's model may see"):
        source.check_label_sources(("lab",), "paper", wide=True)
    pools = "    mortality: [SRC]\n    readmission: [LAB, CODE]\n    los: [SRC]\n"
    moved = (
        "    mortality: [SRC, LAB]\n    readmission: [CODE]\n    los: [SRC]\n"
        "  ignores_prediction_times: mortality sees a stay-time lab here\n"
    )
    shown = changed(_text(), MORTALITY, MORTALITY + variant).replace(pools, moved)
    paper = DeclaredSource(read_definition(write(tmp_path / "shown.yaml", shown)))
    with pytest.raises(ConfigError, match="under feature set 'paper'") as ei:
        paper.check_label_sources(("lab",), "paper")
    assert "--features admission" in str(ei.value)
    paper.check_label_sources(("lab",), "admission")  # admission hides LAB from mortality
