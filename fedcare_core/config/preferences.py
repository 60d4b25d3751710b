"""Clinical preferences: what a site asks of an objective beyond predicting it (issue 31).

The paper's objectives are a task *and* the loss a site optimises it with: a prediction loss, a
sensitivity-oriented loss or a fairness-aware loss (its §III-A and Fig. 1). A site states its
preference per objective, ``<objective>:<preference>`` (``*`` for every binary objective):

- ``plain``: the task's prediction loss (SPEC §2), the default;
- ``sensitivity``: recall-weighted cross-entropy, the positive class weighted ``weight`` (β)
  times more than the plain loss does. A missed positive then costs β·w false alarms (w the
  client's negatives/positives), so the site's decision threshold on a calibrated risk falls
  from 1/(1 + w) to 1/(1 + β·w) (:func:`decision_threshold`);
- ``fair(<attribute>)`` or ``fair(<attribute>,<metric>)``: the prediction loss plus ``weight``
  (γ) times the gap, within each mini-batch, of a smooth stand-in for ``metric`` across the
  subgroups of a declared sensitive attribute (:func:`fedcare_core.objectives.losses.subgroup_gap`):
  ``auroc`` (default) the pairwise ranking probability, ``sensitivity`` the mean predicted
  probability of the positives.

The preferred loss *is* the objective's loss at that site, so λ* (Stage 1) and μ* (Stage 2)
balance it with the site's other objectives like any other.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

__all__ = [
    "FAIRNESS_METRICS",
    "PREFERENCE_KINDS",
    "Preference",
    "decision_threshold",
    "parse_preference",
    "parse_preferences",
    "site_objectives",
    "split_objectives",
]

#: The preferences a site may state.
PREFERENCE_KINDS = ("plain", "sensitivity", "fair")
#: The metrics whose subgroup gap a fairness preference penalises (and the report shows).
FAIRNESS_METRICS = ("auroc", "sensitivity")
#: A subgroup takes part in a batch's gap from this many positive (and, for AUROC, negative)
#: rows: fewer make its stand-in too noisy to steer by.
MIN_GROUP_ROWS = 5

_NAME = r"[A-Za-z_][A-Za-z0-9_]*"
_ITEM = re.compile(
    rf"^\s*(?P<objective>\*|{_NAME})\s*:\s*(?P<kind>{_NAME})"
    rf"(?:\s*\(\s*(?P<attribute>{_NAME})\s*(?:,\s*(?P<metric>{_NAME})\s*)?\))?\s*$"
)
#: One item as it appears in a list (checked afterwards by :data:`_ITEM`).
_LOOSE_ITEM = re.compile(rf"(?:\*|{_NAME})\s*:\s*{_NAME}(?:\s*\([^()]*\))?")


@dataclass(frozen=True)
class Preference:
    """One site's preference for one objective.

    Parameters
    ----------
    kind
        ``plain``, ``sensitivity`` or ``fair`` (:data:`PREFERENCE_KINDS`).
    weight
        β for ``sensitivity`` (how many times more a missed positive costs), γ for ``fair`` (the
        gap's weight beside the prediction loss); unused by ``plain``.
    attribute
        ``fair``: the declared sensitive attribute (``race``).
    metric
        ``fair``: the metric whose gap is penalised (:data:`FAIRNESS_METRICS`).
    """

    kind: str = "plain"
    weight: float = 1.0
    attribute: str = ""
    metric: str = ""

    def __post_init__(self) -> None:
        if self.kind not in PREFERENCE_KINDS:
            raise ValueError(f"unknown preference {self.kind!r}: one of {PREFERENCE_KINDS}")
        if not self.weight > 0:
            raise ValueError(f"a preference's weight must be positive, got {self.weight!r}")
        if self.kind == "fair":
            if not self.attribute:
                raise ValueError("fair(...) names a sensitive attribute, e.g. fair(race)")
            if self.metric not in FAIRNESS_METRICS:
                raise ValueError(
                    f"fair({self.attribute},{self.metric}): the metric is one of "
                    f"{', '.join(FAIRNESS_METRICS)}"
                )
        elif self.attribute or self.metric:
            raise ValueError(f"{self.kind!r} takes no attribute")

    @property
    def label(self) -> str:
        """How a site writes it: ``sensitivity``, ``fair(race)``, ``fair(race,sensitivity)``."""
        if self.kind != "fair":
            return self.kind
        metric = "" if self.metric == FAIRNESS_METRICS[0] else f",{self.metric}"
        return f"fair({self.attribute}{metric})"

    def to_dict(self) -> dict[str, object]:
        """JSON-able form (:meth:`from_dict` reads it back)."""
        return {
            "kind": self.kind,
            "weight": self.weight,
            "attribute": self.attribute,
            "metric": self.metric,
        }

    @classmethod
    def from_dict(cls, raw: dict[str, object]) -> Preference:
        """Read :meth:`to_dict`'s form."""
        return cls(
            kind=str(raw["kind"]),
            weight=float(raw["weight"]),  # type: ignore[arg-type]
            attribute=str(raw.get("attribute", "")),
            metric=str(raw.get("metric", "")),
        )


def parse_preference(
    text: str, *, sensitivity_weight: float, fairness_weight: float
) -> tuple[str, Preference]:
    """``"readmission:fair(race)"`` → ``("readmission", Preference("fair", γ, "race", "auroc"))``.

    Parameters
    ----------
    text
        ``<objective>:<preference>``.
    sensitivity_weight, fairness_weight
        β and γ given to a ``sensitivity`` or ``fair`` preference.

    Raises
    ------
    ValueError
        Saying what is wrong with ``text``.
    """
    match = _ITEM.match(text)
    if match is None:
        raise ValueError(
            f"{text.strip()!r} is not <objective>:<preference> (plain, sensitivity, "
            "fair(<attribute>) or fair(<attribute>,<metric>))"
        )
    objective, kind = match["objective"], match["kind"]
    attribute, metric = match["attribute"] or "", match["metric"] or ""
    if kind == "fair":
        weight, metric = fairness_weight, metric or FAIRNESS_METRICS[0]
    else:
        weight = sensitivity_weight if kind == "sensitivity" else 1.0
    try:
        return objective, Preference(kind, weight, attribute, metric)
    except ValueError as exc:
        raise ValueError(f"{text.strip()!r}: {exc}") from None


def parse_preferences(
    text: str, *, sensitivity_weight: float = 2.0, fairness_weight: float = 1.0
) -> dict[str, Preference]:
    """Every item of a space- or comma-separated list (commas inside ``fair(...)`` kept).

    Returns
    -------
    dict of str to Preference
        Objective → its preference (``plain`` ones left out).

    Raises
    ------
    ValueError
        For an item that does not parse, or an objective stated twice.
    """
    if text.count("(") != text.count(")"):
        raise ValueError(f"{text.strip()!r}: unbalanced parentheses")
    stated: dict[str, Preference] = {}
    for item in _split_items(text):
        objective, preference = parse_preference(
            item, sensitivity_weight=sensitivity_weight, fairness_weight=fairness_weight
        )
        if objective in stated:
            raise ValueError(f"objective {objective!r} has more than one preference")
        stated[objective] = preference
    return {o: p for o, p in stated.items() if p.kind != "plain"}


def _split_items(text: str) -> list[str]:
    """The ``<objective>:<preference>`` items of ``text``.

    Anything else between them is kept as an item of its own, for :func:`parse_preference` to
    name.
    """
    items, last = [], 0
    for match in _LOOSE_ITEM.finditer(text):
        gap = text[last : match.start()].strip(" \t\n,")
        if gap:
            items.append(gap)
        items.append(match.group(0))
        last = match.end()
    tail = text[last:].strip(" \t\n,")
    return [*items, tail] if tail else items


def split_objectives(text: str) -> list[str]:
    """``"mortality:sensitivity, readmission:fair(race,sensitivity)"`` → its two items.

    Splits on the commas outside parentheses (empty items kept, for the caller to refuse).
    """
    items, depth, current = [], 0, ""
    for char in text:
        depth += (char == "(") - (char == ")")
        if char == "," and depth == 0:
            items.append(current.strip())
            current = ""
        else:
            current += char
    return [*items, current.strip()]


def site_objectives(
    entries: Sequence[str], *, sensitivity_weight: float, fairness_weight: float
) -> tuple[list[str], dict[str, Preference]]:
    """A site's objectives list (``["mortality:sensitivity", "los"]``): names and preferences.

    Raises
    ------
    ValueError
        For an entry whose preference does not parse.
    """
    names: list[str] = []
    stated: dict[str, Preference] = {}
    for entry in entries:
        name, sep, _ = entry.partition(":")
        names.append(name.strip())
        if sep:
            objective, preference = parse_preference(
                entry, sensitivity_weight=sensitivity_weight, fairness_weight=fairness_weight
            )
            if preference.kind != "plain":
                stated[objective] = preference
    return names, stated


def decision_threshold(pos_weight: float) -> float:
    """The calibrated risk above which a loss weighting positives ``pos_weight`` flags a patient.

    The weighted cross-entropy's minimiser flags where ``pos_weight · p > 1 − p``: a missed
    positive costs ``pos_weight`` false alarms, the decision-curve threshold ``1/(1 + w)``.
    """
    return 1.0 / (1.0 + pos_weight)
