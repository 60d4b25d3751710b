"""What every party of a multi-site federation agrees on before any data is prepared.

A :class:`FederationSchema` (``federation.json``, written by ``fedcare federation init``) fixes
the objectives and their label definitions, the common features and each objective's private
pool (the partition, ρ applied), the column types and the category vocabularies, the encoder
settings, the model and the Stage 1/Stage 2 configuration. Everything in it comes from the
dataset's documented definition (:func:`fedcare_core.data.loading.dataset_definition`) and the
chosen configuration, never from patient rows, so the coordinator can write it without seeing
any data and every site encodes its common features into the same layout.

Each site prepares its data against the schema and every message of the federation carries the
schema's :meth:`FederationSchema.digest`: a site prepared for another schema is refused by name.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fedcare_core.config import ExperimentConfig
from fedcare_core.config.preferences import Preference, site_objectives
from fedcare_core.config.quick import quick_sized
from fedcare_core.data.choices import check_dataset_choices
from fedcare_core.data.cohort import Objective
from fedcare_core.data.loading import DatasetDefinition, dataset_definition
from fedcare_core.data.partition import FeaturePartition, with_disparity
from fedcare_core.errors import ConfigError
from fedcare_core.files.json_input import JsonObject
from fedcare_core.files.safe_yaml import MAX_YAML_BYTES
from fedcare_core.sites.federation_rules import check_federation_config, federation_conflicts

#: The ``format`` field of every schema file; readers refuse other values.
_SCHEMA_FORMAT = "fedcare-federation/1"
#: The settings a run over a federation's sites takes (:meth:`FederationSchema.run_config`);
#: the schema decides every other.
RUN_SETTINGS = ("seed", "rounds", "secagg")
#: The longest dataset definition a schema carries (a YAML text is read up to this many bytes).
_MAX_DEFINITION_CHARS = MAX_YAML_BYTES


@dataclass(frozen=True)
class FederationSchema:
    """The federation's agreement: objectives, features, vocabularies and configuration.

    Parameters
    ----------
    dataset
        The dataset definition every site's file follows (``diabetes130``, ``mimic3``).
    objectives
        Every objective a site may pursue, with its label definition, in the model's head order.
    partition
        Common features and each objective's private pool (ρ already applied).
    numeric_features, categorical_features
        Column types of every feature the partition uses.
    vocabularies
        Documented category vocabularies by column (the common features' encoded layout).
    config
        Encoder (``model.max_categories``), model, Stage 1 and Stage 2 settings, the splits'
        fractions and the label options; ``seed`` is the seed the partition was drawn with.
    definition
        The text of the dataset's definition file, for a dataset defined by a file (every
        party registers it under its name when reading the schema); None: a built-in dataset.
    """

    dataset: str
    objectives: tuple[Objective, ...]
    partition: FeaturePartition
    numeric_features: tuple[str, ...]
    categorical_features: tuple[str, ...]
    vocabularies: Mapping[str, tuple[str, ...]]
    config: ExperimentConfig
    definition: str | None = None

    @property
    def objective_names(self) -> tuple[str, ...]:
        """Objective names in head order."""
        return tuple(o.name for o in self.objectives)

    def common_width(self) -> int:
        """Encoded width of the common features (the backbone's input), from the schema alone."""
        numeric = set(self.numeric_features)
        width = 0
        for column in self.partition.common:
            width += 2 if column in numeric else len(self.vocabularies[column]) + 2
        return width

    def check_objectives(
        self, names: Sequence[str], where: str = "--objectives"
    ) -> tuple[str, ...]:
        """``names`` in head order, or a :class:`ConfigError` naming ``where`` and the value.

        Raises
        ------
        ConfigError
            For no objective, a repeated one, or one the schema does not define.
        """
        unknown = [n for n in names if n not in self.objective_names]
        if unknown or not names or len(set(names)) != len(names):
            raise ConfigError(
                f"{where}: give one or more distinct objectives of this federation "
                f"({', '.join(self.objective_names)}), got {', '.join(names) or 'none'}"
            )
        return tuple(n for n in self.objective_names if n in names)

    def check_site_objectives(
        self, entries: Sequence[str], where: str = "--objectives"
    ) -> tuple[tuple[str, ...], dict[str, Preference]]:
        """A site's objectives (``mortality:sensitivity``), checked: names and preferences.

        Raises
        ------
        ConfigError
            As :meth:`check_objectives`, or for a preference that does not parse (``where``
            and the entry named).
        """
        try:
            names, stated = site_objectives(
                entries,
                sensitivity_weight=self.config.sensitivity_weight,
                fairness_weight=self.config.fairness_weight,
            )
        except ValueError as exc:
            raise ConfigError(f"{where}: {exc}") from None
        return self.check_objectives(names, where), stated

    def run_config(
        self, *, seed: int, clients: int, rounds: int | None = None, secagg: bool = False
    ) -> ExperimentConfig:
        """The schema's configuration for a run of ``clients`` sites with ``seed`` (and T).

        ``secagg`` sums the rounds with SecAgg+ (a property of the run, not of the schema:
        the sites' data, encoders and the algorithm are unchanged).

        Sites choose their own objectives: the cover of every objective that a federation
        drawn from one cohort insists on does not apply (an objective no site pursues has no
        head).

        Raises
        ------
        ConfigError
            For fewer than two sites, or an invalid seed or T.
        """
        if clients < 2:
            raise ConfigError(f"a federation needs at least 2 sites, got {clients}")
        stage1: dict[str, object] = {} if rounds is None else {"rounds": rounds}
        if secagg:
            stage1["secagg"] = True
        data = {"clients": clients, "cover_all_objectives": False}
        return quick_sized(self.config.with_overrides(seed=seed, data=data, stage1=stage1))

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON data (the file's content)."""
        return {
            "format": _SCHEMA_FORMAT,
            "dataset": self.dataset,
            "objectives": [
                {"name": o.name, "kind": o.kind, "label": o.description} for o in self.objectives
            ],
            "features": {
                "common": list(self.partition.common),
                "private": {k: list(v) for k, v in self.partition.private.items()},
                "private_only": list(self.partition.private_only),
                "numeric": list(self.numeric_features),
                "categorical": list(self.categorical_features),
                "vocabularies": {k: list(v) for k, v in sorted(self.vocabularies.items())},
            },
            "config": self.config.to_dict(),
        } | ({} if self.definition is None else {"definition": self.definition})

    def digest(self) -> str:
        """SHA-256 of the canonical JSON: equal digests, equal agreements."""
        text = json.dumps(self.to_dict(), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(text.encode()).hexdigest()

    def write(self, path: str | Path) -> Path:
        """Write the schema as indented JSON to ``path``, atomically (beside it, then renamed)."""
        from fedcare_core.files.atomic import write_atomic

        out = Path(path)
        write_atomic(
            out, (json.dumps(self.to_dict(), indent=1, ensure_ascii=False) + "\n").encode()
        )
        return out


def check_site_scaling(config: ExperimentConfig) -> None:
    """Refuse a scaling that pools the clients' statistics: sites are prepared apart.

    Raises
    ------
    ConfigError
        Naming ``data.scaling`` (``--scaling``) when it is not ``client``.
    """
    scaling = [c for c in federation_conflicts(config) if c.setting == "data.scaling"]
    if scaling:
        raise ConfigError(scaling[0].message)


def schema_for(config: ExperimentConfig) -> FederationSchema:
    """The schema of ``config.data.dataset`` under ``config`` (ρ drawn with ``config.seed``).

    Raises
    ------
    ConfigError
        If the configuration holds what a federation of sites cannot take (an algorithm it
        does not run, a published split, pooled scaling: :mod:`.federation_rules`).
    """
    check_federation_config(config)  # what a federation of sites cannot take
    config, text = _named_dataset(config)
    definition = dataset_definition(config.data.dataset, config.data.features)
    partition = definition.partition
    if config.data.rho is not None:
        partition = with_disparity(partition, config.data.rho, config.seed)
    used = set(partition.all_features)
    schema = FederationSchema(
        dataset=config.data.dataset,
        objectives=definition.objectives,
        partition=partition,
        numeric_features=tuple(c for c in definition.numeric_features if c in used),
        categorical_features=tuple(c for c in definition.categorical_features if c in used),
        vocabularies={c: v for c, v in definition.vocabularies.items() if c in used},
        config=config,
        definition=text,
    )
    _check_reads_back(schema)
    return schema


def _check_reads_back(schema: FederationSchema) -> None:
    """Read ``schema`` as every site will (:func:`read_schema`): it must read back the same.

    A definition the coordinator accepts must never give a schema the sites refuse (an
    optional key's default filled one way when the definition is read and another when the
    schema is); this refuses it here, before anything is written.

    Raises
    ------
    ConfigError
        What a site would refuse, naming the schema about to be written.
    """
    where = f"federation schema of {schema.dataset} (not written)"
    raw = json.loads(json.dumps(schema.to_dict()))
    read = _schema_from_json(JsonObject(raw, where), where)
    if read.digest() != schema.digest():
        raise ConfigError(f"{where}: a site would read it back as another schema")


def _named_dataset(config: ExperimentConfig) -> tuple[ExperimentConfig, str | None]:
    """``config`` with a definition file's dataset named by its name (registered), and its text.

    A schema names its dataset, never a path on the coordinator's disk: it carries the
    definition's text instead (:attr:`FederationSchema.definition`).
    """
    from fedcare_core.data.registry import get_dataset, is_definition_file

    if not is_definition_file(config.data.dataset):
        return config, None
    from fedcare_core.data.registry import register_definition_text

    text = get_dataset(config.data.dataset).definition_text
    assert text is not None  # a definition file's spec holds its text
    name = register_definition_text(text, config.data.dataset)
    return config.with_overrides(data={"dataset": name}), text


def read_schema(path: str | Path) -> FederationSchema:
    """Read and check a schema file: every refusal names the file and what cannot be honoured.

    Raises
    ------
    ConfigError
        If the file is missing or not JSON, has another format, or describes something this
        installation cannot honour: an unknown dataset, objectives or label definitions other
        than the dataset's, features the dataset lacks or of another type, vocabularies other
        than the documented ones, a shared feature without a vocabulary, or an invalid
        configuration.
    """
    p = Path(path)
    return _schema_from_json(JsonObject.read(p, "federation schema"), f"federation schema {p}")


def _schema_from_json(doc: JsonObject, where: str) -> FederationSchema:
    """The schema a JSON document holds, checked (:func:`read_schema`); ``where`` names it."""
    _check_schema_shape(doc)
    try:
        return _schema_from_dict(doc.raw)
    except ConfigError as exc:
        raise ConfigError(f"{where}: {exc}") from None
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        what = f"{type(exc).__name__}: {exc}"
        raise ConfigError(f"{where}: malformed ({what})") from None


def _check_schema_shape(doc: JsonObject) -> None:
    """Refuse a schema document whose fields have the wrong JSON types (naming the field).

    Each list of names must be a list of strings, each object an object: a string where a
    list belongs would otherwise be read letter by letter.
    """
    doc.expect_format(_SCHEMA_FORMAT)
    doc.text("dataset", 64)
    if "definition" in doc.raw:
        doc.text("definition", _MAX_DEFINITION_CHARS)
    doc.obj("config")
    for objective in doc.objects("objectives"):
        for key in ("name", "kind"):
            objective.text(key)
        objective.text("label", empty=True)  # a definition's objective may have no description
    features = doc.obj("features")
    for key in ("common", "private_only", "numeric", "categorical"):
        features.strings(key)
    features.string_lists("private")
    features.string_lists("vocabularies")


def _schema_from_dict(raw: Mapping[str, Any]) -> FederationSchema:
    """Parse and check :meth:`FederationSchema.to_dict`'s output (see :func:`read_schema`)."""
    if not isinstance(raw, Mapping) or raw.get("format") != _SCHEMA_FORMAT:
        got = raw.get("format") if isinstance(raw, Mapping) else type(raw).__name__
        raise ConfigError(f"format must be {_SCHEMA_FORMAT!r}, got {got!r}")
    text = raw.get("definition")
    if text is not None:
        from fedcare_core.data.registry import register_definition_text

        name = register_definition_text(str(text), "its dataset definition")
        if name != raw["dataset"]:
            raise ConfigError(f"dataset {raw['dataset']!r} but its definition names {name!r}")
    config = ExperimentConfig.from_dict(raw["config"])
    check_dataset_choices(config.data)
    from fedcare_core.algorithms import federation_algorithms

    if config.algorithm not in federation_algorithms():
        raise ConfigError(
            f"config.algorithm {config.algorithm!r}: a federation runs "
            f"{' or '.join(federation_algorithms())}"
        )
    dataset = str(raw["dataset"])
    if dataset != config.data.dataset:
        raise ConfigError(f"dataset {dataset!r} but config.data.dataset {config.data.dataset!r}")
    definition = dataset_definition(dataset, config.data.features)
    features = raw["features"]
    schema = FederationSchema(
        dataset=dataset,
        objectives=tuple(
            Objective(str(o["name"]), o["kind"], str(o["label"])) for o in raw["objectives"]
        ),
        partition=FeaturePartition(
            common=tuple(str(c) for c in features["common"]),
            private={str(k): tuple(str(c) for c in v) for k, v in features["private"].items()},
            private_only=tuple(str(c) for c in features["private_only"]),
        ),
        numeric_features=tuple(str(c) for c in features["numeric"]),
        categorical_features=tuple(str(c) for c in features["categorical"]),
        vocabularies={
            str(k): tuple(str(v) for v in vs) for k, vs in features["vocabularies"].items()
        },
        config=config,
        definition=None if text is None else str(text),
    )
    _check_honourable(schema, definition)
    return schema


def _check_honourable(schema: FederationSchema, definition: DatasetDefinition) -> None:
    """Raise :class:`ConfigError` with the reason if this code cannot honour ``schema``."""
    expected = {o.name: o for o in definition.objectives}
    for o in schema.objectives:
        if o.name not in expected:
            raise ConfigError(f"objective {o.name!r} is not one of {schema.dataset}'s")
        if (o.kind, o.description) != (expected[o.name].kind, expected[o.name].description):
            raise ConfigError(
                f"objective {o.name!r}: kind {o.kind!r} / label {o.description!r} differ from "
                f"this installation's definition ({expected[o.name].kind!r} / "
                f"{expected[o.name].description!r})"
            )
    if len(set(schema.objective_names)) != len(schema.objectives) or not schema.objectives:
        raise ConfigError("objectives must be one or more distinct names")
    types = {c: "numeric" for c in definition.numeric_features}
    types.update({c: "categorical" for c in definition.categorical_features})
    declared = {c: "numeric" for c in schema.numeric_features}
    declared.update({c: "categorical" for c in schema.categorical_features})
    for column in schema.partition.all_features:
        if column not in types:
            raise ConfigError(f"feature {column!r} is not a feature of {schema.dataset}")
        if declared.get(column) != types[column]:
            raise ConfigError(
                f"feature {column!r} is {types[column]} in {schema.dataset}, the schema declares "
                f"it {declared.get(column, 'without a type')}"
            )
    for column, vocabulary in schema.vocabularies.items():
        if tuple(definition.vocabularies.get(column, ())) != vocabulary:
            raise ConfigError(
                f"the vocabulary of {column!r} differs from {schema.dataset}'s documented values"
            )
    for column in schema.partition.common:
        if column in schema.categorical_features and column not in schema.vocabularies:
            raise ConfigError(f"common feature {column!r} is categorical without a vocabulary")
    extra = set(schema.partition.private) - set(schema.objective_names)
    if extra:
        raise ConfigError(f"private pools for unknown objective(s): {sorted(extra)}")
    features = schema.config.data.features
    if features != "paper" and schema.partition != definition.partition:
        raise ConfigError(
            f"the partition differs from feature set {features!r}'s (config.data.features), "
            "which fixes what each objective sees at its prediction time"
        )
