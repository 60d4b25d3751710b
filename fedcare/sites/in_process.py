"""A federation of sites run in one process (``fedcare run --sites``), as a prepared run.

Each site of the list is prepared exactly as ``fedcare site prepare`` prepares it
(:func:`fedcare.sites.site_input.load_site`, the split seeded with the run's seed), the sites
are ordered by name (:func:`fedcare_core.sites.client.federation_of_sites`), and the result is a
:class:`fedcare.app.run.PreparedRun` on the schema's configuration, executed by the run service
like any other: what a real multi-site federation computes, so one can be checked against the
other.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

from fedcare.app.run import PreparedRun
from fedcare.sites.site_input import (
    check_disjoint_sites,
    combined_provenance,
    load_site,
    read_sites_list,
)
from fedcare_core.errors import ConfigError
from fedcare_core.sites.client import federation_of_sites
from fedcare_core.sites.schema import read_schema


def prepare_sites(
    schema_path: Path,
    sites_path: Path,
    *,
    seed: int | None,
    rounds: int | None,
    secagg: bool,
    algorithm: str | None = None,
    say: Callable[[str], None] | None = None,
) -> PreparedRun:
    """Read the schema and the sites list, and prepare every site's file.

    Parameters
    ----------
    schema_path, sites_path
        ``federation.json`` and the sites list (``sites.json``).
    seed, rounds
        The run's seed and rounds (None: the schema's).
    secagg
        Sum Stage 1's updates with SecAgg+ (on a Flower backend).
    algorithm
        The method (None: the schema's): a baseline or bound run on the same sites, to compare
        with FedCARE where the sites' feature spaces truly differ.
    say
        Told which site is being prepared.

    Raises
    ------
    ConfigError
        A bad schema or sites list, or fewer than two sites.
    DataError, DataCheckError
        A site's file that fails its checks (the file, column and rows).
    """
    schema = read_schema(schema_path)
    entries = read_sites_list(sites_path, schema)
    if len(entries) < 2:
        raise ConfigError(f"--sites {sites_path}: a federation needs at least 2 sites, got 1")
    seed = schema.config.seed if seed is None else seed
    config = schema.run_config(seed=seed, clients=len(entries), rounds=rounds, secagg=secagg)
    if algorithm is not None:
        config = config.with_overrides(algorithm=algorithm)
    t0 = time.perf_counter()
    sites = []
    for entry in entries:
        if say is not None:
            say(f"Preparing site {entry.name} …")
        sites.append(
            load_site(
                schema,
                entry.data,
                entry.objectives,
                name=entry.name,
                seed=seed,
                private=entry.private,
                column_map=entry.column_map,
            )
        )
    check_disjoint_sites(sites, f"--sites {sites_path}")
    federation = federation_of_sites(schema, [(s.name, s.client) for s in sites])
    return PreparedRun(config, federation, combined_provenance(sites), time.perf_counter() - t0)
