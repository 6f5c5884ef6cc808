"""The documentation's pages as the tests read them: their fenced code blocks and the marks
that say how a test runs each block.

A fenced block preceded by ``<!-- docs-test -->`` runs as it is; ``<!-- docs-test: WORD -->``
gives it a role that the page's own test knows (a module to write, a registry line, a block
that needs the module registered); ``<!-- docs-test: skip REASON -->`` says why a block cannot
run in a test (it installs packages). ``<!-- ecosystem-test -->`` (or ``: offline``) says that
``tests/test_readme_ecosystem.py`` runs the block, with the other pages of that test. On the
pages of :data:`RUN_PAGES` (the README and every page written by hand) every block carries a
mark, so that a new block cannot go untested unnoticed.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from typing import NamedTuple

from _helpers import ROOT

DOCS = ROOT / "docs"

#: the pages generated from the code or the data: they hold no code block to run
GENERATED = ("docs/learner-reference.md", "docs/bench-tables.md")

#: pages whose every fenced code block is run by a test or says why it is not
RUN_PAGES = ("README.md",) + tuple(
    sorted(
        page
        for page in (p.relative_to(ROOT).as_posix() for p in DOCS.glob("*.md"))
        if page not in GENERATED
    )
)

FENCE = re.compile(r"^(```+|~~~+)([^\n]*)\n(.*?)^\1[ \t]*$", re.S | re.M)
MARK = re.compile(r"<!-- docs-test(?:: ([^>]*?))? -->\s*$")
#: the mark of a block that tests/test_readme_ecosystem.py runs
ECOSYSTEM_MARK = re.compile(r"<!-- ecosystem-test(: offline)? -->\s*$")


class Block(NamedTuple):
    page: str
    line: int
    lang: str
    code: str
    mark: str | None  # None: unmarked; "": run as it is; otherwise the mark's word(s)


def blocks(page: str) -> list[Block]:
    """Every fenced code block of ``page`` (a path relative to the repository), in order."""
    text = (ROOT / page).read_text(encoding="utf-8")
    found = []
    for m in FENCE.finditer(text):
        before = text[: m.start()].rstrip("\n").rsplit("\n", 1)[-1]
        mark, ecosystem = MARK.search(before), ECOSYSTEM_MARK.search(before)
        if ecosystem:
            label: str | None = "ecosystem offline" if ecosystem.group(1) else "ecosystem"
        else:
            label = None if mark is None else (mark.group(1) or "").strip()
        found.append(
            Block(
                page,
                text.count("\n", 0, m.start()) + 1,
                m.group(2).strip(),
                m.group(3),
                label,
            )
        )
    return found


def marked(page: str, mark: str = "") -> list[Block]:
    """The blocks of ``page`` carrying exactly this mark."""
    return [b for b in blocks(page) if b.mark == mark]


def reader_env() -> dict:
    """The environment of a reader's shell: this checkout's package, its ``tagger`` command."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH")) if p)
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    return env


def run_block(block, cwd: Path, env: dict) -> subprocess.CompletedProcess:
    if block.lang == "bash":
        cmd = ["bash", "-e", "-o", "pipefail", "-c", block.code]
    else:
        assert block.lang == "python", f"{block.page}:{block.line}: a {block.lang!r} block"
        cmd = [sys.executable, "-c", block.code]
    out = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True)
    assert out.returncode == 0, (
        f"{block.page}:{block.line} failed (exit {out.returncode}):\n{block.code}\n{out.stderr}"
    )
    return out
