"""The broadcast ``w*`` as a site keeps it: ``stage1/stage1.npz`` and ``stage1/stage1.json``.

Written by the site's ClientApp when the coordinator sends the final model
(:func:`store_final_model`); read back by the site's commands (``fedcare.sites.site_folder``).
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import numpy as np

from fedcare.flower.site_messages import FinalModel
from fedcare.flower.tls import write_file
from fedcare_core.data.client_store import FILE_MODE, FOLDER_MODE

#: The ``format`` of a site's kept Stage 1 document (``stage1/stage1.json``).
STAGE1_FORMAT = "fedcare-site-stage1/1"
STAGE1_ARRAYS = "stage1.npz"
STAGE1_DOC = "stage1.json"


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
