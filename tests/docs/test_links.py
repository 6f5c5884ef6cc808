"""Every relative link of the README and of the documentation reaches a file, and every anchor
a heading of it, both on GitHub and on the site.

``mkdocs build --strict`` (CI) checks the links between the site's pages; this test also covers
the README, which is not a page of the site, and links to files the site does not serve
(``constraints/README.md``, ``bench/README.md``), and checks an anchor against the heading ids
both renderers give: GitHub's and MkDocs' (Python-Markdown's ``toc``), which differ on
punctuation and repeated hyphens, so that a link works on both.
"""

from __future__ import annotations

import re
import unicodedata
from pathlib import Path

import pytest

from _helpers import ROOT

PAGES = sorted(
    [ROOT / "README.md", ROOT / "constraints" / "README.md", ROOT / "bench" / "README.md"]
    + list((ROOT / "docs").glob("*.md")),
)

FENCE = re.compile(r"^(```+|~~~+).*?^\1[ \t]*$", re.S | re.M)
INLINE_CODE = re.compile(r"(`+)(?!`).*?(?<!`)\1(?!`)", re.S)
LINK = re.compile(r"!?\[(?:[^\]\[]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
HEADING = re.compile(r"^(#{1,6})[ \t]+(.+?)[ \t]*#*[ \t]*$", re.M)
EXPLICIT_ID = re.compile(r"\{:?[^}]*#([\w-]+)[^}]*\}\s*$")
HTML_ID = re.compile(r"<a\s+(?:id|name)=\"([^\"]+)\"")


def prose(text: str) -> str:
    """The text without code: fenced blocks and inline code spans hold no links."""
    return INLINE_CODE.sub("", FENCE.sub("", text))


def heading_text(raw: str) -> str:
    """A heading's text as rendered: code spans unquoted, links reduced to their text."""
    text = re.sub(r"`+([^`]*)`+", r"\1", raw)
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", text)
    return re.sub(r"<[^>]+>", "", text)


def mkdocs_slug(text: str) -> str:
    """Python-Markdown's ``toc`` slugify, which MkDocs uses."""
    text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode("ascii")
    text = re.sub(r"[^\w\s-]", "", text).strip().lower()
    return re.sub(r"[-\s]+", "-", text)


def github_slug(text: str) -> str:
    """GitHub's heading id: lower case, punctuation but hyphens dropped, each space a hyphen."""
    return re.sub(r"[^\w\- ]", "", text.strip().lower()).replace(" ", "-")


def anchors(path: Path) -> tuple[set[str], set[str]]:
    """The ids of a page's headings (and explicit ids) on GitHub and on the site."""
    text = FENCE.sub("", path.read_text(encoding="utf-8"))
    github, site = set(HTML_ID.findall(text)), set(HTML_ID.findall(text))
    seen_github: dict[str, int] = {}
    seen_site: dict[str, int] = {}
    for m in HEADING.finditer(text):
        raw = m.group(2)
        explicit = EXPLICIT_ID.search(raw)
        if explicit:
            site.add(explicit.group(1))
            raw = raw[: explicit.start()].rstrip()
        words = heading_text(raw)
        for slug, seen, ids, sep in (
            (github_slug(words), seen_github, github, "-"),
            (mkdocs_slug(words), seen_site, site, "_"),
        ):
            count = seen.get(slug, 0)
            seen[slug] = count + 1
            ids.add(slug if count == 0 else f"{slug}{sep}{count}")
    return github, site


def relative_links(path: Path) -> list[str]:
    found = LINK.findall(prose(path.read_text(encoding="utf-8")))
    return [t for t in found if not re.match(r"^[a-z][a-z0-9+.-]*:", t, re.I)]


def test_the_pages_have_links_to_check():
    assert sum(len(relative_links(p)) for p in PAGES) > 30


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_resolves(page):
    broken = []
    for target in relative_links(page):
        file_part, _, anchor = target.partition("#")
        dest = (page.parent / file_part).resolve() if file_part else page
        where = f"{page.relative_to(ROOT)}: {target}"
        if not dest.exists():
            broken.append(f"{where}: no such file")
            continue
        if not anchor:
            continue
        if dest.suffix != ".md":
            broken.append(f"{where}: an anchor into a file that is not Markdown")
            continue
        github, site = anchors(dest)
        if anchor not in github:
            broken.append(f"{where}: no heading with this id on GitHub")
        if anchor not in site:
            broken.append(f"{where}: no heading with this id on the site")
    assert broken == []


@pytest.mark.parametrize(
    "heading, github, site",
    [
        ("How the default chooses its settings", "how-the-default-chooses-its-settings", None),
        ("Bad input and exit codes", "bad-input-and-exit-codes", None),
        (
            "`tagger tag --jobs N` and Dask",
            "tagger-tag---jobs-n-and-dask",
            "tagger-tag-jobs-n-and-dask",
        ),
        ("Start-up: 0.5 s", "start-up-05-s", None),
    ],
)
def test_heading_ids_follow_each_renderer(heading, github, site):
    assert github_slug(heading_text(heading)) == github
    assert mkdocs_slug(heading_text(heading)) == (site or github)


@pytest.mark.parametrize(
    "target, page, expected",
    [
        ("../README.md", "benchmarks.md", "index.md"),
        ("../constraints/README.md#rules", "index.md", "constraints.md#rules"),
        (
            "../docs/algorithms.md#4-semi-supervised",
            "constraints.md",
            "algorithms.md#4-semi-supervised",
        ),
        ("../README.md", "bench-scripts.md", "index.md"),  # from bench/README.md
        ("../bench/README.md", "bench-tables.md", "bench-scripts.md"),
        ("learners.md#how-the-default-chooses-its-settings", "index.md", None),
        ("#two-commands", "index.md", None),
        ("https://example.org/a.md", "index.md", None),
        ("../tagger/api.py", "index.md", None),  # not served: the strict build reports it
    ],
)
def test_the_site_hook_sends_repository_links_to_site_pages(target, page, expected):
    """docs/gen/hooks.py: links to the READMEs the site shows become links to their pages."""
    pytest.importorskip("mkdocs")
    import importlib.util

    spec = importlib.util.spec_from_file_location("docs_hooks", ROOT / "docs" / "gen" / "hooks.py")
    hooks = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(hooks)
    assert hooks.site_link(target, page) == (target if expected is None else expected)
