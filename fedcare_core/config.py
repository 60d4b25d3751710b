"""Typed, frozen configuration for a FedCARE experiment.

Defaults follow the paper (§V-A) and ``SPEC.md``: η_l = 0.001, η_g = 0.01, T = 100 rounds,
τ = 5 local steps. Every choice the paper leaves open is a field here, documented where it is set.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from fedcare_core.config_fields import (
    ANY_FINITE,
    CLOSED_UNIT,
    HALF_OPEN_UNIT,
    NON_NEGATIVE,
    OPEN_UNIT,
    POSITIVE,
    Range,
    check_fields,
    check_value,
    coerce_section,
    field_kinds,
    show,
)
from fedcare_core.dataset_choices import (
    DATASET_COHORTS as DATASET_COHORTS,
)
from fedcare_core.dataset_choices import (
    DATASET_FEATURE_SETS as DATASET_FEATURE_SETS,
)
from fedcare_core.dataset_choices import (
    DATASET_OBJECTIVES as DATASET_OBJECTIVES,
)
from fedcare_core.dataset_choices import (
    DATASETS,
    READMISSION_DEFINITIONS,
    check_choice,
    check_dataset_choices,
)
from fedcare_core.dataset_choices import (
    FEATURE_SETS as FEATURE_SETS,
)
from fedcare_core.errors import ConfigError
from fedcare_core.privacy import (
    MAX_CLIP,
    MAX_NOISE_MULTIPLIER,
    MIN_CLIP,
    MIN_NOISE_MULTIPLIER,
    DpSettings,
    resolve_dp,
)

#: FedCARE's own methods, whose documents have no ``baselines`` section (the algorithm names
#: are the registry's, :mod:`fedcare_core.algorithms`).
FEDCARE_DOCUMENT_ALGORITHMS = ("fedcare", "fedcare-b")
CLIENT_SPLITS = ("iid", "dirichlet")
SOLVERS = ("exact", "slsqp")
NORMALISATIONS = ("none", "l2", "loss+")
QP_SCOPES = ("full", "backbone")
SERVER_OPTIMIZERS = ("sgd", "adam")
STAGE2_OPTIMIZERS = ("adam", "sgd")
#: How Stage 2's personal heads start: freshly initialised (the paper), or as the global head.
STAGE2_HEAD_INITS = ("fresh", "global")
#: What the loaders do with a category outside a column's declared vocabulary
#: (:mod:`fedcare_core.data.categories`): stop, or encode it as ``other``.
UNSEEN_CATEGORY_POLICIES = ("refuse", "other")
LOCAL_OPTIMIZERS = ("adam", "sgd")
PAFNET_DEPLOY = ("best-val", "last")


#: Largest seed (NumPy's generators take seeds below 2**32).
MAX_SEED = 2**32 - 1
#: Upper bounds of the count fields: generous for any real run, but an absurd value (a typo,
#: ``10**30`` rounds) is refused before any work instead of training for ever.
MAX_ROUNDS = 100_000
MAX_CLIENTS = 1_000
MAX_STEPS = 100_000  # local steps, epochs and patience
MAX_BATCH_SIZE = 10**7
MAX_PATIENTS = 10**9
MAX_WIDTH = 65_536  # layer widths
MAX_CATEGORIES = 100_000
MAX_THREADS = 1_024


@dataclass(frozen=True)
class ModelConfig:
    """Network widths and dropout (SPEC §2)."""

    hidden: int = 128
    representation: int = 64
    head_hidden: tuple[int, int] = (64, 32)
    dropout: float = 0.3
    head_dropout: float = 0.3
    max_categories: int = 20  # vocabulary cap for undeclared (client-local) categorical features

    def validate(self) -> None:
        """Raise :class:`ConfigError` on an invalid value."""
        check_fields(self, "model", RANGES["model"])


@dataclass(frozen=True)
class Stage1Config:
    """Algorithm 1 (federated multi-objective training of the backbone).

    ``server_optimizer="sgd"`` is the paper's eq. 11 (``w ← w − η_g d``). ``"adam"`` treats the
    min-norm direction ``d`` as a pseudo-gradient for a server-side Adam (FedOpt, Reddi et al.
    2021) with learning rate ``global_lr``; it is an option, not the default.
    """

    rounds: int = 100
    local_steps: int = 5
    local_lr: float = 1e-3
    global_lr: float = 1e-2
    batch_size: int = 256
    epsilon: float = 1e-8
    solver: str = "exact"
    normalise: str = "none"
    qp_scope: str = "full"
    server_optimizer: str = "sgd"
    #: Client-level differential privacy of the rounds (:mod:`fedcare_core.privacy`), off
    #: unless ``dp_epsilon`` or ``dp_noise_multiplier`` is set: the budget ε (the noise
    #: multiplier is derived for ``rounds``), or the multiplier z itself; δ; the joint clip C;
    #: and a seed for reproducible research runs (None: the noise comes from OS entropy).
    dp_epsilon: float | None = None
    dp_delta: float = 1e-5
    dp_noise_multiplier: float | None = None
    dp_clip: float = 1.0
    dp_noise_seed: int | None = None
    #: Secure aggregation of the rounds (Flower's SecAgg+, :mod:`fedcare_flower.secagg_server`):
    #: the server only ever holds per-objective sums of the clients' pre-weighted updates
    #: (:mod:`fedcare_core.secure_sums`). Flower backends only.
    secagg: bool = False

    def validate(self) -> None:
        """Raise :class:`ConfigError` on an invalid value (a DP budget the rounds exceed too)."""
        check_fields(self, "stage1", RANGES["stage1"])
        check_choice(self.solver, SOLVERS, "solver", "stage1.solver")
        check_choice(self.normalise, NORMALISATIONS, "normalise", "stage1.normalise")
        check_choice(self.qp_scope, QP_SCOPES, "qp_scope", "stage1.qp_scope")
        check_choice(
            self.server_optimizer, SERVER_OPTIMIZERS, "server_optimizer", "stage1.server_optimizer"
        )
        if self.privacy() is not None and self.normalise == "loss+":
            raise ConfigError(
                "stage1.normalise 'loss+' needs each client's training losses, which a "
                "differentially private run does not send; use 'none' or 'l2'"
            )

    def privacy(self) -> DpSettings | None:
        """The rounds' resolved DP settings, or None when DP is off.

        Raises
        ------
        ConfigError
            A budget (``dp_epsilon``) that the noise multiplier over ``rounds`` rounds exceeds,
            or that no multiplier can meet.
        """
        return resolve_dp(
            epsilon=self.dp_epsilon,
            delta=self.dp_delta,
            noise_multiplier=self.dp_noise_multiplier,
            clip=self.dp_clip,
            rounds=self.rounds,
            noise_seed=self.dp_noise_seed,
        )


@dataclass(frozen=True)
class Stage2Config:
    """Algorithm 2 (per-client personalised fine-tuning, no communication).

    The paper gives neither η_p nor the iteration budget. Here the budget is ``epochs`` passes
    over the client's training rows, the step is Adam on the μ*-weighted direction (``"sgd"`` is
    eq. 15 literally), and the deployed model is the epoch with the lowest validation loss
    (``patience`` epochs without improvement end training early).

    Beyond the paper (off by default; docs/DESIGN.md, "Stage 2"): ``backbone_lr_scale`` (0
    freezes the backbone), ``prox`` (a pull ``prox/2 · ‖w_b − w*_b‖²`` toward w*) and
    ``head_init="global"`` (heads start as w*'s, which stays deployed unless an epoch beats it).
    """

    epochs: int = 40
    lr: float = 1e-3
    batch_size: int = 256
    epsilon: float = 1e-10
    optimizer: str = "adam"
    patience: int = 6
    weight_decay: float = 1e-5
    solver: str = "exact"
    backbone_lr_scale: float = 1.0
    prox: float = 0.0
    head_init: str = "fresh"

    def validate(self) -> None:
        """Raise :class:`ConfigError` on an invalid value."""
        check_fields(self, "stage2", RANGES["stage2"])
        check_choice(self.optimizer, STAGE2_OPTIMIZERS, "stage2 optimizer", "stage2.optimizer")
        check_choice(self.solver, SOLVERS, "solver", "stage2.solver")
        check_choice(self.head_init, STAGE2_HEAD_INITS, "head initialisation", "stage2.head_init")


@dataclass(frozen=True)
class BaselineConfig:
    """The baselines and bounds (SPEC §4; ``fedcare_core.baselines``).

    The number of federated rounds T is ``stage1.rounds`` for every federated method, so
    ``--rounds`` means the same thing everywhere. FMGDA and FSMGDA are Algorithm 1's
    gradient-sum form and take τ, η_l, η_g, the batch size and the solver from ``stage1``.

    Methods that train with a local optimiser (FedAvg, FedProx, PAFNet, Local, Centralised) use
    the one FedCARE's Stage 2 uses (Adam, lr 1e-3, weight decay 1e-5, batch 256), so no method
    gets a better-tuned optimiser than another. The paper gives none of these values.

    Parameters
    ----------
    local_epochs
        Passes over a client's training rows per round (FedAvg's E).
    max_local_steps
        Cap on mini-batch steps per round. The default 5 is Stage 1's τ: every federated
        method does the same local work per round as FedCARE (τ steps of 256 rows), so the
        comparison holds compute and communication equal. None: ``local_epochs`` full passes
        (FedAvg's E; at K = 10 one pass is about 27 steps, 5× FedCARE's local work).
    lr, weight_decay, optimizer, batch_size
        The local optimiser (optimiser state starts afresh each round: clients are stateless).
    prox_mu
        FedProx's μ: the local objective adds ``μ/2 ‖w − w^t‖²``. μ = 0 is FedAvg.
    pafnet_latent
        Width of PAFNet's common latent space (output of each client's projection layer).
    pafnet_mask_init
        Initial mask score s; a mask is ``2·sigmoid(s)``, so 0 starts every client at the
        global model exactly (mask 1).
    pafnet_temperature
        Peer-attention temperature on the cosine similarity of clients' updates (smaller:
        sharper preference for similar peers; ∞: FedAvg weights over the peers).
    pafnet_self_weight
        Share of a client's own model in its aggregate; its peers share the rest by attention
        (FedAMP's fixed self weight).
    pafnet_deploy
        Which of its models a PAFNet client deploys: ``"best-val"`` the one (after some round's
        local training) with its lowest validation loss, as FedCARE's Stage 2 and the bounds
        choose; ``"last"`` the one after the last round.
    bound_epochs, bound_patience
        Local and Centralised: training epochs, and epochs without validation improvement that
        end training early (the epoch with the lowest validation loss is deployed).
    """

    local_epochs: int = 1
    max_local_steps: int | None = 5
    lr: float = 1e-3
    weight_decay: float = 1e-5
    optimizer: str = "adam"
    batch_size: int = 256
    prox_mu: float = 0.01
    pafnet_latent: int = 64
    pafnet_mask_init: float = 0.0
    pafnet_temperature: float = 0.05
    pafnet_self_weight: float = 0.5
    pafnet_deploy: str = "best-val"
    bound_epochs: int = 40
    bound_patience: int = 6

    def validate(self) -> None:
        """Raise :class:`ConfigError` on an invalid value."""
        check_fields(self, "baselines", RANGES["baselines"])
        check_choice(self.optimizer, LOCAL_OPTIMIZERS, "baseline optimizer", "baselines.optimizer")
        check_choice(self.pafnet_deploy, PAFNET_DEPLOY, "pafnet_deploy", "baselines.pafnet_deploy")


@dataclass(frozen=True)
class DataConfig:
    """Cohort, feature partition, clients and splits (SPEC §3)."""

    dataset: str = "diabetes130"
    clients: int = 10
    rho: float | None = None
    client_split: str = "iid"
    dirichlet_alpha: float = 0.5
    objectives_per_client: int = 1
    cover_all_objectives: bool = True
    train_fraction: float = 0.7
    val_fraction: float = 0.1
    readmission: str = "30d"
    max_patients: int | None = None
    max_patients_per_client: int | None = None
    unseen_categories: str = "refuse"
    features: str = "paper"
    cohort: str | None = None
    benchmark_split: str | None = None

    def validate(self) -> None:
        """Raise :class:`ConfigError` on an invalid value."""
        check_fields(self, "data", RANGES["data"])
        check_choice(self.dataset, DATASETS, "dataset", "data.dataset")
        check_choice(self.client_split, CLIENT_SPLITS, "client split", "data.client_split")
        check_choice(
            self.readmission, READMISSION_DEFINITIONS, "readmission definition", "data.readmission"
        )
        check_choice(
            self.unseen_categories,
            UNSEEN_CATEGORY_POLICIES,
            "unseen-category policy",
            "data.unseen_categories",
        )
        check_dataset_choices(self)
        if self.train_fraction + self.val_fraction >= 1:
            raise ConfigError(
                "data.train_fraction + data.val_fraction must leave rows for the test set, got "
                f"{self.train_fraction:g} + {self.val_fraction:g}"
            )


@dataclass(frozen=True)
class ExperimentConfig:
    """Everything that determines a run; the same config and seed give the same results."""

    algorithm: str = "fedcare"
    seed: int = 0
    #: PyTorch intra-op threads. The networks are small: one thread is as fast as two and does
    #: not oversubscribe the cores when clients run in parallel processes.
    threads: int = 1
    data: DataConfig = field(default_factory=DataConfig)
    model: ModelConfig = field(default_factory=ModelConfig)
    stage1: Stage1Config = field(default_factory=Stage1Config)
    stage2: Stage2Config = field(default_factory=Stage2Config)
    baselines: BaselineConfig = field(default_factory=BaselineConfig)

    def validate(self) -> ExperimentConfig:
        """Check every field; return ``self`` so calls chain.

        The algorithm's name is checked against the registry by
        :func:`fedcare_core.algorithms.validate_config` (this module cannot import it).
        """
        kinds = field_kinds(ExperimentConfig)
        for name in TOP_LEVEL_FIELDS:
            check_value(name, getattr(self, name), kinds[name], RANGES[""].get(name))
        if not self.algorithm:
            raise ConfigError("algorithm must be a name, got ''")
        for name, cls in SECTIONS.items():
            section = getattr(self, name)
            if not isinstance(section, cls):
                raise ConfigError(f"{name} must be a configuration section, got {show(section)}")
            getattr(self, name).validate()
        return self

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


#: The configuration's sections, by their key in documents and overrides.
SECTIONS: dict[str, type] = {
    "data": DataConfig,
    "model": ModelConfig,
    "stage1": Stage1Config,
    "stage2": Stage2Config,
    "baselines": BaselineConfig,
}
#: The configuration's top-level scalar fields.
TOP_LEVEL_FIELDS = ("algorithm", "seed", "threads")
#: Every number field's range, per section (``""``: the top level). A field without an entry
#: is a string (its choices checked by the section's ``validate``) or a bool.
_WIDTH = Range(1, MAX_WIDTH)
_STEPS = Range(1, MAX_STEPS)
_BATCH = Range(1, MAX_BATCH_SIZE)
RANGES: dict[str, dict[str, Range]] = {
    "": {"seed": Range(0, MAX_SEED), "threads": Range(1, MAX_THREADS)},
    "model": {
        "hidden": _WIDTH,
        "representation": _WIDTH,
        "head_hidden": _WIDTH,
        "dropout": HALF_OPEN_UNIT,
        "head_dropout": HALF_OPEN_UNIT,
        "max_categories": Range(1, MAX_CATEGORIES),
    },
    "stage1": {
        "rounds": Range(1, MAX_ROUNDS),
        "local_steps": _STEPS,
        "local_lr": POSITIVE,
        "global_lr": POSITIVE,
        "batch_size": _BATCH,
        "epsilon": NON_NEGATIVE,
        "dp_epsilon": POSITIVE,
        "dp_delta": OPEN_UNIT,
        "dp_noise_multiplier": Range(MIN_NOISE_MULTIPLIER, MAX_NOISE_MULTIPLIER),
        "dp_clip": Range(MIN_CLIP, MAX_CLIP),
        "dp_noise_seed": Range(0, MAX_SEED),
    },
    "stage2": {
        "epochs": _STEPS,
        "lr": POSITIVE,
        "batch_size": _BATCH,
        "epsilon": NON_NEGATIVE,
        "patience": _STEPS,
        "weight_decay": NON_NEGATIVE,
        "backbone_lr_scale": CLOSED_UNIT,
        "prox": NON_NEGATIVE,
    },
    "baselines": {
        "local_epochs": _STEPS,
        "max_local_steps": _STEPS,
        "lr": POSITIVE,
        "weight_decay": NON_NEGATIVE,
        "batch_size": _BATCH,
        "prox_mu": NON_NEGATIVE,
        "pafnet_latent": _WIDTH,
        "pafnet_mask_init": ANY_FINITE,
        "pafnet_temperature": POSITIVE,
        "pafnet_self_weight": CLOSED_UNIT,
        "bound_epochs": _STEPS,
        "bound_patience": _STEPS,
    },
    "data": {
        # A federation has at least two clients (one client is the local bound's setting).
        "clients": Range(2, MAX_CLIENTS),
        "rho": OPEN_UNIT,
        "dirichlet_alpha": POSITIVE,
        # The dataset's own count is checked by DataConfig.validate.
        "objectives_per_client": Range(1, max(DATASET_OBJECTIVES.values())),
        "train_fraction": OPEN_UNIT,
        "val_fraction": HALF_OPEN_UNIT,
        "max_patients": Range(1, MAX_PATIENTS),
        "max_patients_per_client": Range(1, MAX_PATIENTS),
    },
}


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
