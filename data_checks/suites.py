"""Expectation suites for the raw tables, the client partitions and the patient assignment.

Each function returns a fresh :class:`great_expectations.ExpectationSuite`, not attached to any
data context; :func:`data_checks.validate.run_checks` adds it to an ephemeral one.

Identifier columns are only checked for presence, form (a definition's ``identifiers.pattern``)
and uniqueness, never against lists of values, and every map expectation is run with a result
format that lists no unexpected values (see :data:`data_checks.validate.RESULT_FORMAT`), so a
report holds counts, not identifiers.
"""

from __future__ import annotations

from collections.abc import Sequence

import great_expectations.expectations as gxe
import pandas as pd
from great_expectations import ExpectationSuite
from great_expectations.expectations import Expectation
from great_expectations.expectations.metadata_types import FailureSeverity
from great_expectations.expectations.row_conditions import Column

from data_checks.expectations import Expect
from data_checks.tables import (
    ASSIGNMENT_TABLE,
    CLIENT_COLUMN,
    FEATURES_FINITE_COLUMN,
    MIMIC3_REQUIRED_COLUMNS,
    PATIENT_HASH_COLUMN,
    SPLIT_COLUMN,
    PatientAssignment,
    assignment_table,
    client_partition_tables,
    client_table_name,
    label_column,
)
from fedcare_core.data.clients import SPLITS, Federation
from fedcare_core.data.cohort import Objective
from fedcare_core.objectives import objective_kind

# --------------------------------------------------------------------------------------------
# Raw tables described as Expect records (a dataset defined by a file: data_checks.declared)
# --------------------------------------------------------------------------------------------


def gx_expectation(expect: Expect) -> Expectation:
    """The Great Expectations expectation ``expect`` describes (tuples passed as lists)."""
    kwargs = {k: list(v) if isinstance(v, tuple) else v for k, v in expect.kwargs.items()}
    if expect.warning:
        kwargs["severity"] = FailureSeverity.WARNING
    expectation: Expectation = getattr(gxe, expect.kind)(**kwargs)
    return expectation


# --------------------------------------------------------------------------------------------
# MIMIC-III (raw tables, upper-cased headers)
# --------------------------------------------------------------------------------------------

#: dtypes accepted for numeric MIMIC-III columns (a stray text value makes a column ``str``).
_NUMERIC_TYPES: tuple[str, ...] = ("int64", "float64", "Int64", "Float64")
#: ICU types of ``ICUSTAYS.FIRST_CAREUNIT`` in MIMIC-III v1.4.
_CARE_UNITS: tuple[str, ...] = ("CCU", "CSRU", "MICU", "NICU", "SICU", "TSICU")
#: Share of ``PATIENTS.GENDER`` values that must be M or F (the loader treats others as missing).
_MIN_KNOWN_GENDER = 0.99

_MIMIC3_NUMERIC: dict[str, tuple[str, ...]] = {
    "ADMISSIONS": ("SUBJECT_ID", "HADM_ID", "HOSPITAL_EXPIRE_FLAG"),
    "PATIENTS": ("SUBJECT_ID",),
    "ICUSTAYS": ("SUBJECT_ID", "HADM_ID", "ICUSTAY_ID", "LOS"),
    "LABEVENTS": ("HADM_ID", "ITEMID", "VALUENUM"),
}
_MIMIC3_NOT_NULL: dict[str, tuple[str, ...]] = {
    "ADMISSIONS": ("SUBJECT_ID", "HADM_ID", "ADMITTIME", "DISCHTIME", "HOSPITAL_EXPIRE_FLAG"),
    "PATIENTS": ("SUBJECT_ID", "DOB"),
    "ICUSTAYS": ("SUBJECT_ID", "HADM_ID", "ICUSTAY_ID", "INTIME"),
    # LABEVENTS.HADM_ID is empty for outpatient tests, which the loader skips.
    "LABEVENTS": ("ITEMID", "CHARTTIME"),
}
_MIMIC3_UNIQUE: dict[str, str] = {
    "ADMISSIONS": "HADM_ID",
    "PATIENTS": "SUBJECT_ID",
    "ICUSTAYS": "ICUSTAY_ID",
}


