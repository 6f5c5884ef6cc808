"""A dist-info carrying pyproject.toml's entry points, for subprocesses of the tests.

spaCy finds ``sparse_tagger`` through the ``spacy_factories`` entry point of the installed
distribution. The tests put this directory on ``PYTHONPATH`` so that they see the checkout's
own declaration whatever is installed; on a clean install both declare the same thing.
"""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def entry_point_site(tmp_path: Path) -> Path:
    import tomllib

    eps = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["entry-points"]
    site = tmp_path / "entry-point-site"
    info = site / "tagger_entry_points-0.0.dist-info"
    info.mkdir(parents=True, exist_ok=True)
    (info / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: tagger-entry-points\nVersion: 0.0\n"
    )
    lines = []
    for group, entries in eps.items():
        lines.append(f"[{group}]")
        lines += [f"{k} = {v}" for k, v in entries.items()]
    (info / "entry_points.txt").write_text("\n".join(lines) + "\n")
    return site
