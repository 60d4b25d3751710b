"""Time the exact min-norm solver against SLSQP on random Gram matrices.

For each number of objectives S, draws random gradient matrices A (S × (2S + 3), standard
normal) and their Gram matrices A Aᵀ, solves each with both methods of
:func:`fedcare_core.moo.min_norm_weights`, and prints a Markdown table of the median time per
call, the speed-up and the largest relative difference of the attained squared norms.

Run from anywhere with the project installed::

    python benchmarks/bench_min_norm.py [--problems 2000] [--out results.md]
"""

from __future__ import annotations

import argparse
import platform
import sys
import time
from pathlib import Path

import numpy as np
import scipy

from fedcare_core.moo import min_norm_weights

SIZES = (2, 3, 5, 8)
#: Problems per alternation between the two methods.
CHUNK = 50


def random_grams(rng: np.random.Generator, s: int, count: int) -> list[np.ndarray]:
    """``count`` Gram matrices of S random gradients of dimension 2S + 3."""
    grams = []
    for _ in range(count):
        a = rng.normal(size=(s, 2 * s + 3))
        grams.append(a @ a.T)
    return grams


def bench_size(s: int, problems: int, seed: int) -> dict[str, float]:
    """Median µs per call for each method, and the worst relative objective difference."""
    rng = np.random.default_rng(seed + s)
    grams = random_grams(rng, s, problems)
    for g in grams[:20]:  # warm-up: imports, caches
        min_norm_weights(g, "exact")
        min_norm_weights(g, "slsqp")
    t_exact = np.empty(problems)
    t_slsqp = np.empty(problems)
    sq_exact = np.empty(problems)
    sq_slsqp = np.empty(problems)
    clock = time.perf_counter
    # Alternate chunks of problems between the methods: each method runs warm (as it would
    # in a training loop) while both see the same machine load over the run.
    for start in range(0, problems, CHUNK):
        stop = min(start + CHUNK, problems)
        for method, times, values in (
            ("exact", t_exact, sq_exact),
            ("slsqp", t_slsqp, sq_slsqp),
        ):
            for i in range(start, stop):
                t0 = clock()
                _, values[i] = min_norm_weights(grams[i], method)
                times[i] = clock() - t0
    tiny = np.finfo(np.float64).tiny
    rel = np.abs(sq_exact - sq_slsqp) / np.maximum(np.maximum(sq_exact, sq_slsqp), tiny)
    exact_us = float(np.median(t_exact)) * 1e6
    slsqp_us = float(np.median(t_slsqp)) * 1e6
    return {
        "exact_us": exact_us,
        "slsqp_us": slsqp_us,
        "speedup": slsqp_us / exact_us,
        "max_rel_diff": float(rel.max()),
    }


def markdown_table(results: dict[int, dict[str, float]], problems: int, seed: int) -> str:
    """Render the results as a Markdown table with a one-line provenance caption."""
    lines = [
        f"Min-norm solver, {problems} random problems per S (seed {seed}); median per call. "
        f"Python {platform.python_version()}, NumPy {np.__version__}, SciPy {scipy.__version__}, "
        f"{platform.machine()}.",
        "",
        "| S | exact (µs) | SLSQP (µs) | speed-up | max rel. objective diff. |",
        "|---:|---:|---:|---:|---:|",
    ]
    for s, r in results.items():
        lines.append(
            f"| {s} | {r['exact_us']:.1f} | {r['slsqp_us']:.1f} | {r['speedup']:.0f}× "
            f"| {r['max_rel_diff']:.1e} |"
        )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark; print the table and optionally write it to ``--out``."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--problems", type=int, default=2000, help="problems per S")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--sizes", type=int, nargs="+", default=list(SIZES), help="numbers of objectives S"
    )
    parser.add_argument("--out", type=Path, default=None, help="also write the table here")
    args = parser.parse_args(argv)
    if args.problems < 1:
        parser.error("--problems must be >= 1")

    results = {s: bench_size(s, args.problems, args.seed) for s in args.sizes}
    table = markdown_table(results, args.problems, args.seed)
    sys.stdout.write(table)
    if args.out is not None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(table, encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
