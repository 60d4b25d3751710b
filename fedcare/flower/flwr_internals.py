"""The one module that touches Flower's non-public internals, behind a check of the flwr version.

Everything else in the project uses Flower's documented public API only (``flwr.app``,
``flwr.clientapp``, ``flwr.serverapp``, ``flwr.serverapp.strategy``, ``flwr.simulation``, ...):
``tests/test_flwr_seam.py`` fails if a non-public flwr module, or a name starting with ``_``, is
used anywhere else. Each contract below is pinned against the installed flwr by
``tests/fedcare/flower/test_flwr_internals.py`` (signatures, fields, the module globals replaced
and the call sites that read them), so a Flower upgrade that breaks one fails a test, not a run.

Verified on the flwr versions in :data:`VERIFIED_FLWR_VERSIONS`. Every internal is imported
inside the function that needs it, so importing this module never fails on another version.

Speed only: off on an unverified flwr, with one warning
    These change how fast a deployment runs, never what it computes. On any flwr version not
    in :data:`VERIFIED_FLWR_VERSIONS`, :func:`fast_paths_enabled` says no (one
    :class:`UnverifiedFlowerWarning` naming the version found and the versions verified) and the
    caller falls back to Flower's stock behaviour: the deployment runner starts stock
    ``flower-supernode`` processes (a fresh ``flwr-clientapp`` per message, 3 s idle polls),
    ``python -m fedcare.flower.supernode`` runs ``flower-supernode`` unpatched, and
    ``python -m fedcare.flower.warm_exec`` runs Flower's ``flower-superexec``. Slower, same
    results; neither a crash nor a silent slow-down.

    * Capped SuperNode polls (:func:`cap_supernode_sleeps`). In
      ``flwr.supernode.start_client_internal`` the module global ``time`` is replaced by a
      :class:`CappedSleep`. This relies on every sleep of that module being a call
      ``time.sleep(<seconds>)`` through that global; in 1.42 they are
      :data:`SUPERNODE_SLEEPS`: 3 s in ``start_client_internal`` after an empty pull, 0.5 s
      (twice) in ``_push_messages`` while it waits for the ClientApp's reply.
    * Warm SuperExec (:func:`run_superexec_with` and the helpers of
      :class:`fedcare.flower.warm_exec.ForkExecutor`).
      ``flwr.supercore.superexec.run_superexec.run_superexec`` (keyword arguments
      ``runtime_api_address``, ``insecure``, ``root_certificates_path``, ``parent_pid``) builds
      its executor by calling its module global ``get_executor``, which is swapped for the call
      to hand it ours. The executor protocol (``flwr.supercore.superexec.executor.Executor``:
      ``get_eligible_capacity``, ``wait_for_capacity``, ``launch``, ``reconcile``, ``close``),
      the :class:`TaskSpec` fields of its ``ExecutionSpec``, ``SubprocessExecutor`` (for task
      types other than ClientApp), ``LaunchResult.accepted()``,
      ``flwr.supercore.constant.TaskType.CLIENT_APP``, and the child's body:
      ``flwr.supernode.runtime.run_clientapp.run_clientapp`` with the certificates from
      ``flwr.supercore.tls.validate_and_resolve_root_certificates``.

Correctness: read from Flower on any version, a clear error where absent
    * :func:`node_unavailable_error_code`: ``flwr.common.constant.ErrorCode.NODE_UNAVAILABLE``,
      the code of the error reply by which the SuperLink says a node missed its heartbeats
      (:class:`~fedcare.flower.strategy.FedCareStrategy` then drops the node instead of asking
      it again). Flower's own constant is right whatever value a later version gives it, so it
      is not refused on an unverified version (that would break every run for no reason); a
      version without it raises :class:`FlowerInternalsError` when the strategy is built, before
      any round, instead of never dropping a dead node.

No longer internals (public API instead)
    * FedAvg's private ``_check_and_log_replies``:
      :class:`~fedcare.flower.fedavg.strategy.UnionFedAvg` splits error replies with the public
      ``Message.has_error()``; decoding the replies then checks every key the core's
      aggregation reads.
    * The re-implemented ``Strategy.start`` and its hard-coded error code 5:
      :class:`~fedcare.flower.strategy.FedCareStrategy` runs Flower's own round loop and
      overrides only ``configure_train`` / ``aggregate_train`` (and the evaluate pair).
"""

from __future__ import annotations

