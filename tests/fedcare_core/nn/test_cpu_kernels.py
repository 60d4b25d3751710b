from __future__ import annotations

import os
import platform
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

from fedcare_core.config import ExperimentConfig
from fedcare_core.nn.cpu_kernels import ENV, PINNED, kernel_path_mismatch
from fedcare_core.run import pipeline as runner
from tests.conftest import REPO_ROOT as ROOT

# The heads' output activations (Sigmoid for binary objectives, Softplus for LOS): torch's
# AVX2 and AVX-512 kernels compute them with different vectorised approximations, which differ
# in the last bit for some inputs (measured: 2.13.0 on an AVX-512 machine).
PROBE = """
import os
{preamble}
import torch
x = 3.0 * torch.randn(100_003, generator=torch.Generator().manual_seed(7))
print(os.environ.get("{env}"), torch.backends.cpu.get_cpu_capability())
sig = torch.sigmoid(x).double()
soft = torch.nn.functional.softplus(x).double()
print(sig.sum().item().hex(), soft.sum().item().hex())
"""


def _cpu_flags() -> set[str]:
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return set()
    for line in text.splitlines():
        if line.startswith("flags"):
            return set(line.split(":", 1)[1].split())
    return set()


FLAGS = _cpu_flags()
needs_avx2 = pytest.mark.skipif(
    platform.machine().lower() not in ("x86_64", "amd64") or "avx2" not in FLAGS,
    reason="the pin applies to x86-64 CPUs with AVX2",
)


def probe(preamble: str, **env: str) -> tuple[str, str]:
    """Run :data:`PROBE` in a fresh interpreter; returns (env and capability, numbers)."""
    # Thread-count settings change which elements a vectorised kernel handles in its tail, and
    # with that whether the two kernels' sums differ: the probe runs at torch's defaults.
    threads = {"OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"}
    clean = {k: v for k, v in os.environ.items() if k != ENV and k not in threads} | env
    code = PROBE.format(preamble=preamble, env=ENV)
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=clean, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    first, second = done.stdout.strip().splitlines()
    return first, second


@needs_avx2
def test_importing_the_core_pins_avx2_and_gives_an_avx2_machines_numbers() -> None:
    pinned_by_import = probe("import fedcare_core")
    asked_for = probe("", **{ENV: PINNED})
    assert pinned_by_import[0] == f"{PINNED} AVX2"
    assert pinned_by_import[1] == asked_for[1]
    if {"avx512f", "avx512bw", "avx512vl", "avx512dq"} <= FLAGS:  # torch's test for AVX512
        # The premise: on this machine torch's own choice would give other numbers.
        unpinned = probe("")
        assert unpinned[0] == "None AVX512"
        assert unpinned[1] != pinned_by_import[1]


@needs_avx2
def test_the_users_setting_wins() -> None:
    assert probe("import fedcare_core", **{ENV: "default"})[0] == "default DEFAULT"


def test_mismatch_is_none_when_the_paths_agree_or_nothing_was_asked() -> None:
    assert kernel_path_mismatch("avx2", "AVX2") is None
    assert kernel_path_mismatch(None, "AVX512") is None


def test_mismatch_names_both_paths() -> None:
    message = kernel_path_mismatch("avx2", "AVX512")
    assert message is not None
    assert "AVX512" in message and "AVX2" in message and ENV in message


def test_configure_torch_warns_when_torch_runs_other_kernels(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(ENV, PINNED)
    monkeypatch.setattr(runner, "kernel_path", lambda: "AVX512")
    with pytest.warns(RuntimeWarning, match="AVX512 CPU kernels"):
        runner.configure_torch(ExperimentConfig())
    monkeypatch.setattr(runner, "kernel_path", lambda: "AVX2")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        runner.configure_torch(ExperimentConfig())
