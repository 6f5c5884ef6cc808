"""Every marked snippet of the documentation runs: the configuration files guide's, then the
spaCy, Hugging Face datasets and Dask guides'.

A fenced block preceded by ``<!-- ecosystem-test -->`` must succeed; one preceded by
``<!-- ecosystem-test: offline -->`` needs the Hugging Face hub, so it runs with the hub's
endpoint pointed at a closed local port and must fail at once with the promised one-line
message. The blocks run in that order in one temporary directory holding ``corpora/``.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from _helpers import ROOT

MARK = re.compile(r"<!-- ecosystem-test(: offline)? -->\n```(bash|python)\n(.*?)```", re.S)


#: the pages whose marked snippets run, in the order they run
PAGES = ("docs/config-files.md", "docs/spacy.md", "docs/datasets.md", "docs/multicore.md")


def _blocks():
    return [
        (bool(m.group(1)), m.group(2), m.group(3))
        for page in PAGES
        for m in MARK.finditer((ROOT / page).read_text())
    ]


def test_the_section_has_its_snippets():
    blocks = _blocks()
    langs = [lang for _, lang, _ in blocks]
    assert len(blocks) >= 7 and "python" in langs and "bash" in langs
    text = " ".join(code for _, _, code in blocks)
    for needle in (
        "sparse_tagger",
        "hf:eriktks/conll2000",
        "train.parquet",
        "--jobs 2",
        "silver.spacy",
    ):
        assert needle in text


@pytest.mark.slow
@pytest.mark.ci
def test_readme_snippets_run(tmp_path):
    pytest.importorskip("datasets")
    shutil.copytree(ROOT / "corpora", tmp_path / "corpora")
    env = dict(os.environ)
    from _entry_points import entry_point_site

    paths = [str(entry_point_site(tmp_path)), str(ROOT), env.get("PYTHONPATH", "")]
    env["PYTHONPATH"] = os.pathsep.join(p for p in paths if p)
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    env["HF_DATASETS_CACHE"] = str(tmp_path / "hf-cache")
    env.pop("HF_HUB_OFFLINE", None)
    env.pop("HF_DATASETS_OFFLINE", None)
    for i, (offline, lang, code) in enumerate(_blocks()):
        run_env = dict(env, HF_ENDPOINT="http://127.0.0.1:9") if offline else env
        if lang == "bash":
            cmd = ["bash", "-e", "-o", "pipefail", "-c", code]
        else:
            cmd = [sys.executable, "-c", code]
        if offline:  # each line of the block fails on its own
            for model in re.findall(r"(\S+\.tgm) \"hf:", code):
                # a model the hub would have trained: any model lets eval reach the hub
                shutil.copy(tmp_path / "chunker.tgm", tmp_path / model)
            for line in code.strip().splitlines():
                out = subprocess.run(
                    ["bash", "-c", line], cwd=tmp_path, env=run_env, capture_output=True, text=True
                )
                assert out.returncode == 1, (line, out.stdout, out.stderr)
                lines = out.stderr.strip().splitlines()
                assert len(lines) == 1 and "cannot reach the Hugging Face hub" in lines[0], (
                    out.stderr
                )
                assert "local files" in lines[0]
            continue
        out = subprocess.run(cmd, cwd=tmp_path, env=run_env, capture_output=True, text=True)
        assert out.returncode == 0, f"README block {i + 1} ({lang}) failed:\n{code}\n{out.stderr}"
