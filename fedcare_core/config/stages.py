"""The model and the two stages' sections of the configuration (SPEC §2, Algorithms 1 and 2).

Defaults follow the paper (§V-A) and ``SPEC.md``: η_l = 0.001, η_g = 0.01, T = 100 rounds,
τ = 5 local steps. Every choice the paper leaves open is a field here, declared once with
:func:`~fedcare_core.config.settings.setting`.
"""

from __future__ import annotations

from dataclasses import dataclass

from fedcare_core.config.fields import (
    CLOSED_UNIT,
    HALF_OPEN_UNIT,
    NON_NEGATIVE,
    OPEN_UNIT,
    POSITIVE,
    Range,
)
from fedcare_core.config.limits import (
    BATCH,
    MAX_CATEGORIES,
    MAX_ROUNDS,
    NORMALISATIONS,
    QP_SCOPES,
    SEEDS,
    SERVER_OPTIMIZERS,
    SOLVERS,
    STAGE2_HEAD_INITS,
    STAGE2_OPTIMIZERS,
    STEPS,
    WIDTH,
)
from fedcare_core.config.settings import check_section, setting
from fedcare_core.errors import ConfigError
from fedcare_core.privacy.accountants import ACCOUNTANTS, MAX_NOISE_MULTIPLIER
from fedcare_core.privacy.mechanism import (
    MAX_CLIP,
    MIN_CLIP,
    MIN_NOISE_MULTIPLIER,
    DpSettings,
    resolve_dp,
)

_MODEL = "model"
_STAGE1 = "stage 1 (federated rounds)"
_DP = "client-level differential privacy of the rounds (docs/PRIVACY.md)"
#: The DP settings that turn it on: the others (δ, C, the accountant, the noise seed) need one.
_DP_ON = ("dp_epsilon", "dp_noise_multiplier")
_DP_OFF = "differential privacy is off, so the rounds add no noise and report no (ε, δ)"
_STAGE2 = "stage 2 (personalisation)"


@dataclass(frozen=True)
class ModelConfig:
    """Network widths and dropout (SPEC §2)."""

    hidden: int = setting(
        128, help="width of the backbone's hidden layer", range=WIDTH, group=_MODEL
    )
    representation: int = setting(
        64, help="width of the shared representation (the backbone's output)", range=WIDTH,
        group=_MODEL,
    )  # fmt: skip
    head_hidden: tuple[int, int] = setting(
        (64, 32), help="widths of each objective head's two hidden layers", range=WIDTH,
        group=_MODEL,
    )  # fmt: skip
    dropout: float = setting(0.3, help="backbone dropout", range=HALF_OPEN_UNIT, group=_MODEL)
    head_dropout: float = setting(0.3, help="heads' dropout", range=HALF_OPEN_UNIT, group=_MODEL)
    max_categories: int = setting(
        20,
        help="vocabulary cap for undeclared (client-local) categorical features",
        range=Range(1, MAX_CATEGORIES),
        group=_MODEL,
    )

    def validate(self) -> None:
        """Raise :class:`ConfigError` on an invalid value."""
        check_section(self, "model")


