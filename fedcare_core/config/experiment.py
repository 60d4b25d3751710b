"""The whole configuration of a run: :class:`ExperimentConfig` and its sections.

Every field is declared once, with :func:`~fedcare_core.config.settings.setting`; the ranges
(:data:`RANGES`) and every entry's options are derived from the declarations
(:func:`all_settings`).
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from fedcare_core.config.fields import Range, check_value, coerce_section, field_kinds, show
from fedcare_core.config.limits import (
    CALIBRATION_METHODS,
    FEDCARE_DOCUMENT_ALGORITHMS,
    MAX_THREADS,
    SEEDS,
)
from fedcare_core.config.method_options import baselines, baselines_class
from fedcare_core.config.preferences import Preference, parse_preferences
from fedcare_core.config.sections import BaselineConfig, DataConfig
from fedcare_core.config.settings import (
    SettingRef,
    check_choices,
    declared,
    ranges_of,
    setting,
)
from fedcare_core.config.stages import ModelConfig, Stage1Config, Stage2Config
from fedcare_core.errors import ConfigError

_RUN = "run"
_PREFERENCES = "clinical preferences"
#: Each preference weight, the preference kind that reads it and how a site writes one.
_WEIGHTS = (
    ("sensitivity_weight", "sensitivity", "sensitivity"),
    ("fairness_weight", "fair", "fair(race)"),
)


@dataclass(frozen=True)
class ExperimentConfig:
    """Everything that determines a run; the same config and seed give the same results."""

    algorithm: str = setting(
        "fedcare",
        help="the method: an installed algorithm (FedCARE's two stages by default; the "
        "baselines and bounds of docs/DESIGN.md, or an outside package's, docs/EXTENDING.md)",
        choices_of="algorithm",
        flag="algorithm",
        group=_RUN,
    )
    seed: int = setting(0, help="experiment seed", range=SEEDS, flag="seed", group=_RUN)
    #: The networks are small: one thread is as fast as two and does not oversubscribe the
    #: cores when clients run in parallel processes.
    threads: int = setting(
        1, help="PyTorch intra-op threads", range=Range(1, MAX_THREADS), group=_RUN
    )
    calibration: str = setting(
        "auto",
        help="calibrating each binary risk: auto (undo each client's class weight, then one "
        "recalibration fitted across the clients' validation rows from a few numbers each: a "
        "shared slope if significant, site intercepts shrunk toward their mean), local (each "
        "client's own closed test on its validation rows), platt, isotonic, or none (the "
        "network's class-weighted probabilities)",
        choices=CALIBRATION_METHODS,
        noun="calibration",
        flag="calibration",
        group=_RUN,
    )
    target_sensitivity: float = setting(
        0.8,
        help="each client's operating point for a binary objective: the highest threshold "
        "whose sensitivity on its validation rows reaches this (the report's sensitivity, "
        "specificity, PPV and NPV are at it)",
        range=Range(0, 1, low_open=True),
        flag="target-sensitivity",
        group=_RUN,
    )
    interval_coverage: float = setting(
        0.9,
        help="nominal coverage of each length-of-stay prediction's interval (split conformal "
        "on the client's validation rows)",
        range=Range(0, 1, low_open=True, high_open=True),
        flag="interval-coverage",
        group=_RUN,
    )
    bootstrap: int = setting(
        200,
        help="resamples of patients for the pooled test metrics' 95-percent intervals (0: none)",
        range=Range(0, 100_000),
        flag="bootstrap",
        group=_RUN,
    )
    preferences: str = setting(
        "",
        help="clinical preferences of the clients pursuing an objective, "
        "<objective>:<preference> separated by spaces (objective * for every binary one): "
        "sensitivity (recall-weighted loss), "
        "fair(<attribute>) or fair(<attribute>,sensitivity) (the subgroup gap of AUROC or "
        "sensitivity penalised) or plain",
        flag="preferences",
        metavar="OBJ:PREF",
        group=_PREFERENCES,
        in_schema=False,
    )
    sensitivity_weight: float = setting(
        2.0,
        help="a sensitivity preference's extra weight of a positive row (beta: a missed "
        "positive costs beta times as many false alarms as under the plain loss)",
        range=Range(1, 1000),
        flag="sensitivity-weight",
        group=_PREFERENCES,
        in_schema=False,
    )
    fairness_weight: float = setting(
        1.0,
        help="a fairness preference's weight of the subgroup gap beside the prediction loss "
        "(gamma)",
        range=Range(0, 1000, low_open=True),
        flag="fairness-weight",
        group=_PREFERENCES,
        in_schema=False,
    )
    data: DataConfig = field(default_factory=DataConfig)
    model: ModelConfig = field(default_factory=ModelConfig)
    stage1: Stage1Config = field(default_factory=Stage1Config)
    stage2: Stage2Config = field(default_factory=Stage2Config)
    baselines: BaselineConfig = field(default_factory=baselines)

    def validate(self) -> ExperimentConfig:
        """Check every field; return ``self`` so calls chain.

        The algorithm's name, and what the dataset offers (its feature sets, cohorts and
        objective count: :func:`fedcare_core.data.choices.check_dataset_choices`), are checked
        by :func:`fedcare_core.algorithms.validate_config`, which every entry calls before any
        work: the configuration sits below the algorithms and the data.
        """
        kinds = field_kinds(ExperimentConfig)
        for name in TOP_LEVEL_FIELDS:
            check_value(name, getattr(self, name), kinds[name], RANGES[""].get(name))
        if not self.algorithm:
            raise ConfigError("algorithm must be a name, got ''")
        check_choices(self, "")
        self.objective_preferences()
        for name, cls in SECTIONS.items():
            section = getattr(self, name)
            if not isinstance(section, cls):
                raise ConfigError(f"{name} must be a configuration section, got {show(section)}")
            getattr(self, name).validate()
        return self

    def objective_preferences(self) -> dict[str, Preference]:
        """The ``preferences`` setting, parsed: objective → its (non-plain) preference.

        Raises
        ------
        ConfigError
            Naming ``preferences`` and what is wrong with it.
        """
        try:
            return parse_preferences(
                self.preferences,
                sensitivity_weight=self.sensitivity_weight,
                fairness_weight=self.fairness_weight,
            )
        except ValueError as exc:
            raise ConfigError(f"preferences: {exc}") from None

    def check_preference_weights(self) -> None:
        """Refuse β or γ set away from its default while no preference of its kind uses it.

        Asked by a run whose preferences are its own ``preferences`` (``fedcare run``); a
        federation's schema keeps β and γ for the preferences its sites state.

        Raises
        ------
        ConfigError
            ``fairness_weight (--fairness-weight) has no effect without a fair(...) preference
            in preferences (--preferences)``.
        """
        kinds = {preference.kind for preference in self.objective_preferences().values()}
        defaults = {ref.name: ref.default for ref in declared(ExperimentConfig, "")}
        for name, kind, example in _WEIGHTS:
            if getattr(self, name) != defaults[name] and kind not in kinds:
                flag = name.replace("_", "-")
                raise ConfigError(
                    f"{name} (--{flag}) has no effect without a {example} preference in "
                    f"preferences (--preferences), e.g. --preferences 'readmission:{example}'"
                )

    def to_dict(self) -> dict[str, Any]:
        """Plain nested dict (JSON-serialisable).

        The ``baselines`` section appears for every algorithm but FedCARE's own: FedCARE's
        documents stay as they were before the baselines existed (and load back with defaults).
        """
        out = asdict(self)
        if self.algorithm in FEDCARE_DOCUMENT_ALGORITHMS:
            del out["baselines"]
        return out

    @classmethod
    def from_dict(cls, raw: Mapping[str, Any]) -> ExperimentConfig:
        """Build from a nested dict, rejecting unknown keys, wrong types and bad values.

        Raises
        ------
        ConfigError
            Naming the parameter at fault (``stage1.rounds``) and its value.
        """
        if not isinstance(raw, Mapping):
            raise ConfigError(f"the configuration must be a JSON object, got {show(raw)}")
        kwargs: dict[str, Any] = {}
        for key, value in raw.items():
            if key in SECTIONS:
                sub = SECTIONS[key]
                kwargs[key] = sub(**coerce_section(sub, key, value, RANGES[key]))
            else:
                kwargs.update(_top_level({key: value}))
        return cls(**kwargs).validate()

    def with_overrides(self, **sections: Any) -> ExperimentConfig:
        """Return a copy with fields of the named sections (or top-level keys) replaced.

        Each value is checked as it arrives (types, ranges, unknown keys), then the whole.
        """
        out = self
        for name, value in sections.items():
            if name in SECTIONS:
                checked = coerce_section(SECTIONS[name], name, value, RANGES[name])
                out = replace(out, **{name: replace(getattr(out, name), **checked)})
            else:
                out = replace(out, **_top_level({name: value}))
        return out.validate()


class _Sections(Mapping[str, type]):
    """The configuration's sections by their key; ``baselines`` is composed when first read.

    The ``baselines`` section holds every installed method's own settings
    (:func:`~fedcare_core.config.method_options.baselines_class`), found by entry point.
    """

    _FIXED: Mapping[str, type] = {
        "data": DataConfig,
        "model": ModelConfig,
        "stage1": Stage1Config,
        "stage2": Stage2Config,
    }

    def __getitem__(self, key: str) -> type:
        return baselines_class() if key == "baselines" else self._FIXED[key]

    def __iter__(self) -> Iterator[str]:
        return iter((*self._FIXED, "baselines"))

    def __len__(self) -> int:
        return len(self._FIXED) + 1


class _Ranges(Mapping[str, dict[str, Range]]):
    """Every number field's range, per section (``""``: the top level), from the declarations."""

    def __getitem__(self, key: str) -> dict[str, Range]:
        return _ranges(key)

    def __iter__(self) -> Iterator[str]:
        return iter(("", *SECTIONS))

    def __len__(self) -> int:
        return len(SECTIONS) + 1


