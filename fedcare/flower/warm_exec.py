"""A warm SuperExec for a SuperNode: each ClientApp task runs in a process forked, not started.

Flower runs every message a SuperNode receives in a fresh ``flwr-clientapp`` process, which
handles that one message and exits. Starting it means a new interpreter importing ``flwr`` and
``torch``: several CPU-seconds per client per round, far more than the round's arithmetic. This
module keeps Flower's one-process-per-message model and its Runtime API protocol unchanged and
removes only that start-up cost:

* the SuperNode runs with ``--isolation process`` (Flower's documented mode for a SuperExec
  that the operator starts), and
* ``python -m fedcare.flower.warm_exec --runtime-api-address HOST:PORT --root-certificates
  ca.pem`` (or ``--insecure`` for a plain-HTTP runtime API) is that SuperExec: Flower's own
  SuperExec loop (task acquisition, tokens, heartbeats), with an executor that forks a child
  per ClientApp task from a process that has already imported ``flwr``, ``torch`` and the
  FedCARE ClientApp (and, with ``--data-path``, loaded this client's data: a folder, or the
  runner's memory file, :func:`fedcare.flower.workspace.memory_handover`). The child
  runs Flower's ClientApp process body with the task's token, exactly as
  ``flwr-clientapp --token`` would, and exits.

Every Flower internal this needs is in :mod:`fedcare.flower.flwr_internals`. On a flwr version
it was not verified on, this command warns once and runs Flower's own ``flower-superexec`` with
the same connection arguments instead (a fresh ``flwr-clientapp`` per task: slower, same
results).

The parent never runs torch code, so no intra-op thread pool exists when it forks. Task types
other than ClientApp fall back to Flower's subprocess executor. The children watch the parent
(``--parent-pid``) like any ``flwr-clientapp``, and the kernel kills them when it dies
(``PR_SET_PDEATHSIG``), so no task keeps the client's data after the SuperExec is gone.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
from collections.abc import Sequence
from typing import Any

from fedcare.flower import flwr_internals
from fedcare.flower.flwr_internals import TaskSpec
from fedcare.procs.children import die_with_parent, executable

#: Flower's documented SuperExec command, run instead on an unverified flwr.
_STOCK_SUPEREXEC = "flower-superexec"


class ForkExecutor:
    """A Flower SuperExec executor that forks ClientApp task processes from a warm parent.

    It implements Flower's executor protocol (``get_eligible_capacity``,
    ``wait_for_capacity``, ``launch``, ``reconcile``, ``close``; pinned by the seam's tests).
    """

    def __init__(self) -> None:
        self._fallback = flwr_internals.subprocess_executor()
        self.children: set[int] = set()

    def get_eligible_capacity(
        self,
        supported_task_types: set[Any],
        *,
        insecure: bool = False,
        root_certificates_path: str | None = None,
    ) -> tuple[set[Any], set[str]]:
        """Every task type can start at once (no capacity limit)."""
        del insecure, root_certificates_path
        return supported_task_types, set()

    def wait_for_capacity(self, *args: Any, **kwargs: Any) -> None:
        """No capacity gate: return at once."""
        del args, kwargs

    def launch(self, spec: TaskSpec) -> Any:
        """Fork a child that runs Flower's ClientApp process body for ``spec.token``."""
        if not flwr_internals.is_clientapp_task(spec):
            return self._fallback.launch(spec)
        sys.stdout.flush()
        sys.stderr.flush()
        parent = os.getpid()
        pid = os.fork()
        if pid == 0:  # pragma: no cover - runs in the child, which leaves through os._exit
            # A task outliving this process would keep the client's data and its sockets:
            # Flower's own parent watch asks it to stop gracefully, which a task blocked on
            # a dead SuperNode may never do (seen after a SIGKILL of the runner).
            die_with_parent(parent)
            os._exit(run_task(spec))
        self.children.add(pid)
        return flwr_internals.launch_accepted()

    def reconcile(self) -> None:
        """Reap children that have exited (no zombies)."""
        for pid in list(self.children):
            try:
                done, _ = os.waitpid(pid, os.WNOHANG)
            except ChildProcessError:
                done = pid
            if done:
                self.children.discard(pid)

    def close(self) -> None:
        """Stop the children still running (they also stop when this process dies)."""
        for pid in list(self.children):
            try:
                os.kill(pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
        self.reconcile()


def run_task(spec: TaskSpec) -> int:
    """The child's body: Flower's ``flwr-clientapp`` for one task, then an exit code."""
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, signal.SIG_DFL)
    try:
        flwr_internals.run_clientapp_task(spec)
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else 1
    except BaseException:  # any failure is this task's exit status
        import traceback

        traceback.print_exc()
        return 1
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
    return 0


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m fedcare.flower.warm_exec",
        description="Flower SuperExec that forks ClientApp tasks from a warm process.",
    )
    parser.add_argument("--runtime-api-address", required=True, help="the SuperNode's HOST:PORT")
    parser.add_argument("--insecure", action="store_true", help="plain HTTP to the SuperNode")
    parser.add_argument("--root-certificates", help="CA bundle for TLS to the SuperNode")
    parser.add_argument("--parent-pid", type=int, help="stop when this process exits")
    parser.add_argument(
        "--data-path", help="this client's data (folder or memory file), loaded once up front"
    )
    return parser


def warm_up(data_path: str | None) -> None:
    """Import what a ClientApp task needs (and load the client's data) before any fork."""
    import torch

    # The first call imports torch._dynamo/_inductor (seconds); make it here, once. It starts
    # no thread, so forking afterwards stays safe.
    torch.use_deterministic_algorithms(True)
    flwr_internals.preload_clientapp_runtime()

    import fedcare.flower.client_app as client_app
    import fedcare_core.stage1.loop  # noqa: F401

    if data_path is not None:
        client_app.preload(data_path)


def _stock_superexec_argv(args: argparse.Namespace) -> list[str]:
    """``flower-superexec`` with this command's connection arguments (no warm start-up)."""
    argv = [executable(_STOCK_SUPEREXEC), "--runtime-api-address", args.runtime_api_address]
    if args.insecure:
        argv.append("--insecure")
    if args.root_certificates is not None:
        argv += ["--root-certificates", args.root_certificates]
    if args.parent_pid is not None:
        argv += ["--parent-pid", str(args.parent_pid)]
    return argv


def main(argv: Sequence[str] | None = None) -> None:
    """Run the warm SuperExec until the SuperNode (or ``--parent-pid``) goes away."""
    args = _parser().parse_args(argv)
    if not args.insecure and args.root_certificates is None:
        raise SystemExit("give --insecure or --root-certificates")
    if not flwr_internals.fast_paths_enabled(
        "warm SuperExec", f"Flower's {_STOCK_SUPEREXEC} (a fresh flwr-clientapp per task)"
    ):
        stock = _stock_superexec_argv(args)
        # exec, not a child: the SuperNode's supervisor keeps this process (and pid) in charge
        os.execvp(stock[0], stock)
    warm_up(args.data_path)
    flwr_internals.run_superexec_with(
        ForkExecutor(),
        runtime_api_address=args.runtime_api_address,
        insecure=args.insecure,
        root_certificates_path=args.root_certificates,
        parent_pid=args.parent_pid,
    )


if __name__ == "__main__":  # pragma: no cover
    main()