@dataclass(frozen=True)
class Stage1Config:
    """Algorithm 1 (federated multi-objective training of the backbone).

    ``server_optimizer="sgd"`` is the paper's eq. 11 (``w ← w − η_g d``). ``"adam"`` treats the
    min-norm direction ``d`` as a pseudo-gradient for a server-side Adam (FedOpt, Reddi et al.
    2021) with learning rate ``global_lr``; it is an option, not the default.

    Client-level differential privacy (:mod:`fedcare_core.privacy.mechanism`) is off unless
    ``dp_epsilon`` or ``dp_noise_multiplier`` is set. ``secagg`` sums the rounds with Flower's
    SecAgg+ (:mod:`fedcare.flower.secagg_server`): the server only ever holds per-objective sums
    of the clients' pre-weighted updates (:mod:`fedcare_core.stage1.secure_sums`); Flower backends
    only.
    """

    rounds: int = setting(
        100, help="Stage 1 rounds T", range=Range(1, MAX_ROUNDS), flag="rounds", group=_STAGE1
    )
    local_steps: int = setting(
        5, help="local steps τ per objective per round", range=STEPS, flag="local-steps",
        group=_STAGE1,
    )  # fmt: skip
    local_lr: float = setting(
        1e-3, help="local learning rate η_l", range=POSITIVE, flag="local-lr", group=_STAGE1
    )
    global_lr: float = setting(
        1e-2, help="global learning rate η_g", range=POSITIVE, flag="global-lr", group=_STAGE1
    )
    batch_size: int = setting(
        256, help="mini-batch rows of a local step", range=BATCH, flag="batch-size", group=_STAGE1
    )
    epsilon: float = setting(
        1e-8, help="Pareto-stationarity threshold ε of ‖d‖²", range=NON_NEGATIVE, group=_STAGE1
    )
    solver: str = setting(
        "exact",
        help="min-norm solver of both stages: exact (closed form / Wolfe) or the paper's SLSQP",
        choices=SOLVERS,
        noun="solver",
        flag="solver",
        also_sets=("stage2.solver",),
        group=_STAGE1,
    )
    normalise: str = setting(
        "none",
        help="gradient normalisation for the QP (none: the paper)",
        choices=NORMALISATIONS,
        noun="normalise",
        flag="normalise",
        group=_STAGE1,
    )
    qp_scope: str = setting(
        "full",
        help="λ* from all parameters (full: the paper) or the backbone's only",
        choices=QP_SCOPES,
        noun="qp_scope",
        flag="qp-scope",
        group=_STAGE1,
    )
    server_optimizer: str = setting(
        "sgd",
        help="the server step: sgd (eq. 11) or adam on the min-norm direction (FedOpt)",
        choices=SERVER_OPTIMIZERS,
        noun="server_optimizer",
        flag="server-optimizer",
        group=_STAGE1,
    )
    dp_epsilon: float | None = setting(
        None,
        help="privacy budget ε: the noise multiplier is derived so that the run's rounds spend "
        "at most this much (with --dp-noise-multiplier: refuse a run that would exceed it)",
        range=POSITIVE,
        flag="dp-epsilon",
        group=_DP,
    )
    dp_delta: float = setting(
        1e-5, help="δ of the reported (ε, δ)", range=OPEN_UNIT, flag="dp-delta", group=_DP,
        needs=_DP_ON, needs_why=_DP_OFF,
    )  # fmt: skip
    dp_noise_multiplier: float | None = setting(
        None,
        help="noise multiplier z: Gaussian noise of standard deviation z·C on every "
        "per-objective sum, each round (ε is reported after every round)",
        range=Range(MIN_NOISE_MULTIPLIER, MAX_NOISE_MULTIPLIER),
        flag="dp-noise-multiplier",
        group=_DP,
    )
    dp_clip: float = setting(
        1.0,
        help="C: the bound on the L2 norm of everything one client sends in a round, all its "
        "objectives' updates together",
        range=Range(MIN_CLIP, MAX_CLIP),
        flag="dp-clip",
        group=_DP,
        needs=_DP_ON,
        needs_why=_DP_OFF,
    )
    dp_accountant: str = setting(
        "pld",
        help="whose ε the run reports and its budget binds: pld (the exact privacy-loss "
        "distribution of the Gaussian rounds) or rdp (Rényi DP, looser); results report both",
        choices=ACCOUNTANTS,
        noun="dp_accountant",
        flag="dp-accountant",
        group=_DP,
        needs=_DP_ON,
        needs_why=_DP_OFF,
    )
    dp_noise_seed: int | None = setting(
        None,
        help="seed the noise (a reproducible research run; anyone with the seed can remove the "
        "noise, so never for a model you release); none: fresh OS entropy",
        range=SEEDS,
        flag="dp-noise-seed",
        group=_DP,
        needs=_DP_ON,
        needs_why=_DP_OFF,
    )
    secagg: bool = setting(
        False,
        help="sum each round with Flower's SecAgg+ (flower-sim, flower-deployment; Algorithm 1's "
        "methods): the server only ever holds per-objective sums (docs/PRIVACY.md)",
        flag="secagg",
        group=_STAGE1,
        in_schema=False,
    )

    def validate(self) -> None:
        """Raise :class:`ConfigError` on an invalid value (a DP budget the rounds exceed too)."""
        check_section(self, "stage1")
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
            accountant=self.dp_accountant,
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

    epochs: int = setting(
        40, help="Stage 2 epochs per client", range=STEPS, flag="stage2-epochs", group=_STAGE2
    )
    lr: float = setting(1e-3, help="Stage 2 learning rate η_p", range=POSITIVE, group=_STAGE2)
    batch_size: int = setting(256, help="Stage 2 mini-batch rows", range=BATCH, group=_STAGE2)
    epsilon: float = setting(
        1e-10, help="Stage 2 stationarity threshold", range=NON_NEGATIVE, group=_STAGE2
    )
    optimizer: str = setting(
        "adam",
        help="Stage 2 step: adam, or sgd (eq. 15 literally)",
        choices=STAGE2_OPTIMIZERS,
        noun="stage2 optimizer",
        group=_STAGE2,
    )
    patience: int = setting(
        6, help="epochs without validation improvement that end Stage 2", range=STEPS,
        group=_STAGE2,
    )  # fmt: skip
    weight_decay: float = setting(
        1e-5, help="Stage 2 weight decay", range=NON_NEGATIVE, group=_STAGE2
    )
    solver: str = setting(
        "exact", help="Stage 2's min-norm solver", choices=SOLVERS, noun="solver", group=_STAGE2
    )
    backbone_lr_scale: float = setting(
        1.0,
        help="Stage 2's backbone learning rate as a share of its lr (0 freezes the backbone "
        "at w*; 1: the paper)",
        range=CLOSED_UNIT,
        flag="stage2-backbone-lr-scale",
        metavar="S",
        group=_STAGE2,
    )
    prox: float = setting(
        0.0,
        help="Stage 2 pull of the backbone toward w*: adds MU/2·‖w_b − w*_b‖²",
        range=NON_NEGATIVE,
        flag="stage2-prox",
        metavar="MU",
        group=_STAGE2,
    )
    head_init: str = setting(
        "fresh",
        help="Stage 2's personal heads start fresh (the paper) or as w*'s heads with zero "
        "private-input weights; 'global' also keeps w* when no epoch improves validation",
        choices=STAGE2_HEAD_INITS,
        noun="head initialisation",
        flag="stage2-head-init",
        group=_STAGE2,
    )

    def validate(self) -> None:
        """Raise :class:`ConfigError` on an invalid value."""
        check_section(self, "stage2")
