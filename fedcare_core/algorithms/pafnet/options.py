"""PAFNet's own settings (the ``fedcare.options`` entry)."""

from __future__ import annotations

from dataclasses import dataclass

from fedcare_core.config.fields import ANY_FINITE, CLOSED_UNIT, POSITIVE
from fedcare_core.config.limits import WIDTH
from fedcare_core.config.method_options import MethodOptions
from fedcare_core.config.sections import BASELINES_GROUP
from fedcare_core.config.settings import setting

#: Which model a PAFNet client deploys.
PAFNET_DEPLOY = ("best-val", "last")


@dataclass(frozen=True)
class PafnetOptions(MethodOptions):
    """PAFNet's latent space, masks, peer attention and deployed model."""

    pafnet_latent: int = setting(
        64, help="width of PAFNet's common latent space", range=WIDTH, group=BASELINES_GROUP
    )
    pafnet_mask_init: float = setting(
        0.0, help="PAFNet's initial mask score s (a mask is 2·sigmoid(s); 0: mask 1)",
        range=ANY_FINITE, group=BASELINES_GROUP,
    )  # fmt: skip
    pafnet_temperature: float = setting(
        0.05, help="PAFNet's peer-attention temperature on the cosine similarity of updates",
        range=POSITIVE, group=BASELINES_GROUP,
    )  # fmt: skip
    pafnet_self_weight: float = setting(
        0.5, help="share of a PAFNet client's own model in its aggregate", range=CLOSED_UNIT,
        group=BASELINES_GROUP,
    )  # fmt: skip
    pafnet_deploy: str = setting(
        "best-val",
        help="which model a PAFNet client deploys: best-val (lowest validation loss) or last",
        choices=PAFNET_DEPLOY,
        noun="pafnet_deploy",
        group=BASELINES_GROUP,
    )
