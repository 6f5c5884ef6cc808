"""The pages' code blocks run: every block of the quick start, in order, in one folder holding
``corpora/``, as a reader would type them (the guides' blocks: test_guides.py); and on the pages
of ``_pages.RUN_PAGES`` no block goes without a mark saying which test runs it, or why none
can."""

from __future__ import annotations

import importlib.util
import shutil

import pytest
from _pages import RUN_PAGES, blocks, marked, reader_env, run_block

from _helpers import ROOT

#: the marks each page's own test gives a meaning to, besides "" (run as it is) and "skip ..."
ROLES = {
    "docs/add-a-learner.md": {"module toy_pa", "registry", "registered"},
    "README.md": {"own-data"},
    "docs/reference.md": {"feature-file", "pair-file", "order-file"},
}


def ecosystem_pages() -> tuple[str, ...]:
    """The pages whose ``ecosystem-test`` blocks tests/test_readme_ecosystem.py runs."""
    path = ROOT / "tests" / "test_readme_ecosystem.py"
    spec = importlib.util.spec_from_file_location("readme_ecosystem", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.PAGES


@pytest.mark.parametrize("page", RUN_PAGES)
def test_every_block_says_how_it_is_tested(page):
    unmarked = [f"{page}:{b.line}" for b in blocks(page) if b.mark is None]
    assert unmarked == [], "a code block with no <!-- docs-test ... --> mark"
    roles = set(ROLES.get(page, ()))
    if page in ecosystem_pages():
        roles |= {"ecosystem", "ecosystem offline"}
    unknown = [
        f"{page}:{b.line}: {b.mark!r}"
        for b in blocks(page)
        if b.mark and not b.mark.startswith("skip ") and b.mark not in roles
    ]
    assert unknown == [], "a mark no test gives a meaning to on this page"
    # a skip gives its reason
    assert all(len(b.mark.split()) > 1 for b in blocks(page) if b.mark.startswith("skip"))


def test_the_pages_cover_the_guides():
    """The README and every hand-written page are checked; the generated ones hold no block."""
    assert "README.md" in RUN_PAGES and "docs/quickstart.md" in RUN_PAGES
    for guide in ("docs/data.md", "docs/training.md", "docs/tagging.md", "docs/spacy.md"):
        assert guide in RUN_PAGES
    assert "docs/bench-tables.md" not in RUN_PAGES
    assert set(ecosystem_pages()) <= set(RUN_PAGES)


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
