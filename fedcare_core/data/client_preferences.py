"""Giving clients their clinical preferences, checked against the dataset (issue 31).

A preference (:mod:`fedcare_core.config.preferences`) is stated for an objective: in a simulated
federation by the ``preferences`` setting, for every client pursuing that objective; in a
multi-site federation by each site, in its own objectives list (``readmission:fair(race)``).
Either way it is checked here against what the dataset declares: the objective must be one of
its binary objectives, a fairness preference's attribute one of its sensitive attributes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace

from fedcare_core.config.preferences import Preference
from fedcare_core.data.clients import Federation
from fedcare_core.data.cohort import Cohort, Objective
from fedcare_core.data.subgroups import SensitiveAttribute
from fedcare_core.errors import ConfigError
from fedcare_core.objectives import objective_kind

__all__ = ["WILDCARD", "check_preferences", "expand_wildcard", "with_preferences"]

#: The objective name standing for every binary objective of the dataset.
WILDCARD = "*"


def check_preferences(
    preferences: Mapping[str, Preference],
    objectives: Sequence[Objective],
    sensitive: Sequence[SensitiveAttribute],
    where: str = "preferences",
) -> None:
    """Refuse a preference the dataset cannot honour.

    Parameters
    ----------
    preferences
        Objective → preference.
    objectives
        The dataset's objectives.
    sensitive
        Its declared sensitive attributes.
    where
        What stated them, for the message (the setting, or a site).

    Raises
    ------
    ConfigError
        Naming the objective or attribute at fault and what would be accepted.
    """
    kinds = {o.name: o.kind for o in objectives}
    attributes = [a.name for a in sensitive]
    for objective, preference in preferences.items():
        if objective not in kinds:
            raise ConfigError(
                f"{where}: {objective!r} is not an objective of the dataset ({', '.join(kinds)})"
            )
        if not objective_kind(kinds[objective]).risk:
            raise ConfigError(
                f"{where}: {objective}:{preference.label} — a preference shapes a binary "
                f"objective's loss; {objective!r} is a {kinds[objective]} objective"
            )
        if preference.kind == "fair" and preference.attribute not in attributes:
            declared = ", ".join(attributes) if attributes else "none"
            raise ConfigError(
                f"{where}: {objective}:{preference.label} — {preference.attribute!r} is not a "
                f"sensitive attribute of the dataset (declared: {declared})"
            )


def expand_wildcard(
    preferences: Mapping[str, Preference], objectives: Sequence[Objective]
) -> dict[str, Preference]:
    """``*``'s preference given to every binary objective not stated by name.

    Parameters
    ----------
    preferences
        Objective (or ``*``) → preference.
    objectives
        The dataset's objectives.

    Returns
    -------
    dict of str to Preference
        Objective → preference, without ``*``.
    """
    out = {o: p for o, p in preferences.items() if o != WILDCARD}
    if WILDCARD in preferences:
        for o in objectives:
            if objective_kind(o.kind).risk:
                out.setdefault(o.name, preferences[WILDCARD])
    return out


def with_preferences(
    federation: Federation, preferences: Mapping[str, Preference], cohort: Cohort
) -> Federation:
    """``federation`` with every client pursuing a preferred objective given its preference.

    Parameters
    ----------
    federation
        The clients (plain).
    preferences
        Objective → preference (the ``preferences`` setting).
    cohort
        The dataset (its objectives and sensitive attributes).

    Returns
    -------
    Federation
        The same clients, each holding the preferences of the objectives it pursues.

    Raises
    ------
    ConfigError
        As :func:`check_preferences`, checked against the dataset's objectives.
    """
    if not preferences:
        return federation
    preferences = expand_wildcard(preferences, cohort.objectives)
    check_preferences(preferences, cohort.objectives, cohort.sensitive)
    clients = tuple(
        replace(
            client,
            preferences={o: p for o, p in preferences.items() if o in client.objectives},
        )
        for client in federation.clients
    )
    return replace(federation, clients=clients)
