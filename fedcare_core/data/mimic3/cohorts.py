"""The MIMIC-III cohorts the loader can build (``--cohort``).

* ``all-adult-24h`` (the default): every adult ICU stay, features from its first 24 hours.
* ``benchmark-ihm``: the in-hospital-mortality cohort of the public MIMIC-III benchmark
  (Harutyunyan et al. 2019, *Multitask learning and benchmarking with clinical time series
  data*; YerevaNN/mimic3-benchmarks): ICU stays without a ward or care-unit transfer
  (``FIRST_WARDID = LAST_WARDID`` and ``FIRST_CAREUNIT = LAST_CAREUNIT``), of admissions with
  exactly one such stay, of adults (18 or over at ICU admission), staying at least 48 hours
  (``ICUSTAYS.LOS``), with at least one feature event in the first 48 hours, which are the
  feature window. On the full release this gives the benchmark's 21,139 stays; the paper's
  MIMIC-III cohort is this one.

The benchmark counts a stay's events over its 17 clinical variables from CHARTEVENTS,
LABEVENTS and OUTPUTEVENTS; this loader counts the lab and vital-sign values it uses as
features (LABEVENTS, CHARTEVENTS when present), so a stay whose only events in the window are
outputs (urine) or unused chart items is kept by the benchmark and dropped here.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from fedcare_core.errors import DataError

__all__ = [
    "COHORTS",
    "DEFAULT_COHORT",
    "TRANSFER_COLUMNS",
    "CohortRules",
    "drop_transfers_and_shared_admissions",
    "long_enough",
    "refuse_if_none_left",
]


#: No shortest stay.
_NO_MINIMUM = pd.Timedelta(0)


@dataclass(frozen=True)
class CohortRules:
    """How a cohort chooses its stays and the window its features come from.

    Parameters
    ----------
    name
        The ``--cohort`` name.
    window
        Features come from ``[INTIME, INTIME + window]``.
    min_stay
        Stays shorter than this (``ICUSTAYS.LOS``) are left out (zero: none).
    benchmark_stays
        Apply the benchmark's transfer and one-stay-per-admission rules.
    need_events
        Leave out a stay without any lab or vital-sign value in the window.
    """

    name: str
    window: pd.Timedelta
    min_stay: pd.Timedelta = _NO_MINIMUM
    benchmark_stays: bool = False
    need_events: bool = False


DEFAULT_COHORT = "all-adult-24h"
COHORTS: dict[str, CohortRules] = {
    "all-adult-24h": CohortRules("all-adult-24h", pd.Timedelta(hours=24)),
    "benchmark-ihm": CohortRules(
        "benchmark-ihm",
        pd.Timedelta(hours=48),
        min_stay=pd.Timedelta(hours=48),
        benchmark_stays=True,
        need_events=True,
    ),
}
#: ICUSTAYS columns the benchmark's transfer rule reads.
TRANSFER_COLUMNS = ("FIRST_CAREUNIT", "LAST_CAREUNIT", "FIRST_WARDID", "LAST_WARDID")


def drop_transfers_and_shared_admissions(
    icu: pd.DataFrame, path: Path
) -> tuple[pd.DataFrame, list[str]]:
    """The benchmark's stay rules: no ward or care-unit transfer, one such stay per admission.

    Parameters
    ----------
    icu
        ICU stays (ICUSTAYS columns, ``_ROW``).
    path
        The ICUSTAYS file, for the message.

    Returns
    -------
    stays, notes
        The stays kept (in file order) and a note per rule with its count.

    Raises
    ------
    DataError
        If a column the rule needs is missing from the file.
    """
    missing = [c for c in TRANSFER_COLUMNS if c not in icu.columns]
    if missing:
        raise DataError(
            "the benchmark-ihm cohort needs the ward and care-unit columns of ICUSTAYS",
            file=str(path),
            column=", ".join(missing),
        )
    same_unit = icu["FIRST_CAREUNIT"].astype("string") == icu["LAST_CAREUNIT"].astype("string")
    same_ward = icu["FIRST_WARDID"] == icu["LAST_WARDID"]
    kept = icu.loc[(same_unit & same_ward).fillna(False).to_numpy(dtype=bool)]
    n_transfer = len(icu) - len(kept)
    per_admission = kept.groupby("HADM_ID")["ICUSTAY_ID"].transform("count").to_numpy()
    single = kept.loc[per_admission == 1]
    notes = [
        f"benchmark-ihm: excluded {n_transfer} stays with a ward or care-unit transfer",
        f"benchmark-ihm: excluded {len(kept) - len(single)} stays of admissions with more "
        "than one ICU stay",
    ]
    return single, notes


def long_enough(stays: pd.DataFrame, min_stay: pd.Timedelta) -> np.ndarray:
    """Which stays last at least ``min_stay`` by ``ICUSTAYS.LOS`` (days; missing: too short)."""
    hours = stays["LOS"].to_numpy(dtype=np.float64) * 24.0
    return np.nan_to_num(hours, nan=-1.0) >= min_stay / pd.Timedelta(hours=1)


def refuse_if_none_left(
    stays: pd.DataFrame, rules: CohortRules, notes: list[str], before: int, path: Path
) -> None:
    """Refuse a cohort whose rules have left no stay, naming each rule and what it excluded.

    Parameters
    ----------
    stays
        The stays the rules kept.
    rules
        The cohort's rules.
    notes
        The rules' notes so far (``<cohort>: excluded N stays …``).
    before
        How many stays there were before the rules.
    path
        The ICUSTAYS file, for the message.

    Raises
    ------
    DataError
        If ``stays`` is empty.
    """
    if len(stays) == 0:
        excluded = "; ".join(n.removeprefix(f"{rules.name}: excluded ") for n in notes)
        raise DataError(
            f"the {rules.name} cohort's rules keep none of the {before} ICU stays (--cohort "
            f"{rules.name}): excluded {excluded}",
            file=str(path),
        )