def _ranges(section: str) -> dict[str, Range]:
    return ranges_of(ExperimentConfig if section == "" else SECTIONS[section])


#: The configuration's sections, by their key in documents and overrides.
SECTIONS: Mapping[str, type] = _Sections()
#: The configuration's top-level scalar fields.
TOP_LEVEL_FIELDS = tuple(ref.name for ref in declared(ExperimentConfig, ""))
#: Every number field's range, per section (``""``: the top level), from the declarations.
RANGES: Mapping[str, dict[str, Range]] = _Ranges()


def all_settings() -> Iterator[SettingRef]:
    """Every declared setting of the configuration: the top level's, then each section's."""
    yield from declared(ExperimentConfig, "")
    for name, cls in SECTIONS.items():
        yield from declared(cls, name)


def flagged_settings(*, schema_only: bool = False) -> dict[str, SettingRef]:
    """The settings every entry offers by name, by that name (``stage2_epochs``).

    ``schema_only``: only those a federation's schema fixes (``fedcare federation init``).
    """
    return {
        str(ref.dest): ref
        for ref in all_settings()
        if ref.dest is not None and (ref.spec.in_schema or not schema_only)
    }


def sections_of(values: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """Offered settings' values (``{"rounds": 7}``) as configuration sections, ``None`` dropped.

    A setting's ``also_sets`` fields take its value too (``--solver`` sets both stages').
    The top level is section ``""``.

    Raises
    ------
    ConfigError
        For a name that is not an offered setting.
    """
    offered = flagged_settings()
    sections: dict[str, dict[str, Any]] = {}
    for name, value in values.items():
        if name not in offered:
            raise ConfigError(f"unknown setting {name!r}")
        if value is None:
            continue
        ref = offered[name]
        for path in (ref.path, *ref.spec.also_sets):
            section, _, key = path.rpartition(".")
            sections.setdefault(section, {})[key] = value
    return sections


def _top_level(raw: Mapping[str, Any]) -> dict[str, Any]:
    """Top-level (non-section) keys, checked."""
    kinds = field_kinds(ExperimentConfig)
    out: dict[str, Any] = {}
    for key, value in raw.items():
        if key not in TOP_LEVEL_FIELDS:
            raise ConfigError(f"unknown configuration key {key!r}")
        out[key] = check_value(key, value, kinds[key], RANGES[""].get(key))
    return out


def load_config_file(path: str | Path) -> ExperimentConfig:
    """The :class:`ExperimentConfig` in a JSON file (as ``fedcare run --config`` reads it).

    Raises
    ------
    ConfigError
        An unreadable file, invalid JSON, a document that is not an object, or any invalid
        value; the message names the file.
    """
    try:
        raw = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ConfigError(f"cannot read config {path}: {exc}") from None
    try:
        return ExperimentConfig.from_dict(raw)
    except ConfigError as exc:
        raise ConfigError(f"config {path}: {exc}") from None
