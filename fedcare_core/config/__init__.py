"""Typed, frozen configuration of a FedCARE run, each setting declared once.

The sections (:class:`DataConfig`, :class:`ModelConfig`, :class:`Stage1Config`,
:class:`Stage2Config`, :class:`BaselineConfig`) and :class:`ExperimentConfig` declare every
field with :func:`~fedcare_core.config.settings.setting`: type, default, range or choices, help
and grouping. The ranges, the command-line flags, the flow parameters and the docs' options
table are derived from those declarations (:func:`all_settings`).
"""

from fedcare_core.config.dataset_choices import (
    DATASET_COHORTS,
    DATASET_FEATURE_SETS,
    DATASET_OBJECTIVES,
    DATASETS,
    EARLY_DISCHARGE_DEFINITIONS,
    FEATURE_SETS,
    READMISSION_DEFINITIONS,
    READMISSION_EXCLUSIONS,
)
from fedcare_core.config.experiment import (
    RANGES,
    SECTIONS,
    TOP_LEVEL_FIELDS,
    ExperimentConfig,
    all_settings,
    flagged_settings,
    load_config_file,
    sections_of,
)
from fedcare_core.config.limits import (
    CLIENT_SPLITS,
    FEDCARE_DOCUMENT_ALGORITHMS,
    LOCAL_OPTIMIZERS,
    MAX_CLIENTS,
    MAX_ROUNDS,
    MAX_SEED,
    NORMALISATIONS,
    QP_SCOPES,
    SERVER_OPTIMIZERS,
    SOLVERS,
    STAGE2_HEAD_INITS,
    STAGE2_OPTIMIZERS,
    UNSEEN_CATEGORY_POLICIES,
)
from fedcare_core.config.sections import BaselineConfig, DataConfig
from fedcare_core.config.stages import ModelConfig, Stage1Config, Stage2Config

__all__ = [
    "CLIENT_SPLITS",
    "DATASETS",
    "DATASET_COHORTS",
    "DATASET_FEATURE_SETS",
    "DATASET_OBJECTIVES",
    "EARLY_DISCHARGE_DEFINITIONS",
    "FEATURE_SETS",
    "FEDCARE_DOCUMENT_ALGORITHMS",
    "LOCAL_OPTIMIZERS",
    "MAX_CLIENTS",
    "MAX_ROUNDS",
    "MAX_SEED",
    "NORMALISATIONS",
    "QP_SCOPES",
    "RANGES",
    "READMISSION_DEFINITIONS",
    "READMISSION_EXCLUSIONS",
    "SECTIONS",
    "SERVER_OPTIMIZERS",
    "SOLVERS",
    "STAGE2_HEAD_INITS",
    "STAGE2_OPTIMIZERS",
    "TOP_LEVEL_FIELDS",
    "UNSEEN_CATEGORY_POLICIES",
    "BaselineConfig",
    "DataConfig",
    "ExperimentConfig",
    "ModelConfig",
    "Stage1Config",
    "Stage2Config",
    "all_settings",
    "flagged_settings",
    "load_config_file",
    "sections_of",
]
