"""What installing the project puts on the path: the distribution's name is not the index's
unrelated ``tagger``, only the package ``tagger`` is installed (no generic top-level module such
as ``cli``), and the ``tagger`` command and the spaCy factory point into it."""

from __future__ import annotations

import importlib.metadata as metadata
import sys

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

from _helpers import ROOT

PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
DIST = PROJECT["project"]["name"]


def test_the_distribution_is_not_named_tagger():
    assert DIST != "tagger"
    assert metadata.version(DIST)  # the installed distribution is this one


def test_only_the_tagger_package_is_installed():
    tool = PROJECT.get("tool", {}).get("setuptools", {})
    assert "py-modules" not in tool
    assert tool["packages"]["find"]["include"] == ["tagger*"]
    assert not (ROOT / "tagger.py").exists()


def test_entry_points_lead_into_the_package():
    eps = metadata.distribution(DIST).entry_points
    scripts = {ep.name: ep.value for ep in eps if ep.group == "console_scripts"}
    assert scripts == {"tagger": "tagger.cli:main"}
    factories = {ep.name: ep.value for ep in eps if ep.group == "spacy_factories"}
    assert factories["sparse_tagger"].startswith("tagger.")
    assert callable(next(ep for ep in eps if ep.group == "console_scripts").load())


def test_spacy_package_would_require_this_distribution():
    # `spacy package` maps a pipeline's component modules to distributions this way
    assert DIST in metadata.packages_distributions()["tagger"]
