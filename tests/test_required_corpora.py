"""Corpus tests fail, not skip, when CI requires the real corpora and one of them is missing."""

from __future__ import annotations

import os
import subprocess
import sys

from _helpers import ROOT


def test_a_missing_citation_corpus_fails_the_corpus_tests_when_required(corpora, tmp_path):
    # the CoNLL-2000 files are there, the citation corpus is not
    (tmp_path / "conll2000").symlink_to(corpora / "conll2000")
    env = dict(os.environ, TAGGER_CORPORA=str(tmp_path), TAGGER_REQUIRE_CORPORA="1")
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "tests/io/test_corpus.py",
            "-k",
            "tagged_references or cpf_tab",
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
    )
    assert run.returncode == 1, run.stdout[-2000:]
    assert "citations/tagged_references.txt" in run.stdout
    assert "2 failed" in run.stdout or "2 errors" in run.stdout, run.stdout[-2000:]


def test_ci_checks_the_same_corpus_files_the_tests_read():
    script = (ROOT / ".ci" / "run").read_text()
    assert "tests/required_corpora.txt" in script
    listed = [
        ln
        for ln in (ROOT / "tests" / "required_corpora.txt").read_text().splitlines()
        if ln and not ln.startswith("#")
    ]
    assert any(ln.startswith("citations/") for ln in listed)
