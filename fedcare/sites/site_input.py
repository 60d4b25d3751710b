"""Sites from their own files: the list ``fedcare run --sites`` reads, and one site's checked data.

A sites list (``SITES.json``, as ``fedcare data split-sites`` writes) is a JSON list of
``{"data": FILE, "objectives": [...], "name": NAME, "private": FILE.yaml, "map": FILE.yaml}``
(``name`` optional: the file's stem; ``private`` and ``map``, a site's own private features and
column map, optional); relative paths are relative to the list's folder. :func:`load_site` is
what ``fedcare site prepare`` and ``fedcare run --sites`` both run for one site: the dataset's
loader and data checks on the site's file (:func:`read_site`), then its split and encoders
(:func:`split_site`, :func:`fedcare_core.sites.client.prepare_site`). A grid over sites reads
each file once and splits it for each seed.
"""

from __future__ import annotations

import hashlib
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from fedcare.sites.export_columns import column_map_hint
from fedcare_core.config import DataConfig
from fedcare_core.config.preferences import Preference
from fedcare_core.data.clients import ClientData
from fedcare_core.data.loading import LoadedDataset
from fedcare_core.data.patient_keys import patient_keys
from fedcare_core.data.registry import get_dataset
from fedcare_core.errors import ConfigError, MissingColumnsError
from fedcare_core.files.json_input import read_json
from fedcare_core.files.safe_names import check_name
from fedcare_core.run.results import DataProvenance
from fedcare_core.sites.client import SitePrivate, prepare_site
from fedcare_core.sites.schema import FederationSchema


@dataclass(frozen=True)
class _SiteEntry:
    """One site of a sites list: its name, its file, its objectives, its own declarations."""

    name: str
    data: Path
    objectives: tuple[str, ...]
    private: Path | None = None
    column_map: Path | None = None
    preferences: Mapping[str, Preference] = field(default_factory=dict)


@dataclass(frozen=True)
class _LoadedSite:
    """A site's prepared client data, where its file came from, and its patients.

    ``patients`` holds the file's distinct patient keys, kept in memory only to check that no
    patient is at two sites (:func:`check_disjoint_sites`); never written or printed.
    """

    name: str
    client: ClientData
    provenance: DataProvenance
    source: str
    patients: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))


@dataclass(frozen=True)
class ReadSite:
    """A site's file read and checked, before its split (which depends on the run's seed).

    ``patients`` holds the file's distinct patient keys, in memory only (see
    :class:`_LoadedSite`). ``ignored_columns`` are the file's columns its definition does not
    declare: names only, for what ``site prepare`` prints at the site.
    """

    name: str
    objectives: tuple[str, ...]
    loaded: LoadedDataset
    private: SitePrivate | None
    definition: str | None
    provenance: DataProvenance
    patients: np.ndarray
    preferences: Mapping[str, Preference] = field(default_factory=dict)
    ignored_columns: tuple[str, ...] = ()

    @property
    def source(self) -> str:
        """The site's file, for messages."""
        return self.loaded.source


def read_sites_list(path: Path, schema: FederationSchema) -> list[_SiteEntry]:
    """The sites of ``path``, checked against ``schema`` (before any file is read).

    Raises
    ------
    ConfigError
        Naming the file and the entry at fault: not a list, a missing or unknown key, a file
        that does not exist, an objective the schema lacks, or two sites of the same name.
    """
    raw = read_json(path, "--sites")
    if not isinstance(raw, list) or not raw:
        raise ConfigError(f"--sites {path}: expected a non-empty JSON list of sites")
    entries = [_entry(path, i, item, schema) for i, item in enumerate(raw)]
    names = [e.name for e in entries]
    for name in names:
        if names.count(name) > 1:
            raise ConfigError(f"--sites {path}: two sites are named {name!r}")
    return entries


def _entry(path: Path, index: int, item: Any, schema: FederationSchema) -> _SiteEntry:
    where = f"--sites {path}, site {index}"
    if not isinstance(item, dict):
        raise ConfigError(f"{where}: expected an object with 'data' and 'objectives'")
    unknown = sorted(set(item) - {"data", "objectives", "name", "private", "map"})
    if unknown or "data" not in item or "objectives" not in item:
        raise ConfigError(
            f"{where}: keys are 'data', 'objectives' and optionally 'name', 'private' and "
            f"'map', got {sorted(item)}"
        )
    objectives = item["objectives"]
    if not isinstance(objectives, list) or not all(isinstance(o, str) for o in objectives):
        raise ConfigError(f"{where}: 'objectives' must be a list of names")
    if not isinstance(item["data"], str) or not item["data"] or "\0" in item["data"]:
        raise ConfigError(f"{where}: 'data' must be a file or folder path (a string)")
    data = Path(item["data"])
    if not data.is_absolute():
        data = path.parent / data
    if not data.exists():
        raise ConfigError(f"{where}: data {data}: no such file or folder")
    name = item.get("name", data.stem)
    check_site_name(name, f"{where}, 'name'" if "name" in item else f"{where} (the file's stem)")
    private, column_map = (_declaration(path, item, key, where) for key in ("private", "map"))
    objs, preferences = schema.check_site_objectives(objectives, f"{where} objectives")
    return _SiteEntry(name, data, objs, private, column_map, preferences)


