"""One CPU kernel path for torch, so that a seed gives the same numbers on every x86-64 machine.

ATen, torch's operator library, picks its vectorised CPU kernels by the widest instruction
set the CPU has: AVX2 on most machines, AVX-512 on newer ones. Its AVX2 and AVX-512 Sigmoid and
Softplus (the heads' output activations) differ in the last bit for some inputs (of the
operations probed, only these did), and training amplifies that, so the same seed and
configuration gave different numbers on the two kinds of machine: seed 0 of the Diabetes 130
comparison differed by up to 0.014 days (FedProx's LOS MAE) and 0.003 AUROC (PAFNet's
readmission) between an AVX2 and an AVX-512 machine, where each machine on its own repeats its
numbers bit for bit.

Torch reads the environment variable ``ATEN_CPU_CAPABILITY`` once, at the first vectorised
operation of a process. :func:`pin_kernel_path`, called when :mod:`fedcare_core` is imported
(before any of its tensors exist), sets it to ``avx2`` on x86-64 unless the user has set it:
every machine with AVX2 then runs the same kernels (measured: no slower than AVX-512 on this
network). Processes started from one that imported :mod:`fedcare_core` (the experiment
engine's workers, Prefect's task workers, Flower's SuperNodes) inherit the setting.

Matrix products go through MKL, whose own code path is left at its default: on the machines
measured here it gave the same products on AVX2 and AVX-512 CPUs. ``MKL_CBWR`` would pin it
too, but switching MKL's reproducibility mode on changes every result.
"""

from __future__ import annotations

import os
import platform

#: The kernel path pinned on x86-64 (``ATEN_CPU_CAPABILITY``'s spelling).
PINNED = "avx2"
#: The environment variable torch reads.
ENV = "ATEN_CPU_CAPABILITY"

_X86_64 = frozenset({"x86_64", "amd64"})


def pin_kernel_path() -> None:
    """Ask torch for the AVX2 kernels on x86-64, unless ``ATEN_CPU_CAPABILITY`` is set.

    Takes effect only if it runs before the process's first vectorised torch operation.
    """
    if platform.machine().lower() in _X86_64:
        os.environ.setdefault(ENV, PINNED)


def kernel_path() -> str:
    """The kernel path torch runs in this process (``"AVX2"``, ``"AVX512"``, ``"DEFAULT"``, …).

    Asking fixes it for the rest of the process, as a first vectorised operation would.
    """
    import torch

    return str(torch.backends.cpu.get_cpu_capability())


def kernel_path_mismatch(requested: str | None, active: str) -> str | None:
    """Why the active kernel path is not the one asked for, or ``None`` when they agree.

    Parameters
    ----------
    requested
        ``ATEN_CPU_CAPABILITY`` as set (``None``: not set, e.g. not x86-64).
    active
        :func:`kernel_path`.

    Returns
    -------
    str or None
        A sentence for a warning: results may then differ in their last bits (and, after
        training, in the third or fourth decimal) from runs on other machines.
    """
    if requested is None or requested.upper() == active.upper():
        return None
    return (
        f"torch runs its {active} CPU kernels, not the {requested.upper()} ones that "
        f"{ENV}={requested} asks for (a torch operation ran before fedcare_core was imported, "
        "or this CPU lacks the instructions); results can differ from other machines' runs "
        "of the same seed after the first few decimals"
    )
