"""A warm SuperExec for a SuperNode: each ClientApp task runs in a process forked, not started.

Flower runs every message a SuperNode receives in a fresh ``flwr-clientapp`` process, which
handles that one message and exits (``flwr.supernode.runtime.run_clientapp``). Starting it means
a new interpreter importing ``flwr`` and ``torch``: several CPU-seconds per client per round,
far more than the round's arithmetic. This module keeps Flower's one-process-per-message model
and its Runtime API protocol unchanged and removes only that start-up cost:

* the SuperNode runs with ``--isolation process`` (Flower's documented mode for a SuperExec
  that the operator starts), and
* ``python -m fedcare_flower.warm_exec --runtime-api-address HOST:PORT --insecure`` is that
  SuperExec: Flower's own :func:`flwr.supercore.superexec.run_superexec.run_superexec` loop
  (task acquisition, tokens, heartbeats), with an executor that forks a child per
  ClientApp task from a process that has already imported ``flwr``, ``torch`` and the
  FedCARE ClientApp (and, with ``--data-path``, loaded this client's data folder). The child
  calls Flower's :func:`~flwr.supernode.runtime.run_clientapp.run_clientapp` with the task's
  token, exactly as ``flwr-clientapp --token`` would, and exits.

The parent never runs torch code, so no intra-op thread pool exists when it forks. Task types
other than ClientApp fall back to Flower's subprocess executor. The children watch the parent
(``--parent-pid``) like any ``flwr-clientapp`` and stop when it dies.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
from collections.abc import Sequence
from typing import Any

CLIENT_APP_TASK = "flwr-clientapp"


class ForkExecutor:
    """A Flower SuperExec executor that forks ClientApp task processes from a warm parent.

    It implements the executor protocol of ``flwr.supercore.superexec.executor``
    (``get_eligible_capacity``, ``wait_for_capacity``, ``launch``, ``reconcile``, ``close``).
    """

    def __init__(self) -> None:
        from flwr.supercore.superexec.executor.subprocess_executor import SubprocessExecutor

        self._fallback = SubprocessExecutor()
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

    def launch(self, spec: Any) -> Any:
        """Fork a child that runs Flower's ClientApp process body for ``spec.token``."""
        from flwr.supercore.superexec.executor.types import LaunchResult

        if str(spec.task_type) != CLIENT_APP_TASK:
            return self._fallback.launch(spec)
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:  # pragma: no cover - runs in the child, which leaves through os._exit
            os._exit(_run_task(spec))
        self.children.add(pid)
        return LaunchResult.accepted()

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


def _run_task(spec: Any) -> int:  # pragma: no cover - child process
    """The child's body: Flower's ``flwr-clientapp`` for one task, then an exit code."""
    from flwr.supercore.tls import validate_and_resolve_root_certificates
    from flwr.supernode.runtime.run_clientapp import run_clientapp

    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, signal.SIG_DFL)
    try:
        run_clientapp(
            runtime_api_address=spec.runtime_api_address,
            token=spec.token,
            insecure=spec.insecure,
            certificates=validate_and_resolve_root_certificates(
                spec.root_certificates_path, spec.insecure
            ),
            parent_pid=spec.parent_pid,
            runtime_dependency_install=spec.runtime_dependency_install,
        )
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
        prog="python -m fedcare_flower.warm_exec",
        description="Flower SuperExec that forks ClientApp tasks from a warm process.",
    )
    parser.add_argument("--runtime-api-address", required=True, help="the SuperNode's HOST:PORT")
    parser.add_argument("--insecure", action="store_true", help="plain HTTP to the SuperNode")
    parser.add_argument("--root-certificates", help="CA bundle for TLS to the SuperNode")
    parser.add_argument("--parent-pid", type=int, help="stop when this process exits")
    parser.add_argument("--data-path", help="this client's data folder, loaded once up front")
    return parser


def warm_up(data_path: str | None) -> None:
    """Import what a ClientApp task needs (and load the client's data) before any fork."""
    import torch

    # The first call imports torch._dynamo/_inductor (seconds); make it here, once. It starts
    # no thread, so forking afterwards stays safe.
    torch.use_deterministic_algorithms(True)

    import flwr.supernode.runtime.run_clientapp  # noqa: F401

    import fedcare_core.stage1  # noqa: F401
    import fedcare_flower.client_app as client_app

    if data_path is not None:
        client_app.preload(data_path)


def main(argv: Sequence[str] | None = None) -> None:
    """Run the warm SuperExec until the SuperNode (or ``--parent-pid``) goes away."""
    args = _parser().parse_args(argv)
    if not args.insecure and args.root_certificates is None:
        raise SystemExit("give --insecure or --root-certificates")
    warm_up(args.data_path)

    import flwr.supercore.superexec.run_superexec as superexec

    executor = ForkExecutor()
    # ``run_superexec`` builds its executor from a type name; hand it this one instead.
    superexec.get_executor = lambda *a, **k: executor
    superexec.run_superexec(
        runtime_api_address=args.runtime_api_address,
        insecure=args.insecure,
        root_certificates_path=args.root_certificates,
        parent_pid=args.parent_pid,
    )


if __name__ == "__main__":  # pragma: no cover
    main()
