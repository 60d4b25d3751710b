"""The checked JSON reader: each field's refusal names the file and the field, one line."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from fedcare_core.config.fields import CLOSED_UNIT, Range
from fedcare_core.errors import ConfigError
from fedcare_core.files.json_input import JsonObject, read_json

DIGEST = "0d1e418b81e6fb3b92437c2f3513668a9e3a7feb62c9fd05ec9af254cc0a3002"
#: What a site's kept Stage 1 document holds (trimmed).
DOC: dict[str, Any] = {
    "format": "fedcare-site-stage1/1",
    "client_id": 1,
    "schema_digest": DIGEST,
    "objectives": ["early_discharge", "readmission", "los"],
    "rounds": [
        {"round": 1, "lambda": {"readmission": 0.33, "los": 0.67}, "participants": [0, 1, 2]}
    ],
    "converged": False,
    "run_name": "fedcare-20261202T204500-seed0",
}


def _lambdas(doc: JsonObject) -> dict[str, float]:
    """The first round's λ*."""
    return doc.objects("rounds")[0].numbers("lambda", CLOSED_UNIT)


def _doc(tmp_path: Path, **changes: Any) -> JsonObject:
    path = tmp_path / "stage1.json"
    path.write_text(json.dumps(DOC | changes))
    return JsonObject.read(path, "the Stage 1 model's document")


def test_the_fields_of_a_realistic_document_read_back(tmp_path: Path) -> None:
    doc = _doc(tmp_path)
    doc.expect_format("fedcare-site-stage1/1")
    assert doc.integer("client_id", Range(0, 2)) == 1 and doc.digest("schema_digest") == DIGEST
    assert doc.names("objectives") == ("early_discharge", "readmission", "los")
    assert doc.boolean("converged") is False and doc.text("run_name").startswith("fedcare-")
    (first,) = doc.objects("rounds")
    assert first.numbers("lambda", CLOSED_UNIT) == {"readmission": 0.33, "los": 0.67}
    assert first.integers("participants", Range(0, 2)) == (0, 1, 2)


@pytest.mark.parametrize(
    ("change", "read", "message"),
    [
        ({"client_id": -3}, lambda d: d.integer("client_id", Range(0, 2)),
         "field 'client_id' must be an integer and lie in [0, 2], got -3"),
        ({"client_id": True}, lambda d: d.integer("client_id", Range(0, 2)),
         "field 'client_id' must be an integer and lie in [0, 2], got true (a boolean)"),
        ({"client_id": 1.0}, lambda d: d.integer("client_id", Range(0, 2)), "got 1"),
        ({"schema_digest": 7}, lambda d: d.digest("schema_digest"),
         "field 'schema_digest' must be a SHA-256 digest"),
        ({"schema_digest": DIGEST.upper()}, lambda d: d.digest("schema_digest"), "lower-case"),
        ({"objectives": "los"}, lambda d: d.names("objectives"),
         "field 'objectives' must be a non-empty list of distinct names, got 'los' (a string)"),
        ({"objectives": ["los", "los"]}, lambda d: d.names("objectives"), "distinct names"),
        ({"objectives": []}, lambda d: d.names("objectives"), "got a JSON array []"),
        ({"converged": "no"}, lambda d: d.boolean("converged"), "must be true or false"),
        ({"format": "fedcare-site-stage1/9"}, lambda d: d.expect_format("fedcare-site-stage1/1"),
         "field 'format' must be 'fedcare-site-stage1/1'"),
        ({"run_name": "x" * 2000}, lambda d: d.text("run_name"), "1-1000 characters"),
        ({"rounds": [{"lambda": 5}]}, _lambdas,
         "field 'rounds[0].lambda' must be an object of names to finite numbers"),
        ({"rounds": [{"lambda": {"los": float("nan")}}]}, _lambdas, "rounds[0].lambda"),
        ({"rounds": [{"lambda": {"los": 1.5}}]}, _lambdas, "lie in [0, 1], got a JSON object"),
        ({"rounds": 3}, lambda d: d.objects("rounds"), "field 'rounds' must be a list"),
    ],
)  # fmt: skip
def test_a_wrong_field_is_refused_naming_the_file_and_the_field(
    tmp_path: Path, change: dict[str, Any], read: Any, message: str
) -> None:
    doc = _doc(tmp_path, **change)
    with pytest.raises(ConfigError) as info:
        read(doc)
    text = str(info.value)
    assert text.startswith(f"the Stage 1 model's document {tmp_path / 'stage1.json'}: ")
    assert message in text and "\n" not in text and len(text) < 400


def test_a_missing_field_says_so(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"field 'seed' must be an integer .*got nothing"):
        _doc(tmp_path).integer("seed", Range(0, 10))


def test_what_is_not_an_object_or_not_a_readable_file_is_refused(tmp_path: Path) -> None:
    listed = tmp_path / "list.json"
    listed.write_text("[1]")
    with pytest.raises(ConfigError, match=r"list.json: must be a JSON object, got a JSON array"):
        JsonObject.read(listed, "site card")
    with pytest.raises(ConfigError, match="no such file"):
        read_json(tmp_path / "none.json", "site card")
    with pytest.raises(ConfigError, match="a folder, not a file"):
        read_json(tmp_path, "site card")
    big = tmp_path / "big.json"
    big.write_text(" " * 2_000 + "{}")
    with pytest.raises(ConfigError, match="2,002 bytes, larger than 1,000"):
        read_json(big, "site card", max_bytes=1_000)
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 100_000 + "]" * 100_000)
    with pytest.raises(ConfigError, match="not a readable JSON file"):
        read_json(deep, "site card")


def test_entries_keyed_by_name_check_each_key(tmp_path: Path) -> None:
    path = tmp_path / "sites.json"
    path.write_text(json.dumps({"north": {"node_id": 3}, "../x": {"node_id": 4}}))
    entries = JsonObject.read(path, "the coordinator's state file").entries("site name")
    name, entry = next(entries)
    assert name == "north" and entry.integer("node_id", Range(0)) == 3
    with pytest.raises(ConfigError, match=r"sites.json: an entry: site name '\.\./x'"):
        next(entries)
