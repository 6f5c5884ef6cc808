"""MkDocs hooks (``hooks:`` in mkdocs.yml): the repository's own READMEs as pages of the site.

The pages under docs/ are written to read on GitHub too, so they link to files outside docs/
by their place in the repository (``../README.md``). The site cannot serve those paths, and
``mkdocs build --strict`` rightly calls them broken. Here the few repository files the pages
link to become site pages (the constraint language, the benchmark scripts) or map to the page
that plays their part (the README to the home page), and every relative link that reaches one
of them is rewritten to the site's page. A link to any other file outside docs/ is left alone,
so the strict build still reports it.
"""

from __future__ import annotations

import posixpath
import re
from pathlib import Path

from mkdocs.structure.files import File, Files

REPO = Path(__file__).resolve().parents[2]

#: repository files shown as pages of their own: repository path -> page
REPOSITORY_PAGES = {
    "constraints/README.md": "constraints.md",
    "bench/README.md": "bench-scripts.md",
}
#: every repository file outside docs/ a page may link to, and the page that link goes to
LINK_TARGETS = {"README.md": "index.md", **REPOSITORY_PAGES}

#: an inline Markdown link or image target: ](target) or ](target "title")
LINK = re.compile(r"\]\(([^)\s]+)((?:\s+\"[^\"]*\")?)\)")


def on_files(files: Files, config) -> Files:
    for source, page in REPOSITORY_PAGES.items():
        files.append(File.generated(config, page, abs_src_path=str(REPO / source)))
    return files


def repository_path(page_src: str) -> str:
    """Where a site page's text lives in the repository (docs/ for the pages written there)."""
    for source, page in REPOSITORY_PAGES.items():
        if page == page_src:
            return source
    return f"docs/{page_src}"


def site_link(target: str, page_src: str) -> str:
    """``target`` as the site's link from ``page_src``: rewritten when it reaches a file of
    :data:`LINK_TARGETS` from the page's place in the repository, unchanged otherwise."""
    if "://" in target or target.startswith(("#", "/", "mailto:")):
        return target
    path, hash_, anchor = target.partition("#")
    here = posixpath.dirname(repository_path(page_src))
    reached = posixpath.normpath(posixpath.join(here, path))
    if reached.startswith("docs/"):
        reached_page = reached[len("docs/") :]
    elif reached in LINK_TARGETS:
        reached_page = LINK_TARGETS[reached]
    else:
        return target
    if reached_page == posixpath.normpath(posixpath.join(posixpath.dirname(page_src), path)):
        return target  # already a link between site pages
    rel = posixpath.relpath(reached_page, posixpath.dirname(page_src) or ".")
    return rel + hash_ + anchor


def on_page_markdown(markdown: str, page, config, files) -> str:
    src = page.file.src_uri
    return LINK.sub(lambda m: f"]({site_link(m.group(1), src)}{m.group(2)})", markdown)
