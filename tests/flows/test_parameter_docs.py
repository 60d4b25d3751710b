"""Every parameter of every deployed flow has a description in its Prefect parameter schema."""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Any

import pytest
import yaml
from prefect.utilities.callables import parameter_schema

from flows.parameter_docs import document_parameters

PREFECT_YAML = Path(__file__).resolve().parents[2] / "prefect.yaml"


def _deployed_flows() -> dict[str, Any]:
    """``entrypoint`` → the flow object, for each deployment of ``prefect.yaml``."""
    deployments = yaml.safe_load(PREFECT_YAML.read_text())["deployments"]
    flows: dict[str, Any] = {}
    for deployment in deployments:
        module, name = deployment["entrypoint"].split(":")
        flows[deployment["entrypoint"]] = getattr(importlib.import_module(module), name)
    return flows


def _cli_experiments() -> list[str]:
    """The names ``fedcare experiment`` takes, read from its parser."""
    import argparse

    from fedcare.cli.experiment import add_parser

    parser = argparse.ArgumentParser()
    add_parser(parser.add_subparsers())
    (sub,) = (a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    (name,) = (a for a in sub.choices["experiment"]._actions if a.dest == "name")
    return list(name.choices or [])


def test_prefect_yaml_deploys_every_flow_and_every_cli_experiment() -> None:
    experiments = _cli_experiments()
    assert "comparison" in experiments and "programme" in experiments
    assert sorted(f.name for f in _deployed_flows().values()) == sorted(
        ["fedcare", *(f"fedcare-{name}" for name in experiments)]
    )


@pytest.mark.parametrize("entrypoint", sorted(_deployed_flows()))
def test_every_deployed_parameter_has_a_description(entrypoint: str) -> None:
    flow = _deployed_flows()[entrypoint]
    # What `prefect deploy` stores as the deployment's parameter_openapi_schema.
    properties = parameter_schema(flow).properties
    assert properties, entrypoint
    undocumented = [n for n, p in properties.items() if not (p.get("description") or "").strip()]
    assert undocumented == [], f"{entrypoint}: no description for {undocumented}"
    assert all("\n" not in p["description"] for p in properties.values())


def test_descriptions_are_the_parameters_own_and_validation_still_coerces() -> None:
    from flows.fedcare_flow import fedcare_pipeline

    properties = parameter_schema(fedcare_pipeline).properties
    # A setting's description is its declaration's help, with its default.
    assert properties["clients"]["description"].startswith("Number of clients K")
    assert properties["rounds"]["description"] == (
        "Stage 1 rounds T; null: the configuration's (100)."
    )
    assert "nested MLflow run" in properties["seeds"]["description"]
    # validate_parameters=True still checks and coerces against the annotations.
    checked = fedcare_pipeline.validate_parameters({"clients": "3", "seeds": [0, 1]})
    assert checked["clients"] == 3 and checked["seeds"] == [0, 1]


def test_an_undocumented_parameter_is_refused_when_decorating() -> None:
    def flow_fn(a: int, b: int) -> None:
        """Doc."""

    with pytest.raises(TypeError, match=r"no description for parameter\(s\) \['b'\]"):
        document_parameters({"a": "the a"})(flow_fn)
    documented = document_parameters({"a": "the a", "b": "the b"})(flow_fn)
    from prefect.utilities.callables import parameter_docstrings

    assert parameter_docstrings(documented.__doc__) == {"a": "the a", "b": "the b"}
