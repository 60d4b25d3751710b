"""The README's command blocks, and those of the docs pages it lists, as one shell session.

Every fenced ``bash`` block of README.md, then of each ``docs/*.md`` page the README links to
(in the order of their first link, :func:`journey_pages`), is a journey step, run in order in
one ``bash`` process (so ``. .venv/bin/activate`` and ``eval "$(fedcare stack env)"`` carry
over), exactly as written. A block may be preceded by one HTML comment that tells the test
what a reader on one machine cannot do literally (the page shows each such block's caveat in
its text too):

``<!-- readme-test: background=PREFIX; skip=PREFIX (why); loopback=HOST=127.0.0.1,… -->``

- ``background=fedcare site join``: a command that runs until stopped is started in the
  background (its output in the session's log) and stopped when the session ends;
- ``skip=make test (why)``: a command the test does not run, with the reason (the README's
  test command is CI's own first step);
- ``loopback=10.0.0.5=127.0.0.1``: a block written for other hosts runs with those addresses
  replaced by loopback ones.

Sizes are reduced only through the documented ``FEDCARE_QUICK=1``
(:mod:`fedcare_core.config.quick`).
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field, replace
from pathlib import Path

_FENCE = re.compile(r"^```(\w*)\s*$")
_MARK = re.compile(r"^<!--\s*readme-test:\s*(.*?)\s*-->\s*$")
_DOCS_LINK = re.compile(r"\]\((docs/[A-Za-z0-9_-]+\.md)[)#]")


@dataclass(frozen=True)
class Block:
    """One fenced bash block and what the test does differently with it."""

    line: int
    text: str
    page: str = "README.md"
    background: tuple[str, ...] = ()
    skip: tuple[tuple[str, str], ...] = ()
    loopback: tuple[tuple[str, str], ...] = field(default=())


def readme_blocks(readme: str, page: str = "README.md") -> list[Block]:
    """Every ``bash`` block of a page (the README by default), in order, with its directives."""
    lines = readme.splitlines()
    blocks: list[Block] = []
    i = 0
    while i < len(lines):
        fence = _FENCE.match(lines[i])
        if fence is None:
            i += 1
            continue
        end = next(j for j in range(i + 1, len(lines)) if lines[j].startswith("```"))
        if fence.group(1) == "bash":
            mark = _previous_mark(lines, i)
            blocks.append(_block(i + 1, "\n".join(lines[i + 1 : end]), mark, page))
        i = end + 1
    return blocks


def _previous_mark(lines: list[str], fence: int) -> str:
    j = fence - 1
    while j >= 0 and not lines[j].strip():
        j -= 1
    match = _MARK.match(lines[j]) if j >= 0 else None
    return match.group(1) if match else ""


def _block(line: int, text: str, mark: str, page: str) -> Block:
    background: list[str] = []
    skip: list[tuple[str, str]] = []
    loopback: list[tuple[str, str]] = []
    for directive in filter(None, (d.strip() for d in mark.split(";"))):
        key, _, value = directive.partition("=")
        if key == "background":
            background.append(value.strip())
        elif key == "skip":
            prefix, _, why = value.partition("(")
            skip.append((prefix.strip(), why.rstrip(")").strip()))
        elif key == "loopback":
            for pair in value.split(","):
                host, _, local = pair.strip().partition("=")
                loopback.append((host, local))
        else:
            raise ValueError(f"{page} line {line}: unknown readme-test directive {key!r}")
    return Block(line, text, page, tuple(background), tuple(skip), tuple(loopback))


def journey_pages(root: Path) -> list[Path]:
    """README.md, then every ``docs/*.md`` page it links to, in the order of their first link."""
    readme = root / "README.md"
    seen: list[str] = []
    for match in _DOCS_LINK.finditer(readme.read_text()):
        if match.group(1) not in seen:
            seen.append(match.group(1))
    return [readme, *(root / name for name in seen)]


def journey_blocks(root: Path) -> list[Block]:
    """Every ``bash`` block of the journey's pages, in journey order, each naming its page."""
    blocks: list[Block] = []
    for page in journey_pages(root):
        name = str(page.relative_to(root))
        blocks += [replace(b, page=name) for b in readme_blocks(page.read_text(), name)]
    return blocks


def session_script(blocks: list[Block], log: str) -> str:
    """The bash script of the whole journey: each block announced, then run as written.

    Commands to put in the background or skip are wrapped by shell functions named after their
    first word, defined just for their block, so the block's text is the README's own.
    """
    out = ["set -euo pipefail", f"JOURNEY_LOG={shlex.quote(log)}"]
    for n, block in enumerate(blocks):
        where = f"{block.page} line {block.line}"
        out.append(f'echo "::: journey block {n} ({where}) at ${{SECONDS}} s" >&2')
        wrapped = sorted(
            {p.split()[0] for p in block.background} | {p.split()[0] for p, _ in block.skip}
        )
        for word in wrapped:
            out.append(_wrapper(word, block))
        text = block.text
        for host, local in block.loopback:
            text = text.replace(host, local)
        out.append(text)
        out.extend(f"unset -f {word}" for word in wrapped)
    out.append('echo "::: README journey complete at ${SECONDS} s" >&2')
    return "\n".join(out) + "\n"


def _wrapper(word: str, block: Block) -> str:
    cases = []
    for prefix, why in block.skip:
        if prefix.split()[0] == word:
            cases.append(
                f'  if [[ "{word} $*" == {shlex.quote(prefix)}* ]]; then '
                f"echo {shlex.quote(f'(readme test: not run: {prefix}: {why})')} >&2; return 0; fi"
            )
    for prefix in block.background:
        if prefix.split()[0] == word:
            cases.append(
                f'  if [[ "{word} $*" == {shlex.quote(prefix)}* ]]; then '
                f'command {word} "$@" >>"$JOURNEY_LOG" 2>&1 & return 0; fi'
            )
    body = "\n".join(cases)
    return f'{word}() {{\n{body}\n  command {word} "$@"\n}}'