def mimic3_raw_suites(
    *, min_rows: int = 1, unseen_categories: str = "refuse"
) -> dict[str, ExpectationSuite]:
    """Expectations on the raw MIMIC-III tables (see ``read_mimic3_raw``).

    Parameters
    ----------
    min_rows
        Fewest data rows accepted in each table.
    unseen_categories
        ``"other"`` leaves out the ``FIRST_CAREUNIT`` and ``GENDER`` value sets (the loader
        then encodes unseen values as ``other``).

    Returns
    -------
    dict of str to ExpectationSuite
        Keyed by table name (``ADMISSIONS``, ``PATIENTS``, ``ICUSTAYS``, ``LABEVENTS``). Each
        requires the loader's columns (others allowed) and ``min_rows`` rows; identifiers and
        times not null; numeric columns of a numeric dtype; one row per ``HADM_ID``,
        ``SUBJECT_ID`` or ``ICUSTAY_ID`` in its own table; ``HOSPITAL_EXPIRE_FLAG`` in {0, 1};
        ``LOS`` ≥ 0 where present; ``FIRST_CAREUNIT`` a MIMIC-III ICU; ``GENDER`` M or F.

    """
    suites: dict[str, ExpectationSuite] = {}
    for table, required in MIMIC3_REQUIRED_COLUMNS.items():
        suite_name = f"mimic3_{table.lower()}_raw"
        expectations: list[Expectation] = []
        add = expectations.append
        add(gxe.ExpectTableColumnsToMatchSet(column_set=list(required), exact_match=False))
        add(gxe.ExpectTableRowCountToBeBetween(min_value=min_rows))
        for col in _MIMIC3_NOT_NULL[table]:
            add(gxe.ExpectColumnValuesToNotBeNull(column=col))
        for col in _MIMIC3_NUMERIC[table]:
            add(gxe.ExpectColumnValuesToBeInTypeList(column=col, type_list=list(_NUMERIC_TYPES)))
        if table in _MIMIC3_UNIQUE:
            add(gxe.ExpectColumnValuesToBeUnique(column=_MIMIC3_UNIQUE[table]))
        if table == "ADMISSIONS":
            add(gxe.ExpectColumnValuesToBeInSet(column="HOSPITAL_EXPIRE_FLAG", value_set=[0, 1]))
        elif table == "ICUSTAYS":
            add(gxe.ExpectColumnValuesToBeBetween(column="LOS", min_value=0))
            if unseen_categories == "refuse":
                add(
                    gxe.ExpectColumnValuesToBeInSet(
                        column="FIRST_CAREUNIT", value_set=list(_CARE_UNITS)
                    )
                )
        elif table == "PATIENTS" and unseen_categories == "refuse":
            add(
                gxe.ExpectColumnValuesToBeInSet(
                    column="GENDER", value_set=["M", "F"], mostly=_MIN_KNOWN_GENDER
                )
            )
        suites[table] = ExpectationSuite(name=suite_name, expectations=expectations)
    return suites


# --------------------------------------------------------------------------------------------
# Client partitions
# --------------------------------------------------------------------------------------------

#: Default fewest labelled training rows per objective a client must hold.
_MIN_TRAIN_ROWS = 20
#: Default fewest training rows of each class for a binary objective.
_MIN_CLASS_ROWS = 1
#: Default fewest rows in each of a client's splits.
_MIN_SPLIT_ROWS = 1


