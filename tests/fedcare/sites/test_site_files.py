"""A site folder's files read checked: a real card, site.json and w* pass; edited ones are refused
naming the file and the field (or array), in one line."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from fedcare.flower.fedxgb.received import read_stage1_trees
from fedcare.flower.received_model import (
    STAGE1_ARRAYS,
    STAGE1_DOC,
    read_stage1_arrays,
    store_final_model,
)
from fedcare.sites.site_files import SiteCard, read_site_info, read_stage1_doc
from fedcare.sites.site_folder import SiteFolder, create_site_folder
from fedcare_core.config import ExperimentConfig
from fedcare_core.errors import ConfigError
from fedcare_core.sites.schema import schema_for
from tests.fedcare.sites.test_site_folder import _final

SCHEMA = schema_for(ExperimentConfig())


@pytest.fixture
def site(small_federation: Any, tmp_path: Path) -> SiteFolder:
    _, fed = small_federation
    folder = create_site_folder(
        tmp_path / "north", fed.clients[0], SCHEMA, name="north", seed=0, source_sha256="ab" * 32
    )
    store_final_model(folder.stage1_dir, _final())
    return folder


def _edit(path: Path, change: Any) -> None:
    doc = json.loads(path.read_text())
    change(doc)
    path.write_text(json.dumps(doc))


def _one_line(exc: pytest.ExceptionInfo[ConfigError], start: str, *parts: str) -> None:
    text = str(exc.value)
    assert text.startswith(start) and "\n" not in text, text
    for part in parts:
        assert part in text, text


def _rsa_ssh_key() -> str:
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048).public_key()
    return key.public_bytes(
        serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH
    ).decode()


def test_the_real_files_read_back(site: SiteFolder) -> None:
    card = SiteCard.read(site.root / "site-card.json")
    info = read_site_info(site.root / "site.json")
    assert card.name == info["name"] == "north" and card.schema_digest == SCHEMA.digest()
    doc = read_stage1_doc(site.stage1_dir / STAGE1_DOC)
    assert (doc.client_id, doc.clients, doc.planned_rounds) == (1, 3, 5)
    final = _final()
    sizes = {"params": final.params.size, "buffers": final.buffers.size}
    arrays = read_stage1_arrays(site.stage1_dir / STAGE1_ARRAYS, sizes)
    assert arrays["params"].tobytes() == final.params.tobytes()


@pytest.mark.parametrize(
    ("change", "field"),
    [
        (lambda d: d.update(name="../../x"), "field 'name': site name '../../x'"),
        (lambda d: d.update(name="/etc/x"), "field 'name': site name '/etc/x'"),
        (lambda d: d.update(name=""), "field 'name': site name ''"),
        (lambda d: d.update(name="a\nb"), r"field 'name': site name 'a\nb'"),
        (lambda d: d.update(name="a\x00b"), r"site name 'a\x00b'"),
        (lambda d: d.update(name="n" * 300), "site name 'nnnn"),
        (lambda d: d.update(objectives="readmission"), "field 'objectives' must be a non-empty"),
        (lambda d: d.update(objectives=[]), "field 'objectives'"),
        (lambda d: d.update(schema_digest=12), "field 'schema_digest' must be a SHA-256"),
        (lambda d: d.update(public_key="hello"), "field 'public_key': not an OpenSSH public key"),
        (lambda d: d.update(public_key=_rsa_ssh_key()), "needs an elliptic-curve key"),
        (lambda d: d.pop("public_key"), "field 'public_key' must be a string"),
        (lambda d: d.update(format="fedcare-site-card/0"), "field 'format'"),
    ],
)
def test_an_edited_card_is_refused_naming_the_field(site: SiteFolder, change: Any, field: str):
    path = site.root / "site-card.json"
    _edit(path, change)
    with pytest.raises(ConfigError) as exc:
        SiteCard.read(path)
    _one_line(exc, f"site card {path}: ", field)


@pytest.mark.parametrize(
    ("change", "field"),
    [
        (lambda d: d.update(name="../x"), "field 'name': site name '../x'"),
        (lambda d: d.update(name=5), "field 'name': site name 5 (a int)"),
        (lambda d: d["rows"].update(train=-1), "field 'rows.train' must be an integer"),
        (lambda d: d.update(rows=[1, 2, 3]), "field 'rows' must be a JSON object"),
        (lambda d: d.update(split_seed=2**40), "field 'split_seed'"),
        (lambda d: d.pop("source_sha256"), "field 'source_sha256' must be a SHA-256"),
        (lambda d: d.update(schema_digest=None), "field 'schema_digest'"),
        (lambda d: d.update(objectives="los"), "field 'objectives'"),
    ],
)
def test_an_edited_site_json_is_refused_naming_the_field(site: SiteFolder, change: Any, field: str):
    path = site.root / "site.json"
    _edit(path, change)
    with pytest.raises(ConfigError) as exc:
        read_site_info(path)
    _one_line(exc, f"site file {path}: ", field)


@pytest.mark.parametrize(
    ("change", "field"),
    [
        (
            lambda d: d.update(client_id=-3),
            "field 'client_id' must be an integer and lie in [0, 2]",
        ),
        (lambda d: d.update(client_id=3), "lie in [0, 2], got 3"),
        (lambda d: d.update(client_id="1"), "field 'client_id'"),
        (lambda d: d.update(clients=10**12), "field 'clients'"),
        (lambda d: d.update(planned_rounds=0), "field 'planned_rounds'"),
        (lambda d: d.update(seed=2**70), "field 'seed'"),
        (lambda d: d.update(objectives=[]), "field 'objectives'"),
        (lambda d: d.update(objectives="los"), "field 'objectives'"),
        (lambda d: d.update(converged="yes"), "field 'converged' must be true or false"),
        (lambda d: d.update(rounds=[{"round": 1}] * 6), "field 'rounds[0].lambda'"),
        (lambda d: d.update(format=None), "field 'format'"),
    ],
)
def test_an_edited_stage1_document_is_refused_naming_the_field(
    site: SiteFolder, change: Any, field: str
) -> None:
    path = site.stage1_dir / STAGE1_DOC
    _edit(path, change)
    with pytest.raises(ConfigError) as exc:
        read_stage1_doc(path)
    _one_line(exc, f"the Stage 1 model's document {path}: ", field)


def _arrays(path: Path, **arrays: np.ndarray) -> None:
    with open(path, "wb") as fh:
        np.savez(fh, **arrays)


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda p, b: {"params": np.where(np.arange(p.size) < 5, np.nan, p), "buffers": b},
         "array 'params' holds 5 NaN or infinite value(s)"),
        (lambda p, b: {"params": p, "buffers": np.full_like(b, np.inf)}, "array 'buffers' holds"),
        (lambda p, b: {"params": p[:100], "buffers": b}, "got shape (100,) of float32"),
        (lambda p, b: {"params": p.reshape(1, -1), "buffers": b}, "must be one vector"),
        (lambda p, b: {"params": p.astype(np.int64), "buffers": b}, "of int64"),
        (lambda p, b: {"params": p}, "must hold the arrays buffers and params, got params.npy"),
        (lambda p, b: {"params": p, "buffers": b, "extra": b}, "got buffers.npy, extra.npy"),
        (lambda p, b: {"params": np.tile(p.astype(np.float64), 2), "buffers": b},
         "larger than the model"),  # refused from the archive's index, before decompressing
    ],
)  # fmt: skip
def test_edited_w_star_arrays_are_refused_naming_the_array(
    site: SiteFolder, edit: Any, message: str
) -> None:
    final = _final()
    path = site.stage1_dir / STAGE1_ARRAYS
    _arrays(path, **edit(final.params, final.buffers))
    sizes = {"params": final.params.size, "buffers": final.buffers.size}
    with pytest.raises(ConfigError) as exc:
        read_stage1_arrays(path, sizes)
    _one_line(exc, f"the Stage 1 model's arrays {path}: ", message)


def test_an_archive_of_pickled_objects_or_not_an_archive_is_refused(site: SiteFolder) -> None:
    final = _final()
    path = site.stage1_dir / STAGE1_ARRAYS
    sizes = {"params": final.params.size, "buffers": final.buffers.size}
    objects = np.array([{"code": "run me"}] * 3, dtype=object)
    np.savez(path, params=objects, buffers=final.buffers)  # loading it would need pickle
    with pytest.raises(ConfigError, match="not an archive of plain NumPy arrays"):
        read_stage1_arrays(path, sizes)
    path.write_bytes(b"zz")
    with pytest.raises(ConfigError, match="not an archive of plain NumPy arrays"):
        read_stage1_arrays(path, sizes)


def _trees_bytes() -> np.ndarray:
    from fedcare_core.algorithms.fedxgb.bundle import pack_trees
    from fedcare_core.algorithms.fedxgb.rounds import TreeRounds
    from fedcare_core.algorithms.fedxgb.trees import Ensemble, TreeSettings, boost

    rng = np.random.default_rng(0)
    x = rng.normal(size=(200, 3)).astype(np.float32)
    y = (x[:, 0] > 0).astype(np.float64)
    booster = boost(x, y, None, TreeSettings("binary", 0.3, 2), 2)
    ensemble = Ensemble.first("binary", [(booster, 200)])
    return pack_trees(TreeRounds({"readmission": ensemble}, [], {"readmission": 1}, [{}]))


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda t: {"params": t.astype(np.float32), "buffers": np.zeros(0, np.float32)},
         "must be the trees' bytes (1-D uint8)"),
        (lambda t: {"params": t[: len(t) // 2], "buffers": np.zeros(0, np.float32)},
         "is not a trees bundle"),
        (lambda t: {"params": t, "buffers": np.ones(3, np.float32)}, "and 'buffers' empty"),
        (lambda t: {"params": np.frombuffer(  # valid JSON, but a tree XGBoost cannot read
            t.tobytes().replace(b"split_indices", b"split_indicex", 1), np.uint8),
            "buffers": np.zeros(0, np.float32)}, "is not a trees bundle"),
        (lambda t: {"params": t}, "must hold the arrays buffers and params"),
    ],
)  # fmt: skip
def test_broadcast_trees_are_checked_naming_the_array(
    site: SiteFolder, edit: Any, message: str
) -> None:
    path = site.stage1_dir / STAGE1_ARRAYS
    trees = _trees_bytes()
    kinds = {"readmission": "binary", "los": "regression"}
    _arrays(path, params=trees, buffers=np.zeros(0, np.float32))
    kept = read_stage1_trees(path, ["readmission"], kinds)
    np.testing.assert_array_equal(kept["params"], trees)
    with pytest.raises(ConfigError, match="objectives the broadcast does not name"):
        read_stage1_trees(path, ["los"], kinds)
    _arrays(path, **edit(trees))
    with pytest.raises(ConfigError) as exc:
        read_stage1_trees(path, ["readmission"], kinds)
    _one_line(exc, f"the Stage 1 trees {path}: ", message)
