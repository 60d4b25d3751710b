"""``fedcare site prepare`` and ``fedcare site personalise``: a hospital's own steps.

``prepare`` checks the hospital's file against the federation's schema and writes the site
folder (:mod:`fedcare.sites.site_folder`): every option is checked before any row is read, and
a file that fails its checks leaves nothing behind. ``personalise`` is Stage 2 at the site,
with no communication: it starts from the ``w*`` the coordinator broadcast at the end of Stage 1
(kept in the site folder) and fine-tunes and evaluates the site's own model, exactly as an
in-process run over the same sites (``fedcare run --sites``) does for that site.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, Any

from fedcare.app.path_roles import store_file
from fedcare.cli import tracked
from fedcare_core.errors import ConfigError
from fedcare_core.files.apart import check_outputs_apart
from fedcare_core.files.output_paths import check_output_dir, check_output_file

if TYPE_CHECKING:
    from fedcare.sites.site_input import ReadSite

#: ``fedcare.entry`` of a site's tracked run.
_PERSONALISE_ENTRY = "fedcare site personalise"


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
    prepare.add_argument(
        "--private", type=Path, metavar="FILE.yaml",
        help="columns of this site's export beyond the federation's, for its Stage 2 only "
        "(types, vocabularies, ranges, availability; docs/DATASETS.md): named nowhere outside "
        "the site folder",
    )  # fmt: skip
    prepare.add_argument(
        "--map", type=Path, metavar="FILE.yaml",
        help="how this export's column names and category codes map onto the federation's "
        "definition (docs/DATASETS.md)",
    )  # fmt: skip
    prepare.add_argument(
        "--name", metavar="NAME",
        help="the site's name, on its card and in the coordinator's state and documents "
        "(default: SITE_DIR's folder name, said in the output; e.g. --out site2-folder "
        "without --name names the site site2-folder)",
    )  # fmt: skip
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
    personalise.add_argument(
        "--promotion-margin", type=float, metavar="M",
        help="re-training: the new version is the 'challenger' and becomes the 'champion' "
        "unless its validation score is worse than the champion's by more than M (default: "
        "only a better version is promoted); needs --tracking-uri",
    )  # fmt: skip
    personalise.add_argument("--quiet", action="store_true", help="no progress bars")


def objective_names(text: str) -> list[str]:
    """``"readmission:fair(race), los"`` → its items (empty items kept, to be refused)."""
    # Imported here: the configuration package loads numpy, and ``site --help`` need not.
    from fedcare_core.config.preferences import split_objectives

    return split_objectives(text)


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
    from fedcare.sites.site_folder import CARD_FILE, check_new_folder, create_site_folder
    from fedcare.sites.site_input import check_site_name, read_site, split_site
    from fedcare_core.config import MAX_SEED
    from fedcare_core.sites.schema import read_schema

    check_outputs_apart(
        {"--out": args.out},
        {"--schema": args.schema, "--data": args.data, "--private": args.private,
         "--map": args.map},
        new_folders=("--out",),
        read_folders=("--data",),
    )  # fmt: skip
    check_new_folder(args.out)
    check_output_dir(args.out)
    schema = read_schema(args.schema)
    objectives, preferences = schema.check_site_objectives(objective_names(args.objectives))
    given = args.name is not None  # an empty --name is refused, not replaced
    where = "--name" if given else f"--out {args.out} (the default --name)"
    name = check_site_name(args.name if given else args.out.resolve().name, where)
    if not 0 <= args.seed <= MAX_SEED:
        raise ConfigError(f"--seed must lie in [0, {MAX_SEED:,}], got {args.seed:,}")
    read = read_site(
        schema,
        args.data,
        objectives,
        name=name,
        private=args.private,
        column_map=args.map,
        preferences=preferences,
    )
    loaded = split_site(schema, read, args.seed)
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
    if not given:
        print(
            f"  site name: {name}, the --out folder's name (on the card the coordinator "
            "registers; to choose another, prepare again with --name NAME)"
        )
    print(f"  rows: train {rows['train']:,}, validation {rows['val']:,}, test {rows['test']:,}")
    _print_columns(read, built_in=schema.definition is None)
    print(f"  site folder: {folder.root}")
    print(
        f"send {card} to the coordinator (public: name, objectives, schema digest, public key); "
        f"keep {key} secret: it never leaves the site"
    )
    return 0


def _print_columns(read: ReadSite, *, built_in: bool) -> None:
    """The site's own columns taken, and the export's columns left out (names, at the site)."""
    from fedcare.sites.export_columns import private_columns_lines

    pools = read.private.pools if read.private is not None else {}
    ignored = () if built_in else read.ignored_columns  # a built-in dataset takes no --private
    for line in private_columns_lines(pools, ignored):
        print(line)


def cmd_site_personalise(args: argparse.Namespace) -> int:
    """Stage 2 and evaluation at the site from the broadcast ``w*``; write, print, track.

    An adapter over :func:`fedcare.app.personalise.prepare_personalisation` and the run
    service.

    Raises
    ------
    ConfigError
        For an unwritable ``--out``, an unreachable tracking store, a folder that is not a site
        folder, or no ``w*`` yet (or one computed for another schema).
    """
    from fedcare.app.personalise import FEDERATION_BACKEND, prepare_personalisation
    from fedcare.app.run import JsonFile, ResultSink, execute_run
    from fedcare.cli.output import ProgressBars, results_table
    from fedcare.sites.site_folder import READ_ENTRIES

    check_outputs_apart(
        {"--out": args.out},
        {"--site": args.site, "--tracking-uri": store_file(args.tracking_uri)},
        read_folders={"--site": READ_ENTRIES},
    )
    check_output_file(args.out)
    from fedcare.cli.options import bounded
    from fedcare_core.config.fields import Range

    margin = args.promotion_margin
    if margin is not None:
        if not args.tracking_uri:
            raise ConfigError(
                "--promotion-margin needs --tracking-uri (the registry it promotes in)"
            )
        bounded("--promotion-margin", margin, Range(0.0, 1e6))
    store = tracked.ChosenStore(args.tracking_uri) if args.tracking_uri else None
    if store is not None:  # reached or probed now, creating nothing
        tracked.check_store(store.uri, store.what)
    site = prepare_personalisation(args.site)
    if store is not None:
        tracked.check_site_model_name(site.dataset, site.algorithm, site.name)
    sinks: list[ResultSink] = [JsonFile(Path(args.out))]
    if store is not None:  # opened (made, if new) once Stage 2 has run
        sinks.append(
            tracked.MlflowSink(
                store, FEDERATION_BACKEND, _PERSONALISE_ENTRY, site_name=site.name, margin=margin
            )
        )
    bars = ProgressBars(enabled=not args.quiet)
    try:
        result = execute_run(site.prepared, progress=bars, sinks=sinks)
    finally:
        bars.close()
    print(results_table(site.prepared.document(result)))
    print(f"results written to {args.out}")
    return 0
