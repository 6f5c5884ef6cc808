"""docs/add-a-learner.md does what it says: its learner module, written where the page puts it
and registered with the page's line, trains from the command line and from Python on
``corpora/sample_chunk.txt``.

The page's changes are applied to an overlay of the package, not to the checkout: a folder
whose ``tagger/`` links to every part of the real one except ``tagger/learners/``, whose files
are linked in turn except ``__init__.py`` (copied, with the page's registry line added) and the
new module. The page's blocks then run in subprocesses with the overlay first on
``PYTHONPATH``, as the reader's edited checkout would. The linked folders keep numba's cache
where it is, so no kernel is compiled again.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest
from _pages import marked, reader_env, run_block

from _helpers import ROOT

PAGE = "docs/add-a-learner.md"


def overlay(tmp_path: Path) -> Path:
    """A ``tagger`` package with the page's learner module and registry line."""
    (module,) = marked(PAGE, "module toy_pa")
    (registry,) = marked(PAGE, "registry")
    site = tmp_path / "overlay"
    package, learners = site / "tagger", site / "tagger" / "learners"
    learners.mkdir(parents=True)
    real = ROOT / "tagger"
    for entry in real.iterdir():
        if entry.name not in ("learners", "__pycache__"):
            (package / entry.name).symlink_to(entry)
    for entry in (real / "learners").iterdir():
        if entry.name not in ("__init__.py", "__pycache__"):
            (learners / entry.name).symlink_to(entry)
    init = (real / "learners" / "__init__.py").read_text(encoding="utf-8")
    opening = "_REGISTRY = (\n"
    assert init.count(opening) == 1, "tagger/learners/__init__.py: where the page adds its line"
    (learners / "__init__.py").write_text(init.replace(opening, opening + entries(registry.code)))
    (learners / "toy_pa.py").write_text(module.code)
    return site


def entries(block: str) -> str:
    """The lines the registry block adds to ``_REGISTRY``: those between its brackets that are
    not comments."""
    lines = block.strip().splitlines()
    assert lines[0] == "_REGISTRY = (" and lines[-1] == ")", block
    return "".join(f"{ln}\n" for ln in lines[1:-1] if not ln.strip().startswith("#"))


def test_the_page_has_its_blocks():
    assert len(marked(PAGE, "module toy_pa")) == 1
    assert entries(marked(PAGE, "registry")[0].code) == '    ("toy_pa", "ToyPA"),\n'
    langs = [b.lang for b in marked(PAGE, "registered")]
    assert langs == ["bash", "python"]


def test_the_learner_uses_the_seam_alone(tmp_path):
    """The page's module obeys the rule tests/chain/test_seam.py checks for every learner."""
    sys.path.insert(0, str(ROOT / "tests" / "chain"))
    try:
        from test_seam import _allowed, _imports
    finally:
        sys.path.remove(str(ROOT / "tests" / "chain"))
    (module,) = marked(PAGE, "module toy_pa")
    path = tmp_path / "tagger" / "learners" / "toy_pa.py"
    path.parent.mkdir(parents=True)
    path.write_text(module.code)
    imported = [m for _, m in _imports(path, tmp_path)]
    assert "tagger.chain" in imported
    assert [m for m in imported if not _allowed(m)] == []


@pytest.mark.slow
@pytest.mark.ci
def test_the_learner_registers_and_trains(tmp_path):
    shutil.copytree(ROOT / "corpora", tmp_path / "corpora")
    env = reader_env()
    env["PYTHONPATH"] = f"{overlay(tmp_path)}:{env['PYTHONPATH']}"
    shell, python = marked(PAGE, "registered")
    out = run_block(shell, tmp_path, env)
    assert out.stdout.startswith("toy-pa: Passive-aggressive chain learner")
    assert "processed 186 tokens" in out.stdout  # tagger eval on the dev sample
    assert out.stdout.rstrip().endswith("exit status 2")
    assert not (tmp_path / "bad.tgm").exists()
    assert (tmp_path / "toy.tgm").stat().st_size > 0
    f1, nonzero, passes = run_block(python, tmp_path, env).stdout.split()[:3]
    assert float(f1) > 0.5 and int(nonzero) > 0 and 1 <= int(passes) <= 10
