"""fedxgb's broadcast trees as a site reads them back: ``stage1/stage1.npz`` checked."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np

from fedcare.flower.received_model import stage1_archive
from fedcare_core.errors import ConfigError

#: The largest trees archive a site reads (before a byte is decompressed).
_MAX_TREES_BYTES = 256 * 1024 * 1024


def read_stage1_trees(
    path: Path, objectives: Sequence[str], kinds: Mapping[str, str]
) -> dict[str, np.ndarray]:
    """Fedxgb's broadcast trees, checked: uint8 bytes that unpack to ensembles of ``objectives``.

    Parameters
    ----------
    path
        ``stage1/stage1.npz``.
    objectives
        The objectives the broadcast names (every ensemble must be one of them).
    kinds
        Objective → kind (the schema's).

    Raises
    ------
    ConfigError
        Naming the file and the array: not an archive of plain arrays, another set or type of
        arrays, too large, or bytes that are not the trees of the run's objectives.
    """
    from fedcare_core.algorithms.fedxgb.bundle import unpack_bytes

    where = f"the Stage 1 trees {path}"
    arrays = stage1_archive(
        path, where, {"params": (_MAX_TREES_BYTES, f"{_MAX_TREES_BYTES:,} bytes")}
    )
    params = arrays["params"]
    if params.ndim != 1 or params.dtype != np.uint8 or arrays["buffers"].size != 0:
        raise ConfigError(
            f"{where}: array 'params' must be the trees' bytes (1-D uint8) and 'buffers' empty, "
            f"got {params.dtype} of shape {params.shape} and {arrays['buffers'].size} buffer(s)"
        )
    from xgboost.core import XGBoostError

    try:
        trees = unpack_bytes(params, kinds)
        for ensemble in trees.ensembles.values():
            ensemble.booster()  # XGBoost reads every tree: a malformed one is refused here
    except (ValueError, KeyError, TypeError, UnicodeDecodeError, XGBoostError) as exc:
        detail = " ".join(str(exc).split("Stack trace")[0].split())[:160]  # XGBoost's: no trace
        raise ConfigError(f"{where}: array 'params' is not a trees bundle ({detail})") from None
    stray = sorted(set(trees.ensembles) - set(objectives))
    if stray:
        raise ConfigError(f"{where}: trees of objectives the broadcast does not name: {stray}")
    return {"params": params, "buffers": arrays["buffers"].astype(np.float32)}