def client_partition_suite(
    name: str,
    objectives: Sequence[Objective],
    *,
    min_train_rows: int = _MIN_TRAIN_ROWS,
    min_class_rows: int = _MIN_CLASS_ROWS,
    min_split_rows: int = _MIN_SPLIT_ROWS,
) -> ExpectationSuite:
    """Expectations on one client's partition table (see ``client_partition_table``).

    Parameters
    ----------
    name
        Suite name (the client's table name).
    objectives
        The client's objectives, in its label-column order.
    min_train_rows
        Fewest training rows labelled for each objective.
    min_class_rows
        Fewest training rows of each class (0 and 1) for each binary objective; with the
        default 1, "both classes present".
    min_split_rows
        Fewest rows in each of train, val and test.

    Returns
    -------
    ExpectationSuite
        Exactly the expected columns; splits named train/val/test with ``min_split_rows`` rows
        each; every encoded feature finite; labels float, binary labels in {0, 1} (NaN = not
        applicable) with both classes in training, regression (LOS) labels > 0; labelled
        training rows for every objective, and a warning below ``min_train_rows``.
        Expectations on a subset of rows (a row condition) carry the column they concern in
        ``meta["column"]``.

    """
    expectations: list[Expectation] = []
    add = expectations.append
    labels = [label_column(o.name) for o in objectives]
    add(
        gxe.ExpectTableColumnsToMatchSet(
            column_set=[SPLIT_COLUMN, FEATURES_FINITE_COLUMN, *labels], exact_match=True
        )
    )
    add(gxe.ExpectColumnValuesToNotBeNull(column=SPLIT_COLUMN))
    add(gxe.ExpectColumnValuesToBeInSet(column=SPLIT_COLUMN, value_set=list(SPLITS)))
    for split in SPLITS:
        add(
            gxe.ExpectTableRowCountToBeBetween(
                min_value=min_split_rows,
                row_condition=Column(SPLIT_COLUMN) == split,
                meta={"column": SPLIT_COLUMN, "check": f"rows in the {split} split"},
            )
        )
    add(gxe.ExpectColumnValuesToNotBeNull(column=FEATURES_FINITE_COLUMN))
    add(gxe.ExpectColumnValuesToBeInSet(column=FEATURES_FINITE_COLUMN, value_set=[True]))
    is_train = Column(SPLIT_COLUMN) == "train"
    for obj, col in zip(objectives, labels, strict=True):
        add(gxe.ExpectColumnValuesToBeInTypeList(column=col, type_list=["float32", "float64"]))
        # Few labelled rows still train (a small site): a warning; none at all is refused.
        add(
            gxe.ExpectTableRowCountToBeBetween(
                min_value=1,
                row_condition=is_train & Column(col).is_not_null(),
                meta={"column": col, "check": "labelled training rows"},
            )
        )
        add(
            gxe.ExpectTableRowCountToBeBetween(
                min_value=min_train_rows,
                row_condition=is_train & Column(col).is_not_null(),
                meta={"column": col, "check": f"at least {min_train_rows} labelled training rows"},
                severity=FailureSeverity.WARNING,
            )
        )
        kind = objective_kind(obj.kind)
        if kind.risk:
            add(gxe.ExpectColumnValuesToBeInSet(column=col, value_set=[0.0, 1.0]))
            add(
                gxe.ExpectColumnDistinctValuesToContainSet(
                    column=col,
                    value_set=[0.0, 1.0],
                    row_condition=is_train,
                    meta={"column": col, "check": "both classes in training rows"},
                )
            )
            if min_class_rows > 1:
                for cls in (0.0, 1.0):
                    add(
                        gxe.ExpectTableRowCountToBeBetween(
                            min_value=min_class_rows,
                            row_condition=is_train & (Column(col) == cls),
                            meta={"column": col, "check": f"training rows of class {cls:g}"},
                        )
                    )
        elif kind.interval:
            add(gxe.ExpectColumnValuesToBeBetween(column=col, min_value=0, strict_min=True))
    return ExpectationSuite(name=name, expectations=expectations)


