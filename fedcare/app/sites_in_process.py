"""A federation of sites run in one process (``fedcare run --sites``, a grid over sites).

Each site of the list is prepared exactly as ``fedcare site prepare`` prepares it (its file read
and checked by :func:`fedcare.sites.site_input.read_site`, then split with the run's seed by
:func:`~fedcare.sites.site_input.split_site`), the sites are ordered by name
(:func:`fedcare_core.sites.client.federation_of_sites`), and the result is a
:class:`fedcare.app.run.PreparedRun` on the schema's configuration, executed by the run service
like any other: what a real multi-site federation computes, so one can be checked against the
other.

A grid over sites (``fedcare experiment comparison|ablation --sites``) reads every site's file
once per process (:func:`read_sites_files`, kept for the later jobs of a Dask worker) and
builds each cell's federation for its seed (:meth:`ReadSites.federation`): the same federation
``fedcare run --sites`` builds for that seed.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from fedcare.app.run import PreparedRun
from fedcare.sites.site_input import (
    ReadSite,
    check_disjoint_sites,
    combined_provenance,
    read_site,
    read_sites_list,
    split_site,
)
from fedcare_core.data.clients import Federation
from fedcare_core.errors import ConfigError
from fedcare_core.run.results import DataProvenance
from fedcare_core.sites.client import federation_of_sites
from fedcare_core.sites.schema import FederationSchema, read_schema


@dataclass(frozen=True)
class ReadSites:
    """Every site's file of a sites list, read and checked, before the seed's split.

    Attributes
    ----------
    schema
        The federation's schema.
    sites
        The sites, in the list's order (their patients disjoint).
    """

    schema: FederationSchema
    sites: tuple[ReadSite, ...]

    def federation(self, seed: int) -> tuple[Federation, DataProvenance]:
        """The sites split and encoded with ``seed``, ordered by name, and their provenance.

        Raises
        ------
        DataError
            A site whose split with ``seed`` leaves a split empty or cannot teach an objective.
        """
        split = [split_site(self.schema, site, seed) for site in self.sites]
        federation = federation_of_sites(self.schema, [(s.name, s.client) for s in split])
        return federation, combined_provenance(split)


def read_sites(schema_path: str | Path, sites_path: str | Path) -> tuple[FederationSchema, int]:
    """The schema and how many sites the list holds, both checked (no site's file is read).

    Raises
    ------
    ConfigError
        A bad schema or sites list, or fewer than two sites.
    """
    schema = read_schema(schema_path)
    entries = read_sites_list(Path(sites_path), schema)
    if len(entries) < 2:
        raise ConfigError(f"--sites {sites_path}: a federation needs at least 2 sites, got 1")
    return schema, len(entries)


def _read_all(
    schema: FederationSchema,
    sites_path: str | Path,
    say: Callable[[str], None] | None = None,
) -> ReadSites:
    """Every site's file of the list read and checked; no patient at two sites."""
    entries = read_sites_list(Path(sites_path), schema)
    sites = []
    for entry in entries:
        if say is not None:
            say(f"Preparing site {entry.name} …")
        sites.append(
            read_site(
                schema,
                entry.data,
                entry.objectives,
                name=entry.name,
                private=entry.private,
                column_map=entry.column_map,
                preferences=entry.preferences,
                map_option=f'site {entry.name}\'s "map":',
            )
        )
    check_disjoint_sites(sites, f"--sites {sites_path}")
    return ReadSites(schema, tuple(sites))


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
    schema, count = read_sites(schema_path, sites_path)
    seed = schema.config.seed if seed is None else seed
    config = schema.run_config(seed=seed, clients=count, rounds=rounds, secagg=secagg)
    if algorithm is not None:
        config = config.with_overrides(algorithm=algorithm)
    t0 = time.perf_counter()
    federation, provenance = _read_all(schema, sites_path, say).federation(seed)
    return PreparedRun(config, federation, provenance, time.perf_counter() - t0)


def _stat_lines(data: Path) -> list[str]:
    """A site's data file (or every file of its folder): path, size and modification time."""
    files = sorted(p for p in data.rglob("*") if p.is_file()) if data.is_dir() else [data]
    return [f"{p.resolve()}:{p.stat().st_size}:{p.stat().st_mtime_ns}" for p in files]


def sites_digest(schema_path: str | Path, sites_path: str | Path) -> str:
    """A short hash of what a grid over the sites reads, taken without reading a row.

    The schema's and the list's text, each site's private-features file and column map, and
    each site's data file(s) by path, size and modification time: a grid over other sites, or
    over a site's file that changed, keeps its cells apart (a touched file runs them again).

    Raises
    ------
    ConfigError
        A bad schema or sites list.
    """
    schema = read_schema(schema_path)
    h = hashlib.sha256(Path(schema_path).read_bytes())
    h.update(Path(sites_path).read_bytes())
    for entry in read_sites_list(Path(sites_path), schema):
        stated = [f"{o}:{p.label}:{p.weight!r}" for o, p in entry.preferences.items()]
        lines = [entry.name, *entry.objectives, *stated, *_stat_lines(entry.data)]
        h.update("\n".join(lines).encode())
        for declared in (entry.private, entry.column_map):
            h.update(b"-" if declared is None else declared.read_bytes())
    return h.hexdigest()[:12]


#: Each process's read sites, by (schema, sites list, digest): a Dask worker reads them once.
_read: dict[tuple[str, str, str], ReadSites] = {}


def read_sites_files(
    schema_path: str | Path, sites_path: str | Path, say: Callable[[str], None] | None = None
) -> ReadSites:
    """Every site's file read and checked, once per process (kept for the next call).

    Raises
    ------
    ConfigError
        A bad schema or sites list, fewer than two sites, or two sites sharing a patient.
    DataError, DataCheckError
        A site's file that fails its checks (the file, column and rows).
    """
    key = (str(schema_path), str(sites_path), sites_digest(schema_path, sites_path))
    if key not in _read:
        schema, _ = read_sites(schema_path, sites_path)
        _read[key] = _read_all(schema, sites_path, say)
    return _read[key]
