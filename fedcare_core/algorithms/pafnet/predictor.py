"""PAFNet's deployed model: the client's own network over its features ``[x_c, x_u]``.

Declared as the ``own`` entry of the ``fedcare.predictors`` group, so a package of it is
rebuilt (:func:`fedcare_core.predict.package.load_package`) without the package reader
naming PAFNet.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch

from fedcare_core.algorithms.pafnet.model import PafnetClientModel
from fedcare_core.config import ModelConfig
from fedcare_core.predict.predictors import ClientPredictor, config_dict, config_from


class OwnInput(ClientPredictor):
    """PAFNet's client model over the client's own features ``[x_c, x_u]``."""

    kind = "own"

    def __init__(
        self,
        model: PafnetClientModel,
        kinds: Mapping[str, str],
        config: ModelConfig,
        *,
        latent: int,
    ) -> None:
        spec = {
            "in_dim": model.in_dim,
            "heads": list(model.body.objectives),
            "model": config_dict(config),
            "latent": int(latent),
        }
        super().__init__(model, model.own_objectives, kinds, spec)

    def raw(self, x_common: torch.Tensor, x_private: torch.Tensor, objective: str) -> torch.Tensor:
        """The client's PAFNet head of ``objective``."""
        out: torch.Tensor = self.network(torch.cat([x_common, x_private], dim=1), objective)
        return out

    @classmethod
    def rebuild(cls, spec: Mapping[str, Any]) -> OwnInput:
        """An untrained predictor of ``spec``'s shape."""
        config = config_from(spec["model"])
        model = PafnetClientModel(
            spec["in_dim"], spec["heads"], spec["objectives"], config, spec["latent"]
        )
        return cls(model, spec["kinds"], config, latent=spec["latent"])
