"""``fedcare site prepare`` and ``fedcare site personalise``: a hospital's own steps.

``prepare`` checks the hospital's file against the federation's schema and writes the site
folder (:mod:`fedcare.flower.site_folder`): every option is checked before any row is read, and
a file that fails its checks leaves nothing behind. ``personalise`` is Stage 2 at the site,
with no communication: it starts from the ``w*`` the coordinator broadcast at the end of Stage 1
(kept in the site folder) and fine-tunes and evaluates the site's own model, exactly as an
in-process run over the same sites (``fedcare run --sites``) does for that site.
"""

from __future__ import annotations

import argparse
import dataclasses
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from fedcare.cli import tracked
from fedcare_core.errors import ConfigError
from fedcare_core.output_paths import check_output_dir, check_output_file

if TYPE_CHECKING:
    pass

#: ``document["stage1"]["backend"]`` of a site's run: Stage 1 ran in the federation.
FEDERATION_BACKEND = "federation"
#: ``fedcare.entry`` of a site's tracked run.
PERSONALISE_ENTRY = "fedcare site personalise"


def add_prepare_parser(site_sub: Any) -> None:
    """``fedcare site prepare``'s options."""
    prepare = site_sub.add_parser(
        "prepare",
        help="check this hospital's file against the federation schema; write the site folder",
        description="Check and encode the hospital's file against federation.json into a new "
        "site folder (owner-only) with the site's node key pair and its public site card.",
    )
    prepare.add_argument(
        "--schema", type=Path, required=True, metavar="federation.json",
        help="the federation's schema (`fedcare federation init`)",
    )  # fmt: skip
    prepare.add_argument(
        "--data", type=Path, required=True, metavar="FILE",
        help="the hospital's export in the dataset's layout (Diabetes 130: a CSV like "
        "diabetic_data.csv; MIMIC-III: its folder of tables)",
    )  # fmt: skip
    prepare.add_argument(
        "--objectives", required=True, metavar="NAME[,NAME…]",
        help="the objectives this site pursues, comma-separated (of the schema's)",
    )  # fmt: skip
    prepare.add_argument(
        "--out", type=Path, required=True, metavar="SITE_DIR",
        help="the site folder to create (new or empty)",
    )  # fmt: skip
    prepare.add_argument("--name", help="the site's name (default: SITE_DIR's folder name)")
    prepare.add_argument(
        "--seed", type=int, default=0,
        help="seed of the site's train/validation/test split by patient (default 0)",
    )  # fmt: skip


def add_personalise_parser(site_sub: Any) -> None:
    """``fedcare site personalise``'s options."""
    personalise = site_sub.add_parser(
        "personalise",
        help="Stage 2 at this site from the broadcast w* (no communication)",
        description="Fine-tune and evaluate this site's personalised model from the w* the "
        "coordinator broadcast at the end of Stage 1.",
    )
    personalise.add_argument(
        "--site", type=Path, required=True, metavar="SITE_DIR",
        help="the site folder (`fedcare site prepare`), holding the broadcast w*",
    )  # fmt: skip
    personalise.add_argument(
        "--out", type=Path, required=True, metavar="RESULT.json", help="write results JSON here"
    )
    personalise.add_argument(
        "--tracking-uri", metavar="URI",
        help="the site's own MLflow store (e.g. sqlite:///mlflow.db): log the run and register "
        "the site's model as fedcare-<dataset>-fedcare-<objectives>-<site name> (default: not "
        "tracked)",
    )  # fmt: skip
    personalise.add_argument("--quiet", action="store_true", help="no progress bars")


def objective_names(text: str) -> list[str]:
    """``"readmission, los"`` → ``["readmission", "los"]`` (empty items kept, to be refused)."""
    return [name.strip() for name in text.split(",")]


