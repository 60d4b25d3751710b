"""The clinical preferences of a results document as report lines (issue 31).

One line per objective some client states a preference for, with the metric its preference
is about: a sensitivity preference's sensitivity (and what it costs: specificity, PPV, net
benefit) at the clients' decision thresholds, a fairness preference's subgroup gap of its metric
over its attribute.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from fedcare_core.evaluation.clinical_rows import shown

__all__ = ["preference_lines"]


def preference_lines(objectives: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """Per objective with stated preferences, each preference's metric (pooled test).

    ``early_discharge: sensitivity (clients 1, 2): at the decision thresholds sensitivity
    0.964, specificity 0.148, PPV 0.493, net benefit 0.337``; ``readmission: fair(race)
    (clients 0, 3): AUROC gap by race 0.060 (Caucasian 0.550; AfricanAmerican 0.491)``.
    """
    lines = []
    for name, rep in objectives.items():
        for label, clients in (rep.get("preferences") or {}).items():
            if label == "plain":
                continue
            who = f"{name}: {label} (clients {', '.join(str(c) for c in clients)})"
            lines.append(f"{who}: {_preference_metric(label, rep)}")
    return lines


def _preference_metric(label: str, rep: Mapping[str, Any]) -> str:
    clinical = rep.get("clinical") or {}
    if label == "sensitivity":
        return (
            f"at the decision thresholds sensitivity {shown(clinical.get('decision_sensitivity'))}"
            f", specificity {shown(clinical.get('decision_specificity'))}"
            f", PPV {shown(clinical.get('decision_ppv'))}"
            f", net benefit {shown(clinical.get('net_benefit'))} (flagging everyone: "
            f"{shown(clinical.get('net_benefit_all'))})"
        )
    attribute, _, metric = label.removeprefix("fair(").removesuffix(")").partition(",")
    metric = metric or "auroc"
    report = ((rep.get("subgroups") or {}).get(attribute) or {}).get(metric) or {}
    gap, high, low = report.get("gap"), report.get("highest"), report.get("lowest")
    if gap is None or high is None or low is None:
        return f"fewer than two subgroups of {attribute} to compare"
    values = {g["group"]: g["value"] for g in report.get("groups", [])}
    title = "AUROC" if metric == "auroc" else "sensitivity at the clients' thresholds"
    return (
        f"{title} gap by {attribute} {gap:.3f} ({high} {shown(values[high])}; "
        f"{low} {shown(values[low])})"
    )
