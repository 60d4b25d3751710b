"""What a dataset definition's JSON Schema cannot say, checked before any row is read.

Every refusal names the file and the key: a checksum declared for several files, a name
written twice, a vocabulary with repeats, a key that does not fit its column's type, a regular
expression that does not compile, a label or exclusion over a column that is not declared (or
over an identifier, or comparing a value its column cannot hold; a label variant's exclusion
alike), a label whose source is a feature known when its objective is predicted, a partition
naming what is not a feature or leaving a feature out, an open vocabulary shared, a feature
shown to an objective before it is known, and a sensitive attribute over a column that is not
a feature (or banded though it holds no numbers).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import Any

from fedcare_core.data.declared.model import (
    ORDERINGS,
    Column,
    Combine,
    Compare,
    Condition,
    DatasetDeclaration,
    Value,
)
from fedcare_core.data.partition import AVAILABILITY, at_prediction_time, check_prediction_times
from fedcare_core.errors import ConfigError, DefinitionError
from fedcare_core.objectives import objective_kind, objective_kind_names

__all__ = ["check_column", "check_declaration", "condition_columns", "known_after"]

#: The keys each column type takes (besides the common keys below).
_TYPE_KEYS = {
    "categorical": {"vocabulary", "pattern", "form", "groups", "recode", "integer_codes"},
    "integer": {"range"},
    "float": {"range", "parse", "vocabulary"},
    "datetime": {"format"},
}
_COMMON_KEYS = {"type", "description", "unit", "gaps", "present_at_least", "known_at"}


def check_declaration(d: DatasetDeclaration, document: Mapping[str, Any]) -> None:
    """Refuse what the schema lets through but the definition cannot mean.

    Raises
    ------
    DefinitionError
        Naming the file and the key.
    """
    file = str(d.path)
    if d.source.sha256 is not None and len(d.source.files) != 1:
        raise _fail(
            file,
            "source.sha256",
            f"a sha256 is the one source file's; this source reads {len(d.source.files)} files",
        )
    for name, spec in document["columns"].items():
        check_column(d.columns[name], spec, file)
    _check_identifiers(d, file)
    _check_rename(d, file)
    _check_extractor(d, file)
    if d.identifier_pattern is not None:
        _check_pattern(d.identifier_pattern, file, "identifiers.pattern")
    if d.include is not None:
        _check_condition(d.include, d, file, "cohort.include")
    _check_objectives(d, document, file)
    _check_partition(d, file)
    _check_sensitive(d, file)


def _fail(file: str, key: str, message: str) -> DefinitionError:
    return DefinitionError(message, file=file, key=key)


def check_column(c: Column, spec: Mapping[str, Any], file: str) -> None:
    """Refuse a column whose keys do not fit its type or cannot mean anything.

    Raises
    ------
    DefinitionError
        Naming ``file`` and ``columns.<name>.<key>``.
    """
    key = f"columns.{c.name}"
    wrong = sorted(set(spec) - _COMMON_KEYS - _TYPE_KEYS[c.type])
    if wrong:
        raise _fail(file, f"{key}.{wrong[0]}", f"a {c.type} column takes no {wrong[0]!r}")
    if c.numeric and c.range is None:
        raise _fail(file, key, f"a {c.type} column needs its plausible range: range: [low, high]")
    if c.range is not None:
        low, high = c.range
        if low > high:
            raise _fail(file, f"{key}.range", f"low {low:g} is above high {high:g}")
        if c.type == "integer" and (low != int(low) or high != int(high)):
            raise _fail(file, f"{key}.range", "an integer column's range is whole numbers")
    if c.type == "float" and c.vocabulary is not None and c.parse is None:
        raise _fail(
            file,
            f"{key}.vocabulary",
            "a float column takes no 'vocabulary' unless it is parsed from intervals (parse)",
        )
    if c.vocabulary is not None:
        _check_distinct(c.vocabulary, file, f"{key}.vocabulary", "value")
    if c.pattern is not None:
        _check_pattern(c.pattern, file, f"{key}.pattern")
    if c.groups is not None:
        _check_groups(c, file, f"{key}.groups")
    if c.recode is not None:
        _check_recode(c, file, f"{key}.recode")
    if c.present_at_least is not None and not c.gaps:
        raise _fail(
            file,
            f"{key}.present_at_least",
            "a column without gaps: true must be complete; present_at_least is for one with gaps",
        )
    if c.type == "datetime" and c.known_at is not None:
        raise _fail(
            file,
            f"{key}.known_at",
            "a date-time column cannot be a feature (a label may read it: days_between)",
        )


def _check_pattern(pattern: str, file: str, key: str) -> None:
    try:
        re.compile(pattern)
    except re.error as exc:
        raise _fail(file, key, f"not a regular expression ({exc})") from None


def _check_groups(c: Column, file: str, key: str) -> None:
    assert c.groups is not None
    for name, members in c.groups.groups:
        where = f"{key}.map.{name}"
        if c.groups.by == "prefix":
            if not all(isinstance(m, str) and m for m in members):
                raise _fail(file, where, "a prefix group lists non-empty strings")
        elif not all(_is_range(m) for m in members):
            raise _fail(file, where, "a range group lists [low, high] pairs of numbers, low ≤ high")
        if name == c.groups.other:
            raise _fail(file, where, f"{name!r} is the group of every other value (groups.other)")


def _is_range(member: object) -> bool:
    if not isinstance(member, list) or len(member) != 2:
        return False
    low, high = member
    numbers = all(isinstance(v, int | float) and not isinstance(v, bool) for v in member)
    return numbers and low <= high


def _check_distinct(values: tuple[str, ...], file: str, key: str, what: str) -> None:
    seen: set[str] = set()
    for value in values:
        if value in seen:
            raise _fail(file, key, f"{what} {value!r} is written twice")
        seen.add(value)


def _check_identifiers(d: DatasetDeclaration, file: str) -> None:
    for role, name in (("patient", d.patient), ("encounter", d.encounter)):
        if name is not None and name in d.columns:
            raise _fail(
                file,
                f"identifiers.{role}",
                f"{name!r} is also declared under columns: an identifier is neither a feature "
                "nor a label's source, declare it only here",
            )
    if d.encounter is not None and d.encounter == d.patient:
        raise _fail(file, "identifiers.encounter", "the encounter and patient columns are one")
    if d.strata is not None:
        column = d.columns.get(d.strata)
        if column is None or column.type != "categorical":
            raise _fail(file, "strata", f"{d.strata!r} is not a declared categorical column")


def _check_extractor(d: DatasetDeclaration, file: str) -> None:
    """An extractor's table: only the columns it gives, and no file's options."""
    name = d.source.extractor
    if name is None:
        return
    from fedcare_core.data.declared.extractors import extracted_columns, extractor_names

    if name not in extractor_names():
        raise _fail(
            file,
            "source.extractor",
            f"{name!r} is no installed extractor; expected one of {', '.join(extractor_names())}",
        )
    given = extracted_columns(name)
    for column in (*d.identifiers, *d.columns):
        if column not in given:
            where = f"columns.{column}" if column in d.columns else "identifiers"
            raise _fail(
                file,
                where,
                f"the {name} extractor gives no column {column!r} (it gives {', '.join(given)})",
            )
    if d.source.rename or d.source.sha256 is not None:
        key = "source.rename" if d.source.rename else "source.sha256"
        raise _fail(file, key, f"the {name} extractor reads no file this could apply to")


def _check_rename(d: DatasetDeclaration, file: str) -> None:
    """A renamed column holds a declared one; no two file columns hold one; no name clash."""
    declared = {*d.identifiers, *d.columns}
    targets: dict[str, str] = {}
    for source, target in d.source.rename.items():
        key = f"source.rename.{source}"
        if target not in declared:
            raise _fail(file, key, f"{target!r} is not a declared column or identifier")
        if target in targets:
            raise _fail(file, key, f"{targets[target]!r} and {source!r} would both be {target!r}")
        if source in declared and source != target and source not in d.source.rename.values():
            raise _fail(
                file,
                key,
                f"{source!r} is itself a declared column: its file column would be lost",
            )
        targets[target] = source


def _check_recode(c: Column, file: str, key: str) -> None:
    assert c.recode is not None
    known = c.vocabulary
    for raw, value in c.recode.items():
        if known is not None and value not in known:
            raise _fail(
                file,
                f"{key}.{raw}",
                f"{c.name!r} never holds {value!r}: its values are {', '.join(known)}",
            )


def _check_objectives(d: DatasetDeclaration, document: Mapping[str, Any], file: str) -> None:
    seen: set[str] = set()
    for i, (o, doc) in enumerate(zip(d.objectives, document["objectives"], strict=True)):
        key = f"objectives[{i}]"
        name = o.objective.name
        if name in seen:
            raise _fail(file, f"{key}.name", f"objective {name!r} is declared twice")
        seen.add(name)
        kind = o.objective.kind
        if kind not in objective_kind_names():
            raise _fail(
                file, f"{key}.kind", f"{kind!r} is not one of {', '.join(objective_kind_names())}"
            )
        expected = objective_kind(kind).metric
        if doc.get("metric", expected) != expected:
            raise _fail(file, f"{key}.metric", f"a {kind} objective is measured by {expected}")
        _check_label(o.label, o.objective.kind, o.predicted_at, d, file, f"{key}.label")
        if o.exclude is not None:
            _check_condition(o.exclude, d, file, f"{key}.exclude")
        for name, variant in o.variants.items():
            where = f"{key}.variants.{name}"
            written = doc["variants"][name]
            if variant.label is not None:
                label_key = f"{where}.label" if "label" in written else where
                _check_label(variant.label, o.objective.kind, o.predicted_at, d, file, label_key)
            if variant.exclude is not None:
                _check_condition(variant.exclude, d, file, f"{where}.exclude")
    for i, rule in enumerate(d.rules):
        _check_condition(rule.when, d, file, f"refuse[{i}].when")
        _declared(rule.column, d, file, f"refuse[{i}].column")


def _check_label(
    label: Condition | Value,
    kind: str,
    predicted_at: str,
    d: DatasetDeclaration,
    file: str,
    key: str,
) -> None:
    """Refuse a label of the wrong kind, over undeclared columns, or reading what is seen.

    A label may read a feature only if it is known after the objective is predicted (e.g. the
    discharge disposition for a label predicted at admission): a partition respecting
    prediction times never shows it; loading with one that does is refused
    (:meth:`~.source.DeclaredSource.load`).
    """
    risk = objective_kind(kind).risk
    if risk and isinstance(label, Value):
        raise _fail(file, key, f"a {kind} objective's label is a condition (true: 1, false: 0)")
    if not risk and not isinstance(label, Value):
        raise _fail(
            file, key, f"a {kind} objective's label is {{value: COLUMN}} or {{days_between: …}}"
        )
    if isinstance(label, Value):
        wanted = ("integer", "float") if label.unit == "value" else ("datetime",)
        for name in label.columns:
            column = _declared(name, d, file, key)
            if column.type not in wanted:
                raise _fail(
                    file, key, f"{name!r} is {column.type}; this label reads {' or '.join(wanted)}"
                )
    else:
        _check_condition(label, d, file, key)
    sources = label.columns if isinstance(label, Value) else tuple(condition_columns(label))
    for name in sources:
        known_at = d.columns[name].known_at
        if known_at is not None and not known_after(known_at, predicted_at):
            raise _fail(
                file,
                key,
                f"the label reads {name!r}, a feature (known_at {known_at}, the objective is "
                f"predicted at {predicted_at}): a label's source cannot be a feature known when "
                "the objective is predicted, the model would see its answer",
            )


def known_after(known_at: str, predicted_at: str) -> bool:
    """Whether a value known at ``known_at`` is known only after ``predicted_at``."""
    return AVAILABILITY.index(known_at) > AVAILABILITY.index(predicted_at)


def condition_columns(condition: Condition) -> Iterator[str]:
    """The columns a condition reads, in order (repeats possible)."""
    if isinstance(condition, Compare):
        yield condition.column
    else:
        for item in condition.items:
            yield from condition_columns(item)


def _declared(name: str, d: DatasetDeclaration, file: str, key: str) -> Column:
    column = d.columns.get(name)
    if column is None:
        what = "an identifier" if name in d.identifiers else "not a declared column"
        raise _fail(file, key, f"{name!r} is {what}; conditions and labels read declared columns")
    return column


def _check_condition(condition: Condition, d: DatasetDeclaration, file: str, key: str) -> None:
    if isinstance(condition, Combine):
        for item in condition.items:
            _check_condition(item, d, file, key)
        return
    column = _declared(condition.column, d, file, key)
    op, value = condition.op, condition.value
    if op == "missing":
        return
    if column.type == "datetime":
        raise _fail(file, key, f"{column.name!r} is a date-time: a condition can only test missing")
    values = value if isinstance(value, tuple) else (value,)
    if column.numeric:
        if any(isinstance(v, str) for v in values):
            raise _fail(file, key, f"{column.name!r} is {column.type}: compare it with numbers")
        return
    if op in ORDERINGS:
        raise _fail(file, key, f"{column.name!r} is categorical: {op} compares numbers only")
    known = column.feature_vocabulary
    unknown = [str(v) for v in values if known is not None and str(v) not in known]
    if unknown:
        raise _fail(
            file,
            key,
            f"{column.name!r} never holds {unknown[0]!r}: its values are {', '.join(known or ())}",
        )


def _check_partition(d: DatasetDeclaration, file: str) -> None:
    p = d.partition
    features = {c.name: c for c in d.features}
    objectives = {o.objective.name: o for o in d.objectives}
    _check_distinct(p.common, file, "partition.common", "feature")
    for name in p.common:
        _feature(name, features, file, "partition.common")
        if features[name].feature_vocabulary is None and features[name].type == "categorical":
            raise _fail(
                file,
                "partition.common",
                f"{name!r} has no vocabulary: a common feature needs one, so that every site "
                "encodes it alike (declare its vocabulary, or keep it private)",
            )
    for pools, key in (
        (p.private, "partition.private"),
        (d.moves, "partition.moves_at_prediction_time"),
    ):
        for objective, pool in pools.items():
            if objective not in objectives:
                raise _fail(
                    file, f"{key}.{objective}", f"{objective!r} is not a declared objective"
                )
            _check_distinct(pool, file, f"{key}.{objective}", "feature")
            for name in pool:
                _feature(name, features, file, f"{key}.{objective}")
                if name in p.common:
                    raise _fail(file, f"{key}.{objective}", f"{name!r} is common already")
    placed = set(p.all_features)
    left = [name for name in features if name not in placed]
    if left:
        raise _fail(file, "partition", f"feature {left[0]!r} is in no partition (common or a pool)")
    _check_times(d, file)


def _feature(name: str, features: Mapping[str, Column], file: str, key: str) -> None:
    if name not in features:
        raise _fail(
            file,
            key,
            f"{name!r} is not a feature (a feature is a declared column with known_at)",
        )


def _check_times(d: DatasetDeclaration, file: str) -> None:
    known = {c.name: str(c.known_at) for c in d.features}
    predicted = {o.objective.name: o.predicted_at for o in d.objectives}
    try:
        if not d.partition_ignores_times:
            check_prediction_times(d.partition, known, predicted)
        at_prediction_time(d.partition, known, predicted, moves=d.moves)
    except ConfigError as exc:
        raise _fail(file, "partition", str(exc)) from None


def _check_sensitive(d: DatasetDeclaration, file: str) -> None:
    """Each sensitive attribute reads a declared feature; only a number's is banded."""
    for attribute in d.sensitive:
        key = f"sensitive.{attribute.name}"
        name = attribute.column
        column = d.columns.get(name)
        if column is None:
            what = "an identifier" if name in d.identifiers else "not a declared column"
            message = f"{name!r} is {what}; a sensitive attribute reads a feature column"
            raise _fail(file, f"{key}.column", message)
        if column.known_at is None:
            raise _fail(
                file,
                f"{key}.column",
                f"{name!r} is not a feature (a feature is a declared column with known_at)",
            )
        if attribute.bands and not column.numeric:
            raise _fail(
                file,
                f"{key}.bands",
                f"{name!r} is {column.type}: bands are for integer and float columns "
                "(a category's values are its subgroups)",
            )
