"""The ``fedcare`` command line.

``fedcare run`` executes an experiment in process and prints a results table;
``fedcare data fetch diabetes130`` downloads the public dataset into the cache. Expected
failures (bad data, bad options) print one message and exit with status 2, without a traceback.
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from fedcare.cli import tracked
from fedcare.cli.commands import BACKENDS, build_parser, command_of
from fedcare.cli.option_checks import check_parsed
from fedcare_core.errors import ConfigError, FedcareError
from fedcare_core.files.output_paths import check_output_dir, check_output_file
from fedcare_core.run.interrupts import as_interrupted, exit_now, signals_raise

if TYPE_CHECKING:
    from fedcare.app.run import KeptRun, ResultSink, RunMessages
    from fedcare.cli.output import ProgressBars
    from fedcare_core.algorithms.base import Stage1Runner
    from fedcare_core.config import ExperimentConfig
    from fedcare_core.resume.run_folder import RunBackend, RunFolder
    from fedcare_core.run.results import ExperimentResult

EXIT_ERROR = 2
#: Commands that, run as the program, end the process at once when done (:func:`exit_now`),
#: skipping the interpreter's teardown of torch and pandas (about 0.8 s of ``fedcare predict``'s
#: 3 s): they leave nothing to flush, join or clean up (their one output file written whole
#: and fsynced, no thread, no child process, no temporary file).
QUICK_EXIT_COMMANDS = frozenset({"predict"})
#: The exit status of a command ended by Ctrl-C (SIGINT); SIGTERM's is 143 (128 + 15).
_EXIT_INTERRUPTED = 130
__all__ = ["BACKENDS", "EXIT_ERROR", "build_parser", "build_stage1_runner", "cmd_run", "main"]


def _check_flower_flags(args: argparse.Namespace) -> None:
    """Refuse a backend option given with a backend that would ignore it (``--backend local``).

    Raises
    ------
    ConfigError
        Naming the first such flag and the backends it applies to.
    """
    from fedcare.flower.flower_options import flagged_options, takes_option
    from fedcare_core.config.backends import backend_names, get_backend

    chosen = get_backend(args.backend)
    # Each flag's dest and the option it sets (--stock-supernodes: how SuperNodes run tasks).
    fields = {str(ref.dest): ref.name for ref in flagged_options()}
    for dest, name in {**fields, "stock_supernodes": "client_exec"}.items():
        value = getattr(args, dest)
        if value is None or value is False or takes_option(chosen, name):
            continue
        names = [n for n in backend_names() if takes_option(get_backend(n), name)]
        which = f"--backend {' or '.join(names)}" + (" only" if len(names) == 1 else "")
        raise ConfigError(f"--{dest.replace('_', '-')} applies to {which}")


def flower_overrides(args: argparse.Namespace) -> dict[str, Any]:
    """The Flower options the command line gives (``FlowerConfig`` fields; JSON values).

    Raises
    ------
    ConfigError
        For ``--bind-address`` with a backend other than ``flower-deployment``.
    """
    from fedcare.flower.flower_options import flagged_options

    overrides: dict[str, Any] = {
        ref.name: getattr(args, str(ref.dest))
        for ref in flagged_options()
        if getattr(args, str(ref.dest)) is not None
    }
    if args.stock_supernodes:
        overrides.update(client_exec="subprocess", node_poll_s=None)
    return overrides


def build_stage1_runner(
    args: argparse.Namespace, backend: RunBackend | None = None
) -> Stage1Runner | None:
    """The Stage 1 runner for ``--backend`` (None: in process); its module imported only now.

    ``backend``: a resumed run's recorded backend and options instead of the command line's.

    Raises
    ------
    ConfigError
        A Flower flag with a backend that ignores it, or an invalid option (naming its flag).
    """
    from fedcare.app.run import backend_runner

    _check_flower_flags(args)
    backend = _command_line_backend(args) if backend is None else backend
    # Every option checked, naming its flag, before any process starts or data is read.
    runner = backend_runner(backend.name, backend.options, _option_flags(backend.options))
    _warn_insecure(backend.options)
    return runner


def _option_flags(options: Mapping[str, Any]) -> dict[str, str] | None:
    """What messages call each of a backend's options: its ``fedcare run`` flag."""
    if not options:
        return None
    from fedcare.flower.flower_options import cli_flags

    return cli_flags()


