"""The pages' code blocks run: every block of the quick start, in order, in one folder holding
``corpora/``, as a reader would type them; and on the pages of ``_pages.RUN_PAGES`` no block
goes without a mark saying which test runs it, or why none can."""

from __future__ import annotations

import shutil

import pytest
from _pages import RUN_PAGES, blocks, marked, reader_env, run_block

from _helpers import ROOT

#: the marks each page's own test gives a meaning to, besides "" (run as it is) and "skip ..."
ROLES = {"docs/add-a-learner.md": {"module toy_pa", "registry", "registered"}}


@pytest.mark.parametrize("page", RUN_PAGES)
def test_every_block_says_how_it_is_tested(page):
    unmarked = [f"{page}:{b.line}" for b in blocks(page) if b.mark is None]
    assert unmarked == [], "a code block with no <!-- docs-test ... --> mark"
    unknown = [
        f"{page}:{b.line}: {b.mark!r}"
        for b in blocks(page)
        if b.mark and not b.mark.startswith("skip ") and b.mark not in ROLES.get(page, ())
    ]
    assert unknown == []
    # a skip gives its reason
    assert all(len(b.mark.split()) > 1 for b in blocks(page) if b.mark.startswith("skip"))


def test_the_quick_start_has_its_blocks():
    run = marked("docs/quickstart.md")
    assert {b.lang for b in run} == {"bash", "python"}
    text = "".join(b.code for b in run)
    for needle in ("tagger train", "tagger tag", "tagger eval", "tagger inspect", "--marginals"):
        assert needle in text


@pytest.mark.slow
@pytest.mark.ci
def test_the_quick_start_runs(tmp_path):
    shutil.copytree(ROOT / "corpora", tmp_path / "corpora")
    env = reader_env()
    outputs = [run_block(b, tmp_path, env) for b in marked("docs/quickstart.md")]
    for name in ("chunker.tgm", "tagged.txt", "crf.tgm", "tagged.jsonl", "sg.tgm", "pos.tgm"):
        assert (tmp_path / name).stat().st_size > 0, name
    assert outputs[-1].stdout.startswith("chunk F1 0.")
