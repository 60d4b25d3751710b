"""Run every bad-input case against the ``fedcare`` CLI and report which promises held.

Each case gets its own temporary folder (inputs derived from the real files, then deleted), runs
as a subprocess of ``python -m fedcare.cli`` with that folder as its working directory and a
timeout, and is judged by :mod:`classify`. The report is a Markdown file: a summary (cases and
held percentage per category, broken cases per kind), the broken cases with their command and
first message line, then every case. A JSON twin sits next to it (``.json``).

Run from the repository root (about 15 minutes on two cores)::

    FLWR_TELEMETRY_ENABLED=0 DO_NOT_TRACK=1 .venv/bin/python benchmarks/bad_inputs/run_cases.py \
        --report /tmp/bad_inputs.md [--only 'd-*'] [--category mimic] [--timeout 180]
"""

from __future__ import annotations

import argparse
import contextlib
import fnmatch
import json
import os
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from case_model import DEFAULT_DATA_ROOT, Case, Sources, fill
from classify import KIND_ORDER, Outcome, first_line, judge
from generate_cases import all_cases, select

REPO = Path(__file__).resolve().parents[2]
NOBODY = ("setpriv", "--reuid=65534", "--regid=65534", "--clear-groups")


def snapshot(root: Path) -> dict[str, tuple[str, int, int]]:
    """Every path under ``root``: kind, size and modification time (unreadable folders skipped)."""
    seen: dict[str, tuple[str, int, int]] = {}
    for dirpath, dirnames, filenames in os.walk(root, onerror=lambda e: None):
        for name in dirnames + filenames:
            path = Path(dirpath) / name
            try:
                st = path.lstat()
            except OSError:
                continue
            kind = "d" if path.is_dir() and not path.is_symlink() else "f"
            size = 0 if kind == "d" else st.st_size
            seen[str(path.relative_to(root))] = (kind, size, 0 if kind == "d" else st.st_mtime_ns)
    return seen


def changed_paths(
    before: dict[str, tuple[str, int, int]],
    after: dict[str, tuple[str, int, int]],
    allowed: set[str],
    volatile: tuple[str, ...] = (),
) -> list[str]:
    """Paths created, changed or removed between two snapshots, less ``allowed`` ones.

    ``volatile`` globs name files a process started by the case's builder keeps writing.
    """
    out = [p for p in after if before.get(p) != after[p] and p not in allowed]
    out += [f"{p} (removed)" for p in before if p not in after]
    allowed_dirs = {str(Path(a).parent) for a in allowed}
    kept = [p for p in out if p not in allowed_dirs]
    return sorted(p for p in kept if not any(fnmatch.fnmatch(p, g) for g in volatile))


