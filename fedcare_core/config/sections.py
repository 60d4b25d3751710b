"""The data and the baselines' sections of the configuration (SPEC §3 and §4)."""

from __future__ import annotations

from dataclasses import dataclass

from fedcare_core.config.dataset_choices import (
    DATASET_COHORTS,
    EARLY_DISCHARGE_DEFINITIONS,
    FEATURE_SETS,
    READMISSION_DEFINITIONS,
    READMISSION_EXCLUSIONS,
)
from fedcare_core.config.fields import (
    HALF_OPEN_UNIT,
    NON_NEGATIVE,
    OPEN_UNIT,
    POSITIVE,
    Range,
)
from fedcare_core.config.limits import (
    BATCH,
    CLIENT_SPLITS,
    LOCAL_OPTIMIZERS,
    MAX_CLIENTS,
    MAX_OBJECTIVES,
    MAX_PATIENTS,
    SCALINGS,
    STEPS,
    UNSEEN_CATEGORY_POLICIES,
)
from fedcare_core.config.settings import check_section, setting
from fedcare_core.errors import ConfigError

_DATA = "data and federation"
#: The heading of the baselines section's settings (a method's options share it).
BASELINES_GROUP = "baselines and bounds (docs/DESIGN.md, 'Baselines and bounds')"
_PATIENTS = Range(1, MAX_PATIENTS)


@dataclass(frozen=True)
class DataConfig:
    """Cohort, feature partition, clients and splits (SPEC §3)."""

    dataset: str = setting(
        "diabetes130",
        help="the dataset: a built-in one, or a dataset definition file (docs/DATASETS.md)",
        choices_of="dataset",
        or_file="FILE.yaml",
        noun="dataset",
        flag="dataset",
        group=_DATA,
    )
    clients: int = setting(
        10,
        help="number of clients K (a federation has at least two)",
        range=Range(2, MAX_CLIENTS),
        flag="clients",
        group=_DATA,
        in_schema=False,
    )
    rho: float | None = setting(
        None,
        help="feature disparity ratio ρ = d_u / (d_c + d_u) in (0, 1); none: the dataset's",
        range=OPEN_UNIT,
        flag="rho",
        group=_DATA,
    )
    client_split: str = setting(
        "iid",
        help="patients to clients IID, or Dirichlet over admission source",
        choices=CLIENT_SPLITS,
        noun="client split",
        flag="split",
        group=_DATA,
        in_schema=False,
    )
    dirichlet_alpha: float = setting(
        0.5, help="concentration α of the Dirichlet split", range=POSITIVE, group=_DATA,
        in_schema=False,
    )  # fmt: skip
    objectives_per_client: int = setting(
        1,
        help="objectives per client m_k",
        range=Range(1, MAX_OBJECTIVES),
        flag="objectives-per-client",
        group=_DATA,
        in_schema=False,
    )
    cover_all_objectives: bool = setting(
        True, help="every objective is pursued by at least one client", group=_DATA,
        in_schema=False,
    )  # fmt: skip
    scaling: str = setting(
        "client",
        help="numeric features scaled by each client's own training statistics (client), or "
        "by statistics pooled across the clients, never their rows: mean and standard "
        "deviation (federated) or quantiles, as normal scores (federated-quantile)",
        choices=SCALINGS,
        noun="scaling",
        flag="scaling",
        group=_DATA,
    )
    train_fraction: float = setting(
        0.7, help="share of each client's patients for training", range=OPEN_UNIT, group=_DATA
    )
    val_fraction: float = setting(
        0.1, help="share of each client's patients for validation", range=HALF_OPEN_UNIT,
        group=_DATA,
    )  # fmt: skip
    readmission: str = setting(
        "30d",
        help="readmission label: within 30 days, or any readmission",
        choices=READMISSION_DEFINITIONS,
        noun="readmission definition",
        flag="readmission",
        group=_DATA,
    )
    readmission_exclude: str = setting(
        "deaths",
        help="encounters without a readmission label: 'deaths' (expired or hospice "
        "discharges), or 'deaths-ama-transfers' (also discharges against medical advice and "
        "transfers to another acute hospital, as CMS readmission measures exclude them); "
        "Diabetes 130 (a dataset without these variants, e.g. MIMIC-III, keeps its own)",
        choices=READMISSION_EXCLUSIONS,
        noun="readmission exclusion",
        flag="readmission-exclude",
        group=_DATA,
    )
    early_discharge: str = setting(
        "los",
        help="early-discharge label: 'los' (the paper's time_in_hospital <= 3 for every "
        "encounter, deaths and transfers included; kept for comparison with the paper), "
        "'home' (clinically cleaner: discharged home alive within 3 days, among encounters "
        "discharged home; other dispositions get no label) or 'home-or-not' (the same "
        "positives, every other encounter negative; needs --features admission); Diabetes 130 "
        "(a dataset without these variants keeps its own labels)",
        choices=EARLY_DISCHARGE_DEFINITIONS,
        noun="early-discharge definition",
        flag="early-discharge",
        group=_DATA,
    )
    max_patients: int | None = setting(
        None,
        help="subsample the cohort to this many patients (quick trials); none: all",
        range=_PATIENTS,
        flag="max-patients",
        group=_DATA,
        in_schema=False,
    )
    max_patients_per_client: int | None = setting(
        None,
        help="keep at most N patients of each client, drawn at random after the split (small "
        "hospitals); none: all",
        range=_PATIENTS,
        flag="max-patients-per-client",
        metavar="N",
        group=_DATA,
        in_schema=False,
    )
    unseen_categories: str = setting(
        "refuse",
        help="a category outside a column's documented values: refuse the data, or encode it "
        "as 'other' (for a site whose export holds more codes)",
        choices=UNSEEN_CATEGORY_POLICIES,
        noun="unseen-category policy",
        flag="unseen-categories",
        group=_DATA,
    )
    features: str = setting(
        "paper",
        help="feature set: 'admission' limits early discharge and LOS to what is known at "
        "admission and gives readmission the discharge-time features (Diabetes 130)",
        choices=FEATURE_SETS,
        noun="feature set",
        flag="features",
        group=_DATA,
    )
    cohort: str | None = setting(
        None,
        help="MIMIC-III cohort: all-adult-24h (every adult ICU stay, first 24 h; none: this) "
        "or benchmark-ihm (the MIMIC-III benchmark's in-hospital-mortality rules, first 48 h)",
        choices=tuple(sorted({c for cs in DATASET_COHORTS.values() for c in cs})),
        noun="cohort",
        flag="cohort",
        group=_DATA,
    )
    benchmark_split: str | None = setting(
        None,
        help="with cohort benchmark-ihm: the benchmark's in-hospital-mortality folder "
        "(train/listfile.csv, test/listfile.csv); its test patients are every client's test set",
        flag="benchmark-split",
        metavar="DIR",
        group=_DATA,
        in_schema=False,
    )

    @property
    def label_variants(self) -> tuple[str, str, str]:
        """The label variants the loader selects (``DeclaredObjective.labelling``).

        ``readmission``, ``early_discharge`` and ``readmission_exclude``: a dataset that
        declares none of them keeps its labels.
        """
        return (self.readmission, self.early_discharge, self.readmission_exclude)

    def validate(self) -> None:
        """Raise :class:`ConfigError` on an invalid value."""
        # The feature set and the cohort are checked against the dataset's own.
        # The feature set and the cohort are the dataset's to allow:
        # fedcare_core.data.choices.check_dataset_choices (validate_config, the loader).
        check_section(self, "data", skip_choices=("features", "cohort"))
        if self.train_fraction + self.val_fraction >= 1:
            raise ConfigError(
                "data.train_fraction + data.val_fraction must leave rows for the test set, got "
                f"{self.train_fraction:g} + {self.val_fraction:g}"
            )