import importlib.metadata
import time
import warnings
from collections.abc import Callable
from typing import Any, Final, Protocol

#: flwr releases whose internals this module was checked against (exact versions: a patch
#: release may move them too). Add one only after ``tests/fedcare/flower/test_flwr_internals.py``
#: passes against it.
VERIFIED_FLWR_VERSIONS: Final[tuple[str, ...]] = ("1.42.0",)

#: The SuperNode loop module whose ``time`` global :func:`cap_supernode_sleeps` replaces.
SUPERNODE_LOOP_MODULE: Final = "flwr.supernode.start_client_internal"
#: Function of :data:`SUPERNODE_LOOP_MODULE` → the ``time.sleep`` calls it makes (seconds).
SUPERNODE_SLEEPS: Final[dict[str, tuple[float, ...]]] = {
    "start_client_internal": (3,),
    "_push_messages": (0.5, 0.5),
}


class FlowerInternalsError(RuntimeError):
    """A Flower internal that FedCARE's correctness depends on is missing from this flwr."""


class UnverifiedFlowerWarning(UserWarning):
    """The installed flwr is not one the seam was verified on; a fast path is off."""


class Clock(Protocol):
    """What :class:`CappedSleep` needs of the module it stands in for."""

    def sleep(self, seconds: float, /) -> None:
        """Block for ``seconds``."""


class TaskSpec(Protocol):
    """The fields of Flower's ``ExecutionSpec`` (one SuperExec task) that FedCARE reads."""

    @property
    def task_type(self) -> str:
        """Flower's task type (a ``StrEnum``: ``"flwr-clientapp"``, ``"flwr-serverapp"``...)."""

    @property
    def runtime_api_address(self) -> str:
        """The SuperNode's runtime API, ``HOST:PORT``."""

    @property
    def token(self) -> str:
        """The task's token."""

    @property
    def insecure(self) -> bool:
        """Plain HTTP to the runtime API."""

    @property
    def root_certificates_path(self) -> str | None:
        """CA bundle for TLS to the runtime API."""

    @property
    def runtime_dependency_install(self) -> bool:
        """Whether the task may install the app's dependencies."""

    @property
    def parent_pid(self) -> int | None:
        """The task stops when this process exits."""


# ---- version guard ------------------------------------------------------------------------


def installed_flwr_version() -> str:
    """The version of the installed ``flwr`` distribution."""
    return importlib.metadata.version("flwr")


def is_verified(version: str | None = None) -> bool:
    """Whether ``version`` (default: the installed one) is in :data:`VERIFIED_FLWR_VERSIONS`."""
    return (version or installed_flwr_version()) in VERIFIED_FLWR_VERSIONS


def fast_paths_enabled(what: str, fallback: str) -> bool:
    """Whether a speed-only use of Flower's internals may run on the installed flwr.

    Parameters
    ----------
    what
        The fast path, for the warning (e.g. ``"the warm SuperExec"``).
    fallback
        What runs instead, for the warning (e.g. ``"Flower's flower-superexec"``).

    Returns
    -------
    bool
        True on a verified flwr. Otherwise False, after one :class:`UnverifiedFlowerWarning`
        that names the installed version and the verified ones.
    """
    version = installed_flwr_version()
    if is_verified(version):
        return True
    warnings.warn(
        f"flwr {version} is installed, but FedCARE's {what} relies on Flower internals "
        f"verified on flwr {', '.join(VERIFIED_FLWR_VERSIONS)} only: it is off and {fallback} "
        "runs instead (slower, same results). To turn it back on, run "
        "tests/fedcare/flower/test_flwr_internals.py against this flwr and add the version to "
        "fedcare.flower.flwr_internals.VERIFIED_FLWR_VERSIONS.",
        UnverifiedFlowerWarning,
        stacklevel=2,
    )
    return False


# ---- capped SuperNode polls ---------------------------------------------------------------


class CappedSleep:
    """A stand-in for the ``time`` module whose ``sleep`` waits at most ``cap_s`` seconds.

    Every other attribute is the wrapped module's, so the rest of the SuperNode loop's use of
    ``time`` is unchanged.
    """

    def __init__(self, cap_s: float, module: Clock = time) -> None:
        if not cap_s > 0:
            raise ValueError(f"cap_s must be > 0, got {cap_s}")
        self.cap_s = cap_s
        self._time = module

    def sleep(self, seconds: float) -> None:
        """Sleep ``min(seconds, cap_s)``."""
        self._time.sleep(min(seconds, self.cap_s))

    def __getattr__(self, name: str) -> Any:
        return getattr(self._time, name)