def free_port() -> int:
    """A TCP port on loopback that nothing listens on now (the ``{port}`` placeholder)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def processes_naming(folder: Path) -> list[int]:
    """Pids of the processes whose command line names ``folder`` (what a case started)."""
    found = []
    needle = str(folder).encode()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            if needle in (entry / "cmdline").read_bytes():
                found.append(int(entry.name))
        except OSError:
            continue
    return found


def sweep(folder: Path, grace: float = 10.0) -> list[int]:
    """End (SIGTERM, then SIGKILL) every process still naming ``folder``; their pids."""
    pids = processes_naming(folder)
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for pid in pids:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, sig)
        deadline = time.monotonic() + grace
        while time.monotonic() < deadline and processes_naming(folder):
            time.sleep(0.2)
        if not processes_naming(folder):
            break
    return pids


def _environment(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "FEDCARE_DATA_DIR"}
    env.update(
        PYTHONPATH=str(REPO),
        FLWR_TELEMETRY_ENABLED="0",
        DO_NOT_TRACK="1",
        HOME=str(home),
        MPLCONFIGDIR=str(home / "mpl"),
        PYTHONDONTWRITEBYTECODE="1",
    )
    return env


def _execute(
    cmd: list[str], cwd: Path, env: dict[str, str], timeout: float
) -> tuple[int | None, str, str, bool]:
    """Run ``cmd`` in its own session; on timeout Ctrl-C its group, then kill it."""
    proc = subprocess.Popen(
        cmd,
        cwd=cwd,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        errors="replace",
        start_new_session=True,
    )
    try:
        out, err = proc.communicate(timeout=timeout)
        return proc.returncode, out, err, False
    except subprocess.TimeoutExpired:
        pass
    # Ctrl-C first: the command's own teardown stops the processes it started; then SIGKILL.
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGINT)
    try:
        out, err = proc.communicate(timeout=30.0)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
    return None, out, err, True


def run_case(case: Case, src: Sources, root: Path, python: str, timeout: float) -> Outcome:
    """Build, run and judge one case; its folder is removed afterwards."""
    work = Path(tempfile.mkdtemp(prefix=case.id + "-", dir=root))
    inp = work / "in"
    inp.mkdir()
    (work / "out").mkdir()
    argv = [fill(a, inp, work, free_port()) for a in case.argv]
    shown = "fedcare " + shlex.join(argv).replace(str(work), "$CASE")
    out = Outcome(case.id, case.category, case.expect, None, 0.0, "", command=shown, note=case.note)
    try:
        _judged_run(case, src, root, python, timeout, work, argv, out)
    finally:
        if case.teardown is not None:
            with contextlib.suppress(Exception):
                case.teardown(inp)
        stray = sweep(work)
        if stray:
            out.kinds.append("stray-process")
            out.details.append(f"{len(stray)} process(es) still running after the case")
        shutil.rmtree(work, ignore_errors=True)
    return out


def _judged_run(
    case: Case,
    src: Sources,
    root: Path,
    python: str,
    timeout: float,
    work: Path,
    argv: list[str],
    out: Outcome,
) -> None:
    """Build the case's inputs, run the command and judge it into ``out``."""
    inp = work / "in"
    try:
        case.build(inp, src)
    except Exception as exc:  # a harness fault, not the project's: report it as such
        out.kinds.append("harness-error")
        out.line = f"building the inputs failed: {exc!r}"
        return
    cmd = [python, "-m", "fedcare.cli", *argv]
    if case.as_nobody:
        for d in (work, inp, work / "out", root / "home"):
            d.chmod(0o777)
        work.chmod(0o755)
        inp.chmod(0o755)
        cmd = [*NOBODY, *cmd]
    env = _environment(root / "home")
    env.update(case.env)
    outputs = {str(Path(fill(p, inp, work)).relative_to(work)) for p in case.outputs}
    before = snapshot(work)
    start = time.monotonic()
    rc, stdout, stderr, timed_out = _execute(cmd, work, env, case.timeout or timeout)
    out.seconds = time.monotonic() - start
    out.rc = rc
    after = snapshot(work)
    allowed = outputs | (
        {p for p in after if p.startswith("out/")} if case.expect == "accepted" else set()
    )
    out.line = (
        first_line(stderr, stdout) if not timed_out else f"(no exit after {out.seconds:.0f} s)"
    )
    judge(
        out,
        timed_out=timed_out,
        stdout=stdout,
        stderr=stderr,
        names=case.names,
        rows=case.rows,
        secrets=case.secrets,
        scan_ids=case.id[:2] in ("d-", "m-", "o-", "r-", "e-", "s-", "x-"),
        changed=changed_paths(before, after, allowed, case.volatile),
        missing_outputs=sorted(p for p in outputs if not (work / p).exists()),
    )


def _cell(text: str, limit: int = 220) -> str:
    text = text.replace("|", "\\|").replace("\n", " ")
    return text if len(text) <= limit else text[: limit - 1] + "…"


