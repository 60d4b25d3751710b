"""Lab and vital-sign aggregates over the first hours of each ICU stay (the cohort's window).

``LABEVENTS`` and ``CHARTEVENTS`` are streamed in chunks; each chunk is filtered at once to the
item ids used, to the cohort's admissions or stays and to the feature window, so only the
rows that count are kept. They are aggregated once, after the last chunk, in file order, so the
result does not depend on ``chunksize``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from fedcare_core.data.mimic3.dates import TimeStats, parse_times
from fedcare_core.data.mimic3.features import FEATURE_WINDOW, LAB_FEATURES, VITAL_FEATURES
from fedcare_core.data.mimic3.items import (
    GCS_COMPONENTS,
    LAB_ITEMS,
    TEMP_F,
    VITAL_ITEMS,
    Item,
    in_range,
)
from fedcare_core.data.mimic3.reader import iter_table
from fedcare_core.data.mimic3.schema import CHARTEVENTS, LABEVENTS
from fedcare_core.errors import DataError

__all__ = [
    "EVENT_COLUMNS",
    "aggregate",
    "concat_events",
    "metavision_gcs",
    "stream_labs",
    "stream_vitals",
]

#: Columns of a retained event: cohort position, variable code, value, file row.
EVENT_COLUMNS = ["_POS", "CODE", "VALUE", "_ROW"]
#: Columns of a retained GCS component, summed per charting time later.
_PART_COLUMNS = ["_POS", "ITEMID", "TIME", "VALUE", "_ROW"]
#: Code of a GCS component among the vital codes: not a variable of its own.
_COMPONENT = -1


# --------------------------------------------------------------------------------------------
# LABEVENTS
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _LabWindow:
    """What a LABEVENTS chunk is filtered and timed against."""

    path: Path
    stats: TimeStats
    stay_pos: pd.DataFrame  # HADM_ID, _POS, INTIME per cohort stay
    admit_by_hadm: pd.Series
    hadms: np.ndarray  # the cohort's admissions
    code_of: dict[int, int]  # lab code by ITEMID
    names: list[str]  # the labs, in code order
    window: pd.Timedelta  # the feature window from INTIME

    def events(self, chunk: pd.DataFrame) -> pd.DataFrame:
        """The chunk's plausible lab values in a cohort stay's window (``EVENT_COLUMNS``).

        Empty (with the chunk's columns) when no row of the chunk is of interest.
        """
        keep = (
            chunk["ITEMID"].isin(np.array(sorted(self.code_of), dtype=np.float64))
            & chunk["HADM_ID"].isin(self.hadms)
            & chunk["VALUENUM"].notna()
        )
        sub = chunk.loc[keep]
        if sub.empty:
            return sub
        times = parse_times(
            sub["CHARTTIME"],
            rows=sub["_ROW"].to_numpy(),
            path=self.path,
            column="CHARTTIME",
            anchor=sub["HADM_ID"].map(self.admit_by_hadm),
            rule="nearest",
            stats=self.stats,
            table="LABEVENTS",
        )
        ev = pd.DataFrame(
            {
                "HADM_ID": sub["HADM_ID"].to_numpy(),
                "CODE": sub["ITEMID"].map(self.code_of).to_numpy(dtype=np.int8),
                "VALUE": sub["VALUENUM"].to_numpy(dtype=np.float64),
                "TIME": times.to_numpy(),
                "_ROW": sub["_ROW"].to_numpy(),
            }
        )
        # An admission may hold several ICU stays: a lab value counts for each stay whose
        # window contains it.
        ev = ev.merge(self.stay_pos, on="HADM_ID", how="inner")
        in_window = (ev["TIME"] >= ev["INTIME"]) & (ev["TIME"] <= ev["INTIME"] + self.window)
        ev = ev.loc[in_window.to_numpy()]
        vals = ev["VALUE"].to_numpy()
        codes = ev["CODE"].to_numpy()
        valid = np.zeros(len(ev), dtype=bool)
        for code, name in enumerate(self.names):
            sel = codes == code
            valid[sel] = in_range(vals[sel], LAB_ITEMS[name])
        return ev.loc[valid, EVENT_COLUMNS]


def stream_labs(
    path: Path,
    stays: pd.DataFrame,
    admit_by_hadm: pd.Series,
    chunksize: int,
    stats: TimeStats,
    window: pd.Timedelta = FEATURE_WINDOW,
) -> tuple[pd.DataFrame, int]:
    """Lab aggregates per stay from LABEVENTS rows in ``[INTIME, INTIME + window]``.

    Parameters
    ----------
    path
        The LABEVENTS file.
    stays
        Cohort stays: ``HADM_ID`` and ``INTIME`` per row (row order = cohort position).
    admit_by_hadm
        ``ADMITTIME`` by ``HADM_ID`` (anchor for two-digit years, if any).
    chunksize
        Rows per chunk.
    stats
        Date-format counters.
    window
        The feature window (the cohort's; 24 h by default).

    Returns
    -------
    tuple
        The aggregate columns (one row per stay) and the number of lab values used.

    """
    names = list(LAB_ITEMS)
    labs_in = _LabWindow(
        path=path,
        stats=stats,
        stay_pos=pd.DataFrame(
            {
                "HADM_ID": stays["HADM_ID"].to_numpy(),
                "_POS": np.arange(len(stays), dtype=np.int64),
                "INTIME": stays["INTIME"].to_numpy(),
            }
        ),
        admit_by_hadm=admit_by_hadm,
        hadms=stays["HADM_ID"].unique(),
        code_of={i: code for code, name in enumerate(names) for i in LAB_ITEMS[name].itemids},
        names=names,
        window=window,
    )
    kept: list[pd.DataFrame] = []
    for chunk in iter_table(path, LABEVENTS, chunksize):
        ev = labs_in.events(chunk)
        if len(ev):
            kept.append(ev)
    events = concat_events(kept, EVENT_COLUMNS)
    return aggregate(events, names, LAB_FEATURES, len(stays)), len(events)


# --------------------------------------------------------------------------------------------
# CHARTEVENTS
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _ChartWindow:
    """What a CHARTEVENTS chunk is filtered, timed and checked against."""

    path: Path
    stats: TimeStats
    pos_by_stay: pd.Series  # cohort position by ICUSTAY_ID
    intime: np.ndarray  # INTIME by cohort position
    spec_of: dict[int, Item]  # plausible range by ITEMID
    code_of: dict[int, int]  # vital code by ITEMID (_COMPONENT for GCS components)
    window: pd.Timedelta  # the feature window from INTIME

    def select(self, chunk: pd.DataFrame) -> tuple[pd.DataFrame, int]:
        """The chunk's rows of used items and cohort stays, and how many were ``ERROR = 1``."""
        keep = (
            chunk["ITEMID"].isin(np.array(sorted(self.spec_of), dtype=np.float64))
            & chunk["ICUSTAY_ID"].isin(self.pos_by_stay.index)
            & chunk["VALUENUM"].notna()
        )
        n_error = 0
        if "ERROR" in chunk.columns:
            flag = chunk["ERROR"]
            odd = (flag.notna() & ~flag.isin([0.0, 1.0])).to_numpy()
            if odd.any():
                raise DataError(
                    "ERROR in the CHARTEVENTS table must be 0, 1 or empty",
                    file=str(self.path),
                    column="ERROR",
                    rows=chunk["_ROW"].to_numpy()[odd].tolist(),
                )
            flagged = keep & (flag == 1)
            n_error = int(flagged.sum())
            keep &= ~flagged
        return chunk.loc[keep], n_error

    def events(self, sub: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
        """Plausible values of ``sub`` in the window: vitals (``EVENT_COLUMNS``), GCS parts."""
        pos = sub["ICUSTAY_ID"].map(self.pos_by_stay).to_numpy(dtype=np.int64)
        start = pd.Series(self.intime[pos], index=sub.index).astype("datetime64[us]")
        times = parse_times(
            sub["CHARTTIME"],
            rows=sub["_ROW"].to_numpy(),
            path=self.path,
            column="CHARTTIME",
            anchor=start,
            rule="nearest",
            stats=self.stats,
            table="CHARTEVENTS",
        )
        win = ((times >= start) & (times <= start + self.window)).to_numpy()
        item = sub["ITEMID"].to_numpy(dtype=np.int64)[win]
        vals = sub["VALUENUM"].to_numpy(dtype=np.float64)[win]
        valid = np.zeros(len(item), dtype=bool)
        codes = np.zeros(len(item), dtype=np.int8)
        for itemid in np.unique(item):
            sel = item == itemid
            valid[sel] = in_range(vals[sel], self.spec_of[int(itemid)])
            codes[sel] = self.code_of[int(itemid)]
        fahrenheit = np.array(TEMP_F.itemids, dtype=np.int64)
        vals = np.where(np.isin(item, fahrenheit), (vals - 32.0) / 1.8, vals)
        rows = sub["_ROW"].to_numpy()[win]
        main = valid & (codes >= 0)
        part = valid & (codes < 0)
        vitals = pd.DataFrame(
            {"_POS": pos[win][main], "CODE": codes[main], "VALUE": vals[main], "_ROW": rows[main]}
        )
        parts = pd.DataFrame(
            {
                "_POS": pos[win][part],
                "ITEMID": item[part],
                "TIME": times.to_numpy()[win][part],
                "VALUE": vals[part],
                "_ROW": rows[part],
            }
        )
        return vitals, parts


def _vital_lookups(names: Sequence[str]) -> tuple[dict[int, Item], dict[int, int]]:
    """Plausible range and vital code of every CHARTEVENTS item used, by ITEMID."""
    spec_of: dict[int, Item] = {}
    code_of: dict[int, int] = {}
    for code, name in enumerate(names):
        for itemid in VITAL_ITEMS[name].itemids:
            spec_of[itemid], code_of[itemid] = VITAL_ITEMS[name], code
    for itemid in TEMP_F.itemids:
        spec_of[itemid], code_of[itemid] = TEMP_F, names.index("temp")
    for itemid, (lo, hi) in GCS_COMPONENTS.items():
        # Half a point below the lowest score, so the open lower bound still admits it.
        spec_of[itemid] = Item((itemid,), lo - 0.5, hi, high_inclusive=True)
        code_of[itemid] = _COMPONENT  # summed into a total later
    return spec_of, code_of


def stream_vitals(
    path: Path,
    stays: pd.DataFrame,
    chunksize: int,
    stats: TimeStats,
    window: pd.Timedelta = FEATURE_WINDOW,
) -> tuple[pd.DataFrame, int, int]:
    """Vital-sign aggregates per stay from CHARTEVENTS rows in ``[INTIME, INTIME + window]``.

    Rows flagged ``ERROR = 1`` are ignored; Fahrenheit temperatures are converted to Celsius;
    MetaVision GCS is the sum of its three components charted at the same time.

    Parameters
    ----------
    path
        The CHARTEVENTS file.
    stays
        Cohort stays: ``ICUSTAY_ID`` and ``INTIME`` per row (row order = cohort position).
    chunksize
        Rows per chunk.
    stats
        Date-format counters.
    window
        The feature window (the cohort's; 24 h by default).

    Returns
    -------
    tuple
        The aggregate columns (one row per stay), the number of chart values used and the
        number of rows skipped as ``ERROR = 1``.

    """
    names = list(VITAL_ITEMS)
    spec_of, code_of = _vital_lookups(names)
    charts_in = _ChartWindow(
        path=path,
        stats=stats,
        pos_by_stay=pd.Series(np.arange(len(stays)), index=stays["ICUSTAY_ID"].to_numpy()),
        intime=stays["INTIME"].to_numpy(),
        spec_of=spec_of,
        code_of=code_of,
        window=window,
    )
    kept: list[pd.DataFrame] = []
    kept_parts: list[pd.DataFrame] = []
    n_error = 0
    for chunk in iter_table(path, CHARTEVENTS, chunksize):
        sub, n_flagged = charts_in.select(chunk)
        n_error += n_flagged
        if sub.empty:
            continue
        vitals, parts = charts_in.events(sub)
        if len(vitals):
            kept.append(vitals)
        if len(parts):
            kept_parts.append(parts)
    events = concat_events(kept, EVENT_COLUMNS)
    parts = concat_events(kept_parts, _PART_COLUMNS)
    n_used = len(events) + len(parts)
    gcs = metavision_gcs(parts, names.index("gcs"))
    if len(gcs):
        events = concat_events([events, gcs], EVENT_COLUMNS)
    return aggregate(events, names, VITAL_FEATURES, len(stays)), n_used, n_error


# --------------------------------------------------------------------------------------------
# Aggregation
# --------------------------------------------------------------------------------------------


def concat_events(kept: Sequence[pd.DataFrame], columns: Sequence[str]) -> pd.DataFrame:
    """Concatenate retained event rows in file order (so chunking cannot change results).

    Parameters
    ----------
    kept
        Retained rows, chunk by chunk, each with ``_ROW`` and ``_POS``.
    columns
        The columns of an empty result, when nothing was retained.

    Returns
    -------
    pandas.DataFrame
        The rows sorted by file row, then cohort position (stable), on a fresh index.

    """
    if not kept:
        return pd.DataFrame({c: np.array([], dtype=np.int64) for c in columns})
    events = pd.concat(list(kept), ignore_index=True)
    return events.sort_values(["_ROW", "_POS"], kind="stable").reset_index(drop=True)


def metavision_gcs(parts: pd.DataFrame, gcs_code: int) -> pd.DataFrame:
    """GCS totals from MetaVision components: eye + verbal + motor charted at the same time.

    The first value of each component per (stay, time) in file order is used; times missing a
    component give no total. Each total takes the file row of its last component.

    Parameters
    ----------
    parts
        Component rows (``_POS``, ``ITEMID``, ``TIME``, ``VALUE``, ``_ROW``) in file order.
    gcs_code
        The code of the ``gcs`` variable.

    Returns
    -------
    pandas.DataFrame
        One event (``EVENT_COLUMNS``) per complete (stay, time); ``parts`` itself when empty.

    """
    if parts.empty:
        return parts
    first = parts.drop_duplicates(["_POS", "TIME", "ITEMID"], keep="first")
    wide = first.pivot(index=["_POS", "TIME"], columns="ITEMID", values="VALUE")
    wide = wide.reindex(columns=list(GCS_COMPONENTS))
    complete = wide.notna().all(axis=1).to_numpy()
    total = wide.loc[complete].sum(axis=1)
    last_row = first.groupby(["_POS", "TIME"])["_ROW"].max().reindex(total.index)
    return pd.DataFrame(
        {
            "_POS": total.index.get_level_values("_POS").to_numpy(dtype=np.int64),
            "CODE": np.full(len(total), gcs_code, dtype=np.int8),
            "VALUE": total.to_numpy(dtype=np.float64),
            "_ROW": last_row.to_numpy(dtype=np.int64),
        }
    )


def aggregate(
    events: pd.DataFrame,
    names: Sequence[str],
    features: Sequence[tuple[str, str]],
    n_rows: int,
) -> pd.DataFrame:
    """Per-stay aggregates of ``events`` (columns ``_POS``, ``CODE``, ``VALUE``).

    Parameters
    ----------
    events
        Retained values; ``CODE`` indexes ``names``.
    names
        The variables, in code order.
    features
        ``(name, aggregate)`` pairs, aggregate one of ``mean``, ``min``, ``max``.
    n_rows
        Number of cohort stays.

    Returns
    -------
    pandas.DataFrame
        A float frame with one column ``f"{name}_{agg}"`` per entry of ``features`` and
        ``n_rows`` rows (NaN where a stay has no value).

    """
    out = pd.DataFrame(index=pd.RangeIndex(n_rows))
    stats = (
        events.groupby(["CODE", "_POS"], sort=True)["VALUE"].agg(["mean", "min", "max"])
        if len(events)
        else None
    )
    for name, agg in features:
        col = np.full(n_rows, np.nan)
        code = names.index(name)
        if stats is not None and code in stats.index.get_level_values("CODE"):
            series = stats[agg].xs(code, level="CODE")
            col[series.index.to_numpy(dtype=np.int64)] = series.to_numpy(dtype=np.float64)
        out[f"{name}_{agg}"] = col
    return out