def _client_partition_suites(
    federation: Federation,
    *,
    min_train_rows: int = _MIN_TRAIN_ROWS,
    min_class_rows: int = _MIN_CLASS_ROWS,
    min_split_rows: int = _MIN_SPLIT_ROWS,
) -> dict[str, ExpectationSuite]:
    """One :func:`client_partition_suite` per client, keyed like ``client_partition_tables``."""
    out: dict[str, ExpectationSuite] = {}
    for client in federation.clients:
        name = client_table_name(client.client_id)
        out[name] = client_partition_suite(
            name,
            [federation.objective(o) for o in client.objectives],
            min_train_rows=min_train_rows,
            min_class_rows=min_class_rows,
            min_split_rows=min_split_rows,
        )
    return out


# --------------------------------------------------------------------------------------------
# Patient assignment
# --------------------------------------------------------------------------------------------


def _patient_assignment_suite(n_clients: int) -> ExpectationSuite:
    """Expectations on the patient-assignment table (see ``assignment_table``).

    Parameters
    ----------
    n_clients
        Number of clients; client indices must lie in ``0 .. n_clients - 1``.

    Returns
    -------
    ExpectationSuite
        ``patient_hash`` unique (each patient in one client and one split: a patient found in
        two places fails, reported as a count of rows), no missing values, client indices in
        range and split names from train/val/test.

    """
    expectations: list[Expectation] = []
    add = expectations.append
    add(
        gxe.ExpectTableColumnsToMatchSet(
            column_set=[PATIENT_HASH_COLUMN, CLIENT_COLUMN, SPLIT_COLUMN], exact_match=True
        )
    )
    for col in (PATIENT_HASH_COLUMN, CLIENT_COLUMN, SPLIT_COLUMN):
        add(gxe.ExpectColumnValuesToNotBeNull(column=col))
    add(
        gxe.ExpectColumnValuesToBeUnique(
            column=PATIENT_HASH_COLUMN,
            meta={"check": "rows of patients found in more than one (client, split)"},
        )
    )
    add(
        gxe.ExpectColumnValuesToBeBetween(
            column=CLIENT_COLUMN, min_value=0, max_value=n_clients - 1
        )
    )
    add(gxe.ExpectColumnValuesToBeInSet(column=SPLIT_COLUMN, value_set=list(SPLITS)))
    return ExpectationSuite(name=ASSIGNMENT_TABLE, expectations=expectations)


# --------------------------------------------------------------------------------------------
# Everything a federation is checked with
# --------------------------------------------------------------------------------------------


def federation_checks(
    federation: Federation,
    assignment: PatientAssignment,
    *,
    min_train_rows: int = _MIN_TRAIN_ROWS,
    min_class_rows: int = _MIN_CLASS_ROWS,
    min_split_rows: int = _MIN_SPLIT_ROWS,
    salt: bytes | None = None,
) -> tuple[dict[str, pd.DataFrame], dict[str, ExpectationSuite]]:
    """Tables and suites for every client partition and the patient assignment.

    Parameters
    ----------
    federation
        The built federation.
    assignment
        Where each row went (``recompute_assignment``, until the core exposes it).
    min_train_rows, min_class_rows, min_split_rows
        See :func:`client_partition_suite`.
    salt
        Patient-hash key; a fresh random one when omitted.

    Returns
    -------
    tables, suites
        Both keyed ``client_00`` … and ``patient_assignment``, ready for ``run_checks``.

    """
    tables = client_partition_tables(federation)
    suites = _client_partition_suites(
        federation,
        min_train_rows=min_train_rows,
        min_class_rows=min_class_rows,
        min_split_rows=min_split_rows,
    )
    tables[ASSIGNMENT_TABLE] = assignment_table(assignment, salt)
    suites[ASSIGNMENT_TABLE] = _patient_assignment_suite(len(federation.clients))
    return tables, suites