def _warn_insecure(options: Mapping[str, Any]) -> None:
    if options.get("insecure"):
        print(
            "fedcare: warning: --insecure: the Flower processes talk plain HTTP (no TLS)",
            file=sys.stderr,
        )


#: ``fedcare run`` options that ``--resume`` accepts (the rest come from the run's config.json).
_RESUME_OPTIONS = ("command", "resume", "out", "quiet", "tracking_uri")


def _resume_conflicts(args: argparse.Namespace) -> list[str]:
    """The options given with ``--resume`` that it does not take, as ``--flag`` names."""
    defaults = vars(build_parser("run").parse_args(["run"]))
    return [
        "--" + key.replace("_", "-")
        for key, value in vars(args).items()
        if key not in _RESUME_OPTIONS and value != defaults.get(key)
    ]


def _open_resumed(args: argparse.Namespace) -> KeptRun:
    """``--resume DIR``: the kept run, or a clear refusal of the options it does not take."""
    from fedcare.app.run import open_kept_run

    given = _resume_conflicts(args)
    if given:
        raise ConfigError(
            f"--resume takes no other training options (got {', '.join(given)}): the run's "
            f"settings are in {Path(args.resume) / 'config.json'}"
        )
    return open_kept_run(args.resume)


def cmd_run(args: argparse.Namespace) -> int:
    """``fedcare run`` (with ``--run-dir`` or ``--resume``: a run that survives being killed).

    An adapter over the run service (:func:`fedcare.app.run.run`): the command line becomes a
    request, checked before any data is read, run with the command's sinks (the results file,
    the run folder, MLflow) and reported. ``--sites`` runs a federation of sites' files.
    """
    from fedcare.app.path_roles import check_run_paths
    from fedcare.app.run import RunRequest, run
    from fedcare.cli.output import RESULTS_DIR
    from fedcare.cli.setting_flags import build_config, refuse_unread_settings

    check_run_paths(args)  # no output replaces an input (the data, a config, the store …)
    if args.out is not None:  # before any work: not after hours of training
        check_output_file(args.out)
    elif args.resume is None and args.run_dir is None:  # the default results/<setting>.json
        check_output_dir(RESULTS_DIR, "the results folder")
    if args.sites is not None or args.schema is not None:
        return _run_sites(args)
    # Checked now, creating nothing: the store is made once the run has passed every check.
    tracking = tracked.check_chosen_store(args.tracking_uri)
    kept = _open_resumed(args) if args.resume is not None else None
    if kept is not None:
        if kept.complete:
            return _report_complete(args, kept.folder)
        request = kept.request
    else:
        _check_flower_flags(args)
        backend = _command_line_backend(args)
        config, verify = build_config(args), not args.no_verify
        config.check_preference_weights()  # the run's own preferences: β and γ need theirs
        refuse_unread_settings(args, config)
        request = RunRequest(config, args.data_dir, verify, backend.name, backend.options)
    kept_anywhere = kept is not None or args.run_dir is not None
    out = _results_file(args, request.config, kept_anywhere)
    sinks = _sinks(out, tracking, request.backend)
    with _console(args) as bars:
        result = run(
            request,
            option_names=_option_flags(request.backend_options),
            run_dir=args.run_dir,
            resume=kept,
            progress=bars,
            sinks=sinks,
            messages=_messages(args),
        )
    return _report(result, out)


def _report_complete(args: argparse.Namespace, folder: RunFolder) -> int:
    """``--resume`` of a finished run: its results again (to ``--out`` too)."""
    from fedcare.cli.output import results_table
    from fedcare_core.files.atomic import write_json_atomic

    print(f"fedcare: the run in {folder.root} is complete: {folder.results_path}")
    document = folder.read_results()
    if args.out is not None:
        write_json_atomic(args.out, document)
    print(results_table(document))
    return 0