def render(outcomes: list[Outcome], seconds: float) -> str:
    """The Markdown report."""
    total = len(outcomes)
    held = sum(o.held for o in outcomes)
    lines = [
        "# Bad-input harness: results",
        "",
        f"{total} cases, **{held} held, {total - held} broken: "
        f"{100.0 * held / max(total, 1):.1f}% held** ({seconds / 60:.1f} min).",
        "",
        "| category | cases | refused expected | accepted expected | held | broken | held % |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    cats = sorted({o.category for o in outcomes}, key=[o.category for o in outcomes].index)
    for cat in cats:
        group = [o for o in outcomes if o.category == cat]
        h = sum(o.held for o in group)
        ref = sum(o.expect == "refused" for o in group)
        lines.append(
            f"| {cat} | {len(group)} | {ref} | {len(group) - ref} | {h} | "
            f"{len(group) - h} | {100.0 * h / len(group):.0f} |"
        )
    kinds = Counter(o.primary for o in outcomes if not o.held)
    lines += ["", "| broken, by primary kind | cases |", "| --- | ---: |"]
    for kind in (*KIND_ORDER, "harness-error"):
        if kinds.get(kind):
            lines.append(f"| {kind} | {kinds[kind]} |")
    lines += ["", "## Broken cases", ""]
    for kind in (*KIND_ORDER, "harness-error"):
        group = [o for o in outcomes if not o.held and o.primary == kind]
        if not group:
            continue
        lines += [
            f"### {kind} ({len(group)})",
            "",
            "| case | expected | got | first line | details | command |",
            "| --- | --- | --- | --- | --- | --- |",
        ]
        for o in group:
            got = "timeout" if o.rc is None else f"exit {o.rc}"
            lines.append(
                f"| {o.case_id} | {o.expect} | {got} | `{_cell(o.line)}` | "
                f"{_cell('; '.join([', '.join(o.kinds), *o.details]))} | "
                f"`{_cell(o.command, 400)}` |"
            )
        lines.append("")
    lines += [
        "## Every case",
        "",
        "| case | category | expected | verdict | exit | s | first line |",
        "| --- | --- | --- | --- | ---: | ---: | --- |",
    ]
    for o in outcomes:
        verdict = "held" if o.held else f"BROKEN ({o.primary})"
        lines.append(
            f"| {o.case_id} | {o.category} | {o.expect} | {verdict} | "
            f"{'-' if o.rc is None else o.rc} | {o.seconds:.1f} | `{_cell(o.line)}` |"
        )
    return "\n".join(lines) + "\n"


def write_report(path: Path, outcomes: list[Outcome], seconds: float) -> None:
    """Write the Markdown report and its JSON twin (after every case: a partial run counts)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(render(outcomes, seconds))
    path.with_suffix(".json").write_text(
        json.dumps([o.__dict__ for o in outcomes], indent=1) + "\n"
    )


def main(argv: list[str] | None = None) -> int:
    """Run the selected cases sequentially and write the report."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--report", type=Path, required=True, help="Markdown report to write")
    parser.add_argument("--only", action="append", help="case id glob (repeatable)")
    parser.add_argument("--category", action="append", help="category (repeatable)")
    parser.add_argument("--timeout", type=float, default=180.0, help="seconds per case")
    parser.add_argument("--python", default=sys.executable, help="interpreter with fedcare")
    parser.add_argument("--data-root", type=Path, default=DEFAULT_DATA_ROOT)
    args = parser.parse_args(argv)
    src = Sources(args.data_root)
    cases = select(all_cases(src), args.only, args.category)
    if not cases:
        parser.error("no case matches")
    root = Path(tempfile.mkdtemp(prefix="fedcare-badinputs-"))
    root.chmod(0o755)
    (root / "home").mkdir()
    os.environ["BADINPUTS_PYTHON"] = args.python
    os.environ["PYTHONPATH"] = str(REPO)
    outcomes: list[Outcome] = []
    start = time.monotonic()
    try:
        for n, case in enumerate(cases, 1):
            o = run_case(case, src, root, args.python, args.timeout)
            outcomes.append(o)
            mark = "held  " if o.held else f"BROKEN {o.primary}"
            print(
                f"[{n:3}/{len(cases)}] {case.id:42} {mark:22} {o.seconds:5.1f}s  "
                f"{_cell(o.line, 110)}",
                flush=True,
            )
            write_report(args.report, outcomes, time.monotonic() - start)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    held = sum(o.held for o in outcomes)
    print(
        f"{held}/{len(outcomes)} held ({100.0 * held / len(outcomes):.1f}%); report: {args.report}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
