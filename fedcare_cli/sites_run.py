"""``fedcare run --sites SITES.json --schema federation.json``: a federation of sites, in process.

Each site of the list is prepared exactly as ``fedcare site prepare`` prepares it
(:func:`fedcare_cli.sites_input.load_site`, the split seeded with ``--seed``), the sites are
ordered by name (:func:`fedcare_core.sites.federation_of_sites`), and the run is the usual
:func:`fedcare_core.runner.run_algorithm` on the schema's configuration: what a real multi-site
federation computes, so one can be checked against the other.
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import dataclass

from fedcare_cli.options import bounded
from fedcare_cli.sites_input import (
    check_disjoint_sites,
    combined_provenance,
    load_site,
    read_sites_list,
)
from fedcare_core.config import MAX_ROUNDS, MAX_SEED, ExperimentConfig
from fedcare_core.config.fields import Range
from fedcare_core.data.federation import Federation
from fedcare_core.errors import ConfigError
from fedcare_core.federation_schema import read_schema
from fedcare_core.results import DataProvenance
from fedcare_core.sites import federation_of_sites

#: ``fedcare run`` options the schema decides (given with --sites they would be ignored).
SCHEMA_DECIDES = (
    "config", "dataset", "data_dir", "algorithm", "clients", "rho", "split",
    "objectives_per_client", "readmission", "features", "cohort", "benchmark_split", "max_patients",
    "max_patients_per_client", "unseen_categories",
    "local_steps", "local_lr", "global_lr", "batch_size", "solver", "normalise", "qp_scope",
    "server_optimizer", "stage2_epochs", "stage2_backbone_lr_scale", "stage2_prox", "no_verify",
    "stage2_head_init", "preset",
    "run_dir", "resume",
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
            out.append("--" + dest.replace("_", "-"))
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
    if args.seed is not None:
        bounded("--seed", args.seed, Range(0, MAX_SEED))
    if args.rounds is not None:
        bounded("--rounds", args.rounds, Range(1, MAX_ROUNDS))
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