def _command_line_backend(args: argparse.Namespace) -> RunBackend:
    """``--backend`` and the Flower options given for it."""
    from fedcare_core.config.backends import get_backend
    from fedcare_core.resume.run_folder import RunBackend

    takes_options = get_backend(args.backend).options is not None
    return RunBackend(args.backend, flower_overrides(args) if takes_options else {})


def _run_sites(args: argparse.Namespace) -> int:
    """``--sites``: the sites prepared from their own files (no run folder), then executed."""
    from fedcare.app.run import execute_run
    from fedcare.cli.sites_run import prepare_sites_run
    from fedcare_core.algorithms import secagg_backend_refusal

    backend = _command_line_backend(args)
    refusal = secagg_backend_refusal(backend.name) if args.secagg else None
    if refusal is not None:  # before any site's file is read
        raise ConfigError(refusal)
    prepared = prepare_sites_run(args, quiet=args.quiet)  # refuses what the schema decides
    runner = build_stage1_runner(args, backend)  # the schema's fedcare runs on every backend
    prepared = replace(prepared, backend=backend.name, runner=runner)
    # Checked, creating nothing: the store is made when the finished run is logged.
    tracking = tracked.check_chosen_store(args.tracking_uri)
    out = _results_file(args, prepared.config, kept=False)
    with _console(args) as bars:
        result = execute_run(
            prepared, progress=bars, sinks=_sinks(out, tracking, backend.name),
            notes=_stage1_note,
        )  # fmt: skip
    return _report(result, out)


def _results_file(args: argparse.Namespace, config: ExperimentConfig, kept: bool) -> Path | None:
    """``--out``, else ``results/<setting>.json`` unless the run is kept in a run folder."""
    from fedcare.cli.output import default_results_file

    if args.out is not None:
        return Path(args.out)
    return None if kept else Path(default_results_file(config))


def _sinks(
    out: Path | None, tracking: tracked.ChosenStore | None, backend: str
) -> list[ResultSink]:
    """The command's sinks: the results file (if any), then MLflow (if a store was chosen)."""
    from fedcare.app.run import JsonFile

    sinks: list[ResultSink] = []
    if out is not None:
        sinks.append(JsonFile(out))
    if tracking is not None:
        sinks.append(tracked.MlflowSink(tracking, backend))
    return sinks


@contextmanager
def _console(args: argparse.Namespace) -> Iterator[ProgressBars]:
    """Progress bars for the run (none with ``--quiet``, which also quiets Flower's INFO lines)."""
    from fedcare.cli.output import ProgressBars

    bars = ProgressBars(enabled=not args.quiet)
    # --quiet: Flower's per-round INFO lines too (flower-sim's server runs in this process).
    flwr_logger = logging.getLogger("flwr")
    flwr_level = flwr_logger.level
    if args.quiet:
        flwr_logger.setLevel(logging.WARNING)
    try:
        yield bars
    finally:
        bars.close()
        flwr_logger.setLevel(flwr_level)


def _messages(args: argparse.Namespace) -> RunMessages:
    """What a run says on stderr: the dataset it loads (unless ``--quiet``), notes, resumes."""
    from fedcare.app.run import RunMessages

    def loading(dataset: str) -> None:
        print(f"Loading {dataset} …", file=sys.stderr)

    def resume(line: str) -> None:
        print(f"fedcare: resume: {line}", file=sys.stderr)

    return RunMessages(None if args.quiet else loading, _stage1_note, resume, _warn_insecure)


def _report(result: ExperimentResult, out: Path | None) -> int:
    """The results table, and where the document went."""
    from fedcare.cli.output import results_table

    print(results_table(result.to_dict()))
    if out is not None:
        print(f"results written to {out}")
    return 0


def _stage1_note(note: str) -> None:
    """Stage 1's notes (lost clients, objectives without an update), on stderr."""
    print(f"fedcare: stage 1: {note}", file=sys.stderr)


