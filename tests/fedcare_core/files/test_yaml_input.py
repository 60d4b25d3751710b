"""Reading a user's YAML: anchors and merge keys as YAML has them; a key written twice refused."""

from __future__ import annotations

import pytest

from fedcare_core.errors import DefinitionError
from fedcare_core.files.yaml_input import parse_yaml

MERGED = """\
columns:
  ED_VISITS: &count {type: integer, range: [0, 200], known_at: admission}
  ADMITS: {<<: *count, range: [0, 60]}
"""


def test_a_merge_key_takes_the_anchor_and_a_written_key_overrides_it() -> None:
    doc = parse_yaml(MERGED, "d.yaml", "dataset definition")
    admits = {"type": "integer", "range": [0, 60], "known_at": "admission"}
    assert doc["columns"]["ADMITS"] == admits
    assert doc["columns"]["ED_VISITS"]["range"] == [0, 200]


def test_a_key_written_twice_beside_a_merge_is_still_refused() -> None:
    text = MERGED.replace("range: [0, 60]}", "range: [0, 60], range: [0, 9]}")
    with pytest.raises(DefinitionError) as ei:
        parse_yaml(text, "d.yaml", "dataset definition")
    assert ei.value.key == "columns.ADMITS.range" and "written twice" in ei.value.message
