"""A site folder: whole and owner-only; the broadcast w* kept and read back; key rotation."""

from __future__ import annotations

import json
import shutil
import stat

import numpy as np
import pytest

from fedcare.flower.received_model import STAGE1_DOC, store_final_model
from fedcare.flower.site_messages import FinalModel
from fedcare.sites.site_folder import SiteFolder, create_site_folder, read_final_model, rotate_key
from fedcare_core.config import ExperimentConfig
from fedcare_core.errors import ConfigError
from fedcare_core.nn.param_vectors import get_buffers, get_params
from fedcare_core.sites.schema import schema_for
from fedcare_core.stage1.loop import build_model

SCHEMA = schema_for(ExperimentConfig())


@pytest.fixture
def site(small_federation, tmp_path):
    _, fed = small_federation
    return create_site_folder(
        tmp_path / "north", fed.clients[0], SCHEMA, name="north", seed=0, source_sha256="ab" * 32
    )


DIGEST = SCHEMA.digest()


def _final(client_id=1, digest=DIGEST):
    model = build_model(SCHEMA.common_width(), ("readmission", "los"), SCHEMA.config.model, 0)
    return FinalModel(
        client_id=client_id, seed=4, schema_digest=digest, objectives=("readmission", "los"),
        common_width=SCHEMA.common_width(), rounds=[], planned_rounds=5, clients=3,
        converged=False, run_name="r", params=get_params(model), buffers=get_buffers(model),
    )  # fmt: skip


def test_the_folder_is_owner_only_and_its_card_public(site):
    assert stat.S_IMODE(site.root.stat().st_mode) == 0o700
    assert stat.S_IMODE(site.private_key.stat().st_mode) == 0o600
    assert stat.S_IMODE((site.root / "site-card.json").stat().st_mode) == 0o644
    card = site.card()
    assert card.name == "north" and card.schema_digest == SCHEMA.digest()
    assert card.public_key.startswith("ecdsa-sha2-nistp256 ")
    assert set(json.loads((site.root / "site-card.json").read_text())) == {
        "format", "name", "objectives", "schema_digest", "public_key",
    }  # fmt: skip
    assert SiteFolder.open(site.root).client().train.n == site.client().train.n
    with pytest.raises(ConfigError, match="exists and is not an empty folder"):
        create_site_folder(site.root, site.client(), SCHEMA, name="x", seed=0, source_sha256="")


def test_the_broadcast_w_star_reads_back(site):
    with pytest.raises(ConfigError, match="no Stage 1 model yet"):
        read_final_model(site, SCHEMA.config.model)
    final = _final()
    store_final_model(site.stage1_dir, final)
    received = read_final_model(site, SCHEMA.config.model)
    assert received.result.params.tobytes() == final.params.tobytes()
    assert (received.client_id, received.seed, received.clients) == (1, 4, 3)
    assert received.planned_rounds == 5 and received.result.objectives == final.objectives
    assert stat.S_IMODE((site.stage1_dir / STAGE1_DOC).stat().st_mode) == 0o600


def test_a_w_star_of_another_schema_or_an_unreadable_one_is_refused(site):
    store_final_model(site.stage1_dir, _final(digest="cd" * 32))
    with pytest.raises(ConfigError, match="computed for schema cdcd"):
        read_final_model(site, SCHEMA.config.model)
    store_final_model(site.stage1_dir, _final())
    doc = json.loads((site.stage1_dir / STAGE1_DOC).read_text())
    del doc["clients"]  # e.g. kept by another version
    (site.stage1_dir / STAGE1_DOC).write_text(json.dumps(doc))
    with pytest.raises(ConfigError, match=r"field 'clients' must be an integer.*sent again"):
        read_final_model(site, SCHEMA.config.model)


def test_rotating_the_key_replaces_the_pair_and_the_card(site):
    old_key, old_card = site.private_key.read_bytes(), site.card()
    card = rotate_key(site)
    assert site.private_key.read_bytes() != old_key
    assert card.public_key != old_card.public_key and site.card() == card
    assert (card.name, card.objectives) == (old_card.name, old_card.objectives)
    assert stat.S_IMODE(site.private_key.stat().st_mode) == 0o600
    assert not [p for p in site.root.iterdir() if p.name.startswith(".")]
    assert np.isfinite(site.client().train.x_common).all()


ROUND = {
    "round": 1, "lambda": {"readmission": 0.4, "los": 0.6}, "d_sq_norm": 0.2, "loss": {},
    "participants": [0, 1], "missing_objectives": [],
}  # fmt: skip


def _edit(path, change):
    doc = json.loads(path.read_text())
    change(doc)
    path.write_text(json.dumps(doc))


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda d: d.update(objectives=["los", "readmission"]), "in its order"),
        (lambda d: d.update(objectives=["los"]), "including the site's own"),
        (lambda d: d.update(objectives=["mortality", "readmission"]), "field 'objectives'"),
        (lambda d: d.update(common_width=10), "field 'common_width' must be the schema's"),
        (lambda d: d.update(planned_rounds=1, rounds=[ROUND] * 2), "field 'rounds' must hold"),
    ],
)
def test_a_w_star_the_site_cannot_use_is_refused_before_any_work(site, change, message):
    store_final_model(site.stage1_dir, _final())
    _edit(site.stage1_dir / STAGE1_DOC, change)
    with pytest.raises(ConfigError) as exc:
        read_final_model(site, SCHEMA.config.model)
    text = str(exc.value)
    assert text.startswith(f"the Stage 1 model's document {site.stage1_dir / STAGE1_DOC}: ")
    assert message in text and text.endswith("next `fedcare federation run`") and "\n" not in text


def test_a_folder_whose_card_or_schema_disagrees_with_site_json_is_refused(site):
    _edit(site.root / "site-card.json", lambda d: d.update(name="south"))
    with pytest.raises(ConfigError, match=r"site-card.json: field 'name' differs from .*site.json"):
        SiteFolder.open(site.root)
    _edit(site.root / "site-card.json", lambda d: d.update(name="north"))
    assert SiteFolder.open(site.root).name == "north"
    _edit(site.root / "federation.json", lambda d: d["config"].update(seed=9))
    with pytest.raises(ConfigError, match=r"federation.json: its digest differs from .*site.json"):
        site.schema()
    shutil.rmtree(site.root / "keys")
    (site.root / "keys").write_text("not a folder")
    with pytest.raises(ConfigError, match=r"not a site folder \(keys is not a folder\)"):
        SiteFolder.open(site.root)


def test_rotating_with_an_unreadable_card_keeps_the_old_key(site):
    old_key = site.private_key.read_bytes()
    (site.root / "site-card.json").write_text("{not json")
    with pytest.raises(ConfigError, match=r"site card .*not a readable JSON file"):
        rotate_key(site)
    assert site.private_key.read_bytes() == old_key
    assert not [p for p in site.root.iterdir() if p.name.startswith(".rotate")]
