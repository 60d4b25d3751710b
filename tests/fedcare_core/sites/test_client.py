"""Sites prepared from their own files, and put together the way a coordinator orders them."""

from __future__ import annotations

import zipfile
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from fedcare_core.config import ExperimentConfig
from fedcare_core.data.diabetes130 import load_diabetes130
from fedcare_core.data.preprocess import fit_encoder
from fedcare_core.errors import ConfigError, DataError
from fedcare_core.sites.client import federation_of_sites, prepare_site
from fedcare_core.sites.schema import schema_for

pytestmark = pytest.mark.realdata


@pytest.fixture(scope="module")
def hospital(data_dir: Path, tmp_path_factory: pytest.TempPathFactory):
    """A hospital's own export: the first 4,000 encounters of the real file."""
    with zipfile.ZipFile(data_dir / "diabetes130" / "dataset_diabetes.zip") as zf:
        lines = zf.read("dataset_diabetes/diabetic_data.csv").decode().splitlines()
    path = tmp_path_factory.mktemp("hospital") / "hospital.csv"
    path.write_text("\n".join(lines[:4001]) + "\n")
    return load_diabetes130(path, verify_checksum=False)


@pytest.fixture(scope="module")
def schema():
    return schema_for(ExperimentConfig())


def test_a_site_encodes_its_common_features_into_the_schema_layout(hospital, schema):
    site = prepare_site(hospital, schema, ["readmission"], name="north", seed=0)
    assert site.client_id == 0 and site.objectives == ("readmission",)
    assert site.train.x_common.shape[1] == schema.common_width()
    assert site.private_features == schema.partition.private_for(["readmission"])
    total = site.train.n + site.val.n + site.test.n
    assert total == hospital.n_rows
    assert site.train.n / total == pytest.approx(0.7, abs=0.03)
    # the encoders are the site's own: fitted on its training rows, not on its other rows
    numeric = [c for c in schema.partition.common if c in schema.numeric_features]
    assert site.common_encoder.numeric == tuple(numeric)
    assert all(v == schema.vocabularies[c] for c, v in site.common_encoder.categorical)


def test_a_sites_splits_carry_patient_ordinals_and_subgroups(hospital, schema):
    site = prepare_site(hospital, schema, ["los"], name="north", seed=0)
    for split in (site.train, site.val, site.test):
        assert split.groups is not None and split.groups.shape == (split.n,)
        assert np.array_equal(np.unique(split.groups), np.arange(split.groups.max() + 1))
        assert list(split.subgroups) == ["age", "sex", "race"]
        assert set(split.subgroups["age"]) <= {"<50", "50-70", ">=70"}


def test_the_split_is_keyed_by_the_site_name_and_seed(hospital, schema):
    a = prepare_site(hospital, schema, ["los"], name="north", seed=0)
    again = prepare_site(hospital, schema, ["los"], name="north", seed=0)
    other_name = prepare_site(hospital, schema, ["los"], name="south", seed=0)
    other_seed = prepare_site(hospital, schema, ["los"], name="north", seed=1)
    assert np.array_equal(a.train.x_common, again.train.x_common)
    assert not np.array_equal(a.test.y, other_name.test.y[: len(a.test.y)])
    assert a.test.n != other_seed.test.n or not np.array_equal(a.test.y, other_seed.test.y)


def test_the_encoders_are_fitted_on_training_rows_only(hospital, schema):
    site = prepare_site(hospital, schema, ["los"], name="north", seed=0)
    everything = fit_encoder(
        hospital.features,
        schema.partition.common,
        [c for c in schema.partition.common if c in schema.numeric_features],
        vocabularies=schema.vocabularies,
    )
    assert not np.allclose(site.common_encoder.means, everything.means)


def test_sites_are_ordered_by_name_and_numbered_in_that_order(hospital, schema):
    west = prepare_site(hospital, schema, ["los"], name="west", seed=0)
    east = prepare_site(hospital, schema, ["readmission"], name="east", seed=0)
    fed = federation_of_sites(schema, [("west", west), ("east", east)])
    assert [c.client_id for c in fed.clients] == [0, 1]
    assert fed.clients[0].objectives == ("readmission",)  # east first
    assert fed.objective_names == ("readmission", "los")  # pursued, in the schema's order
    assert fed.common_width == schema.common_width()
    with pytest.raises(ConfigError, match="two sites are named 'east'"):
        federation_of_sites(schema, [("east", west), ("east", east)])
    with pytest.raises(ConfigError, match="at least one site"):
        federation_of_sites(schema, [])


def test_a_site_too_small_to_split_or_to_learn_is_refused_by_name(hospital, schema, tmp_path):
    few = replace(
        hospital,
        features=hospital.features.iloc[:3],
        labels=hospital.labels.iloc[:3],
        patient=hospital.patient[:3],
        strata=None,
    )
    with pytest.raises(DataError, match=r"site 'tiny'.*needs more patients") as caught:
        prepare_site(few, schema, ["los"], name="tiny", seed=0, source="tiny.csv")
    assert "tiny.csv" in str(caught.value)
    unlabelled = replace(hospital, labels=hospital.labels.assign(readmission=np.nan))
    with pytest.raises(DataError, match="site 'north' has no training row labelled"):
        prepare_site(unlabelled, schema, ["readmission"], name="north", seed=0)


def test_a_site_of_another_dataset_or_objective_is_refused(hospital, schema):
    mimic = schema_for(ExperimentConfig().with_overrides(data={"dataset": "mimic3"}))
    with pytest.raises(ConfigError, match="the schema is for mimic3"):
        prepare_site(hospital, mimic, ["los"], name="north", seed=0)
    with pytest.raises(ConfigError, match="mortality"):
        prepare_site(hospital, schema, ["mortality"], name="north", seed=0)


def test_a_site_states_its_preferences_in_its_objectives(hospital, schema):
    names, stated = schema.check_site_objectives(["readmission:fair(race)", "los"])
    assert names == ("readmission", "los")
    site = prepare_site(hospital, schema, names, name="north", seed=0, preferences=stated)
    assert site.preferences["readmission"].label == "fair(race)"
    assert site.preferences["readmission"].weight == schema.config.fairness_weight
    with pytest.raises(ConfigError, match="site 'north': los:sensitivity"):
        prepare_site(
            hospital,
            schema,
            ["los"],
            name="north",
            seed=0,
            preferences=schema.check_site_objectives(["los:sensitivity"])[1],
        )
    with pytest.raises(ConfigError, match="'religion' is not a sensitive attribute"):
        prepare_site(
            hospital,
            schema,
            ["readmission"],
            name="north",
            seed=0,
            preferences=schema.check_site_objectives(["readmission:fair(religion)"])[1],
        )
    with pytest.raises(ConfigError, match="--objectives: 'readmission:kind'"):
        schema.check_site_objectives(["readmission:kind"])


@pytest.mark.parametrize("scaling", ["federated", "federated-quantile"])
def test_a_scaling_pooled_across_clients_is_refused_by_the_schema_and_by_a_site(hospital, scaling):
    pooled = ExperimentConfig().with_overrides(data={"scaling": scaling})
    with pytest.raises(ConfigError, match=rf"data.scaling \(--scaling\) '{scaling}'.*its own"):
        schema_for(pooled)
    by_hand = replace(schema_for(ExperimentConfig()), config=pooled)  # a schema file edited
    with pytest.raises(ConfigError, match=f"'{scaling}'.*each site by its own"):
        prepare_site(hospital, by_hand, ["los"], name="north", seed=0)