def _declaration(path: Path, item: dict[str, Any], key: str, where: str) -> Path | None:
    """A site's private-features file or column map named by ``key`` (relative to the list)."""
    value = item.get(key)
    if value is None:
        return None
    if not isinstance(value, str) or not value or "\0" in value:
        raise ConfigError(f"{where}: {key!r} must be a file path (a string)")
    found = Path(value) if Path(value).is_absolute() else path.parent / value
    if not found.is_file():
        raise ConfigError(f"{where}: {key} {found}: no such file")
    return found


def check_site_name(name: object, where: str) -> str:
    """``name`` if it can name a site (:func:`fedcare_core.files.safe_names.check_name`).

    Raises
    ------
    ConfigError
        ``<where>: site name <value>: use …``.
    """
    return check_name(name, where, "site name")


def load_site(
    schema: FederationSchema,
    data: Path,
    objectives: Sequence[str],
    *,
    name: str,
    seed: int,
    private: Path | None = None,
    column_map: Path | None = None,
    preferences: Mapping[str, Preference] | None = None,
) -> _LoadedSite:
    """One site's file through the dataset's loader and checks, prepared against ``schema``.

    A federation over a dataset defined by a file reads the site's export by the site's own
    definition (:func:`fedcare_core.data.declared.site.site_definition`): the federation's,
    with the site's private columns (``private``) and its column map (``column_map``). The
    file is read by :func:`read_site` and split with ``seed`` by :func:`split_site`.

    Raises
    ------
    DataError, DataCheckError
        From the loader or the data checks: the file, column and rows at fault.
    ConfigError
        If the site cannot follow the schema, or ``private``/``column_map`` for a built-in
        dataset.
    DefinitionError
        A private-features file or column map that is invalid (file and key named).
    """
    read = read_site(
        schema,
        data,
        objectives,
        name=name,
        private=private,
        column_map=column_map,
        preferences=preferences,
    )
    return split_site(schema, read, seed)


def read_site(
    schema: FederationSchema,
    data: Path,
    objectives: Sequence[str],
    *,
    name: str,
    private: Path | None = None,
    column_map: Path | None = None,
    preferences: Mapping[str, Preference] | None = None,
    map_option: str = "--map",
) -> ReadSite:
    """A site's file through the dataset's loader and checks (by the site's own definition).

    ``map_option`` is how the user gives this site a column map, for the message of a file
    that lacks columns of the definition (:func:`~.export_columns.column_map_hint`).

    Raises
    ------
    DataError, DataCheckError, ConfigError, DefinitionError
        As :func:`load_site`.
    """
    text = site_definition_text(schema.definition, schema.dataset, objectives, private, column_map)
    with definition_file(text) as dataset:
        try:
            loaded, site_private = _load(schema, data, dataset)
        except MissingColumnsError as exc:
            raise column_map_hint(
                exc,
                dataset=schema.dataset,
                built_in=schema.definition is None,
                column_map=column_map,
                map_option=map_option,
            ) from None
    provenance = DataProvenance(
        loaded.cohort.source_sha256,
        tuple(n for n in loaded.cohort.notes if not n.startswith("checksum not enforced")),
    )
    patients = patient_keys(loaded.cohort.dataset, data, text)  # in memory only
    return ReadSite(
        name,
        tuple(objectives),
        loaded,
        site_private,
        text,
        provenance,
        patients,
        dict(preferences or {}),
        _ignored_columns(loaded.cohort.notes),
    )


def _ignored_columns(notes: Sequence[str]) -> tuple[str, ...]:
    """The file's undeclared columns, as the loader's note lists them."""
    from fedcare_core.data.declared.loader import IGNORED_COLUMNS_NOTE

    for note in notes:
        if note.startswith(IGNORED_COLUMNS_NOTE):
            return tuple(note.removeprefix(IGNORED_COLUMNS_NOTE).split(", "))
    return ()


def split_site(schema: FederationSchema, site: ReadSite, seed: int) -> _LoadedSite:
    """A read site split by patient with ``seed`` and encoded (its client data).

    Raises
    ------
    DataError
        A split left empty, or a training split that cannot teach an objective.
    """
    client = prepare_site(
        site.loaded.cohort,
        schema,
        site.objectives,
        name=site.name,
        seed=seed,
        source=site.loaded.source,
        private=site.private,
        preferences=site.preferences,
    )
    if site.definition is not None:
        client = replace(client, definition=site.definition)
    return _LoadedSite(site.name, client, site.provenance, site.loaded.source, site.patients)