@dataclass(frozen=True)
class BaselineConfig:
    """The baselines and bounds (SPEC §4; ``fedcare_core.algorithms``): local training.

    A method's own settings (FedProx's μ, PAFNet's, the bounds', fedxgb's) are declared in its
    folder and join this section (:mod:`fedcare_core.config.method_options`), so a run's
    ``baselines`` holds these shared settings and every installed method's.

    The number of federated rounds T is ``stage1.rounds`` for every federated method, so
    ``--rounds`` means the same thing everywhere. FMGDA and FSMGDA are Algorithm 1's
    gradient-sum form and take τ, η_l, η_g, the batch size and the solver from ``stage1``.

    Methods that train with a local optimiser (FedAvg, FedProx, PAFNet, Local, Centralised) use
    the one FedCARE's Stage 2 uses (Adam, lr 1e-3, weight decay 1e-5, batch 256), so no method
    gets a better-tuned optimiser than another; the paper gives none of these values. The
    default cap of 5 local steps per round is Stage 1's τ: every federated method does the same
    local work per round as FedCARE, holding compute and communication equal (None:
    ``local_epochs`` full passes, FedAvg's E; at K = 10 one pass is about 27 steps).
    """

    local_epochs: int = setting(
        1, help="passes over a client's training rows per round (FedAvg's E)", range=STEPS,
        group=BASELINES_GROUP,
    )  # fmt: skip
    max_local_steps: int | None = setting(
        5, help="cap on mini-batch steps per round (none: local_epochs full passes)",
        range=STEPS, group=BASELINES_GROUP,
    )  # fmt: skip
    lr: float = setting(
        1e-3, help="local optimiser's learning rate", range=POSITIVE, group=BASELINES_GROUP
    )
    weight_decay: float = setting(
        1e-5, help="local optimiser's weight decay", range=NON_NEGATIVE, group=BASELINES_GROUP
    )
    optimizer: str = setting(
        "adam",
        help="local optimiser (its state starts afresh each round: clients are stateless)",
        choices=LOCAL_OPTIMIZERS,
        noun="baseline optimizer",
        group=BASELINES_GROUP,
    )
    batch_size: int = setting(256, help="local mini-batch rows", range=BATCH, group=BASELINES_GROUP)

    def validate(self) -> None:
        """Raise :class:`ConfigError` on an invalid value."""
        check_section(self, "baselines")
