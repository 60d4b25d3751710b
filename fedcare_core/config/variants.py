"""The configurations an experiment's cells vary: ablations, candidates, preferences, DP budgets.

A cell's ``variant`` names one of them; :func:`variant_overrides` gives the configuration
sections (and top-level settings) it overrides on the grid's base.
"""

from __future__ import annotations

import math
from typing import Any

from fedcare_core.errors import ConfigError

__all__ = [
    "ABLATIONS",
    "ALL_LABELS",
    "CANDIDATES",
    "FAIRNESS_STRENGTHS",
    "PREFERENCES",
    "PREFERENCE_CHOICES",
    "RECOMMENDED_ADMISSION_CANDIDATE",
    "RECOMMENDED_BY_FEATURES",
    "RECOMMENDED_CANDIDATE",
    "preference_names",
    "preference_variant",
    "privacy_variant",
    "recommended_candidate",
    "variant_overrides",
]

#: Ablations the paper lacks (SPEC §1): name → configuration sections to override.
ABLATIONS: dict[str, dict[str, dict[str, Any]]] = {
    "paper": {},
    "solver-slsqp": {"stage1": {"solver": "slsqp"}},
    "normalise-l2": {"stage1": {"normalise": "l2"}},
    "normalise-loss+": {"stage1": {"normalise": "loss+"}},
    "qp-scope-backbone": {"stage1": {"qp_scope": "backbone"}},
}
#: FedCARE configurations that build on Stage 1 (issue 18), compared with ``paper`` by the
#: ``selection`` experiment on validation scores only; its winner is ``--preset recommended``.
CANDIDATES: dict[str, dict[str, dict[str, Any]]] = {
    "s2-warm": {"stage2": {"head_init": "global"}},
    "s2-frozen": {"stage2": {"backbone_lr_scale": 0.0}},
    "s2-frozen-warm": {"stage2": {"backbone_lr_scale": 0.0, "head_init": "global"}},
    "s2-slow-warm": {"stage2": {"backbone_lr_scale": 0.1, "head_init": "global"}},
    "s2-prox-warm": {"stage2": {"prox": 1.0, "head_init": "global"}},
    "s1-adam-backbone+s2-frozen-warm": {
        "stage1": {"server_optimizer": "adam", "qp_scope": "backbone"},
        "stage2": {"backbone_lr_scale": 0.0, "head_init": "global"},
    },
}
# The representation and width on top of the preset (issue 32): numeric features scaled by
# statistics pooled across the clients, and a backbone twice as wide.
_PRESET = CANDIDATES["s1-adam-backbone+s2-frozen-warm"]
CANDIDATES |= {
    "s1-adam-backbone+s2-frozen-warm+scale-federated": _PRESET | {"data": {"scaling": "federated"}},
    "s1-adam-backbone+s2-frozen-warm+scale-quantile": _PRESET
    | {"data": {"scaling": "federated-quantile"}},
    "s1-adam-backbone+s2-frozen-warm+wide": _PRESET
    | {"model": {"hidden": 256, "representation": 128}},
}
#: The selection experiment's choice on the paper's partition among issue 18's candidates
#: (docs/results/diabetes130/selection_uncalibrated/selection.md; calibrated, the same choice
#: among them), which is ``--preset recommended``: the variant a multi-site federation can run
#: (the pooled-scaling candidate ranked ahead by less than the seed spread; docs/RESULTS.md).
RECOMMENDED_CANDIDATE = "s1-adam-backbone+s2-frozen-warm"
#: Its choice on the admission-time partition, among the preset and the candidates built on it
#: (docs/results/diabetes130/selection_admission/selection.md; issue 32), which is
#: ``--preset recommended-admission``.
RECOMMENDED_ADMISSION_CANDIDATE = "s1-adam-backbone+s2-frozen-warm+scale-federated"
#: Each feature set's chosen candidate: the ``recommended`` experiment runs it, and its tables
#: name it "recommended".
RECOMMENDED_BY_FEATURES = {
    "paper": RECOMMENDED_CANDIDATE,
    "admission": RECOMMENDED_ADMISSION_CANDIDATE,
}
#: The true all-labels centralised reference: every client holds every objective (its labels
#: and private features), and Centralised pools them all: the whole dataset in one place.
ALL_LABELS = "all-labels"
#: The ``preferences`` experiment's clinical preferences (issue 31), each stated by every
#: client for every binary objective it pursues, on top of the recommended preset.
PREFERENCES: dict[str, str] = {
    "sensitivity": "*:sensitivity",
    "fair-race": "*:fair(race)",
    "fair-race-sensitivity": "*:fair(race,sensitivity)",
}
#: The fairness preferences at a weaker and a stronger weight γ than the default 1: name →
#: (the preference, γ). ``--variants`` adds them to the preferences experiment, which then
#: shows the gap and the AUROC at γ ∈ {0.25, 1, 4}; its default runs :data:`PREFERENCES`.
FAIRNESS_STRENGTHS: dict[str, tuple[str, float]] = {
    f"{name}-gamma{gamma:g}": (name, gamma)
    for name in ("fair-race", "fair-race-sensitivity")
    for gamma in (0.25, 4.0)
}
#: Every preference the preferences experiment can run (``--variants``).
PREFERENCE_CHOICES = (*PREFERENCES, *FAIRNESS_STRENGTHS)


