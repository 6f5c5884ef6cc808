"""Shared test fixtures.

The markers ``slow`` (trains on the real corpora) and ``ci`` (the bounded selection of slow tests
that CI runs, selected with ``-m "not slow or ci"``) are registered in pyproject.toml.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tagger._config import corpora_dir

from _helpers import SAMPLE, SAMPLE_DEV, run_cli

#: Set to 1 (CI does) to make missing corpora a test failure instead of a skip.
REQUIRE_CORPORA_ENV = "TAGGER_REQUIRE_CORPORA"


#: the corpus files the tests read, one path per line relative to the corpora directory
REQUIRED = [
    ln.strip()
    for ln in (Path(__file__).parent / "required_corpora.txt").read_text().splitlines()
    if ln.strip() and not ln.startswith("#")
]


def missing_corpus(path: Path, what: str) -> None:
    """Skip the test, or fail it when ``TAGGER_REQUIRE_CORPORA=1`` (as CI sets), because
    ``path`` is not there."""
    env = os.environ.get("TAGGER_CORPORA")
    source = f"TAGGER_CORPORA={env}" if env else "TAGGER_CORPORA is unset, so the default was used"
    where = f"looked for {Path(path).absolute()} ({source})"
    if os.environ.get(REQUIRE_CORPORA_ENV, "").strip() == "1":
        pytest.fail(
            f"the real corpora are required ({REQUIRE_CORPORA_ENV}=1) but {what} is missing: "
            f"{where}. Point TAGGER_CORPORA at the directory holding conll2000/ and citations/.",
            pytrace=False,
        )
    pytest.skip(
        f"{what} not found: {where}. Set TAGGER_CORPORA to the directory holding "
        f"conll2000/ and citations/ to run this test."
    )


def pytest_addoption(parser):
    parser.addoption(
        "--fuzz-minutes",
        type=float,
        default=None,
        metavar="N",
        help="fuzz every entry point of tests/fuzz for N minutes (default: all of "
        "them share about 60 seconds)",
    )
    parser.addoption(
        "--interrupt-tries",
        type=int,
        default=30,
        metavar="N",
        help="interrupted tag --jobs 2 runs in the slow test of tests/"
        "test_interrupts.py (default 30)",
    )


def pytest_terminal_summary(terminalreporter):
    """How many inputs each fuzzed entry point tried, and how many it refused with one of the
    project's errors."""
    harness = __import__("sys").modules.get("_harness")
    if harness is None or not harness.RESULTS:
        return
    terminalreporter.section("fuzzing")
    for r in harness.RESULTS.values():
        terminalreporter.write_line(
            f"{r.name:32s} {r.inputs:9,d} inputs in {r.seconds:7.1f} s, "
            f"{r.project_errors:9,d} refused with a one-line error"
        )


@pytest.fixture(scope="session")
def corpora() -> Path:
    """Directory of the real corpora (``TAGGER_CORPORA``, default ``../shared/corpora``).

    Tests that use it are skipped when a file of ``tests/required_corpora.txt`` is not there,
    unless ``TAGGER_REQUIRE_CORPORA=1``, in which case they fail.
    """
    root = corpora_dir()
    for rel in REQUIRED:
        if not (root / rel).is_file():
            missing_corpus(root / rel, rel)
    return root


@pytest.fixture(scope="session")
def model(tmp_path_factory) -> Path:
    """A chunker that ``tagger train`` fits on the shipped sample (dev file, seed 7, three
    epochs a point): the model the command-line, tagging, sharding and bad-input tests read."""
    path = tmp_path_factory.mktemp("chunk-model") / "chunk.tgm"
    result = run_cli(
        "train", SAMPLE, "-o", path, "--dev", SAMPLE_DEV, "--seed", 7, "--set", "epochs=3", "-q"
    )
    assert result.exit_code == 0, result.output
    assert path.is_file()
    return path
