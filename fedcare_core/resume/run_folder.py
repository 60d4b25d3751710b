"""A run folder: what ``fedcare run --run-dir`` keeps so that ``--resume`` can finish the run.

Layout (the folder is owner-only, 0700; every file 0600, written atomically)::

    DIR/config.json             the full ExperimentConfig, where its data came from and, for a
                                Flower backend, the backend and its options
    DIR/stage1-checkpoint.npz   FedCARE / FedCARE-B: the state after the last Stage 1 round
    DIR/results.json            the result document, once the run is complete

``config.json`` is written once, before training starts; the checkpoint after every Stage 1
round (:mod:`fedcare_core.resume.checkpoint`); ``results.json`` last, so its presence means the run
is complete.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from fedcare_core.algorithms import get_algorithm, validate_config
from fedcare_core.config import ExperimentConfig
from fedcare_core.errors import DataError, FedcareError
from fedcare_core.files.atomic import write_atomic, write_json_atomic
from fedcare_core.files.output_paths import check_output_dir
from fedcare_core.resume.checkpoint import CheckpointedStage1

#: The ``format`` of ``config.json``; another value is refused.
_RUN_FORMAT = "fedcare-run/1"
_CONFIG_FILE = "config.json"
CHECKPOINT_FILE = "stage1-checkpoint.npz"
RESULTS_FILE = "results.json"
#: Owner-only permissions of the folder.
FOLDER_MODE = 0o700


@dataclass(frozen=True)
class RunData:
    """Where a run's data came from, so a resumed run reloads and re-checks the same file.

    Parameters
    ----------
    path
        The dataset file or folder the run loaded (absolute).
    verify_checksum
        Whether the published checksum was checked (False: ``--no-verify``).
    sha256
        The source file's SHA-256 as loaded; a resumed run's data must match it.
    """

    path: str
    verify_checksum: bool
    sha256: str


@dataclass(frozen=True)
class RunBackend:
    """Where a run's Stage 1 runs, so a resumed run uses the same backend and options.

    Parameters
    ----------
    name
        The ``--backend`` (``local``, ``flower-sim``, ``flower-deployment``).
    options
        The Flower options the run was given (``FlowerConfig`` fields; JSON values).
    """

    name: str
    options: dict[str, Any]


class RunFolder:
    """One run's folder (see the module docstring for its layout).

    Parameters
    ----------
    root
        The folder.
    """

    def __init__(self, root: Path) -> None:
        self.root = Path(root)

    @property
    def config_path(self) -> Path:
        """``config.json``."""
        return self.root / _CONFIG_FILE

    @property
    def checkpoint_path(self) -> Path:
        """``stage1-checkpoint.npz``."""
        return self.root / CHECKPOINT_FILE

    @property
    def results_path(self) -> Path:
        """``results.json``."""
        return self.root / RESULTS_FILE

    @classmethod
    def create(cls, root: Path) -> RunFolder:
        """A new, empty, owner-only run folder (an existing empty folder is taken over).

        Raises
        ------
        FedcareError
            If ``root`` is a file or a folder that is not empty.
        """
        root = cls.check_new(root)
        root.mkdir(mode=FOLDER_MODE, parents=True, exist_ok=True)
        os.chmod(root, FOLDER_MODE)
        return cls(root)

    @staticmethod
    def check_new(root: Path, what: str = "--run-dir") -> Path:
        """Check, creating nothing, that :meth:`create` can make ``root``; return it.

        Called before any work, so that a run folder is made only once the data checks pass
        and a bad location is refused before them.

        Raises
        ------
        FedcareError
            If ``root`` is a file or a folder that is not empty, or it (or the missing folders
            above it) cannot be created or written in.
        """
        root = Path(root)
        if root.exists() and (not root.is_dir() or any(root.iterdir())):
            raise FedcareError(
                f"run folder {root} already exists and is not empty: resume it with "
                f"--resume {root}, or choose a new folder"
            )
        check_output_dir(root, what)
        return root

    @classmethod
    def open(cls, root: Path) -> RunFolder:
        """An existing run folder (one holding ``config.json``).

        Raises
        ------
        FedcareError
            If ``root`` is not a folder or holds no ``config.json``.
        """
        folder = cls(Path(root))
        if not folder.root.is_dir():
            raise FedcareError(f"cannot resume {root}: no such folder")
        if not folder.config_path.is_file():
            raise FedcareError(
                f"cannot resume {root}: it holds no {_CONFIG_FILE} (not a run folder, or the run "
                "was killed before it started; start it again with --run-dir)"
            )
        return folder

    def write_config(
        self, config: ExperimentConfig, data: RunData, backend: RunBackend | None = None
    ) -> None:
        """Record the run's full configuration, its data's location and checksum, its backend.

        Parameters
        ----------
        config, data
            The configuration and where the data came from.
        backend
            Where Stage 1 runs, when not in process (the ``--backend`` and its options).
        """
        document: dict[str, Any] = {
            "format": _RUN_FORMAT,
            "config": asdict(config),
            "data": asdict(data),
        }
        if backend is not None:
            document["backend"] = asdict(backend)
        write_atomic(self.config_path, (json.dumps(document, indent=2) + "\n").encode())

    def read_config(self) -> tuple[ExperimentConfig, RunData]:
        """The recorded configuration (validated) and data.

        Raises
        ------
        FedcareError
            If ``config.json`` is unreadable, of another format, or holds an invalid configuration.
        """
        where = self.config_path
        try:
            raw = json.loads(where.read_text())
            if raw.get("format") != _RUN_FORMAT:
                raise ValueError(f"format {raw.get('format')!r}, expected {_RUN_FORMAT!r}")
            config = validate_config(ExperimentConfig.from_dict(raw["config"]))
            d = raw["data"]
            data = RunData(str(d["path"]), bool(d["verify_checksum"]), str(d["sha256"]))
        except FedcareError as exc:
            raise FedcareError(f"{where} holds an invalid configuration: {exc}") from None
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
            raise FedcareError(f"{where} is not a valid run configuration: {exc}") from None
        return config, data

    def read_backend(self) -> RunBackend:
        """The recorded backend (``local`` for a folder that records none).

        Raises
        ------
        FedcareError
            If ``config.json``'s backend entry is malformed.
        """
        try:
            raw = json.loads(self.config_path.read_text()).get("backend")
            if raw is None:
                return RunBackend("local", {})
            if not isinstance(raw["options"], dict):
                raise TypeError("options is not an object")
            return RunBackend(str(raw["name"]), dict(raw["options"]))
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
            raise FedcareError(f"{self.config_path} holds an invalid backend: {exc}") from None

    def check_data(self, recorded: RunData, sha256: str) -> None:
        """Refuse data that is not the file the run started with.

        Raises
        ------
        DataError
            If the reloaded source's SHA-256 differs from the recorded one.
        """
        if sha256 != recorded.sha256:
            raise DataError(
                f"the data changed since the run started (SHA-256 {sha256}, recorded "
                f"{recorded.sha256} in {self.config_path}); cannot resume",
                file=recorded.path,
            )

    def is_complete(self) -> bool:
        """Whether the run finished (``results.json`` exists)."""
        return self.results_path.is_file()

    def write_results(self, document: dict[str, Any]) -> None:
        """Write the result document (NaN and infinities as null, like ``--out``)."""
        write_json_atomic(self.results_path, document)

    def read_results(self) -> dict[str, Any]:
        """The result document of a complete run."""
        document: dict[str, Any] = json.loads(self.results_path.read_text())
        return document

    def stage1_runner(
        self, algorithm: str, say: Callable[[str], None] | None = None
    ) -> CheckpointedStage1 | None:
        """The checkpointing Stage 1 runner for ``algorithm`` (None: it has no Stage 1 loop).

        Only FedCARE and FedCARE-B run :func:`~fedcare_core.stage1.loop.run_stage1`; another
        algorithm's run folder keeps its configuration and results, and a resumed run of it
        starts again from the beginning (to the same results: every run is deterministic).
        """
        if not get_algorithm(algorithm).runs_stage1:
            return None
        return CheckpointedStage1(self.checkpoint_path, say)
