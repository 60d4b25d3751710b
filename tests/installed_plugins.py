"""Installing an extension in a test as pip would leave it: a ``.dist-info`` on ``sys.path``.

:func:`installed` writes a distribution's metadata (its ``METADATA`` and ``entry_points.txt``)
into a folder; :func:`pip_installed` has pip install a package (``tests/plugins/…``) into one.
Either puts the folder first on ``sys.path`` (and on ``PYTHONPATH`` for the processes a test
starts) and makes :mod:`fedcare_core.plugins` read the installed extensions again; on exit it
takes them away. Nothing of the project is changed: the extension is found by its entry point
alone.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

from fedcare_core import algorithms
from fedcare_core.config.method_options import forget_options
from fedcare_core.plugins.entry_points import forget_installed


@contextmanager
def installed(
    folder: Path, distribution: str, entries: Mapping[str, Mapping[str, str]]
) -> Iterator[Path]:
    """Install ``distribution`` declaring ``entries`` (group → name → ``module:attr``).

    The modules the entries name must be importable already (the test's own, or a package
    under ``folder``).
    """
    info = folder / f"{distribution.replace('-', '_')}-0.1.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {distribution}\nVersion: 0.1\n")
    lines = []
    for group, names in entries.items():
        lines += [f"[{group}]", *(f"{name} = {value}" for name, value in names.items()), ""]
    (info / "entry_points.txt").write_text("\n".join(lines))
    with _on_path(folder):
        yield folder


@contextmanager
def pip_installed(package: Path, folder: Path) -> Iterator[Path]:
    """Install the package whose source is ``package`` into ``folder`` with pip.

    pip builds it from a copy (the checkout is left as it was), offline, with the setuptools
    already installed, and without its dependencies (FedCARE is the one it names).
    """
    source = folder / "source"
    shutil.copytree(package, source)
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-index",
         "--no-build-isolation", "--target", str(folder / "site"), str(source)],
        check=True, capture_output=True,
    )  # fmt: skip
    with _on_path(folder / "site"):
        yield folder / "site"


@contextmanager
def _on_path(folder: Path) -> Iterator[None]:
    """``folder`` first on ``sys.path`` and ``PYTHONPATH`` while the context lasts."""
    saved = os.environ.get("PYTHONPATH")
    sys.path.insert(0, str(folder))
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(folder), saved]))
    _forget()
    try:
        yield
    finally:
        sys.path.remove(str(folder))
        if saved is None:
            os.environ.pop("PYTHONPATH", None)
        else:
            os.environ["PYTHONPATH"] = saved
        _forget()


def _forget() -> None:
    forget_installed()
    forget_options()
    algorithms._load.cache_clear()
