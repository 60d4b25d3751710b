"""The three Diabetes 130-US labels: early discharge, readmission and length of stay."""

from __future__ import annotations

from typing import Literal

import pandas as pd

from fedcare_core.data.diabetes130.definition import EARLY_DISCHARGE_MAX_DAYS
from fedcare_core.data.diabetes130.schema import EXPIRED_DISCHARGE_IDS, HOSPICE_DISCHARGE_IDS

__all__ = ["ReadmissionDefinition", "build_labels"]

#: ``"30d"``: readmitted within 30 days (``"<30"``); ``"any"``: readmitted at all.
ReadmissionDefinition = Literal["30d", "any"]


def build_labels(
    readmitted: pd.Series, numbers: dict[str, pd.Series], readmission: ReadmissionDefinition
) -> tuple[pd.DataFrame, list[str]]:
    """The label columns, and notes on the readmission definition and the encounters it skips.

    Parameters
    ----------
    readmitted
        The checked ``readmitted`` column (``NO``, ``<30`` or ``>30``).
    numbers
        The checked numeric source columns (``time_in_hospital``,
        ``discharge_disposition_id``) as float64.
    readmission
        Which readmission definition to use.

    Returns
    -------
    labels, notes
        Columns ``early_discharge``, ``readmission`` and ``los`` (float64, fresh index;
        readmission NaN for encounters discharged expired or to hospice) and two notes.

    """
    tih = numbers["time_in_hospital"]
    early = (tih <= EARLY_DISCHARGE_MAX_DAYS).astype("float64")
    if readmission == "30d":
        readm = (readmitted == "<30").astype("float64")
    else:
        readm = (readmitted != "NO").astype("float64")
    disposition = numbers["discharge_disposition_id"]
    expired = disposition.isin(sorted(EXPIRED_DISCHARGE_IDS))
    hospice = disposition.isin(sorted(HOSPICE_DISCHARGE_IDS))
    readm = readm.mask(expired | hospice)
    labels = pd.DataFrame(
        {"early_discharge": early, "readmission": readm, "los": tih.astype("float64")}
    ).reset_index(drop=True)
    n_expired = int(expired.sum())
    n_hospice = int(hospice.sum())
    definition = "readmitted == '<30'" if readmission == "30d" else "readmitted != 'NO'"
    notes = [
        f"readmission label: {definition}",
        f"readmission: {n_expired + n_hospice:,} encounters have no label because they were "
        f"discharged expired ({n_expired:,}; discharge_disposition_id "
        f"{sorted(EXPIRED_DISCHARGE_IDS)}) or to hospice ({n_hospice:,}; "
        f"{sorted(HOSPICE_DISCHARGE_IDS)}) and cannot be readmitted",
    ]
    return labels, notes