def site_definition_text(
    definition: str | None,
    dataset: str,
    objectives: Sequence[str],
    private: Path | None,
    column_map: Path | None,
) -> str | None:
    """A site's definition: ``definition`` (the dataset's text) with its own declarations.

    None for a built-in dataset (``definition`` None), read as it is.

    Raises
    ------
    ConfigError
        ``private`` or ``column_map`` given for a built-in dataset.
    DefinitionError
        An invalid private-features file or column map (file and key named).
    """
    if definition is None:
        if private is not None or column_map is not None:
            raise ConfigError(
                f"--private and --map extend a dataset defined by a file; {dataset} is built "
                "in (a federation over a definition file: fedcare federation init --dataset "
                'FILE.yaml; docs/FEDERATION.md, "A site\'s own columns, step by step")'
            )
        return None
    from fedcare_core.data.declared.site import site_definition

    return site_definition(definition, objectives, private=private, column_map=column_map)


@contextmanager
def definition_file(text: str | None) -> Iterator[str | None]:
    """A definition's text as a file the loader reads (removed after; None: nothing to write)."""
    if text is None:
        yield None
        return
    with tempfile.TemporaryDirectory(prefix="fedcare-site-") as folder:
        path = Path(folder) / "definition.yaml"
        path.write_text(text)
        yield str(path)


def _load(
    schema: FederationSchema, data: Path, dataset: str | None
) -> tuple[LoadedDataset, SitePrivate | None]:
    """The site's file loaded and checked (by the site's definition ``dataset``, if any)."""
    from data_checks.source_checks import checked_dataset

    config = DataConfig(
        dataset=dataset or schema.dataset,
        readmission=schema.config.data.readmission,
        early_discharge=schema.config.data.early_discharge,
        readmission_exclude=schema.config.data.readmission_exclude,
        features=schema.config.data.features,
        unseen_categories=schema.config.data.unseen_categories,
        cohort=schema.config.data.cohort,
    )
    loaded = checked_dataset(config, data, verify_checksum=False)
    if dataset is None:
        return loaded, None
    from fedcare_core.data.declared import declared_source_of_text

    assert schema.definition is not None  # a site's definition extends the federation's
    federation = declared_source_of_text(schema.definition, "the federation's definition")
    own = [c for c in loaded.cohort.features.columns if c not in federation.declaration.columns]
    definition = get_dataset(dataset).load_source().definition(schema.config.data.features)
    pools = {
        o: tuple(c for c in pool if c in own) for o, pool in definition.partition.private.items()
    }
    return loaded, SitePrivate(
        {o: p for o, p in pools.items() if p},
        tuple(c for c in own if c in loaded.cohort.numeric_features),
        {c: v for c, v in definition.vocabularies.items() if c in own},
    )


def check_disjoint_sites(sites: Sequence[_LoadedSite | ReadSite], where: str) -> None:
    """Refuse sites that share a patient: a patient's records belong at one site.

    A patient at two sites could be in one site's test split and another's training split,
    and the sites' contributions would not be independent. Only counts and site names are
    reported, never a patient's key.

    Raises
    ------
    ConfigError
        ``<where>: sites 'a' and 'b' share N patient(s) …`` (the first pair found, and how
        many patients are at more than one site in all).
    """
    if len(sites) < 2:
        return
    arrays = [s.patients for s in sites]
    if len({a.dtype.kind for a in arrays}) > 1:
        arrays = [a.astype(str) for a in arrays]
    keys = np.concatenate(arrays)
    owner = np.repeat(np.arange(len(sites)), [len(a) for a in arrays])
    order = np.argsort(keys, kind="stable")
    keys, owner = keys[order], owner[order]
    repeated = np.flatnonzero(keys[1:] == keys[:-1])
    if repeated.size == 0:
        return
    first, second = sorted({int(owner[repeated[0]]), int(owner[repeated[0] + 1])})
    shared = np.unique(keys[repeated]).size
    a, b = sites[first], sites[second]
    raise ConfigError(
        f"{where}: sites {a.name!r} ({a.source}) and {b.name!r} ({b.source}) hold the same "
        f"patient(s); {shared:,} patient(s) are at more than one site in all. Each patient's "
        "records must be at one site (split a cohort with `fedcare data split-sites`)"
    )


def combined_provenance(sites: Sequence[_LoadedSite | ReadSite]) -> DataProvenance:
    """One provenance for a run over several sites: a digest of the sites' digests, by name."""
    ordered = sorted(sites, key=lambda s: s.name)
    lines = [f"{s.name}:{s.provenance.sha256}" for s in ordered]
    digest = hashlib.sha256("\n".join(lines).encode()).hexdigest()
    notes = [f"site {s.name}: SHA-256 {s.provenance.sha256}" for s in ordered]
    return DataProvenance(digest, tuple(notes))
