"""Stage 1 cached across flow runs: a retried flow run loads w* instead of training again.

The ``stage1`` task of a FedCARE / FedCARE-B run has a cache key (:class:`_Stage1CachePolicy`):
a SHA-256 of :func:`~fedcare_core.resume.keys.stage1_fingerprint` (model and Stage 1 settings,
seed, objectives, every client's training arrays), the backend that ran the rounds and the code
(every source file of ``fedcare_core``, and of ``fedcare.flower`` for a Flower backend, plus the
torch and numpy versions). Its result is persisted by Prefect under that key, so a flow run
retried after a failure in Stage 2, in the evaluation or in MLflow logging (Prefect's ``retries``,
``prefect flow-run retry``, or the deployment run again with the same parameters) finds the
record, and the task ends ``Cached`` with the stored result.

What is stored is the project's own ``.npz`` format (:func:`~fedcare_core.resume.checkpoint.
encode_result`: w*, its BatchNorm statistics, the round trace; no client rows), written by
:class:`Stage1Serializer` with the checkpoint writer into ``<folder>/results/`` (0700, files
0600, atomic); Prefect's JSON result record in ``<folder>/records/`` (0700) holds only a
reference to it (file name and SHA-256): no pickle at rest. Other algorithms' rounds
(baselines, bounds) get no key and are neither cached nor persisted.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any, Literal

from prefect.cache_policies import CachePolicy
from prefect.context import TaskRunContext
from prefect.serializers import Serializer
from prefect.settings import get_current_settings

from fedcare_core.algorithms import get_algorithm
from fedcare_core.algorithms.base import Rounds, RunInputs
from fedcare_core.config.backends import get_backend
from fedcare_core.files.atomic import write_atomic
from fedcare_core.resume import keys as resume_keys
from fedcare_core.resume.checkpoint import CheckpointError, decode_result, encode_result

#: The folder under ``PREFECT_HOME`` that holds the Stage 1 records when the flow names none.
_DEFAULT_FOLDER = "fedcare-stage1-cache"
#: Bumped when what a key covers changes (old records are then never matched).
_KEY_VERSION = resume_keys.CACHE_KEY_VERSION


class Stage1Serializer(Serializer):
    """Prefect serializer of a FedCARE rounds outcome: the project's ``.npz``, never a pickle.

    :meth:`dumps` writes the archive (:func:`~fedcare_core.resume.checkpoint.encode_result`) to
    ``folder`` with the checkpoint writer (atomic, mode 0600, folder 0700), named by its
    SHA-256, and gives Prefect only a reference (file name and digest) for its result record;
    :meth:`loads` reads the archive back and checks the digest. Only a
    :class:`~fedcare_core.algorithms.base.Rounds` without extra models (FedCARE's and
    FedCARE-B's) can be written; anything else raises ``TypeError``.

    Parameters
    ----------
    folder
        Where the archives live (recorded in Prefect's result record beside the reference).
    """

    type: Literal["fedcare-stage1-npz"] = "fedcare-stage1-npz"
    # A default, since the copy of a task run's state the Prefect API returns drops it.
    folder: str = ""

    def dumps(self, obj: Rounds) -> bytes:
        """Write the rounds' Stage 1 result to :attr:`folder`; the reference to it (JSON)."""
        if not isinstance(obj, Rounds) or obj.models:
            raise TypeError(f"only FedCARE's Stage 1 result can be stored, not {type(obj)}")
        data = encode_result(obj.stage1, _KEY_VERSION)
        digest = hashlib.sha256(data).hexdigest()
        name = f"{digest}.npz"
        write_atomic(_owner_only_folder(Path(self.folder)) / name, data)
        return json.dumps({"file": name, "sha256": digest}).encode()

    def loads(self, blob: bytes) -> Rounds:
        """The :class:`Rounds` back from the archive :meth:`dumps` referenced."""
        if not self.folder:
            raise CheckpointError("a Stage 1 result reference without its folder cannot be read")
        ref = json.loads(blob)
        path = Path(self.folder) / Path(str(ref["file"])).name
        data = path.read_bytes()
        if hashlib.sha256(data).hexdigest() != ref["sha256"]:
            raise CheckpointError(f"Stage 1 result {path} does not match its recorded digest")
        result, _ = decode_result(data, str(path))
        return Rounds(result)


def _owner_only_folder(folder: Path) -> Path:
    """``folder``, created if missing, its mode narrowed to 0700 (owner only)."""
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    os.chmod(folder, 0o700)
    return folder


def stage1_cache_key(inputs: RunInputs, backend: str) -> str | None:
    """The cache key of a run's rounds, or None when its algorithm's rounds are not cached.

    Parameters
    ----------
    inputs
        The run's inputs (federation and configuration).
    backend
        The backend that runs the rounds (``"local"``, ``"flower-sim"``, …).

    Returns
    -------
    str or None
        :func:`fedcare_core.resume.keys.stage1_cache_key` (see the module docstring); None for
        baselines and bounds.
    """
    if not get_algorithm(inputs.config.algorithm).runs_stage1:
        return None
    packages = get_backend(backend).packages()
    return resume_keys.stage1_cache_key(inputs.federation, inputs.config, backend, packages)


class _Stage1CachePolicy(CachePolicy):
    """The ``stage1`` task's key: :func:`stage1_cache_key` of its ``args`` and ``backend``."""

    def compute_key(
        self,
        task_ctx: TaskRunContext,
        inputs: dict[str, Any],
        flow_parameters: dict[str, Any],
        **kwargs: Any,
    ) -> str | None:
        """The key of the task run's inputs (``args[0]`` is the run's :class:`RunInputs`)."""
        args = inputs.get("args") or ()
        if not args or not isinstance(args[0], RunInputs):
            return None
        return stage1_cache_key(args[0], str(inputs.get("backend_name", "local")))


def cached_stage1_options(folder: Path) -> dict[str, Any]:
    """The ``stage1`` task's options that cache and persist its result under ``folder`` (0700)."""
    _owner_only_folder(folder)
    return {
        "cache_policy": _Stage1CachePolicy(),
        "persist_result": True,
        "result_storage": _owner_only_folder(folder / "records"),
        "result_serializer": Stage1Serializer(folder=str(folder / "results")),
    }


def cache_folder(folder: str | Path | None) -> Path:
    """Where the Stage 1 records live: ``folder``, else ``$PREFECT_HOME/fedcare-stage1-cache``."""
    if folder is not None:
        return Path(folder).expanduser().resolve()
    return (Path(get_current_settings().home).expanduser() / _DEFAULT_FOLDER).resolve()
