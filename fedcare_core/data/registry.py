"""The dataset registry: name → what the dataset offers and where its code is.

A built-in dataset is one package (its loader, definition and row format, e.g.
:mod:`fedcare_core.data.diabetes130`) whose :class:`DatasetSource` a :class:`DatasetSpec` names
by import path, the spec declared as an entry point of the ``fedcare.datasets`` group
(:mod:`fedcare_core.plugins`; FedCARE's two are :data:`DIABETES130` and :data:`MIMIC3`, an
outside package declares its own). A dataset defined by a file (``--dataset FILE.yaml``, or a
federation schema's definition) needs no code. Everything that depends on the dataset reads it
from the spec: the configuration's choices (feature sets, cohorts, objectives:
:mod:`fedcare_core.config.dataset_choices`), the loader
(:func:`fedcare_core.data.loading.load_dataset`), the documented definition a federation agrees on,
the row format of a model's input, the patient keys compared across sites, the raw tables'
checks (``checks``: the name of a ``fedcare.raw_checks`` entry, outside the core), and which
commands offer it (``fedcare data fetch``, ``fedcare data split-sites``).

This module imports no loader: a spec's code is imported when it is used.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, cast

from fedcare_core.errors import ConfigError, DefinitionError
from fedcare_core.plugins import entry_names, load_entry

if TYPE_CHECKING:
    import numpy as np

    from fedcare_core.data.cohort import Cohort
    from fedcare_core.data.definition import DatasetDefinition
    from fedcare_core.data.row_format import RowFormat


class DatasetSource(Protocol):
    """A dataset's code: where its files are, how they load, what they define."""

    def locate(self, root: Path | None) -> Path:
        """The folder or file to read (``root`` the user's, None: none given).

        Raises
        ------
        DataError
            No data to read (the message says how to get some).
        """
        ...

    def load(self, data: Any, path: Path, *, verify_checksum: bool) -> tuple[Cohort, str]:
        """The cohort of ``data`` (a ``DataConfig``) read from ``path``, and the source read."""
        ...

    def definition(self, features: str) -> DatasetDefinition:
        """Its documented objectives, features and vocabularies (feature set ``features``)."""
        ...

    def row_format(self) -> RowFormat:
        """The columns of one raw row a model scores."""
        ...

    def patient_keys(self, path: Path) -> np.ndarray:
        """The distinct patient identifiers of a (checked) file, as strings, in memory only."""
        ...


@dataclass(frozen=True)
class DatasetSpec:
    """One registered dataset.

    Parameters
    ----------
    name
        Its name (``data.dataset``, ``--dataset``).
    title
        Its display name (model descriptions, help texts).
    source
        ``"module:NAME"`` of its :class:`DatasetSource`, or the source itself (a dataset
        defined by a file: :func:`declared_spec`).
    checks
        The name of its raw tables' checks, a ``fedcare.raw_checks`` entry: an object
        following the data gate's ``RawChecks``, or a class built with its source (a dataset
        defined by a file); None: the loader's checks only.
    feature_sets
        The feature sets it defines (``data.features``; the first is the default).
    cohorts
        The cohorts it can build (``data.cohort``; the first is the default; none: one).
    objectives
        How many objectives it labels.
    fetch
        ``"module:NAME"`` of the function that downloads and verifies it into the cache
        (``fetch(cache_dir, *, url=..., progress=...) -> Path``, ``fedcare data fetch``);
        None: not downloadable.
    site_files
        ``fedcare data split-sites`` cuts it into hospital files.
    model_input
        What a model of it scores, in words (the model registry's descriptions).
    definition_text
        The text of its definition file (a packaged model carries it); None: defined in code.
    """

    name: str
    title: str
    source: str | DatasetSource
    checks: str | None = None
    feature_sets: tuple[str, ...] = ("paper",)
    cohorts: tuple[str, ...] = ()
    objectives: int = 3
    fetch: str | None = None
    site_files: bool = False
    model_input: str = "rows of the cohort's features"
    definition_text: str | None = None

    def load_source(self) -> DatasetSource:
        """Its :class:`DatasetSource`, imported now."""
        if not isinstance(self.source, str):
            return self.source
        return cast(DatasetSource, _resolve(self.source))

    @property
    def fetchable(self) -> bool:
        """Whether ``fedcare data fetch`` downloads it."""
        return self.fetch is not None

    def load_fetch(self) -> Any:
        """Its download function, imported now (None: not downloadable)."""
        return None if self.fetch is None else _resolve(self.fetch)

    def load_checks(self) -> Any:
        """Its raw tables' checks (None: none), imported now."""
        if self.checks is None:
            return None
        checks = load_entry("raw_checks", self.checks)
        return checks(self.load_source()) if isinstance(checks, type) else checks


def _resolve(path: str) -> Any:
    module, _, name = path.partition(":")
    return getattr(importlib.import_module(module), name)


