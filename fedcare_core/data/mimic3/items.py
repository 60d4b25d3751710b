"""The lab and vital-sign items the features are computed from, with their plausible ranges.

Item ids and plausibility limits follow MIT-LCP mimic-code's "first day" concepts: values
outside (low, high) are treated as errors and ignored.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["GCS_COMPONENTS", "LAB_ITEMS", "TEMP_F", "VITAL_ITEMS", "Item", "in_range"]


@dataclass(frozen=True)
class Item:
    """A measured variable: the item ids that record it and its plausible open interval.

    Parameters
    ----------
    itemids
        ``ITEMID`` values (CareVue and MetaVision) recording the variable.
    low, high
        Plausible interval; ``low`` is always excluded.
    high_inclusive
        Whether ``high`` itself is plausible (a saturation of 100 %, a GCS of 15).

    """

    itemids: tuple[int, ...]
    low: float
    high: float
    high_inclusive: bool = False


LAB_ITEMS: dict[str, Item] = {
    "creatinine": Item((50912,), 0.0, 150.0),
    "bun": Item((51006,), 0.0, 300.0),
    "sodium": Item((50983, 50824), 0.0, 200.0),
    "potassium": Item((50971, 50822), 0.0, 30.0),
    "chloride": Item((50902, 50806), 0.0, 10_000.0),
    "bicarbonate": Item((50882,), 0.0, 10_000.0),
    "glucose": Item((50931, 50809), 0.0, 10_000.0),
    "hemoglobin": Item((51222, 50811), 0.0, 50.0),
    "hematocrit": Item((51221, 50810), 0.0, 100.0),
    "wbc": Item((51301, 51300), 0.0, 1_000.0),
    "platelets": Item((51265,), 0.0, 10_000.0),
    "lactate": Item((50813,), 0.0, 50.0),
    "aniongap": Item((50868,), 0.0, 10_000.0),
    "bilirubin": Item((50885,), 0.0, 150.0),
}

VITAL_ITEMS: dict[str, Item] = {
    "hr": Item((211, 220045), 0.0, 300.0),
    "sbp": Item((51, 442, 455, 6701, 220179, 220050), 0.0, 400.0),
    "dbp": Item((8368, 8440, 8441, 8555, 220180, 220051), 0.0, 300.0),
    "mbp": Item((456, 52, 6702, 443, 220052, 220181, 225312), 0.0, 300.0),
    "rr": Item((615, 618, 220210, 224690), 0.0, 70.0),
    "temp": Item((676, 223762), 10.0, 50.0),  # degrees Celsius
    "spo2": Item((646, 220277), 0.0, 100.0, high_inclusive=True),
    "gcs": Item((198,), 2.0, 15.0, high_inclusive=True),  # CareVue GCS total
}
#: Temperature items in degrees Fahrenheit, converted to Celsius after their own range check.
TEMP_F = Item((678, 223761), 70.0, 120.0)
#: MetaVision GCS components (eye, verbal, motor): summed when all three share a CHARTTIME.
GCS_COMPONENTS: dict[int, tuple[float, float]] = {
    220739: (1.0, 4.0),
    223900: (1.0, 5.0),
    223901: (1.0, 6.0),
}


def in_range(values: np.ndarray, item: Item) -> np.ndarray:
    """Whether each value lies in the item's plausible interval.

    Parameters
    ----------
    values
        Measured values (float).
    item
        The variable they measure.

    Returns
    -------
    numpy.ndarray
        Boolean mask aligned with ``values``.

    """
    upper = values <= item.high if item.high_inclusive else values < item.high
    return (values > item.low) & upper
