"""The import contract: modules reach each other only through public names.

A module may use its own ``_names``; it may not import a ``_name`` from another module, nor
import a module whose own name starts with ``_`` from outside that module's package
(``tagger._config``, the settings every layer shares, is the one exception). The learners and
the CLI thereby depend on the model, inference and constraint interfaces, not on their insides.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from _helpers import ROOT

SHARED = {"tagger._config"}


def _module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _package_of(module: str, is_package: bool) -> str:
    return module if is_package else module.rpartition(".")[0]


def _resolve(node: ast.ImportFrom, package: str) -> str:
    if not node.level:
        return node.module or ""
    base = package.split(".")
    if node.level > 1:
        base = base[: len(base) - node.level + 1]
    return ".".join(base + ([node.module] if node.module else []))


def _private_part(module: str) -> str | None:
    """The first component of a dotted name that starts with an underscore, if any."""
    return next((p for p in module.split(".") if p.startswith("_") and p != "__init__"), None)


def violations(path: Path, root: Path = ROOT) -> list[str]:
    """The contract's breaches in one file of the tree at ``root``, as ``file:line: what``."""
    module = _module_name(path, root)
    package = _package_of(module, path.name == "__init__.py")
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    where = path.relative_to(root)
    found = []

    def check_module(target: str, line: int) -> None:
        if not target.startswith("tagger") or target in SHARED:
            return
        private = _private_part(target)
        if private is None:
            return
        owner = target[: target.index(private)].rstrip(".")
        if not (package == owner or package.startswith(owner + ".")):
            found.append(f"{where}:{line}: imports private module {target}")

    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                check_module(alias.name, node.lineno)
        elif isinstance(node, ast.ImportFrom):
            target = _resolve(node, package)
            check_module(target, node.lineno)
            if not target.startswith("tagger") or target == module:
                continue
            for alias in node.names:
                if alias.name.startswith("_") and not alias.name.startswith("__"):
                    if f"{target}.{alias.name}" in SHARED:
                        continue
                    found.append(f"{where}:{node.lineno}: imports {alias.name} from {target}")
    return found


def _sources() -> list[Path]:
    files = sorted((ROOT / "tagger").rglob("*.py")) + [ROOT / "cli.py"]
    return files + sorted((ROOT / "bench").glob("*.py"))


@pytest.mark.parametrize("path", _sources(), ids=lambda p: str(p.relative_to(ROOT)))
def test_no_private_imports_across_modules(path):
    assert violations(path) == []


def test_the_check_catches_a_private_import(tmp_path):
    # the checker itself: a learner importing a private kernel of the model or a private
    # module of another package is a breach; its own names, a private module of its own
    # package and the shared settings are not
    fake = tmp_path / "tagger" / "learners" / "example_learner.py"
    fake.parent.mkdir(parents=True)
    fake.write_text(
        "from tagger.chain.layout import _hidden, ChainModel\n"
        "from tagger._config import NUMBA_OPTS\n"
        "from tagger.inference._impl import viterbi\n"
        "from tagger.learners._helpers import project\n"
        "from .example_learner import _own\n"
    )
    found = violations(fake, tmp_path)
    assert len(found) == 2
    assert "_hidden from tagger.chain.layout" in found[0]
    assert "private module tagger.inference._impl" in found[1]
