"""What many tests share: the paths of the samples shipped in ``corpora/`` and the command line
run in this process (click's ``CliRunner``, exceptions not caught, so a traceback fails the
test with its own stack)."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner, Result

from tagger.cli import cli

ROOT = Path(__file__).resolve().parents[1]
SAMPLES = ROOT / "corpora"
SAMPLE = SAMPLES / "sample_chunk.txt"
SAMPLE_DEV = SAMPLES / "sample_chunk_dev.txt"


def run_cli(*args, input: str | bytes | None = None) -> Result:
    """``tagger ARGS...`` (each argument passed through ``str``)."""
    return CliRunner().invoke(cli, [str(a) for a in args], input=input, catch_exceptions=False)
