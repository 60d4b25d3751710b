"""What a dataset's definition implies for a file: rows, patients, labels and features.

``fedcare data check`` prints it, so that a hospital's data team sees, before joining a
federation, what FedCARE will train on: how many rows and patients the cohort keeps, each
objective's labelled rows and its positive rate or mean, and for every feature its type, its
availability time, where the partition puts it (common, or the private pools holding it), its
share of gaps and, for a number, its quartiles; for a category, how many rows hold each
declared value (an open vocabulary: only how many distinct values it holds, never the values).
Only counts and summaries: no row, no identifier.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from fedcare_core.data.cohort import Cohort
from fedcare_core.data.definition import DatasetDefinition
from fedcare_core.objectives import objective_kind

__all__ = ["DatasetProfile", "profile_cohort"]


@dataclass(frozen=True)
class DatasetProfile:
    """The profile of a loaded cohort under its definition (JSON-ready: :meth:`to_dict`)."""

    dataset: str
    source: str
    rows: int
    patients: int
    objectives: list[dict[str, Any]]
    features: list[dict[str, Any]]
    partition: dict[str, Any]
    notes: list[str]

    def to_dict(self) -> dict[str, Any]:
        """The profile as a JSON document."""
        return dict(self.__dict__)

    def text(self) -> str:
        """The profile as a plain-text report."""
        lines = [
            f"dataset {self.dataset}: {self.rows:,} rows, {self.patients:,} patients",
            f"source: {self.source}",
            "",
            "objectives",
        ]
        for o in self.objectives:
            key = objective_kind(o["kind"]).label_mean
            summary = f"{key.replace('_', ' ')} {o[key]:.3f}"
            lines.append(
                f"  {o['name']:<24} {o['kind']:<10} labelled {o['labelled']:>9,}  {summary}"
            )
        lines += ["", "features"]
        for f in self.features:
            lines.append(
                f"  {f['name']:<24} {f['type']:<11} {f.get('known_at') or '-':<9} "
                f"{f['role']:<28} gaps {f['missing_share']:6.1%}  {_values(f)}"
            )
        p = self.partition
        lines += [
            "",
            f"partition: {len(p['common'])} common feature(s); private pools "
            + ", ".join(f"{k} {len(v)}" for k, v in p["private"].items())
            + f"; disparity ratio ρ = {p['rho']:.3f}",
        ]
        lines += ["", "notes", *(f"  {n}" for n in self.notes)]
        return "\n".join(lines)


def _values(feature: dict[str, Any]) -> str:
    if "quartiles" in feature:
        q = feature["quartiles"]
        return "min/q1/median/q3/max " + " / ".join(f"{v:g}" for v in q)
    if "counts" in feature:
        return ", ".join(f"{k} {v:,}" for k, v in feature["counts"].items())
    if feature["type"] == "number":
        return "no value in any row"
    return f"{feature['distinct']:,} distinct values (open vocabulary: not shown)"


def profile_cohort(
    cohort: Cohort, definition: DatasetDefinition, source: str, times: dict[str, str]
) -> DatasetProfile:
    """The profile of ``cohort`` under ``definition``.

    Parameters
    ----------
    cohort
        The loaded cohort.
    definition
        Its definition (the partition of the feature set asked for).
    source
        What was read, for the report.
    times
        Feature → availability time, where declared.
    """
    partition = definition.partition
    objectives = []
    for o in cohort.objectives:
        label = cohort.labels[o.name].to_numpy(dtype=np.float64)
        present = label[~np.isnan(label)]
        entry: dict[str, Any] = {"name": o.name, "kind": o.kind, "labelled": len(present)}
        key = objective_kind(o.kind).label_mean
        entry[key] = float(present.mean()) if len(present) else float("nan")
        objectives.append(entry)
    features = [
        _feature(cohort, name, definition, times.get(name)) for name in cohort.features.columns
    ]
    return DatasetProfile(
        dataset=cohort.dataset,
        source=source,
        rows=cohort.n_rows,
        patients=len(np.unique(cohort.patient)),
        objectives=objectives,
        features=features,
        partition={
            "common": list(partition.common),
            "private": {k: list(v) for k, v in partition.private.items()},
            "rho": partition.disparity_ratio(),
        },
        notes=list(cohort.notes),
    )


def _feature(
    cohort: Cohort, name: str, definition: DatasetDefinition, known_at: str | None
) -> dict[str, Any]:
    values = cohort.features[name]
    pools = [k for k, v in definition.partition.private.items() if name in v]
    role = (
        "common"
        if name in definition.partition.common
        else ("private: " + ", ".join(pools) if pools else "unused")
    )
    numeric = name in cohort.numeric_features
    out: dict[str, Any] = {
        "name": name,
        "type": "number" if numeric else "category",
        "known_at": known_at,
        "role": role,
        "missing_share": float(values.isna().mean()) if len(values) else 0.0,
    }
    if numeric:
        present = values.dropna().to_numpy(dtype=np.float64)
        if len(present):
            out["quartiles"] = [float(v) for v in np.quantile(present, [0, 0.25, 0.5, 0.75, 1])]
        return out
    vocabulary = definition.vocabularies.get(name)
    if vocabulary is None:
        out["distinct"] = int(values.nunique(dropna=True))
        return out
    counts = values.value_counts(dropna=True)
    out["counts"] = {v: int(counts.get(v, 0)) for v in vocabulary}
    other = int(values.notna().sum()) - sum(out["counts"].values())
    if other:
        out["counts"]["(other)"] = other
    return out
