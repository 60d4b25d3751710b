"""A dataset definition file, parsed: typed, immutable, checked (:mod:`.parse` builds it)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from fedcare_core.data.cohort import Objective
from fedcare_core.data.partition import FeaturePartition
from fedcare_core.data.subgroups import SensitiveAttribute

#: The column types a definition declares.
ColumnType = Literal["categorical", "integer", "float", "datetime"]
#: Comparison operators of a condition on one column.
COMPARISONS = ("eq", "ne", "lt", "le", "gt", "ge", "in", "not_in", "missing")
#: Those that compare numbers only.
ORDERINGS = ("lt", "le", "gt", "ge")


@dataclass(frozen=True)
class Groups:
    """Recoding a categorical column's values into groups (e.g. codes into chapters).

    Parameters
    ----------
    by
        ``"prefix"`` (a value starting with a group's prefix) or ``"range"`` (a code whose
        whole number lies in one of a group's inclusive ranges).
    groups
        Group name → its prefixes (strings) or ranges (``(low, high)``), in declared order: the
        first group that matches wins.
    other
        The group of every value no group matches.
    """

    by: Literal["prefix", "range"]
    groups: tuple[tuple[str, tuple[object, ...]], ...]
    other: str = "other"

    @property
    def names(self) -> tuple[str, ...]:
        """The groups' names, then ``other``: the column's vocabulary once recoded."""
        names = [name for name, _ in self.groups]
        return (*names, self.other) if self.other not in names else tuple(names)


@dataclass(frozen=True)
class Column:
    """One declared column.

    Parameters
    ----------
    name
        Its name in the source files.
    type
        ``categorical``, ``integer``, ``float`` or ``datetime``.
    vocabulary
        A categorical column's documented values (None: open, its values are not shared).
    pattern
        A regular expression every value of a categorical column matches.
    groups
        How a categorical column's values are recoded (None: kept).
    range
        A number's plausible inclusive ``(low, high)``.
    format
        A date-time's ``strptime`` format (None: ISO 8601).
    gaps
        Whether a value may be missing.
    known_at
        When its value is known (None: not a feature).
    description, unit
        Free text, for documentation.
    recode
        A categorical column's value in the files → the value it means (None: as written).
    integer_codes
        A categorical column of whole numbers, read as numbers then as their integer text.
    parse
        ``"interval_midpoint"``: a float written as intervals (``[70-80)`` → 75).
    form
        The pattern in words, for messages (``COLUMN must be FORM``).
    present_at_least
        A column with gaps: the smallest share of rows holding a value; fewer is a warning
        of the raw table's data checks, never a refusal (None: not checked).
    """

    name: str
    type: ColumnType
    vocabulary: tuple[str, ...] | None = None
    pattern: str | None = None
    groups: Groups | None = None
    range: tuple[float, float] | None = None
    format: str | None = None
    gaps: bool = False
    known_at: str | None = None
    description: str = ""
    unit: str = ""
    recode: Mapping[str, str] | None = None
    integer_codes: bool = False
    parse: str | None = None
    form: str | None = None
    present_at_least: float | None = None

    @property
    def numeric(self) -> bool:
        """Whether it holds numbers (integer or float)."""
        return self.type in ("integer", "float")

    @property
    def feature_vocabulary(self) -> tuple[str, ...] | None:
        """A category's values: its groups, else its vocabulary (None: open, or a number)."""
        if self.numeric:
            return None
        return self.groups.names if self.groups is not None else self.vocabulary


@dataclass(frozen=True)
class Compare:
    """One column compared: ``column <op> value`` (``in``/``not_in``: a set; ``missing``)."""

    column: str
    op: str
    value: object


@dataclass(frozen=True)
class Combine:
    """``all`` / ``any`` of conditions, or ``not`` of one."""

    op: Literal["all", "any", "not"]
    items: tuple[Condition, ...]


Condition = Compare | Combine


@dataclass(frozen=True)
class Value:
    """A regression label: a column's value, or the time between two date-times."""

    columns: tuple[str, ...]
    unit: Literal["value", "days", "hours"] = "value"


@dataclass(frozen=True)
class Variant:
    """A named alternative to an objective's label, its exclusion, or both.

    Parameters
    ----------
    label
        The label it gives (None: it leaves the label to another selected variant, else the
        objective's own).
    exclude
        The rows it takes out of the objective, replacing the objective's ``exclude`` (None: it
        leaves the exclusion to another selected variant, else the objective's own).
    """

    label: Condition | Value | None = None
    exclude: Condition | None = None


@dataclass(frozen=True)
class Labelling:
    """One objective's label and exclusion once the selected variants are applied.

    Parameters
    ----------
    label
        The label.
    exclude
        The rows without a label (None: none).
    label_variant, exclude_variant
        The variant each comes from (None: the objective's own).
    """

    label: Condition | Value
    exclude: Condition | None
    label_variant: str | None = None
    exclude_variant: str | None = None


def selected_names(selected: str | Sequence[str] | None) -> tuple[str, ...]:
    """The selected variant names as a tuple (one name, several, or None: none)."""
    if selected is None:
        return ()
    return (selected,) if isinstance(selected, str) else tuple(selected)


@dataclass(frozen=True)
class DeclaredObjective:
    """One objective: its label, exclusions and prediction time.

    Parameters
    ----------
    objective
        Its name, kind and one-line description.
    predicted_at
        When it is predicted (a feature known later may not be shown to it).
    label
        A binary objective's condition, or a regression's :class:`Value`.
    exclude
        Rows taking no part in it (their label is missing); None: none.
    variants
        Other definitions of its label and/or exclusion by name, in declared order (the data
        settings ``readmission``, ``readmission_exclude``, ``early_discharge`` select them).
    """

    objective: Objective
    predicted_at: str
    label: Condition | Value
    exclude: Condition | None = None
    variants: Mapping[str, Variant] = field(default_factory=dict)

    def labelling(self, selected: str | Sequence[str] | None) -> Labelling:
        """The label and exclusion under the ``selected`` variant names.

        The label is that of the first declared variant whose name is selected and that gives
        a label, else the objective's own; the exclusion likewise (a variant's exclusion
        replaces the objective's).
        """
        names = set(selected_names(selected))
        chosen = [(n, v) for n, v in self.variants.items() if n in names]
        by_label = next(((n, v.label) for n, v in chosen if v.label is not None), None)
        by_exclude = next(((n, v.exclude) for n, v in chosen if v.exclude is not None), None)
        return Labelling(
            label=self.label if by_label is None else by_label[1],
            exclude=self.exclude if by_exclude is None else by_exclude[1],
            label_variant=None if by_label is None else by_label[0],
            exclude_variant=None if by_exclude is None else by_exclude[0],
        )

    def label_of(self, selected: str | Sequence[str] | None) -> Condition | Value:
        """The label under the ``selected`` variant names (:meth:`labelling`)."""
        return self.labelling(selected).label


@dataclass(frozen=True)
class Rule:
    """Rows no real record can be: refused where ``when`` holds, naming ``column``."""

    when: Condition
    column: str
    message: str


@dataclass(frozen=True)
class Source:
    """Where the rows are.

    Parameters
    ----------
    files
        The files, as written (relative ones resolved against the data folder, else the
        definition's folder).
    format
        ``csv`` or ``parquet`` (None: from each name).
    missing_values
        CSV cells read as missing.
    delimiter
        The CSV delimiter.
    sha256
        The one file's published SHA-256 (None: not checked).
    rename
        A column of the files → the declared column it holds (files that name it otherwise).
    missing_hint
        What a message adds when a file is not found.
    url
        Where the published file is downloaded from (None: not published).
    extractor
        A built-in extractor building the table from a release's raw tables
        (:mod:`fedcare_core.data.declared.extractors`; None: the table is ``files``).
    """

    files: tuple[str, ...]
    format: str | None = None
    missing_values: tuple[str, ...] = ("", "NA", "NULL", "?")
    delimiter: str = ","
    sha256: str | None = None
    rename: Mapping[str, str] = field(default_factory=dict)
    missing_hint: str = ""
    url: str | None = None
    extractor: str | None = None

    def file_name(self, declared: str) -> str:
        """The name of declared column ``declared`` in the files."""
        return next((k for k, v in self.rename.items() if v == declared), declared)


@dataclass(frozen=True)
class DatasetDeclaration:
    """A parsed, checked dataset definition file.

    Parameters
    ----------
    path
        The file it was read from (messages; relative sources).
    text
        The file's text (a packaged model carries it).
    name, title, description
        Its name, display name and description.
    source
        Where its rows are.
    patient, encounter
        The identifier columns (encounter: None if not declared).
    strata
        A grouping column for non-IID assignment (None: none).
    include
        The cohort's rows (None: every row).
    columns
        Every declared column, in declared order.
    objectives
        The objectives, in declared order.
    partition
        The default feature partition.
    partition_ignores_times
        Why the default partition may ignore prediction times ("" : it respects them).
    moves
        Features ``--features admission`` adds to an objective's pool.
    identifier_pattern
        A regular expression every identifier matches (None: any text).
    rules
        Rows refused where a rule's condition holds.
    identifier_form
        The identifiers' pattern in words (messages).
    numbering
        The order patients are numbered in: ``first_seen`` (the rows') or ``ascending``.
    sensitive
        The attributes the evaluation reports subgroups of, each over a feature column.
    """

    path: Path
    text: str
    name: str
    title: str
    description: str
    source: Source
    patient: str
    encounter: str | None
    strata: str | None
    include: Condition | None
    columns: Mapping[str, Column]
    objectives: tuple[DeclaredObjective, ...]
    partition: FeaturePartition
    partition_ignores_times: str = ""
    moves: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    identifier_pattern: str | None = None
    rules: tuple[Rule, ...] = ()
    identifier_form: str | None = None
    numbering: str = "first_seen"
    sensitive: tuple[SensitiveAttribute, ...] = ()

    @property
    def gap_columns(self) -> tuple[str, ...]:
        """The columns that may have gaps, in declared order."""
        return tuple(c.name for c in self.columns.values() if c.gaps)

    def gap_message(self, column: str) -> str:
        """A gap where none is allowed, in words."""
        allowed = self.gap_columns
        where = f"only {', '.join(allowed)} may have gaps" if allowed else "no column may"
        return f"{column} is missing; {where}"

    @property
    def features(self) -> tuple[Column, ...]:
        """The feature columns (those with a ``known_at``), in declared order."""
        return tuple(c for c in self.columns.values() if c.known_at is not None)

    @property
    def identifiers(self) -> tuple[str, ...]:
        """The identifier columns: the row's (encounter), then its patient's."""
        return (self.patient,) if self.encounter is None else (self.encounter, self.patient)
