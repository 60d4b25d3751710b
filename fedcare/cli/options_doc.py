"""``docs/OPTIONS.md``: every configuration setting, written from the settings' declarations.

``python -m fedcare.cli.options_doc > docs/OPTIONS.md`` writes it; a test checks the file is
what the declarations give, so the table cannot fall behind the code.
"""

from __future__ import annotations

import sys

from fedcare.cli.setting_flags import choices_of
from fedcare_core.config import all_settings
from fedcare_core.config.settings import SettingRef, declared

_HEAD = """# Configuration settings

Every setting of a run, as declared on its configuration field (`fedcare_core/config/`); this
page is written from those declarations (`python -m fedcare.cli.options_doc >
docs/OPTIONS.md`). A setting with a flag is `fedcare run --<flag>` and the parameter of the
same name (`-` as `_`) of the `fedcare/full-experiment` deployment; every setting is also
`fedcare run --set <name>=<value>`, a key of a `--config` file, and the deployment's
`overrides` (`{"<section>": {"<key>": value}}`). The Flower backends' transport options
(`flower.*`, `fedcare/flower/flower_options.py`) are not part of a run's configuration: those
with a flag are `fedcare run` flags and deployment parameters for `--backend flower-sim` and
`flower-deployment`; the others keep their defaults.
"""


def _values(ref: SettingRef) -> str:
    """What the setting accepts, in words."""
    names = choices_of(ref)
    if names:
        listed = ", ".join(f"`{n}`" for n in names)
        return f"{listed}, or `{ref.spec.or_file}`" if ref.spec.or_file else listed
    if ref.spec.range is not None:
        text = ref.spec.range.text().removeprefix("lie ").removeprefix("be ")
        return text + (", or none" if ref.optional else "")
    if ref.base is bool:
        return "true, false"
    return "a path" if ref.optional else "text"


def _row(ref: SettingRef) -> str:
    flag = f"`--{ref.spec.flag}`" if ref.spec.flag else ""
    return (
        f"| `{ref.path}` | {flag} | {ref.spec.help.replace('|', '/')} | {_values(ref)} "
        f"| `{ref.default_text()}` |"
    )


def markdown() -> str:
    """The page: a table per heading, the settings in declaration order."""
    from fedcare.flower.flower_options import FlowerConfig

    groups: dict[str, list[SettingRef]] = {}
    for ref in [*all_settings(), *declared(FlowerConfig, "flower")]:
        groups.setdefault(ref.spec.group, []).append(ref)
    parts = [_HEAD]
    for group, refs in groups.items():
        parts.append(f"## {group[:1].upper()}{group[1:]}\n")
        parts.append("| setting | flag | meaning | values | default |")
        parts.append("| --- | --- | --- | --- | --- |")
        parts.extend(_row(ref) for ref in refs)
        parts.append("")
    return "\n".join(parts)


if __name__ == "__main__":  # pragma: no cover - the docs' generator
    sys.stdout.write(markdown())
