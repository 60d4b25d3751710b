"""First-24 h lab and vital-sign aggregates: the window, ERROR rows, GCS and units."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from fedcare_core.data.mimic3 import load_mimic3
from fedcare_core.data.mimic3.events import (
    EVENT_COLUMNS,
    aggregate,
    concat_events,
    metavision_gcs,
)
from fedcare_core.data.mimic3.items import Item, in_range
from tests.fedcare_core.data.mimic3.helpers import VITALS, row_of
from tests.fedcare_core.data.mimic3.synthetic import add_chart, add_lab, write_tables


def test_chartevents_without_error_column(tmp_path: Path, synth_tables: dict) -> None:
    tables = {k: v.copy() for k, v in synth_tables.items()}
    ce = tables["CHARTEVENTS"]
    tables["CHARTEVENTS"] = ce.loc[ce["ERROR"].fillna(0) != 1].drop(columns="ERROR")
    write_tables(tmp_path, tables)
    c = load_mimic3(tmp_path)
    assert np.isfinite(c.features[VITALS].to_numpy()).all()


def test_no_leakage_from_after_24h(tmp_path: Path, synth_tables: dict) -> None:
    # Patient 2's first stay: a CareVue or MetaVision stay of an adult.
    icu = synth_tables["ICUSTAYS"]
    target = icu.loc[icu["SUBJECT_ID"] == 1002].iloc[0]
    icustay, hadm = int(target["ICUSTAY_ID"]), int(target["HADM_ID"])
    intime = pd.Timestamp(target["INTIME"])
    write_tables(tmp_path / "base", synth_tables)
    base = load_mimic3(tmp_path / "base")
    row = row_of(base, synth_tables, icustay)

    late = {k: v.copy() for k, v in synth_tables.items()}
    add_lab(
        late,
        subject=1002,
        hadm=hadm,
        itemid=50912,
        charttime=intime + pd.Timedelta(hours=30),
        value=42.0,
    )
    add_lab(
        late,
        subject=1002,
        hadm=hadm,
        itemid=50912,
        charttime=intime - pd.Timedelta(hours=2),
        value=43.0,
    )
    add_chart(
        late,
        subject=1002,
        hadm=hadm,
        icustay=icustay,
        itemid=211,
        charttime=intime + pd.Timedelta(hours=30),
        value=190.0,
    )
    write_tables(tmp_path / "late", late)
    after = load_mimic3(tmp_path / "late")
    pd.testing.assert_frame_equal(after.features, base.features, check_exact=True)

    early = {k: v.copy() for k, v in synth_tables.items()}
    add_lab(
        early,
        subject=1002,
        hadm=hadm,
        itemid=50912,
        charttime=intime + pd.Timedelta(hours=2),
        value=42.0,
    )
    add_chart(
        early,
        subject=1002,
        hadm=hadm,
        icustay=icustay,
        itemid=211,
        charttime=intime + pd.Timedelta(hours=2),
        value=190.0,
    )
    write_tables(tmp_path / "early", early)
    within = load_mimic3(tmp_path / "early")
    assert within.features.loc[row, "creatinine_max"] == 42.0
    assert within.features.loc[row, "hr_max"] == 190.0
    changed = (
        within.features.drop(index=row) != base.features.drop(index=row)
    ) & base.features.drop(index=row).notna()
    assert not changed.any().any()  # other stays untouched
    pd.testing.assert_frame_equal(within.labels, base.labels)


def test_gcs_components_and_fahrenheit(tmp_path: Path, synth_tables: dict) -> None:
    icu = synth_tables["ICUSTAYS"]
    target = icu.loc[icu["SUBJECT_ID"] == 1003].iloc[0]
    icustay, hadm = int(target["ICUSTAY_ID"]), int(target["HADM_ID"])
    intime = pd.Timestamp(target["INTIME"])
    tables = {k: v.copy() for k, v in synth_tables.items()}
    kw = {"subject": 1003, "hadm": hadm, "icustay": icustay}
    one_h, late = intime + pd.Timedelta(hours=1), intime + pd.Timedelta(hours=30)
    for itemid in (220739, 223900, 223901):  # eye 1 + verbal 1 + motor 1 at +1 h: GCS 3
        add_chart(tables, **kw, itemid=itemid, charttime=one_h, value=1.0, error=0)
    for itemid in (220739, 223901):  # incomplete set: no total
        add_chart(tables, **kw, itemid=itemid, charttime=one_h + pd.Timedelta(hours=1), value=1.0)
    add_chart(tables, **kw, itemid=678, charttime=one_h, value=104.0)  # 40 degrees C
    add_chart(tables, **kw, itemid=678, charttime=one_h, value=212.0)  # implausible: ignored
    add_chart(tables, **kw, itemid=223762, charttime=late, value=42.0)  # after 24 h: ignored
    write_tables(tmp_path, tables)
    c = load_mimic3(tmp_path)
    row = row_of(c, tables, icustay)
    assert c.features.loc[row, "gcs_min"] == 3.0
    assert c.features.loc[row, "temp_max"] == pytest.approx(40.0)


# ---------------------------------------------------------------------------------------------
# The aggregation pieces on hand-made events
# ---------------------------------------------------------------------------------------------


def test_in_range_bounds() -> None:
    values = np.array([0.0, 0.5, 100.0, 101.0])
    assert in_range(values, Item((1,), 0.0, 100.0)).tolist() == [False, True, False, False]
    inclusive = Item((1,), 0.0, 100.0, high_inclusive=True)
    assert in_range(values, inclusive).tolist() == [False, True, True, False]


def test_concat_events_restores_file_order() -> None:
    a = pd.DataFrame({"_POS": [1, 0], "CODE": [0, 0], "VALUE": [1.0, 2.0], "_ROW": [5, 2]})
    b = pd.DataFrame({"_POS": [0], "CODE": [0], "VALUE": [3.0], "_ROW": [2]})
    got = concat_events([a, b], EVENT_COLUMNS)
    assert got["_ROW"].tolist() == [2, 2, 5] and got["VALUE"].tolist() == [2.0, 3.0, 1.0]
    empty = concat_events([], EVENT_COLUMNS)
    assert list(empty.columns) == EVENT_COLUMNS and empty.empty


def test_aggregate_per_stay() -> None:
    events = pd.DataFrame(
        {"_POS": [0, 0, 2], "CODE": [1, 1, 0], "VALUE": [4.0, 6.0, 9.0], "_ROW": [1, 2, 3]}
    )
    got = aggregate(events, ["a", "b"], [("b", "mean"), ("b", "max"), ("a", "min")], 3)
    assert list(got.columns) == ["b_mean", "b_max", "a_min"]
    np.testing.assert_array_equal(got["b_mean"], [5.0, np.nan, np.nan])
    np.testing.assert_array_equal(got["b_max"], [6.0, np.nan, np.nan])
    np.testing.assert_array_equal(got["a_min"], [np.nan, np.nan, 9.0])
    none = aggregate(concat_events([], EVENT_COLUMNS), ["a"], [("a", "mean")], 2)
    assert none["a_mean"].isna().all() and len(none) == 2


def test_metavision_gcs_needs_all_three_components() -> None:
    t0, t1 = pd.Timestamp("2150-01-01 01:00"), pd.Timestamp("2150-01-01 02:00")
    parts = pd.DataFrame(
        {
            "_POS": [0, 0, 0, 0, 0, 0],
            "ITEMID": [220739, 223900, 223901, 223901, 220739, 223901],
            "TIME": [t0, t0, t0, t0, t1, t1],
            "VALUE": [4.0, 5.0, 6.0, 1.0, 1.0, 1.0],
            "_ROW": [10, 11, 12, 13, 14, 15],
        }
    )
    got = metavision_gcs(parts, gcs_code=7)
    # t0: the first motor value (6, row 12) counts, the repeat is ignored, and the total takes
    # the row of its last component used; t1 lacks the verbal score.
    assert got.to_dict("list") == {"_POS": [0], "CODE": [7], "VALUE": [15.0], "_ROW": [12]}
