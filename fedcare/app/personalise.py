"""Stage 2 at a site, from the ``w*`` its federation broadcast, as a prepared run.

``fedcare site personalise`` runs Stage 2 with no communication: it starts from the ``w*`` the
coordinator broadcast at the end of Stage 1 (kept in the site folder) and fine-tunes and
evaluates the site's own model, exactly as an in-process run over the same sites
(``fedcare run --sites``) does for that site. The run service executes it like any other run;
its document reports the site's own objectives and the site.
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fedcare.app.run import PreparedRun
from fedcare.sites.site_folder import SiteFolder, read_final_model
from fedcare_core.run.results import DataProvenance
from fedcare_core.sites.client import single_site_federation

#: ``document["stage1"]["backend"]`` of a site's run: Stage 1 ran in the federation.
FEDERATION_BACKEND = "federation"


@dataclass(frozen=True)
class _SiteRun:
    """A site's personalisation, ready to execute, and what names its tracked model.

    Parameters
    ----------
    prepared
        The run: the site as the only client, Stage 1's result the broadcast ``w*``.
    name, dataset, algorithm
        The site's name, the schema's dataset and algorithm.
    """

    prepared: PreparedRun
    name: str
    dataset: str
    algorithm: str


def prepare_personalisation(site_dir: Path) -> _SiteRun:
    """The site folder's personalisation run, from its data and the broadcast ``w*``.

    Raises
    ------
    ConfigError
        For a folder that is not a site folder, or no ``w*`` yet (or one computed for another
        schema).
    """
    t0 = time.perf_counter()
    site = SiteFolder.open(site_dir)
    schema, info = site.schema(), site.info()
    received = read_final_model(site, schema.config.model)
    client = dataclasses.replace(site.client(), client_id=received.client_id)
    config = schema.run_config(
        seed=received.seed, clients=received.clients, rounds=received.planned_rounds
    )
    federation = single_site_federation(schema, client, received.result.objectives)
    site_block = {
        "name": info["name"],
        "client_id": received.client_id,
        "run_name": received.run_name,
        "schema_digest": received.schema_digest,
        "objectives": list(client.objectives),
    }

    def site_document(document: dict[str, Any]) -> dict[str, Any]:
        # The model has a head per objective of the federation; the site is evaluated on its own.
        document["objectives"] = {
            name: report
            for name, report in document["objectives"].items()
            if name in client.objectives
        }
        document["site"] = site_block
        return document

    prepared = PreparedRun(
        config,
        federation,
        DataProvenance(str(info["source_sha256"])),
        time.perf_counter() - t0,
        FEDERATION_BACKEND,
        stage1=received.result,
        shape_document=site_document,
    )
    return _SiteRun(prepared, str(info["name"]), schema.dataset, schema.config.algorithm)
