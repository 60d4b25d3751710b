"""Fingerprints: what a resumable piece of work depends on, so that only its own is reused.

Every way the project resumes or reuses work keys it here: a Stage 1 checkpoint and a run
folder record :func:`stage1_fingerprint` (settings, seed, training arrays) and refuse another
run's; the Prefect flow's Stage 1 cache keys a finished Stage 1 by :func:`stage1_cache_key`
(the fingerprint, the backend and the code); a grid keeps its cell documents under
:func:`base_fingerprint` of its base configuration (:mod:`fedcare_core.resume.documents`).
"""

from __future__ import annotations

import hashlib
import importlib
import json
from collections.abc import Sequence
from dataclasses import asdict, replace
from pathlib import Path

import numpy as np

from fedcare_core.config import ExperimentConfig, ModelConfig, Stage1Config
from fedcare_core.data.clients import Federation

#: Bumped when what a Stage 1 cache key covers changes (old records are then never matched).
CACHE_KEY_VERSION = "fedcare-stage1-cache/1"


def stage1_fingerprint(
    federation: Federation, model_config: ModelConfig, config: Stage1Config, seed: int
) -> str:
    """SHA-256 of everything Stage 1's result depends on: settings, seed and training data.

    Parameters
    ----------
    federation
        The clients (their ids, objectives and training arrays are hashed).
    model_config, config, seed
        The architecture, Stage 1 settings and seed.

    Returns
    -------
    str
        The hex digest a checkpoint records and a resumed run checks.
    """
    settings = {
        "model": asdict(model_config),
        "stage1": asdict(config),
        "seed": seed,
        "objectives": list(federation.objective_names),
        "common_width": federation.common_width,
        "clients": [[c.client_id, list(c.objectives)] for c in federation.clients],
    }
    h = hashlib.sha256(json.dumps(settings, sort_keys=True).encode())
    for c in federation.clients:
        for arr in (c.train.x_common, c.train.y):
            h.update(str(arr.dtype).encode() + str(arr.shape).encode())
            h.update(np.ascontiguousarray(arr).tobytes())
    return h.hexdigest()


def base_fingerprint(base: ExperimentConfig) -> str:
    """A short hash of everything in ``base`` that a cell does not replace.

    Cell documents live under ``<out>/cells/<fingerprint>/``, so a grid run with other rounds,
    learning rates or a subsample never reuses another configuration's documents.
    """
    neutral = replace(
        base, algorithm="fedcare", seed=0, data=replace(base.data, clients=10, rho=None)
    )
    text = json.dumps(asdict(neutral), sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def _code_digest(packages: Sequence[str]) -> str:
    """SHA-256 over every ``.py`` file of the named top-level packages (sorted by path)."""
    h = hashlib.sha256()
    for name in packages:
        root = Path(importlib.import_module(name).__file__ or "").parent
        for path in sorted(root.rglob("*.py")):
            h.update(str(path.relative_to(root.parent)).encode())
            h.update(path.read_bytes())
    return h.hexdigest()


def stage1_cache_key(
    federation: Federation, config: ExperimentConfig, backend: str, packages: Sequence[str]
) -> str:
    """The key of a finished Stage 1: its fingerprint, the backend and the code that ran it.

    Parameters
    ----------
    federation, config
        The run's clients and configuration.
    backend
        The backend that runs the rounds (``"local"``, ``"flower-sim"``, …).
    packages
        The top-level packages whose source the result depends on (the core, and the backend's
        own: its :meth:`~fedcare_core.config.backends.BackendSpec.packages`).

    Returns
    -------
    str
        A SHA-256 hex digest over the fingerprint, the backend, every source file of
        ``packages`` and the fedcare, torch and numpy versions.
    """
    import torch

    import fedcare_core

    fields = {
        "version": CACHE_KEY_VERSION,
        "fedcare": fedcare_core.__version__,
        "stage1": stage1_fingerprint(federation, config.model, config.stage1, config.seed),
        "backend": backend,
        "code": _code_digest(["fedcare_core", *packages]),
        "torch": torch.__version__,
        "numpy": np.__version__,
    }
    return hashlib.sha256(json.dumps(fields, sort_keys=True).encode()).hexdigest()