def _cmd_fetch(args: argparse.Namespace) -> int:
    """``fedcare data fetch NAME``: the registered dataset's own download."""
    from tqdm import tqdm

    from fedcare_core.data.registry import get_dataset

    fetch = get_dataset(args.name).load_fetch()  # the parser offers fetchable datasets only
    bar: tqdm | None = None

    def progress(done: int, total: int | None) -> None:
        nonlocal bar
        if args.quiet:
            return
        if bar is None:
            bar = tqdm(total=total, unit="B", unit_scale=True, desc=args.name, file=sys.stderr)
        bar.update(done - bar.n)

    kwargs: dict[str, Any] = {"progress": progress}
    if args.url:
        kwargs["url"] = args.url
    try:
        path = fetch(args.cache_dir, **kwargs)
    finally:
        if bar is not None:
            bar.close()
    print(path)
    if not args.quiet:
        print(f"fedcare: {_fetched_note(args.cache_dir, Path(path))}", file=sys.stderr)
    return 0


def _fetched_note(cache_dir: Path | None, path: Path) -> str:
    """Where a run finds what ``fedcare data fetch`` just downloaded."""
    from fedcare_core.data.fetch import default_cache_dir

    default = default_cache_dir().expanduser().resolve()
    if cache_dir is None or Path(cache_dir).expanduser().resolve() == default:
        return "a run given neither --data-dir nor FEDCARE_DATA_DIR reads it from there"
    return f"not the default cache ({default}): give a run --data-dir {path.parent}"


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``fedcare`` console script.

    SIGINT, SIGTERM and SIGHUP end any command the same way: the run's teardown runs, then one
    line ``fedcare: interrupted (SIGTERM)`` and the exit status 128 + the signal's number.
    Called as the program (``argv`` None), the process then ends at once
    (:func:`fedcare_core.run.interrupts.exit_now`): nothing runs after the message, and no thread
    a library left waiting on a stopped backend keeps it alive. Called with ``argv``, it returns
    the status. A command of :data:`QUICK_EXIT_COMMANDS` ends the program the same way once done.
    """
    words = sys.argv[1:] if argv is None else argv
    parser = build_parser(command_of(words))
    args = parser.parse_args(argv)
    try:
        with signals_raise():
            check_parsed(parser, args)  # every option, before any process, file or lock
            status = _dispatch(args)
    except FedcareError as exc:
        print(f"fedcare: error: {exc}", file=sys.stderr)
        status = EXIT_ERROR
    except KeyboardInterrupt as exc:
        interrupted = as_interrupted(exc)
        print(f"fedcare: interrupted ({interrupted.name})", file=sys.stderr, flush=True)
        if argv is None:
            exit_now(interrupted.exit_status)
        return interrupted.exit_status
    if argv is None and args.command in QUICK_EXIT_COMMANDS:
        exit_now(status)
    return status


def _dispatch(args: argparse.Namespace) -> int:
    """Run the parsed command (its module imported only now)."""
    if args.command == "run":
        return cmd_run(args)
    if args.command == "data" and args.data_command == "fetch":
        return _cmd_fetch(args)
    if args.command == "data" and args.data_command == "split-sites":
        from fedcare.cli import split_sites

        return split_sites.cmd_split_sites(args)
    if args.command == "data" and args.data_command in ("check", "schema"):
        from fedcare.cli import data_check

        return (
            data_check.cmd_check(args)
            if args.data_command == "check"
            else data_check.cmd_schema(args)
        )
    if args.command == "stack":
        from fedcare.cli import stack_command

        return stack_command.cmd_stack(args)
    if args.command == "experiment":
        from fedcare.cli import experiment

        return experiment.cmd_experiment(args)
    if args.command == "predict":
        from fedcare.cli import predict

        return predict.cmd_predict(args)
    if args.command == "federation":
        from fedcare.cli import federation_command

        return federation_command.cmd_federation(args)
    if args.command == "site":
        from fedcare.cli import site_command

        return site_command.cmd_site(args)
    return EXIT_ERROR  # pragma: no cover - argparse rejects other commands


if __name__ == "__main__":
    sys.exit(main())
