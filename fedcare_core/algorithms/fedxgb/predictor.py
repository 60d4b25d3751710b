"""A client's deployed fedxgb model: the federated trees on ``x_c``, its own on ``[x_c, x_u]``.

The trees travel inside the packaged model like a network's weights: each booster's UBJSON
bytes are a ``uint8`` buffer of :class:`TreeModels`, so ``state_dict``, the package and MLflow
treat them as they treat any model's.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import torch
import xgboost as xgb
from torch import nn

from fedcare_core.predict.predictors import ClientPredictor

__all__ = ["TreeInput", "TreeModels"]


def _buffer(raw: bytes) -> torch.Tensor:
    return (
        torch.frombuffer(bytearray(raw), dtype=torch.uint8).clone()
        if raw
        else torch.zeros(0, dtype=torch.uint8)
    )


class TreeModels(nn.Module):
    """Each objective's federated booster and, where the client kept some, its own trees.

    Parameters
    ----------
    objectives
        The client's objectives, in its order.
    federated, personal
        Objective → a booster's UBJSON bytes (personal: absent where the client kept none).
    """

    def __init__(
        self,
        objectives: Sequence[str],
        federated: Mapping[str, bytes],
        personal: Mapping[str, bytes],
    ) -> None:
        super().__init__()
        self.objectives = tuple(objectives)
        for i, objective in enumerate(self.objectives):
            self.register_buffer(f"federated_{i}", _buffer(federated.get(objective, b"")))
            self.register_buffer(f"personal_{i}", _buffer(personal.get(objective, b"")))
        self._boosters: dict[str, xgb.Booster | None] = {}

    def sizes(self) -> dict[str, list[int]]:
        """Every buffer's length in bytes (what rebuilding the module needs)."""
        return {
            part: [int(getattr(self, f"{part}_{i}").numel()) for i in range(len(self.objectives))]
            for part in ("federated", "personal")
        }

    def booster(self, part: str, objective: str) -> xgb.Booster | None:
        """The ``federated`` or ``personal`` booster of ``objective`` (None: there is none)."""
        name = f"{part}_{self.objectives.index(objective)}"
        if name not in self._boosters:
            raw = getattr(self, name)
            booster = None
            if raw.numel() > 0:
                booster = xgb.Booster()
                booster.load_model(bytearray(raw.numpy().tobytes()))
                booster.set_param({"nthread": 1})
            self._boosters[name] = booster
        return self._boosters[name]

    def _load_from_state_dict(self, *args: Any, **kwargs: Any) -> None:
        super()._load_from_state_dict(*args, **kwargs)
        self._boosters = {}

    def margin(self, x_common: np.ndarray, x_private: np.ndarray, objective: str) -> np.ndarray:
        """The federated margin, plus the client's own trees' where it kept some."""
        federated = self.booster("federated", objective)
        if federated is None:
            return np.zeros(len(x_common))
        margin = federated.predict(xgb.DMatrix(x_common, nthread=1), output_margin=True)
        personal = self.booster("personal", objective)
        if personal is not None:
            stacked = np.hstack([x_common, x_private]).astype(np.float32)
            matrix = xgb.DMatrix(stacked, base_margin=margin, nthread=1)
            margin = personal.predict(matrix, output_margin=True)
        return np.asarray(margin, dtype=np.float64)


class TreeInput(ClientPredictor):
    """fedxgb's model at one client; its risks carry no class weight (trees train unweighted)."""

    kind = "trees"
    class_weighted = False

    def __init__(self, model: TreeModels, kinds: Mapping[str, str], private_dim: int) -> None:
        spec = {"private_dim": int(private_dim), "tree_bytes": model.sizes()}
        super().__init__(model, model.objectives, kinds, spec)

    def raw(self, x_common: torch.Tensor, x_private: torch.Tensor, objective: str) -> torch.Tensor:
        """The trees' margin of ``objective`` (log-odds, or log1p-days)."""
        network: TreeModels = self.network  # type: ignore[assignment]
        margin = network.margin(
            x_common.numpy().astype(np.float32), x_private.numpy().astype(np.float32), objective
        )
        return torch.from_numpy(margin)

    def uncalibrated(
        self, x_common: torch.Tensor, x_private: torch.Tensor, objective: str
    ) -> np.ndarray:
        """Probability (sigmoid of the margin), or days (``expm1`` of the margin, at least 0)."""
        margin = self.raw(x_common, x_private, objective).numpy()
        if self.kinds[self.objectives.index(objective)] == "binary":
            return np.asarray(1.0 / (1.0 + np.exp(-margin)), dtype=np.float64)
        return np.asarray(np.expm1(np.maximum(margin, 0.0)), dtype=np.float64)

    @classmethod
    def rebuild(cls, spec: Mapping[str, Any]) -> TreeInput:
        """Empty buffers of ``spec``'s sizes (the weights fill them)."""
        objectives = list(spec["objectives"])
        sizes = spec["tree_bytes"]
        parts = {
            part: {o: bytes(n) for o, n in zip(objectives, sizes[part], strict=True) if n}
            for part in ("federated", "personal")
        }
        model = TreeModels(objectives, parts["federated"], parts["personal"])
        return cls(model, spec["kinds"], spec["private_dim"])
