"""Names that become file names: what a hospital would call itself passes, an escape does not."""

from __future__ import annotations

from pathlib import Path

import pytest

from fedcare_core.errors import ConfigError
from fedcare_core.files.safe_names import NAME_MAX, check_name, is_safe_name, name_path

GOOD = ["north", "st-marys_2", "site-0", "hospital.a", "Charite-Berlin", "a" * NAME_MAX, "7"]
BAD = [
    "../../x", "/etc/x", "", "a\x00b", "a\nb", "a" * (NAME_MAX + 1), ".hidden", "-rf", "_x",
    "a..b", "a/b", "a b", "Charité", "\x1b[2J", 5, None, ["north"],
]  # fmt: skip


@pytest.mark.parametrize("name", GOOD)
def test_names_a_site_would_choose_pass_unchanged(name: str) -> None:
    assert check_name(name, "--name") == name and is_safe_name(name)


@pytest.mark.parametrize("name", BAD)
def test_a_name_that_could_leave_its_folder_or_forge_a_line_is_refused(name: object) -> None:
    with pytest.raises(ConfigError) as info:
        check_name(name, "site card c.json: field 'name'", "site name")
    message = str(info.value)
    assert message.startswith("site card c.json: field 'name': site name ")
    assert "\n" not in message and "\x00" not in message and len(message) < 250
    assert not is_safe_name(name)


def test_a_checked_name_stays_in_its_folder(tmp_path: Path) -> None:
    assert name_path(tmp_path / "keys", "north", ".pub", "site card") == tmp_path / "keys/north.pub"
    with pytest.raises(ConfigError, match=r"^site card: site name '\.\./\.\./x'"):
        name_path(tmp_path / "keys", "../../x", ".pub", "site card", "site name")
    assert not list(tmp_path.iterdir())
