"""The multi-site cases' shared inputs, built once per harness run from the real Diabetes 130 file.

:func:`template` makes, in a temporary folder removed when the harness ends: a federation schema
(``fed.json``, 2 rounds, 1 Stage 2 epoch), the first :data:`TEMPLATE_ROWS` encounters split by
patient into three hospitals (``hosp/``, by ``fedcare data split-sites``), three site folders
prepared from them (``sites/north``, ``south``, ``west``, by ``fedcare site prepare``) each
holding the ``w*`` an in-process Stage 1 over the three gives it, and certificates and keys
(``tls/`` and ``other-tls/``: two CAs with their server certificates, ``expired-ca.pem``,
``rsa-node.key``/``.pub``). Every builder here copies what a case needs into the case's own
input folder and edits the copy; nothing else is ever written.
"""

from __future__ import annotations

import atexit
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from case_model import Builder, Sources, write_diabetes
from ops_cases import run_fedcare

#: Encounters of the real file the three hospitals share (about 3,000 each: seconds to prepare).
TEMPLATE_ROWS = 9_000
#: Each site: its name, its hospital file and its objective.
SITES = (("north", 0, "readmission"), ("south", 1, "los"), ("west", 2, "early_discharge"))
#: Files a running SuperLink keeps writing in its state folder ``{in}/ST``.
SUPERLINK_VOLATILE = ("in/ST/superlink.db*", "in/ST/logs/*", "in/ST/flwr-home/*")

_BUILT: dict[str, Path] = {}

#: Run in the project's interpreter: w* for each site, and the certificates and keys.
_MATERIAL = r"""
import datetime, sys
from pathlib import Path
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.x509.oid import NameOID
from fedcare_core.sites.schema import read_schema
from fedcare_core.sites.client import federation_of_sites
from fedcare_core.stage1.loop import run_stage1
from fedcare.flower.results import round_to_dict
from fedcare.sites.site_folder import SiteFolder, store_final_model
from fedcare.flower.site_messages import FinalModel
from fedcare.flower.tls import make_tls

root = Path(sys.argv[1])
schema = read_schema(root / "fed.json")
sites = {p.name: SiteFolder.open(p) for p in sorted((root / "sites").iterdir())}
fed = federation_of_sites(schema, [(n, s.client()) for n, s in sites.items()])
config = schema.run_config(seed=0, clients=len(sites), rounds=2)
st = run_stage1(fed, config.model, config.stage1, config.seed)
for cid, name in enumerate(sorted(sites)):
    store_final_model(sites[name].stage1_dir, FinalModel(
        client_id=cid, seed=0, schema_digest=schema.digest(), objectives=st.objectives,
        common_width=fed.common_width, rounds=[round_to_dict(r) for r in st.rounds],
        planned_rounds=2, clients=len(sites), converged=st.converged, run_name="r-badinputs",
        params=st.params, buffers=st.buffers))
make_tls(root / "tls", validity_days=30)
make_tls(root / "other-tls", validity_days=30)
key = ec.generate_private_key(ec.SECP256R1())
name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "expired CA")])
now = datetime.datetime.now(datetime.UTC)
cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name)
        .public_key(key.public_key()).serial_number(1)
        .not_valid_before(now - datetime.timedelta(days=30))
        .not_valid_after(now - datetime.timedelta(days=1)).sign(key, hashes.SHA256()))
(root / "expired-ca.pem").write_bytes(cert.public_bytes(serialization.Encoding.PEM))
rsa_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
(root / "rsa-node.key").write_bytes(rsa_key.private_bytes(
    serialization.Encoding.PEM, serialization.PrivateFormat.OpenSSH,
    serialization.NoEncryption()))
(root / "rsa-node.pub").write_bytes(rsa_key.public_key().public_bytes(
    serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH))
"""


def template(src: Sources) -> Path:
    """The shared inputs (built on first use; removed when the harness ends)."""
    if "root" not in _BUILT:
        root = Path(tempfile.mkdtemp(prefix="fedcare-badinputs-sites-"))
        atexit.register(shutil.rmtree, root, True)
        _build(root, src)
        _BUILT["root"] = root
    return _BUILT["root"]


