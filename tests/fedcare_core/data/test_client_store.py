import json
from dataclasses import replace

import numpy as np
import pytest

from fedcare_core.config import DataConfig
from fedcare_core.data.client_store import (
    ARRAYS_FILE,
    META_FILE,
    load_client_data,
    save_client_data,
)
from fedcare_core.data.clients import SPLITS, build_federation
from fedcare_core.data.subgroups import SensitiveAttribute
from fedcare_core.errors import DataError
from tests.fedcare_core.synthetic import PARTITION, make_cohort

#: Subgroups every split carries (a banded number, a category, one with gaps).
SENSITIVE = (
    SensitiveAttribute("age", "age", (50.0, 70.0)),
    SensitiveAttribute("sex", "sex"),
    SensitiveAttribute("specialty", "specialty"),
)


@pytest.fixture(scope="module")
def federation():
    cohort = replace(make_cohort(240), sensitive=SENSITIVE)
    return build_federation(cohort, PARTITION, DataConfig(clients=3), seed=0)


def _assert_same(a, b):
    assert (a.client_id, a.objectives) == (b.client_id, b.objectives)
    assert (a.common_features, a.private_features) == (b.common_features, b.private_features)
    for split in SPLITS:
        for name in ("x_common", "x_private", "y"):
            x, y = getattr(a.split(split), name), getattr(b.split(split), name)
            assert x.dtype == y.dtype and x.shape == y.shape
            np.testing.assert_array_equal(x, y)  # NaN labels compare equal here
        ga, gb = a.split(split).groups, b.split(split).groups
        assert (ga is None) == (gb is None)
        if ga is not None:
            assert ga.dtype == gb.dtype == np.int64
            np.testing.assert_array_equal(ga, gb)
        sa, sb = a.split(split).subgroups, b.split(split).subgroups
        assert list(sa) == list(sb)
        for name in sa:
            assert sa[name].dtype == sb[name].dtype and sa[name].dtype.kind == "U"
            np.testing.assert_array_equal(sa[name], sb[name])
    for enc in ("common_encoder", "private_encoder"):
        ea, eb = getattr(a, enc), getattr(b, enc)
        assert (ea.numeric, ea.categorical, ea.width) == (eb.numeric, eb.categorical, eb.width)
        for f in ("medians", "means", "stds"):
            np.testing.assert_array_equal(getattr(ea, f), getattr(eb, f))


def test_round_trip_is_exact(federation, tmp_path):
    for client in federation.clients:
        folder = save_client_data(client, tmp_path / f"c{client.client_id}")
        _assert_same(client, load_client_data(folder))


def test_folder_holds_one_client_and_no_pickle(federation, tmp_path):
    client = federation.clients[1]
    folder = save_client_data(client, tmp_path / "c1")
    assert sorted(p.name for p in folder.iterdir()) == [ARRAYS_FILE, META_FILE]
    meta = json.loads((folder / META_FILE).read_text())
    assert meta["client_id"] == 1
    with np.load(folder / ARRAYS_FILE, allow_pickle=False) as npz:
        assert all(npz[k].dtype != object for k in npz.files)
        assert npz["train.y"].shape[0] == client.train.n


def test_modified_or_missing_files_raise_data_error(federation, tmp_path):
    folder = save_client_data(federation.clients[0], tmp_path / "c0")
    raw = bytearray((folder / ARRAYS_FILE).read_bytes())
    raw[-10] ^= 0xFF
    (folder / ARRAYS_FILE).write_bytes(bytes(raw))
    with pytest.raises(DataError, match="checksum"):
        load_client_data(folder)
    with pytest.raises(DataError, match="cannot read"):
        load_client_data(tmp_path / "absent")
    folder = save_client_data(federation.clients[0], tmp_path / "c0b")
    meta = json.loads((folder / META_FILE).read_text())
    meta["format_version"] = 99
    (folder / META_FILE).write_text(json.dumps(meta))
    with pytest.raises(DataError, match="format version"):
        load_client_data(folder)


def test_folder_and_files_are_owner_only_from_creation(federation, tmp_path, monkeypatch):
    import os
    import stat

    # A permissive umask: the modes must come from the creation calls, not the caller's umask.
    old = os.umask(0o002)
    try:
        folder = save_client_data(federation.clients[0], tmp_path / "clients" / "c0")
    finally:
        os.umask(old)
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    assert stat.S_IMODE(folder.parent.stat().st_mode) == 0o700
    for name in (ARRAYS_FILE, META_FILE):
        assert stat.S_IMODE((folder / name).stat().st_mode) == 0o600
    assert sorted(p.name for p in folder.iterdir()) == sorted([ARRAYS_FILE, META_FILE])


def test_one_file_image_round_trips_and_is_checked(federation, tmp_path):
    from fedcare_core.data.client_store import client_data_bytes

    client = federation.clients[1]
    image = tmp_path / "image"
    image.write_bytes(client_data_bytes(client))
    _assert_same(client, load_client_data(image))
    raw = bytearray(image.read_bytes())
    raw[len(raw) // 3] ^= 0xFF  # a flipped byte inside a member: the zip's CRC-32 catches it
    image.write_bytes(bytes(raw))
    with pytest.raises(DataError):
        load_client_data(image)
    image.write_bytes(client_data_bytes(client)[:100])
    with pytest.raises(DataError):
        load_client_data(image)


def test_patient_ordinals_and_subgroups_round_trip_without_pickle(federation, tmp_path):
    client = federation.clients[0]
    assert client.test.groups is not None
    assert list(client.test.subgroups) == ["age", "sex", "specialty"]
    folder = save_client_data(client, tmp_path / "c0")
    with np.load(folder / ARRAYS_FILE, allow_pickle=False) as npz:
        assert npz["test.groups"].dtype == np.int64
        assert npz["test.subgroup.sex"].dtype.kind == "U"
        assert "missing" in set(npz["train.subgroup.specialty"].tolist())
    loaded = load_client_data(folder)
    _assert_same(client, loaded)
    assert set(loaded.train.subgroups["age"].tolist()) <= {"<50", "50-70", ">=70"}


def test_a_client_without_ordinals_or_subgroups_round_trips(federation, tmp_path):
    client = federation.clients[2]
    bare = replace(
        client,
        **{s: replace(client.split(s), groups=None, subgroups={}) for s in SPLITS},
    )
    folder = save_client_data(bare, tmp_path / "bare")
    with np.load(folder / ARRAYS_FILE, allow_pickle=False) as npz:
        assert not [k for k in npz.files if "group" in k]
    loaded = load_client_data(folder)
    assert all(loaded.split(s).groups is None and loaded.split(s).subgroups == {} for s in SPLITS)
    _assert_same(bare, loaded)


def test_a_subgroup_named_but_not_stored_is_refused(federation, tmp_path):
    client = federation.clients[0]
    folder = save_client_data(client, tmp_path / "c0")
    meta = json.loads((folder / META_FILE).read_text())
    meta["subgroups"]["test"].append("ward")  # named, but no such member
    (folder / META_FILE).write_text(json.dumps(meta))
    with pytest.raises(DataError, match="malformed"):
        load_client_data(folder)
