"""The flow's parameters as one frozen dataclass, turned into experiment configurations.

The flow takes typed keyword parameters (what a Prefect deployment shows and overrides); they
are gathered here at the flow boundary, checked once, and expanded into one
:class:`~fedcare_core.config.ExperimentConfig` per algorithm × seed, with the same meaning as
the ``fedcare run`` flags of the same names (a ``--config``-style JSON file first, the explicit
values on top).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from fedcare_core.algorithms import (
    backend_refusal,
    federation_algorithms,
    get_algorithm,
    secagg_refusal,
    validate_config,
)
from fedcare_core.config import (
    RANGES,
    SECTIONS,
    TOP_LEVEL_FIELDS,
    ExperimentConfig,
    flagged_settings,
    load_config_file,
    sections_of,
)
from fedcare_core.config.backends import backend_names
from fedcare_core.config.fields import Range, check_value, coerce_section, field_kinds, show
from fedcare_core.errors import ConfigError, FedcareError
from fedcare_core.files.output_paths import check_output_dir
from fedcare_core.sites.schema import (
    RUN_SETTINGS,
    FederationSchema,
    read_schema,
)

if TYPE_CHECKING:
    from prefect.states import State

#: Stage 1 backends the flow accepts: ``fedcare run --backend``'s, and ``"federation"`` (Stage 1
#: over the sites registered with a running coordinator, as ``fedcare federation run``).
BACKENDS = (*backend_names(), "federation")
#: The backend that runs over real sites (the schema decides the data; no data is loaded).
FEDERATION = "federation"
#: The parameters only backend ``"federation"`` takes (and needs).
_FEDERATION_PARAMETERS = ("federation_state_dir", "federation_schema", "min_sites")
#: Parameters backend ``"federation"`` refuses: the schema and the sites decide them (every
#: setting too, but for :data:`~fedcare_core.sites.schema.RUN_SETTINGS`).
_NOT_WITH_FEDERATION = ("data_dir", "preset", "config_file")
#: The settings the flow takes as lists of their own (``algorithm``, ``seeds``) or always
#: (``dataset``): every other offered setting is a parameter of its own name.
GRID_SETTINGS = ("algorithm", "seed", "dataset")


@dataclass(frozen=True)
class FlowParameters:
    """What one run of the ``fedcare`` flow does.

    Parameters
    ----------
    dataset
        ``"diabetes130"`` or ``"mimic3"``.
    data_dir
        Dataset folder or file (``None``: ``$FEDCARE_DATA_DIR``, then the download cache).
    algorithms
        One nested MLflow run per algorithm × seed.
    seeds
        Experiment seeds.
    preset
        As ``fedcare run --preset``.
    settings
        Every other offered setting given (``{"rounds": 20}``), as the ``fedcare run`` flag of
        the same name; one left out keeps the configuration's value.
    backend
        Where Stage 1 runs.
    config_file
        A JSON ``ExperimentConfig`` (as ``fedcare run --config``) the other values override.
    overrides
        Further configuration sections, e.g. ``{"stage1": {"solver": "slsqp"}}``.
    federation_state_dir, federation_schema, min_sites
        Backend ``"federation"`` only (and required there): the coordinator's state folder,
        the federation schema (``federation.json``) and how many sites Stage 1 waits for.
    """

    dataset: str = "diabetes130"
    data_dir: str | None = None
    algorithms: tuple[str, ...] = ("fedcare",)
    seeds: tuple[int, ...] = (0,)
    preset: str | None = None
    settings: Mapping[str, Any] = field(default_factory=dict)
    backend: str = "local"
    config_file: str | None = None
    overrides: Mapping[str, Any] = field(default_factory=dict)
    federation_state_dir: str | None = None
    federation_schema: str | None = None
    min_sites: int | None = None
    flower: Mapping[str, Any] = field(default_factory=dict)

    @classmethod
    def of(cls, **parameters: Any) -> FlowParameters:
        """The parameters as the flow takes them: settings by name among the others.

        ``None`` values are left out of ``settings`` (the configuration's value stands) and of
        ``flower`` (the Flower options given, by ``FlowerConfig`` field).
        """
        from fedcare.flower.flower_options import flagged_options

        fields = {str(ref.dest): ref.name for ref in flagged_options()}
        offered = set(flagged_settings()) - set(GRID_SETTINGS)
        given = {k: v for k, v in parameters.items() if k in offered and v is not None}
        flower = {fields[k]: v for k, v in parameters.items() if k in fields and v is not None}
        own = {k: v for k, v in parameters.items() if k not in offered and k not in fields}
        return cls(settings=given, flower=flower, **own)

    def setting(self, name: str) -> Any:
        """The value given for setting ``name`` (None: not given)."""
        return self.settings.get(name)

    @property
    def rounds(self) -> int | None:
        """The Stage 1 rounds given (None: the configuration's or the schema's)."""
        rounds = self.setting("rounds")
        return None if rounds is None else int(rounds)

    def validate(self) -> FlowParameters:
        """Check everything that can be checked before touching data; return ``self``.

        Raises
        ------
        ConfigError
            On an unknown backend, a baseline that runs in process only (PAFNet, the bounds)
            with a Flower backend, no algorithm or seed,
            repeated values, or any invalid configuration value; with backend
            ``"federation"``, as :meth:`validate_federation`; with another backend, a
            federation parameter.
        """
        self.check_types()
        if self.backend not in BACKENDS:
            raise ConfigError(
                f"unknown backend {self.backend!r}; expected one of {', '.join(BACKENDS)}"
            )
        if self.backend == FEDERATION:
            self.validate_federation()
            return self
        self.flower_options()
        for name in _FEDERATION_PARAMETERS:
            if getattr(self, name) is not None:
                raise ConfigError(
                    f"{name} applies to backend {FEDERATION!r} only (backend is {self.backend!r})"
                )
        for algorithm in self.algorithms:
            get_algorithm(algorithm)
            refusal = backend_refusal(algorithm, self.backend)
            if refusal is not None:
                raise ConfigError(refusal.replace("--backend local", "backend 'local'"))
        for name, values in (("algorithm", self.algorithms), ("seed", self.seeds)):
            if not values:
                raise ConfigError(f"at least one {name} is needed")
            if len(set(values)) != len(values):
                raise ConfigError(f"repeated {name}s: {list(values)}")
        self.experiment_configs()
        return self

    def flower_options(self) -> Any:
        """The backend's options from the Flower parameters given, checked (None: none).

        Raises
        ------
        ConfigError
            A Flower parameter with a backend that would ignore it (``local``; a network one
            with a backend without sockets), or a value ``FlowerConfig`` refuses, naming it.
        """
        from fedcare.flower.flower_options import flagged_options, takes_option
        from fedcare_core.config.backends import get_backend

        names = {ref.name: str(ref.dest) for ref in flagged_options()}
        spec = get_backend(self.backend)
        for name in self.flower:
            if not takes_option(spec, name):
                raise ConfigError(
                    f"{names[name]} applies to the Flower backends (backend is {self.backend!r})"
                )
        return spec.options_from(self.flower, names) if spec.options is not None else None

    def validate_federation(self) -> FederationSchema:
        """Backend ``"federation"``'s checks (no data is read: the schema decides it).

        Returns
        -------
        FederationSchema
            The schema ``federation_schema`` names.

        Raises
        ------
        ConfigError
            Naming the parameter: a federation parameter missing, a data parameter given (or
            an algorithm other than fedcare), repeated or no seeds, an unreadable schema, a
            ``dataset`` other than the schema's, or ``rounds`` or a seed the schema's
            configuration refuses.
        """
        for name in _FEDERATION_PARAMETERS:
            if getattr(self, name) is None:
                raise ConfigError(f"backend {FEDERATION!r} needs {name} ({_NEEDS[name]})")
        for name in _NOT_WITH_FEDERATION:
            if getattr(self, name) is not None:
                raise ConfigError(f"{name}: {_SCHEMA_DECIDES}")
        for name in self.settings:
            if name not in RUN_SETTINGS:
                raise ConfigError(f"{name}: {_SCHEMA_DECIDES}")
        if self.flower:
            raise ConfigError(
                f"{', '.join(sorted(self.flower))}: the coordinator's Flower transport is "
                "fedcare federation start's (backend 'federation')"
            )
        if self.overrides and not self.federation_secagg_only():
            raise ConfigError(
                f"overrides: {_SCHEMA_DECIDES}; only {{'stage1': {{'secagg': true}}}} may be given"
            )
        if len(self.algorithms) != 1 or self.algorithms[0] not in federation_algorithms():
            raise ConfigError(
                f"algorithm {list(self.algorithms)}: backend {FEDERATION!r} runs "
                f"{', '.join(federation_algorithms())} only"
            )
        if not self.seeds or len(set(self.seeds)) != len(self.seeds):
            raise ConfigError(f"seeds {list(self.seeds)}: give one or more distinct seeds")
        try:
            schema = read_schema(str(self.federation_schema))
        except ConfigError as exc:  # "federation schema PATH: why" → name the parameter
            message = str(exc).removeprefix("federation schema ")
            raise ConfigError(f"federation_schema {message}") from None
        if self.dataset != schema.dataset:
            raise ConfigError(
                f"dataset {self.dataset!r} differs from federation_schema's dataset "
                f"{schema.dataset!r}; pass dataset={schema.dataset!r}"
            )
        assert self.min_sites is not None  # for mypy: checked above
        for seed in self.seeds:
            try:
                schema.run_config(seed=seed, clients=self.min_sites, rounds=self.rounds)
            except ConfigError as exc:
                raise ConfigError(f"federation_schema's configuration: {exc}") from None
        return schema

    def federation_secagg_only(self) -> bool:
        """Whether the overrides ask only for secure aggregation (what a federation allows)."""
        stage1 = self.overrides.get("stage1")
        return (
            set(self.overrides) == {"stage1"}
            and isinstance(stage1, Mapping)
            and set(stage1) == {"secagg"}
            and isinstance(stage1["secagg"], bool)
        )

    @property
    def secagg(self) -> bool:
        """Whether Stage 1 is asked to run under SecAgg+ (``secagg``, or in ``overrides``)."""
        stage1 = self.overrides.get("stage1")
        asked = isinstance(stage1, Mapping) and stage1.get("secagg") is True
        return asked or self.setting("secagg") is True

    def check_types(self) -> None:
        """Check each parameter's type and range (NaN and ±inf refused), naming it.

        Raises
        ------
        ConfigError
            Naming the parameter and its value.
        """
        kinds = field_kinds(FlowParameters)
        for name, kind in kinds.items():
            if name in ("algorithms", "seeds", "overrides", "settings", "flower"):
                continue
            check_value(name, getattr(self, name), kind, _PARAMETER_RANGES.get(name))
        _check_settings(self.settings)
        for name, values, item in (
            ("algorithm", self.algorithms, str),
            ("seeds", self.seeds, int),
        ):
            if not isinstance(values, tuple):
                raise ConfigError(f"{name} must be a list, got {show(values)}")
            for value in values:
                ok = isinstance(value, item) and not isinstance(value, bool)
                if not ok:
                    kind_name = "a name" if item is str else "an integer"
                    raise ConfigError(f"each of {name} must be {kind_name}, got {show(value)}")
                if item is int:
                    flagged_settings()["seed"].check("seeds", value)
        _check_overrides(self.overrides)

    def base_config(self) -> ExperimentConfig:
        """The configuration file's contents (defaults without one), then the preset's."""
        base = (
            ExperimentConfig() if self.config_file is None else load_config_file(self.config_file)
        )
        if self.preset is None:
            return base
        from fedcare_core.config.presets import with_preset

        return with_preset(base, self.preset)

    def experiment_configs(self) -> list[ExperimentConfig]:
        """One validated configuration per algorithm × seed, algorithms first.

        Returns
        -------
        list of ExperimentConfig
            In the order the flow runs them.
        """
        self.check_types()
        base = self.base_config()
        sections: dict[str, dict[str, Any]] = {"data": {}, "stage1": {}, "stage2": {}}
        top: dict[str, Any] = {}
        for key, value in self.overrides.items():
            if isinstance(value, Mapping):
                sections.setdefault(key, {}).update(value)
            else:
                top[key] = value
        sections["data"]["dataset"] = self.dataset
        for section, values in sections_of(self.settings).items():
            if section:
                sections.setdefault(section, {}).update(values)
            else:
                top.update(values)
        try:
            base = base.with_overrides(**top, **sections)
        except ConfigError as exc:
            raise ConfigError(f"invalid configuration override: {exc}") from None
        configs = [
            validate_config(base.with_overrides(algorithm=algorithm, seed=seed))
            for algorithm in self.algorithms
            for seed in self.seeds
        ]
        refusal = secagg_refusal(configs[0], self.backend) if configs else None
        if refusal is not None:
            raise ConfigError(refusal.replace("--secagg", "secagg"))
        return configs

    def to_params(self) -> dict[str, str]:
        """The parameters as MLflow params of the parent run (``flow.<name>``)."""
        from fedcare.tracking.mlflow_params import flatten_params

        own = {k: v for k, v in asdict(self).items() if k != "settings"}
        return flatten_params({**own, **self.settings}, prefix="flow")


#: Ranges of the flow's own number parameters (a setting's range is its declaration's).
_PARAMETER_RANGES: dict[str, Range] = {"min_sites": Range(2)}  # a federation needs two sites
#: What each federation parameter is (named in the message when one is missing).
_NEEDS = {
    "federation_state_dir": "the coordinator's state folder",
    "federation_schema": "the federation.json the sites were prepared for",
    "min_sites": "how many registered sites Stage 1 waits for, at least 2",
}
_SCHEMA_DECIDES = (
    "not with backend 'federation': the federation schema and the registered sites decide it "
    "(leave it null)"
)


def _check_settings(settings: Mapping[str, Any]) -> None:
    """Each setting parameter's type and range, as its declaration says, naming it.

    Raises
    ------
    ConfigError
        Naming the parameter (``rounds must lie in [1, 100,000], got 0``).
    """
    offered = flagged_settings()
    for name, value in settings.items():
        ref = offered.get(name)
        if ref is None or name in GRID_SETTINGS:
            raise ConfigError(f"unknown flow parameter {name!r}")
        ref.check(name, value)


def _check_overrides(overrides: object) -> None:
    """``overrides`` is an object of known sections (objects of known keys) or top-level keys.

    Raises
    ------
    ConfigError
        ``invalid configuration override: ...`` naming the key.
    """
    if not isinstance(overrides, Mapping):
        raise ConfigError(
            f"invalid configuration override: overrides must be an object, got {show(overrides)}"
        )
    for key, value in overrides.items():
        if key in SECTIONS:
            if not isinstance(value, Mapping):
                raise ConfigError(
                    f"invalid configuration override: {key} must be an object, got {show(value)}"
                )
            unknown = sorted(str(k) for k in value if k not in field_kinds(SECTIONS[key]))
            if unknown:
                raise ConfigError(
                    f"invalid configuration override: unknown {key} key(s): {unknown}"
                )
        elif key not in TOP_LEVEL_FIELDS:
            raise ConfigError(f"invalid configuration override: unknown key {key!r}")
    # Every value's type and range, also those an explicit parameter (rounds, ...) replaces.
    kinds = field_kinds(ExperimentConfig)
    try:
        for key, value in overrides.items():
            if key in SECTIONS:
                coerce_section(SECTIONS[key], key, value, RANGES[key])
            else:
                check_value(key, value, kinds[key], RANGES[""].get(key))
    except ConfigError as exc:
        raise ConfigError(f"invalid configuration override: {exc}") from None


def check_output_dirs(**folders: str | None) -> None:
    """Check each named output folder (``out_dir="..."``) can be written, before any work.

    Raises
    ------
    ConfigError
        Naming the parameter and the folder.
    """
    for name, folder in folders.items():
        if folder is not None:
            if not isinstance(folder, str) or not folder:
                raise ConfigError(f"{name} must be a folder path, got {show(folder)}")
            check_output_dir(folder, what=name)


def expected_failure(exc: FedcareError) -> State:
    """The flow run's end on an expected error: one log line and a ``Failed`` state.

    Prefect logs an exception escaping a flow with its traceback (``Encountered exception
    during execution``); an expected error (bad parameters, a failed data check) is a message
    for the user, not a bug, so the flow logs it in one line and returns this state instead.
    The exception is the state's data, so a direct call still raises it.
    """
    from prefect import get_run_logger
    from prefect.states import Failed

    get_run_logger().error("%s: %s", type(exc).__name__, exc)
    return Failed(message=f"{type(exc).__name__}: {exc}", data=exc)


def as_tuple(value: str | Sequence[str] | int | Sequence[int]) -> tuple[Any, ...]:
    """A single value or a sequence of them, as a tuple."""
    if isinstance(value, list | tuple):
        return tuple(value)
    return (value,)
