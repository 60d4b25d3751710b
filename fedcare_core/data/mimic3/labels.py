"""The three MIMIC-III objectives' labels: in-hospital mortality, 30-day readmission, ICU LOS."""

from __future__ import annotations

import numpy as np
import pandas as pd

from fedcare_core.data.mimic3.definition import READMISSION_WINDOW

__all__ = ["build_labels", "readmission_labels"]


def readmission_labels(adm: pd.DataFrame, hadm: np.ndarray) -> np.ndarray:
    """30-day readmission label for each admission id in ``hadm`` (NaN for in-hospital deaths).

    A label is 1 when another admission of the same subject has its ``ADMITTIME`` in
    ``[DISCHTIME, DISCHTIME + 30 days]``, else 0; NaN when the patient died in the admission
    (``HOSPITAL_EXPIRE_FLAG = 1``) or the flag or ``DISCHTIME`` is missing.

    Parameters
    ----------
    adm
        Every admission (``SUBJECT_ID``, ``HADM_ID``, ``ADMITTIME``, ``DISCHTIME``,
        ``HOSPITAL_EXPIRE_FLAG``), not only the cohort's: a readmission need not hold an ICU
        stay.
    hadm
        The admission of each cohort stay.

    Returns
    -------
    numpy.ndarray
        Float labels aligned with ``hadm``.

    """
    base = adm.loc[adm["HADM_ID"].isin(hadm), ["SUBJECT_ID", "HADM_ID", "DISCHTIME"]]
    others = adm.loc[
        adm["SUBJECT_ID"].isin(base["SUBJECT_ID"]), ["SUBJECT_ID", "HADM_ID", "ADMITTIME"]
    ]
    pairs = base.merge(others, on="SUBJECT_ID", suffixes=("", "_NEXT"))
    gap = pairs["ADMITTIME"] - pairs["DISCHTIME"]
    hit = (
        (pairs["HADM_ID_NEXT"] != pairs["HADM_ID"])
        & (gap >= pd.Timedelta(0))
        & (gap <= READMISSION_WINDOW)
    )
    readmitted = set(pairs.loc[hit, "HADM_ID"].to_numpy().tolist())
    info = adm.set_index("HADM_ID")
    flag = info["HOSPITAL_EXPIRE_FLAG"].reindex(hadm).to_numpy(dtype=np.float64)
    disch = info["DISCHTIME"].reindex(hadm)
    label = np.array([1.0 if h in readmitted else 0.0 for h in hadm.tolist()])
    eligible = (flag == 0.0) & disch.notna().to_numpy()
    return np.where(eligible, label, np.nan)


def build_labels(stays: pd.DataFrame, adm: pd.DataFrame) -> tuple[pd.DataFrame, list[str]]:
    """The label columns of the cohort, and notes on how many stays each objective covers.

    Parameters
    ----------
    stays
        Cohort stays with ``HADM_ID``, ``HOSPITAL_EXPIRE_FLAG`` and ``LOS``.
    adm
        Every admission (see :func:`readmission_labels`).

    Returns
    -------
    labels, notes
        Columns ``mortality``, ``readmission`` and ``los`` (float, NaN = not in the objective;
        a missing or non-positive LOS is NaN), and one note per objective.

    """
    n_rows = len(stays)
    mortality = stays["HOSPITAL_EXPIRE_FLAG"].to_numpy(dtype=np.float64)
    readmission = readmission_labels(adm, stays["HADM_ID"].to_numpy())
    los = stays["LOS"].to_numpy(dtype=np.float64)
    bad_los = ~(los > 0)
    los = np.where(bad_los, np.nan, los)
    labels = pd.DataFrame({"mortality": mortality, "readmission": readmission, "los": los})
    n_readm = int(np.isfinite(readmission).sum())
    rate = f"{np.nanmean(readmission):.1%}" if n_readm else "n/a"
    notes = [
        f"mortality: {int(np.nansum(mortality))} of {int(np.isfinite(mortality).sum())} stays "
        f"died in hospital ({np.nanmean(mortality):.1%})",
        f"readmission (30 days): {int(np.nansum(readmission))} of {n_readm} survivor stays "
        f"({rate}); {n_rows - n_readm} stays of in-hospital deaths (or unknown outcome) set NaN",
        f"los: {int(bad_los.sum())} stays with missing or non-positive LOS set NaN; "
        f"median {np.nanmedian(los):.2f} days",
    ]
    return labels, notes
