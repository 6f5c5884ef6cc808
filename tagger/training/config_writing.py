"""What ``tagger init-config`` writes: a training configuration as a commented TOML file with
every setting (:func:`to_toml`, also :meth:`TrainingConfig.to_toml
<tagger.training.config.TrainingConfig.to_toml>`), and the configurations it fills in for the
samples shipped in ``corpora/`` (:data:`TASKS`, :func:`for_task`).

Written line by line rather than by a TOML writer: the file is meant to be read and edited, so
each setting comes with its help line, and a setting decided from the data or chosen by
training is written as a comment showing its default rather than left out.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from tagger.training.schema import SCHEMA, TOP_LEVEL, defaults


def to_toml(cfg: dict, learner: str) -> str:
    """``cfg`` as a commented TOML file with every setting: data and model settings, then the
    learner's parameter table (a parameter the file does not set is written as a comment with
    its default; the strength is commented out so that training chooses it)."""
    from tagger.learners import AUTO, DEFAULT_LEARNER, get_learner

    lines = [
        "# Training configuration: tagger train --config THIS_FILE [options that override it]",
        "# Paths are relative to this file's directory. A line left as a comment keeps the",
        "# default it shows.",
        "",
    ]
    # top-level settings come first: in TOML a key after a [table] header belongs to it
    for name, key in TOP_LEVEL.items():
        lines.append(f"# {key.help}")
        value = cfg.get(name)
        lines.append(f"# {name} = 4" if value is None else f"{name} = {_toml(value)}")
    lines.append("")
    for section, keys in SCHEMA.items():
        lines.append(f"[{section}]")
        for name, key in keys.items():
            value = cfg[section].get(name)
            lines.append(f"# {key.help}")
            if value is None:
                shown = {"label_column": -1, "conllu_label": "upos"}.get(name, "")
                lines.append(f"# {name} = {_toml(shown)}")
            else:
                lines.append(f"{name} = {_toml(value)}")
        lines.append("")
    name = learner or DEFAULT_LEARNER
    lines.append(f"[params]   # parameters of {name} ('tagger learners' lists every learner's)")
    if name == AUTO:
        lines.append("# learner auto sets its candidates' parameters itself")
        return "\n".join(lines) + "\n"
    cls = get_learner(name)
    strength = getattr(cls, "strength", None)
    for p in cls.params:
        if strength is not None and p.name == strength[0]:
            lines.append(f"# {p.help}; chosen on a path unless set here or select = false")
        else:
            lines.append(f"# {p.help}")
        if p.name in cfg["params"]:
            lines.append(f"{p.name} = {_toml(cfg['params'][p.name])}")
        else:
            lines.append(f"# {p.name} = {_toml(p.default)}")
    return "\n".join(lines) + "\n"


def _toml(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, list):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    return '"' + str(value).replace("\\", "\\\\").replace('"', '\\"') + '"'


#: what ``tagger init-config --task`` fills in: the samples shipped in corpora/
TASKS: dict[str, dict[str, Any]] = {
    "chunk": {
        "train": ["corpora/sample_chunk.txt"],
        "dev": "corpora/sample_chunk_dev.txt",
        "features": "chunk",
        "output": "chunker.tgm",
    },
    "pos": {
        "train": ["corpora/sample_pos.conllu"],
        "dev": "",
        "features": "pos",
        "output": "pos.tgm",
    },
    "citation": {
        "train": ["corpora/sample_citations.txt"],
        "dev": "",
        "features": "citation",
        "output": "citations.tgm",
    },
}


def for_task(task: str | None, learner: str | None, directory: Path) -> dict:
    """A configuration for ``task`` (the shipped sample's paths written relative to
    ``directory``, where the file goes), or with empty data paths to fill in."""
    cfg = defaults()
    if learner:
        cfg["model"]["learner"] = learner
    if task is None:
        return cfg
    spec = TASKS[task]
    root = Path(__file__).resolve().parents[2]
    rel = [os.path.relpath(root / p, directory) for p in spec["train"]]
    cfg["data"]["train"] = rel
    cfg["data"]["dev"] = os.path.relpath(root / spec["dev"], directory) if spec["dev"] else ""
    cfg["model"]["features"] = spec["features"]
    cfg["model"]["output"] = spec["output"]
    return cfg