def cmd_site_prepare(args: argparse.Namespace) -> int:
    """Prepare the site folder; every option is checked before the file is read.

    Raises
    ------
    ConfigError
        For an ``--out`` that exists and is not empty (or cannot be written), a bad schema, an
        objective the schema lacks, a bad site name or seed.
    DataError, DataCheckError
        For a file that fails its checks: the file, column and rows (nothing is written).
    """
    # Imported here, not at the top: ``fedcare site --help`` must not load torch or pandas.
    from fedcare.cli.sites_input import check_site_name, load_site
    from fedcare.flower.site_folder import CARD_FILE, check_new_folder, create_site_folder
    from fedcare_core.config import MAX_SEED
    from fedcare_core.federation_schema import read_schema

    check_new_folder(args.out)
    check_output_dir(args.out)
    schema = read_schema(args.schema)
    objectives = schema.check_objectives(objective_names(args.objectives))
    given = args.name is not None  # an empty --name is refused, not replaced
    where = "--name" if given else f"--out {args.out} (the default --name)"
    name = check_site_name(args.name if given else args.out.resolve().name, where)
    if not 0 <= args.seed <= MAX_SEED:
        raise ConfigError(f"--seed must lie in [0, {MAX_SEED:,}], got {args.seed:,}")
    loaded = load_site(schema, args.data, objectives, name=name, seed=args.seed)
    folder = create_site_folder(
        args.out,
        loaded.client,
        schema,
        name=name,
        seed=args.seed,
        source_sha256=loaded.provenance.sha256,
    )
    rows = folder.info()["rows"]
    card, key = folder.root / CARD_FILE, folder.private_key
    print(f"site {name}: objectives {', '.join(loaded.client.objectives)}")
    print(f"  rows: train {rows['train']:,}, validation {rows['val']:,}, test {rows['test']:,}")
    print(f"  site folder: {folder.root}")
    print(
        f"send {card} to the coordinator (public: name, objectives, schema digest, public key); "
        f"keep {key} secret: it never leaves the site"
    )
    return 0


def cmd_site_personalise(args: argparse.Namespace) -> int:
    """Stage 2 and evaluation at the site from the broadcast ``w*``; write, print, track.

    Raises
    ------
    ConfigError
        For an unwritable ``--out``, an unreachable tracking store, a folder that is not a site
        folder, or no ``w*`` yet (or one computed for another schema).
    """
    from fedcare.cli.output import ProgressBars, results_table
    from fedcare.flower.site_folder import SiteFolder, read_final_model
    from fedcare_core.atomic_files import write_json_atomic
    from fedcare_core.results import DataProvenance
    from fedcare_core.runner import run_algorithm
    from fedcare_core.sites import single_site_federation

    check_output_file(args.out)
    t0 = time.perf_counter()
    site = SiteFolder.open(args.site)
    schema, info = site.schema(), site.info()
    received = read_final_model(site, schema.config.model)
    client = dataclasses.replace(site.client(), client_id=received.client_id)
    if args.tracking_uri:  # the site's files checked first: a refusal creates no store
        tracked.check_site_model_name(schema.dataset, schema.config.algorithm, info["name"])
    store = tracked.open_store(args.tracking_uri) if args.tracking_uri else None
    config = schema.run_config(
        seed=received.seed, clients=received.clients, rounds=received.planned_rounds
    )
    federation = single_site_federation(schema, client, received.result.objectives)
    bars = ProgressBars(enabled=not args.quiet)
    try:
        result = run_algorithm(
            federation,
            config,
            provenance=DataProvenance(str(info["source_sha256"])),
            stage1=received.result,
            progress=bars,
            timing={"partition_s": time.perf_counter() - t0},
            backend_name=FEDERATION_BACKEND,
        )
    finally:
        bars.close()
    document = result.to_dict()
    # The model has a head per objective of the federation; the site is evaluated on its own.
    document["objectives"] = {
        name: report for name, report in document["objectives"].items() if name in client.objectives
    }
    document["site"] = {
        "name": info["name"],
        "client_id": received.client_id,
        "run_name": received.run_name,
        "schema_digest": received.schema_digest,
        "objectives": list(client.objectives),
    }
    write_json_atomic(args.out, document)
    print(results_table(document))
    print(f"results written to {args.out}")
    if store is not None:
        tracked.track(
            store, result, FEDERATION_BACKEND, entry=PERSONALISE_ENTRY, site_name=info["name"]
        )
    return 0