#: Diabetes 130-US, declared as the ``fedcare.datasets`` entry ``diabetes130``.
DIABETES130 = DatasetSpec(
    "diabetes130",
    "Diabetes 130-US",
    "fedcare_core.data.diabetes130.dataset:SOURCE",
    "declared",
    feature_sets=("paper", "admission"),
    fetch="fedcare_core.data.fetch:fetch_diabetes130",
    site_files=True,
    model_input="raw encounter rows as in `diabetic_data.csv` (one hospital encounter per row)",
)
#: MIMIC-III, declared as the ``fedcare.datasets`` entry ``mimic3``.
MIMIC3 = DatasetSpec(
    "mimic3",
    "MIMIC-III",
    "fedcare_core.data.mimic3.dataset:SOURCE",
    "mimic3",
    cohorts=("all-adult-24h", "benchmark-ihm"),
    model_input="one row per ICU stay holding the cohort's features "
    "(`fedcare_core/data/definitions/mimic3.yaml`)",
)

#: The extension kind of built-in datasets (:data:`fedcare_core.plugins.GROUPS`).
KIND = "dataset"


def built_in(name: str) -> DatasetSpec | None:
    """The installed dataset ``name`` (a ``fedcare.datasets`` entry); None if none is.

    Raises
    ------
    ConfigError
        An entry that does not load a spec of its own name.
    """
    if name not in entry_names(KIND):
        return None
    spec = load_entry(KIND, name)
    if not isinstance(spec, DatasetSpec) or spec.name != name:
        raise ConfigError(f"the {KIND} entry {name!r} loads no DatasetSpec named {name!r}")
    return spec


#: The suffixes of a dataset definition file (``--dataset FILE.yaml``).
DEFINITION_SUFFIXES = (".yaml", ".yml")


#: Datasets defined by a file and registered under their name (a federation schema's).
_DEFINED: dict[str, DatasetSpec] = {}


def registered(name: str) -> DatasetSpec | None:
    """The dataset registered as ``name`` (installed, or defined by a schema's text); None."""
    return built_in(name) or _DEFINED.get(name)


def is_definition_file(name: str) -> bool:
    """Whether ``name`` names a dataset definition file rather than a registered dataset."""
    return registered(name) is None and name.lower().endswith(DEFINITION_SUFFIXES)


def get_dataset(name: str) -> DatasetSpec:
    """The registered dataset ``name``, or the dataset defined by the file ``name``.

    Raises
    ------
    ConfigError
        An unknown name, with the registered ones.
    DefinitionError
        A definition file that is missing or invalid, naming the file and the key.
    """
    spec = registered(name)
    if spec is not None:
        return spec
    if is_definition_file(name):
        return declared_spec(name)
    raise ConfigError(
        f"unknown dataset {name!r}; expected one of {', '.join(dataset_names())}, or a dataset "
        "definition file (FILE.yaml)"
    )


def dataset_label(dataset: str) -> str:
    """The name results, files and MLflow use for ``data.dataset`` (a definition's ``name``)."""
    return get_dataset(dataset).name if is_definition_file(dataset) else dataset


def dataset_names() -> tuple[str, ...]:
    """The installed datasets' names: FedCARE's in name order, then the others'."""
    return entry_names(KIND)


def declared_spec(path: str | Path) -> DatasetSpec:
    """The spec of the dataset defined by the file ``path`` (read once per version of it).

    Raises
    ------
    DefinitionError
        A missing or invalid definition, naming the file and the key.
    """
    p = Path(path).expanduser()
    try:
        stat = p.stat()
        version: tuple[int, int] = (stat.st_mtime_ns, stat.st_size)
    except OSError:
        version = (0, 0)
    return _file_spec(str(p), version)


@lru_cache(maxsize=32)
def _file_spec(path: str, version: tuple[int, int]) -> DatasetSpec:
    from fedcare_core.data.declared import DeclaredSource, read_definition

    return _spec_of(DeclaredSource(read_definition(path)))


def register_definition_text(text: str, where: str) -> str:
    """Register the dataset a definition's text defines under its name; return the name.

    A federation's schema carries its dataset's definition: every party registers it, so the
    configuration's ``data.dataset`` names it wherever the schema is read.

    Raises
    ------
    DefinitionError
        An invalid definition, or a name a built-in dataset (or another definition) holds.
    """
    from fedcare_core.data.declared import declared_source_of_text

    spec = _spec_of(declared_source_of_text(text, where))
    held = _DEFINED.get(spec.name)
    if held is not None and held.definition_text != text:
        raise DefinitionError(
            f"dataset {spec.name!r} is already defined here by another definition of that "
            "name: rename it",
            file=where,
            key="name",
        )
    _DEFINED[spec.name] = spec
    return spec.name


def _spec_of(source: Any) -> DatasetSpec:
    """The spec of a :class:`~fedcare_core.data.declared.DeclaredSource`."""
    from fedcare_core.data.declared.source import DECLARED_FEATURE_SETS

    declaration = source.declaration
    if declaration.name in dataset_names():
        raise DefinitionError(
            f"{declaration.name!r} is a built-in dataset's name: give yours another",
            file=str(declaration.path),
            key="name",
        )
    extractor = declaration.source.extractor
    if extractor is None:
        checks = "declared"
        table = ", ".join(declaration.source.files)
    else:
        from fedcare_core.data.declared.extractors import get_extractor

        checks = get_extractor(extractor).checks
        table = f"the table the {extractor} extractor builds"
    return DatasetSpec(
        declaration.name,
        declaration.title,
        source,
        checks,
        feature_sets=DECLARED_FEATURE_SETS,
        objectives=len(declaration.objectives),
        model_input=f"rows in the columns of {table} ({declaration.path.name} declares them)",
        definition_text=declaration.text,
    )