def _build(root: Path, src: Sources) -> None:
    cohort = write_diabetes(root, src.diabetes_lines[: TEMPLATE_ROWS + 1], name="cohort.csv")
    fed = root / "fed.json"
    run_fedcare(["federation", "init", "--dataset", "diabetes130", "--out", str(fed),
                 "--rounds", "2", "--stage2-epochs", "1"], root)  # fmt: skip
    run_fedcare(["data", "split-sites", "--dataset", "diabetes130", "--data", str(cohort),
                 "--sites", "3", "--seed", "0", "--out", str(root / "hosp")], root)  # fmt: skip
    for name, index, objective in SITES:
        run_fedcare(["site", "prepare", "--schema", str(fed), "--data",
                     str(root / "hosp" / f"site-{index}.csv"), "--objectives", objective,
                     "--out", str(root / "sites" / name)], root)  # fmt: skip
    python = os.environ.get("BADINPUTS_PYTHON", sys.executable)
    subprocess.run(
        [python, "-c", _MATERIAL, str(root)], cwd=root, check=True, capture_output=True, timeout=600
    )


def copy(*names: str) -> Builder:
    """Copy template entries (``fed.json``, ``sites/north``, ``hosp``, ``tls``…) into ``{in}``.

    A site folder lands as ``{in}/<site name>``; anything else keeps its path.
    """

    def build(inp: Path, src: Sources) -> None:
        root = template(src)
        for name in names:
            source = root / name
            target = inp / (source.name if name.startswith("sites/") else name)
            target.parent.mkdir(parents=True, exist_ok=True)
            if source.is_dir():
                shutil.copytree(source, target)
            else:
                shutil.copy2(source, target)

    return build


def edit_json(rel: str, change: Callable[[Any], object]) -> Builder:
    """Edit ``{in}/rel``'s JSON in place: ``change(doc)`` mutates it (its result is ignored)."""

    def build(inp: Path, _src: Sources) -> None:
        path = inp / rel
        doc = json.loads(path.read_text())
        change(doc)
        path.write_text(json.dumps(doc))

    return build


def edit_arrays(rel: str, change: Callable[[dict[str, Any]], dict[str, Any]]) -> Builder:
    """Rewrite the ``.npz`` at ``{in}/rel`` with ``change(arrays)``'s arrays."""

    def build(inp: Path, _src: Sources) -> None:
        import numpy as np

        path = inp / rel
        with np.load(path) as npz:
            arrays = {k: npz[k] for k in npz.files}
        with open(path, "wb") as fh:
            np.savez(fh, **change(arrays))

    return build


def write(rel: str, content: str | bytes) -> Builder:
    """Write ``{in}/rel`` (folders made)."""

    def build(inp: Path, _src: Sources) -> None:
        path = inp / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        data = content.encode() if isinstance(content, str) else content
        path.write_bytes(data)

    return build


def run(*argv: str) -> Builder:
    """Run ``fedcare argv`` (``{in}`` replaced) in ``{in}``; it must succeed."""

    def build(inp: Path, _src: Sources) -> None:
        run_fedcare([a.replace("{in}", str(inp)) for a in argv], inp)

    return build


def steps(*builders: Builder) -> Builder:
    """The builders, in order."""

    def build(inp: Path, src: Sources) -> None:
        for b in builders:
            b(inp, src)

    return build


def start_coordinator(inp: Path, src: Sources) -> None:
    """Start a coordinator with state ``{in}/ST`` on a free port (stop it with :func:`stop`)."""
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    run_fedcare(["federation", "start", "--state-dir", str(inp / "ST"), "--port", str(port)], inp)


def stop_coordinator(inp: Path) -> None:
    """Stop the coordinator of ``{in}/ST`` (a case's teardown); none started: nothing to do."""
    if (inp / "ST" / "superlink.json").is_file():  # stop refuses a folder no coordinator made
        run_fedcare(["federation", "stop", "--state-dir", str(inp / "ST")], inp)
