"""A hospital's own data as one client of a federation (paper §III: each client keeps its data).

:func:`prepare_site` turns one site's loaded file into its :class:`ClientData`: it checks the
file against the federation's schema, splits train/validation/test by patient with a stream
keyed by the site's name (so a site's split does not depend on which other sites exist), and
fits the site's encoders on its own training rows with the schema's vocabularies.
:func:`federation_of_sites` puts prepared sites together the way a coordinator sees them:
ordered by name, the position in that order being the site's client id.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace

import numpy as np

from fedcare_core.config.preferences import Preference
from fedcare_core.data.client_preferences import check_preferences
from fedcare_core.data.clients import (
    SPLITS,
    ClientData,
    ClientEncoding,
    Federation,
    client_splits,
    split_patients,
)
from fedcare_core.data.cohort import Cohort
from fedcare_core.data.label_checks import check_labels
from fedcare_core.data.partition import FeaturePartition
from fedcare_core.errors import ConfigError, DataError
from fedcare_core.sites.schema import FederationSchema, check_site_scaling


@dataclass(frozen=True)
class SitePrivate:
    """A site's own private features (``fedcare site prepare --private``), named at the site only.

    Parameters
    ----------
    pools
        Objective → the site's private columns added to its pool.
    numeric
        Which of them are numbers.
    vocabularies
        The declared vocabularies of those that are categories.
    """

    pools: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    numeric: tuple[str, ...] = ()
    vocabularies: Mapping[str, tuple[str, ...]] = field(default_factory=dict)

    def partition(self, federation: FeaturePartition) -> FeaturePartition:
        """The federation's partition with these columns in the pools."""
        if not self.pools:
            return federation
        private = {k: tuple(v) for k, v in federation.private.items()}
        for objective, extra in self.pools.items():
            private[objective] = (*private.get(objective, ()), *extra)
        return replace(federation, private=private)


def prepare_site(
    cohort: Cohort,
    schema: FederationSchema,
    objectives: Sequence[str],
    *,
    name: str,
    seed: int,
    source: str | None = None,
    private: SitePrivate | None = None,
    preferences: Mapping[str, Preference] | None = None,
) -> ClientData:
    """One site's client data from its own cohort (client id 0 until a coordinator assigns one).

    Parameters
    ----------
    cohort
        The site's file, loaded (and checked) by the dataset's loader.
    schema
        The federation's agreement.
    objectives
        The objectives this site pursues (a subset of the schema's).
    name
        The site's name (keys its split stream).
    seed
        Seed of the split.
    source
        The site's file, for messages.
    private
        The site's own private features (None: the federation's pools only).
    preferences
        The site's clinical preferences for its objectives (None: plain), checked against the
        schema's objectives and the cohort's sensitive attributes.

    Returns
    -------
    ClientData
        The site's encoded splits and encoders.

    Raises
    ------
    ConfigError
        If the cohort is of another dataset or an objective is not the schema's.
    DataError
        If a split would be empty, or the training split cannot teach an objective (no
        labelled, positive or negative row).
    """
    if cohort.dataset != schema.dataset:
        raise ConfigError(f"the schema is for {schema.dataset}, the data is {cohort.dataset}")
    check_site_scaling(schema.config)  # a schema file may set it by hand
    objs = schema.check_objectives(list(objectives))
    preferences = dict(preferences or {})
    check_preferences(preferences, schema.objectives, cohort.sensitive, f"site {name!r}")
    rows = np.arange(cohort.n_rows)
    splits = split_patients(cohort.patient, schema.config.data, seed, name)
    empty = [split for split in SPLITS if len(splits[split]) == 0]
    if empty:
        raise DataError(
            f"site {name!r}: {len(np.unique(cohort.patient))} patient(s) leave no patient for "
            f"the {' and '.join(empty)} split(s); a site needs more patients",
            file=source,
        )
    frames, labels, extras = client_splits(cohort, rows, splits, objs)
    check_labels(cohort, objs, labels["train"], f"site {name!r}", source)
    extra = private or SitePrivate()
    encoding = ClientEncoding(
        extra.partition(schema.partition),
        frozenset(schema.numeric_features) | frozenset(extra.numeric),
        schema.config.model.max_categories,
        {**extra.vocabularies, **schema.vocabularies},
    )
    client = replace(
        encoding.client(0, objs, frames, labels, extras=extras), preferences=preferences
    )
    if client.common_encoder.width != schema.common_width():  # pragma: no cover - by design
        raise ConfigError("the site's common features do not encode to the schema's layout")
    return client


def federation_of_sites(
    schema: FederationSchema, sites: Sequence[tuple[str, ClientData]]
) -> Federation:
    """The federation of prepared sites: ordered by name, client id = position in that order.

    The model's heads are the schema's objectives that at least one site pursues, in the
    schema's order (what a coordinator learns from the sites it registered).

    Raises
    ------
    ConfigError
        For no site or two sites of the same name.
    """
    names = [name for name, _ in sites]
    if not sites:
        raise ConfigError("a federation needs at least one site")
    repeated = sorted({n for n in names if names.count(n) > 1})
    if repeated:
        raise ConfigError(f"two sites are named {repeated[0]!r}: site names must be unique")
    ordered = sorted(sites, key=lambda item: item[0])
    clients = tuple(replace(client, client_id=k) for k, (_, client) in enumerate(ordered))
    pursued = {o for c in clients for o in c.objectives}
    return Federation(
        dataset=schema.dataset,
        objectives=tuple(o for o in schema.objectives if o.name in pursued),
        partition=schema.partition,
        clients=clients,
        common_width=schema.common_width(),
    )


def single_site_federation(
    schema: FederationSchema, client: ClientData, objectives: Sequence[str]
) -> Federation:
    """One site alone, with the run's model heads (``objectives``), for its own Stage 2."""
    return Federation(
        dataset=schema.dataset,
        objectives=tuple(o for o in schema.objectives if o.name in objectives),
        partition=schema.partition,
        clients=(client,),
        common_width=schema.common_width(),
    )