def privacy_variant(budget: float | None) -> str:
    """The variant name of a DP budget: ``dp-eps3`` (``paper`` for None: no DP)."""
    return "paper" if budget is None else f"dp-eps{budget:g}"


def recommended_candidate(features: str | None) -> str:
    """The candidate the selection chose for a feature set (None: the paper's partition)."""
    return RECOMMENDED_BY_FEATURES.get(features or "paper", RECOMMENDED_CANDIDATE)


def preference_variant(preference: str, features: str | None = None) -> str:
    """The variant of a feature set's chosen preset with ``preference`` (:data:`PREFERENCES`)."""
    return f"{recommended_candidate(features)}+{preference}"


def _preference_variants() -> dict[str, tuple[str, str]]:
    """Every preference variant (of each feature set's preset) → (its features, its preference)."""
    return {
        preference_variant(name, f): (f, name)
        for f in RECOMMENDED_BY_FEATURES
        for name in PREFERENCE_CHOICES
    }


def _preference_settings(name: str) -> dict[str, Any]:
    """A preference's top-level settings: its text, and γ for a :data:`FAIRNESS_STRENGTHS` one."""
    if name in FAIRNESS_STRENGTHS:
        base, gamma = FAIRNESS_STRENGTHS[name]
        return {"preferences": PREFERENCES[base], "fairness_weight": gamma}
    return {"preferences": PREFERENCES[name]}


def preference_names() -> dict[str, str]:
    """Every preference variant (of each feature set's preset) → its preference's name."""
    return {variant: name for variant, (_, name) in _preference_variants().items()}


def variant_overrides(variant: str) -> dict[str, Any]:
    """The configuration a variant overrides: an ablation, a candidate, a preference, ``dp-eps<ε>``.

    Returns
    -------
    dict
        Section name → fields (``{"stage1": {...}}``), and top-level settings by name
        (``{"preferences": "*:sensitivity"}``).

    Raises
    ------
    ConfigError
        For a name that is none of them.
    """
    for named in (ABLATIONS, CANDIDATES):
        if variant in named:
            return {name: dict(values) for name, values in named[variant].items()}
    if variant in (preferred := _preference_variants()):
        features, name = preferred[variant]
        preset = variant_overrides(recommended_candidate(features))
        return preset | _preference_settings(name)
    if variant == ALL_LABELS:  # the dataset's objective count is filled in by Cell.config
        return {"data": {}}
    if variant.startswith("dp-eps"):
        try:
            budget = float(variant.removeprefix("dp-eps"))
        except ValueError:
            budget = math.nan
        if math.isfinite(budget) and budget > 0:
            return {"stage1": {"dp_epsilon": budget}}
    raise ConfigError(
        f"unknown variant {variant!r}; choose an ablation ({sorted(ABLATIONS)}), a candidate "
        f"({sorted(CANDIDATES)}), a preference of the preset "
        f"({sorted(preference_names())}), {ALL_LABELS} or dp-eps<ε>"
    )
