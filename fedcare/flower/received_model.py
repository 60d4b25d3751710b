"""The broadcast ``w*`` as a site keeps it: ``stage1/stage1.npz`` and ``stage1/stage1.json``.

Written by the site's ClientApp when the coordinator sends the final model
(:func:`store_final_model`); read back by the site's commands (``fedcare.sites.site_folder``),
through the rounds that sent it (``FederatedRounds.read_final_model``): a network's two
vectors here (:func:`read_stage1_arrays`), another model's in its method's folder, each checked
before it is used, a refusal naming the file and the array.
"""

from __future__ import annotations

import json
import os
import time
import zipfile
from collections.abc import Mapping
from pathlib import Path

import numpy as np

from fedcare.flower.site_messages import FinalModel
from fedcare.flower.tls import write_file
from fedcare_core.data.client_store import FILE_MODE, FOLDER_MODE
from fedcare_core.errors import ConfigError

#: The ``format`` of a site's kept Stage 1 document (``stage1/stage1.json``).
STAGE1_FORMAT = "fedcare-site-stage1/1"
STAGE1_ARRAYS = "stage1.npz"
STAGE1_DOC = "stage1.json"
#: A kept archive's members: exactly these two arrays.
STAGE1_ARRAY_NAMES = ("buffers", "params")


def store_final_model(stage1_dir: Path, final: FinalModel) -> None:
    """Keep the broadcast ``w*`` and its trace in ``stage1_dir`` (replacing an older one).

    The arrays are written first and the document last, each through a temporary file, so a
    reader sees either the old pair or the new one.
    """
    stage1_dir.mkdir(mode=FOLDER_MODE, exist_ok=True)
    tmp = stage1_dir / f".{STAGE1_ARRAYS}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, FILE_MODE)
    with os.fdopen(fd, "wb") as fh:
        np.savez(fh, params=final.params, buffers=final.buffers)
    os.replace(tmp, stage1_dir / STAGE1_ARRAYS)
    doc = {
        "format": STAGE1_FORMAT,
        "client_id": final.client_id,
        "seed": final.seed,
        "schema_digest": final.schema_digest,
        "objectives": list(final.objectives),
        "common_width": final.common_width,
        "rounds": final.rounds,
        "planned_rounds": final.planned_rounds,
        "clients": final.clients,
        "converged": final.converged,
        "run_name": final.run_name,
        "received_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    tmp = stage1_dir / f".{STAGE1_DOC}.tmp"
    write_file(tmp, (json.dumps(doc, indent=1) + "\n").encode(), FILE_MODE)
    os.replace(tmp, stage1_dir / STAGE1_DOC)


def read_stage1_arrays(path: Path, sizes: dict[str, int]) -> dict[str, np.ndarray]:
    """``w*``'s two vectors, checked: exactly ``params`` and ``buffers``, 1-D, float, finite.

    Parameters
    ----------
    path
        ``stage1/stage1.npz``.
    sizes
        The length each vector must have (from the model the schema describes).

    Raises
    ------
    ConfigError
        Naming the file and the array: not an archive of plain arrays, another set of arrays,
        another shape, length or type, or a NaN or infinite value.
    """
    where = f"the Stage 1 model's arrays {path}"
    limits = {n: (8 * size + 4_096, f"the model's {size:,}") for n, size in sizes.items()}
    arrays = stage1_archive(path, where, limits)
    for name, size in sizes.items():
        array = arrays[name]
        if array.ndim != 1 or array.dtype.kind != "f" or array.size != size:
            raise ConfigError(
                f"{where}: array {name!r} must be one vector of {size:,} floating-point numbers "
                f"(the model the schema describes), got shape {array.shape} of {array.dtype}"
            )
        bad = int(np.size(array) - np.count_nonzero(np.isfinite(array)))
        if bad:
            raise ConfigError(f"{where}: array {name!r} holds {bad:,} NaN or infinite value(s)")
        arrays[name] = array.astype(np.float32, copy=False)
    return arrays


def stage1_archive(
    path: Path, where: str, largest: Mapping[str, tuple[int, str]]
) -> dict[str, np.ndarray]:
    """The archive's ``params`` and ``buffers``, refused before decompressing if too large.

    Parameters
    ----------
    path
        ``stage1/stage1.npz``.
    where
        How a refusal names the file.
    largest
        By array name, the most bytes its member may hold and how a refusal says it.

    Raises
    ------
    ConfigError
        Not an archive of plain arrays, another set of arrays, or a member too large.
    """
    try:
        with zipfile.ZipFile(path) as archive:
            members = {info.filename: info.file_size for info in archive.infolist()}
        if sorted(members) != [f"{n}.npy" for n in STAGE1_ARRAY_NAMES]:
            raise ConfigError(
                f"{where}: must hold the arrays {' and '.join(STAGE1_ARRAY_NAMES)}, got "
                f"{', '.join(sorted(members)) or 'none'}"
            )
        for name, (limit, what) in largest.items():
            if members[f"{name}.npy"] > limit:  # before a byte is decompressed
                raise ConfigError(f"{where}: array {name!r} is larger than {what}")
        with np.load(path, allow_pickle=False) as npz:
            return {name: np.asarray(npz[name]) for name in STAGE1_ARRAY_NAMES}
    except (OSError, ValueError, EOFError, zipfile.BadZipFile) as exc:
        if isinstance(exc, ConfigError):
            raise
        detail = " ".join(str(exc).split())[:160]
        raise ConfigError(f"{where}: not an archive of plain NumPy arrays ({detail})") from None