def cap_supernode_sleeps(cap_s: float, clock: Clock = time) -> bool:
    """Cap the sleeps of Flower's SuperNode loop at ``cap_s`` seconds (this process only).

    Parameters
    ----------
    cap_s
        The longest single sleep, > 0.
    clock
        What the capped sleeps call (tests pass a recorder).

    Returns
    -------
    bool
        Whether the cap is in place. False, after one :class:`UnverifiedFlowerWarning`, on an
        unverified flwr or when the loop module no longer sleeps through a ``time`` global;
        the SuperNode then runs with Flower's own waits.
    """
    fallback = "flower-supernode's own 3 s / 0.5 s waits"
    if not fast_paths_enabled("cap on the SuperNode's polls", fallback):
        return False
    import flwr.supernode.start_client_internal as loop

    current = getattr(loop, "time", None)
    if current is not time and not isinstance(current, CappedSleep):
        warnings.warn(
            f"{SUPERNODE_LOOP_MODULE} has no `time` module global to cap; {fallback} apply",
            UnverifiedFlowerWarning,
            stacklevel=2,
        )
        return False
    loop.time = CappedSleep(cap_s, clock)  # type: ignore[assignment]
    return True


# ---- warm SuperExec -----------------------------------------------------------------------


def preload_clientapp_runtime() -> None:
    """Import Flower's ClientApp process body, so forked children do not import it again."""
    import flwr.supernode.runtime.run_clientapp  # noqa: F401


def subprocess_executor() -> Any:
    """Flower's own executor: one ``flwr-<task>`` subprocess per task."""
    from flwr.supercore.superexec.executor import SubprocessExecutor

    return SubprocessExecutor()


def launch_accepted() -> Any:
    """The ``LaunchResult`` an executor returns for a task it started."""
    from flwr.supercore.superexec.executor import LaunchResult

    return LaunchResult.accepted()


def is_clientapp_task(spec: TaskSpec) -> bool:
    """Whether ``spec`` is a ClientApp task (the only kind the warm executor forks)."""
    from flwr.supercore.constant import TaskType

    return spec.task_type == TaskType.CLIENT_APP


def run_clientapp_task(spec: TaskSpec) -> None:
    """Flower's ``flwr-clientapp --token`` process body for one task, in this process.

    Raises whatever Flower's ``run_clientapp`` raises (it leaves with ``SystemExit`` on
    errors it handles).
    """
    from flwr.supercore.tls import validate_and_resolve_root_certificates
    from flwr.supernode.runtime.run_clientapp import run_clientapp

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


def run_superexec_with(
    executor: Any,
    *,
    runtime_api_address: str,
    insecure: bool,
    root_certificates_path: str | None,
    parent_pid: int | None,
) -> None:
    """Run Flower's SuperExec loop (task acquisition, tokens, heartbeats) with ``executor``.

    ``run_superexec`` builds its executor from a type name through its module global
    ``get_executor``; that global is swapped for the call and restored afterwards.
    """
    import flwr.supercore.superexec.run_superexec as superexec

    stock: Callable[..., Any] = superexec.get_executor
    superexec.get_executor = lambda *args, **kwargs: executor
    try:
        superexec.run_superexec(
            runtime_api_address=runtime_api_address,
            insecure=insecure,
            root_certificates_path=root_certificates_path,
            parent_pid=parent_pid,
        )
    finally:
        superexec.get_executor = stock


# ---- error codes --------------------------------------------------------------------------


def node_unavailable_error_code() -> int:
    """The code of the SuperLink's error reply for a node that missed its heartbeats.

    Raises
    ------
    FlowerInternalsError
        If the installed flwr has no ``ErrorCode.NODE_UNAVAILABLE`` (dead nodes could not be
        told from failed ones).
    """
    try:
        from flwr.common.constant import ErrorCode

        return int(ErrorCode.NODE_UNAVAILABLE)
    except (ImportError, AttributeError) as exc:
        raise FlowerInternalsError(
            f"flwr {installed_flwr_version()} has no flwr.common.constant.ErrorCode."
            f"NODE_UNAVAILABLE (verified on {', '.join(VERIFIED_FLWR_VERSIONS)}): FedCARE's "
            "server cannot tell a node the SuperLink lost from one that failed a round"
        ) from exc
