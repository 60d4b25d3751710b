"""Every YAML read is bounded: size, nesting, values once aliases are expanded; loops refused."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from fedcare_core.errors import ConfigError, DefinitionError
from fedcare_core.files import safe_yaml
from fedcare_core.files.safe_yaml import (
    MAX_YAML_BYTES,
    MAX_YAML_DEPTH,
    RepeatedKeyError,
    YamlLimitError,
    compose_yaml_documents,
    load_yaml,
    load_yaml_documents,
    read_yaml_file,
)


def billion_laughs(levels: int = 9) -> str:
    """The classic: each anchor a list of nine aliases of the one before (9**levels values)."""
    lines = ["l0: &l0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]"]
    for i in range(1, levels + 1):
        lines.append(f"l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * 9)}]")
    return "\n".join(lines) + "\n"


def nested_flow(depth: int) -> str:
    return "x: " + "[" * depth + "]" * depth + "\n"


def nested_block(depth: int) -> str:
    return "".join("  " * i + f"k{i}:\n" for i in range(depth)) + "  " * depth + "leaf\n"


def test_the_billion_laughs_is_refused_while_composing() -> None:
    text = billion_laughs()
    assert len(text) < 1024
    with pytest.raises(YamlLimitError) as ei:
        load_yaml(text)
    assert "aliases are expanded" in ei.value.problem and ei.value.line is not None
    with pytest.raises(YamlLimitError):
        compose_yaml_documents(text)  # nodes only: refused alike


@pytest.mark.parametrize("text", [nested_flow(5_000), nested_flow(MAX_YAML_DEPTH + 1)])
def test_deep_flow_nesting_is_refused(text: str) -> None:
    with pytest.raises(YamlLimitError) as ei:
        load_yaml(text)
    assert f"deeper than {MAX_YAML_DEPTH} levels" in ei.value.problem


def test_deep_block_nesting_is_refused_and_the_deepest_allowed_is_read() -> None:
    with pytest.raises(YamlLimitError) as ei:
        load_yaml(nested_block(MAX_YAML_DEPTH))
    assert ei.value.line == MAX_YAML_DEPTH
    # the document mapping and MAX_YAML_DEPTH - 2 mappings inside it, then the leaf
    doc = load_yaml(nested_block(MAX_YAML_DEPTH - 2))
    for i in range(MAX_YAML_DEPTH - 2):
        doc = doc[f"k{i}"]
    assert doc == "leaf"


def test_an_oversized_text_and_file_are_refused_by_size(tmp_path: Path) -> None:
    text = "x: '" + "a" * MAX_YAML_BYTES + "'\n"
    with pytest.raises(YamlLimitError, match="at most 1,048,576"):
        load_yaml(text)
    path = tmp_path / "big.yaml"
    with path.open("wb") as fh:  # sparse: its size alone is refused, nothing read
        fh.truncate(MAX_YAML_BYTES + 1)
    with pytest.raises(YamlLimitError, match="1,048,577 bytes"):
        read_yaml_file(path)


def test_a_non_ascii_text_counts_its_bytes() -> None:
    text = "x: '" + "é" * (MAX_YAML_BYTES // 2) + "'\n"  # half as many characters as bytes
    with pytest.raises(YamlLimitError):
        load_yaml(text)


def test_an_alias_inside_the_node_it_names_is_refused() -> None:
    with pytest.raises(YamlLimitError, match="loop"):
        load_yaml("a: &a [1, *a]\n")
    with pytest.raises(YamlLimitError, match="loop"):
        load_yaml("a: &a {b: *a}\n")


def test_the_expanded_size_is_counted_exactly(monkeypatch: pytest.MonkeyPatch) -> None:
    # the mapping, three keys, the list (itself and 3 values) and each alias's 4 again: 16
    monkeypatch.setattr(safe_yaml, "MAX_YAML_NODES", 16)
    text = "a: &a [1, 2, 3]\nb: *a\nc: *a\n"
    assert load_yaml(text) == {"a": [1, 2, 3], "b": [1, 2, 3], "c": [1, 2, 3]}
    monkeypatch.setattr(safe_yaml, "MAX_YAML_NODES", 15)
    with pytest.raises(YamlLimitError):
        load_yaml(text)


def test_documents_count_together(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(safe_yaml, "MAX_YAML_NODES", 10)
    assert len(load_yaml_documents("[1, 2, 3]\n---\n[4, 5, 6]\n")) == 2
    with pytest.raises(YamlLimitError):
        load_yaml_documents("[1, 2, 3]\n---\n[4, 5, 6]\n---\n[7, 8, 9]\n")


def test_aliases_and_merge_keys_within_bounds_are_read_as_yaml_has_them() -> None:
    text = (
        "shared: &codes [A, B, C]\n"
        "one: {vocabulary: *codes}\n"
        "two: {vocabulary: *codes}\n"
        "base: &base {type: integer, range: [0, 9]}\n"
        "merged: {<<: *base, range: [1, 2]}\n"
    )
    doc = load_yaml(text)
    assert doc["one"]["vocabulary"] == doc["two"]["vocabulary"] == ["A", "B", "C"]
    assert doc["merged"] == {"type": "integer", "range": [1, 2]}
    assert doc == yaml.safe_load(text)


def test_a_key_written_twice_is_refused_where_it_is_written_again() -> None:
    with pytest.raises(RepeatedKeyError) as ei:
        load_yaml("a: 1\nb: 2\na: 3\n")
    assert ei.value.problem_mark is not None and ei.value.problem_mark.line == 2


def test_a_syntax_error_is_pyyamls_own_message() -> None:
    text = "a: [1, 2\nb: 3\n"
    with pytest.raises(yaml.YAMLError) as expected:
        yaml.load(text, Loader=yaml.SafeLoader)
    with pytest.raises(yaml.YAMLError) as ei:
        load_yaml(text)
    assert str(ei.value) == str(expected.value)


def test_one_document_is_expected_and_an_empty_text_is_none() -> None:
    assert load_yaml("") is None
    with pytest.raises(yaml.YAMLError, match="one YAML document"):
        load_yaml("a: 1\n---\nb: 2\n")


def test_a_definition_file_over_a_bound_names_the_file_and_the_limit(tmp_path: Path) -> None:
    """A complete definition whose cohort rule nests ``all`` through aliases: 9**9 conditions
    the schema check would walk (the hang of issue 52), refused while composing."""
    from fedcare_core.data.declared import read_definition
    from tests.fedcare_core.data.declared.helpers import EXAMPLE_DEFINITION

    items = ["      - &c0 {column: AGE_YRS, ge: 0}"]
    items += [f"      - &c{i} {{all: [{', '.join([f'*c{i - 1}'] * 9)}]}}" for i in range(1, 10)]
    rule = "cohort:\n  include:\n    all:\n" + "\n".join(items) + "\n"
    text = EXAMPLE_DEFINITION.read_text()
    written = text[text.index("cohort:") : text.index("columns:")]
    path = tmp_path / "definition.yaml"
    path.write_text(text.replace(written, rule))
    with pytest.raises(DefinitionError) as ei:
        read_definition(path)
    assert ei.value.file == str(path)
    assert "values with aliases expanded" in ei.value.message
    assert "\n" not in str(ei.value)


def test_a_site_policy_over_a_bound_is_refused_by_name(tmp_path: Path) -> None:
    from fedcare_core.sites.policy import read_policy

    path = tmp_path / "policy.yaml"
    path.write_text(billion_laughs())
    with pytest.raises(ConfigError, match=r"site policy .*policy\.yaml: refused, more than"):
        read_policy(path)
