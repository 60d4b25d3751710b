"""``fedcare run --sites SITES.json --schema federation.json``: a federation of sites, in process.

Each site of the list is prepared exactly as ``fedcare site prepare`` prepares it
(:func:`fedcare.cli.sites_input.load_site`, the split seeded with ``--seed``), the sites are
ordered by name (:func:`fedcare_core.sites.federation_of_sites`), and the run is the usual
:func:`fedcare_core.runner.run_algorithm` on the schema's configuration: what a real multi-site
federation computes, so one can be checked against the other.
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import dataclass

from fedcare.cli.options import bounded
from fedcare.cli.sites_input import (
    check_disjoint_sites,
    combined_provenance,
    load_site,
    read_sites_list,
)
from fedcare_core.config import ExperimentConfig, flagged_settings
from fedcare_core.data.clients import Federation
from fedcare_core.errors import ConfigError
from fedcare_core.federation_schema import RUN_SETTINGS, read_schema
from fedcare_core.results import DataProvenance
from fedcare_core.sites import federation_of_sites

#: ``fedcare run`` options the schema decides (given with --sites they would be ignored):
#: every setting but :data:`~fedcare_core.federation_schema.RUN_SETTINGS`, and these.
SCHEMA_DECIDES = (
    "config", "data_dir", "no_verify", "preset", "set_values", "run_dir", "resume",
    *(name for name in flagged_settings() if name not in RUN_SETTINGS),
)  # fmt: skip


@dataclass(frozen=True)
class SitesRun:
    """What ``fedcare run --sites`` runs: the configuration, the federation, its provenance."""

    config: ExperimentConfig
    federation: Federation
    provenance: DataProvenance
    partition_s: float


def refused_options(args: argparse.Namespace) -> list[str]:
    """The options given with ``--sites`` that the schema decides, as ``--flag`` names."""
    out = []
    for dest in SCHEMA_DECIDES:
        value = getattr(args, dest, None)
        if value is not None and value is not False:
            out.append("--set" if dest == "set_values" else "--" + dest.replace("_", "-"))
    return out


def prepare_sites_run(args: argparse.Namespace, *, quiet: bool) -> SitesRun:
    """Check the options, read the schema and the sites list, and prepare every site.

    Raises
    ------
    ConfigError
        For ``--sites`` without ``--schema`` (or the reverse), an option the schema decides, a
        bad schema or sites list.
    DataError, DataCheckError
        For a site's file that fails its checks (the file, column and rows).
    """
    if args.sites is None or args.schema is None:
        raise ConfigError("--sites and --schema go together: give both")
    refused = refused_options(args)
    if refused:
        raise ConfigError(
            f"with --sites the federation schema ({args.schema}) decides "
            f"{', '.join(refused)}: only --seed, --rounds, --backend, --secagg and the output "
            "options may be added"
        )
    for name in RUN_SETTINGS:
        value, limits = getattr(args, name), flagged_settings()[name].spec.range
        if value is not None and limits is not None:
            bounded(f"--{name}", value, limits)
    schema = read_schema(args.schema)
    entries = read_sites_list(args.sites, schema)
    if len(entries) < 2:
        raise ConfigError(f"--sites {args.sites}: a federation needs at least 2 sites, got 1")
    seed = schema.config.seed if args.seed is None else args.seed
    secagg = bool(getattr(args, "secagg", False))
    config = schema.run_config(seed=seed, clients=len(entries), rounds=args.rounds, secagg=secagg)
    t0 = time.perf_counter()
    sites = []
    for entry in entries:
        if not quiet:
            print(f"Preparing site {entry.name} …", file=sys.stderr, flush=True)
        sites.append(load_site(schema, entry.data, entry.objectives, name=entry.name, seed=seed))
    check_disjoint_sites(sites, f"--sites {args.sites}")
    federation = federation_of_sites(schema, [(s.name, s.client) for s in sites])
    return SitesRun(config, federation, combined_provenance(sites), time.perf_counter() - t0)
