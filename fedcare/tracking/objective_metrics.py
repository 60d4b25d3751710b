"""A run's test metrics per objective, as MLflow metric values (key, value, step).

Beside each objective's main metric (``test/readmission.auroc.pooled``, its mean and std over
clients, and ``test_by_client/readmission.auroc.client3``) come its clinical metrics, in the same
section so that the MLflow UI shows them beside the AUROC: ``test/readmission.brier.pooled``,
``test/readmission.brier.mean_over_clients`` and ``.std_over_clients`` (the spread of the
clients' own values), and likewise AUPRC, the Brier score's base-rate reference, ECE,
calibration slope and intercept, mean risk and observed rate, and the sensitivity,
specificity, PPV and NPV at the clients' operating points; for length of stay the bias and
the MAE and bias by length band. Each pooled metric with a bootstrap interval has its ends
(``test/readmission.auroc.pooled_low`` and ``.pooled_high``), and each sensitive attribute its
largest subgroup gap (``test/readmission.auroc.gap_age``, ``.sensitivity.gap_race``).
Per-client clinical values and every subgroup's value stay in the results document.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from fedcare.tracking import naming

#: The spread statistics logged per clinical metric, by the field name they are logged under.
_SPREAD_FIELDS = {"mean_over_clients": "mean", "std_over_clients": "std"}


def objective_values(doc: Mapping[str, Any]) -> list[tuple[str, Any, int]]:
    """Every objective's test metrics of a results document, as ``(key, value, step)``.

    Parameters
    ----------
    doc
        The run's ``results.json`` document.

    Returns
    -------
    list of tuple
        Undefined values are kept as None (the logger skips them).
    """
    values: list[tuple[str, Any, int]] = []
    for s, rep in doc["objectives"].items():
        metric = rep.get("metric")
        values += [(naming.test_key(s, metric, f), rep.get(f), 0) for f in naming.RUN_FIELDS]
        values += [
            (naming.client_key(s, metric, c["client"]), c.get("value"), 0)
            for c in rep.get("clients", [])
        ]
        values += [
            (naming.test_key(s, name, "pooled"), value, 0)
            for name, value in rep.get("clinical", {}).items()
        ]
        values += [
            (naming.test_key(s, name, field), spread.get(stat), 0)
            for name, spread in rep.get("clinical_spread", {}).items()
            for field, stat in _SPREAD_FIELDS.items()
        ]
        values += [
            (naming.test_key(s, name, f"pooled_{end}"), interval.get(end), 0)
            for name, interval in rep.get("intervals", {}).items()
            for end in ("low", "high")
        ]
        values += [
            (naming.test_key(s, name, f"gap_{attribute}"), report.get("gap"), 0)
            for attribute, by_metric in rep.get("subgroups", {}).items()
            for name, report in by_metric.items()
        ]
    return values
