"""``tagger tag --jobs N``: the same output as one process, in order, errors at the right line."""

from __future__ import annotations

import pytest

import tagger.tagging.files as tagging
import tagger.tagging.parallel as parallel

from _helpers import ROOT, SAMPLE, run_cli

DEV = ROOT / "corpora" / "sample_chunk_dev.txt"


@pytest.fixture()
def small_blocks(monkeypatch):
    monkeypatch.setattr(parallel, "BLOCK_BYTES", 2048)  # many blocks from a small file
    monkeypatch.setattr(tagging, "PARALLEL_MIN_BYTES", 0)  # and workers for it


def test_iter_blocks_cuts_at_sentence_ends():
    import io

    data = SAMPLE.read_bytes() * 3
    blocks = list(parallel.iter_blocks(io.BytesIO(data), "conll", 1000))
    assert len(blocks) > 5
    assert b"".join(b for b, _ in blocks) == data
    line = 1
    for b, first in blocks[:-1]:
        assert b.endswith(b"\n\n") and first == line
        line += b.count(b"\n")
    lines = list(parallel.iter_blocks(io.BytesIO(b"a b\nc d\n" * 300), "text", 100))
    assert all(b.endswith(b"\n") for b, _ in lines)


@pytest.mark.parametrize("text_input", [False, True])
def test_jobs_2_output_equals_jobs_1(model, tmp_path, small_blocks, text_input):
    src = tmp_path / "in.txt"
    if text_input:
        from tagger.io import load_corpus

        src.write_text("".join(" ".join(s.tokens) + "\n" for s in load_corpus(SAMPLE)) * 4)
        # a word-only model for plain text
        m = tmp_path / "pos.tgm"
        assert (
            run_cli(
                "train",
                SAMPLE,
                "--label-column",
                1,
                "--features",
                "pos",
                "-o",
                m,
                "--set",
                "epochs=2",
                "-q",
            ).exit_code
            == 0
        )
    else:
        src.write_bytes((SAMPLE.read_bytes() + DEV.read_bytes()) * 4)
        m = model
    one = run_cli("tag", m, src, "-o", tmp_path / "one.txt")
    two = run_cli("tag", m, src, "-o", tmp_path / "two.txt", "--jobs", 2)
    assert one.exit_code == 0 and two.exit_code == 0, two.output
    assert (tmp_path / "two.txt").read_bytes() == (tmp_path / "one.txt").read_bytes()
    piped = run_cli("tag", m, "-", "--jobs", 2, input=src.read_bytes())
    assert piped.exit_code == 0
    assert piped.stdout_bytes == (tmp_path / "one.txt").read_bytes()


def test_jobs_error_names_the_absolute_line(model, tmp_path, small_blocks):
    lines = (SAMPLE.read_text() * 3).split("\n")
    bad_line = len(lines) - 20
    while not lines[bad_line - 1].strip():
        bad_line += 1
    lines[bad_line - 1] = "only_one_field"
    src = tmp_path / "bad.txt"
    src.write_text("\n".join(lines))
    one = run_cli("tag", model, src)
    two = run_cli("tag", model, src, "--jobs", 2)
    assert one.exit_code == two.exit_code == 1
    assert f"{src}:{bad_line}:" in one.stderr
    assert f"{src}:{bad_line}:" in two.stderr
    assert two.stderr.count("\n") == 1


@pytest.mark.slow
def test_jobs_2_on_conll2000_test_x3(corpora, model, tmp_path):
    src = tmp_path / "test_x3.txt"
    src.write_bytes((corpora / "conll2000" / "test.txt").read_bytes() * 3)  # 3 blocks or more
    one = run_cli("tag", model, src, "-o", tmp_path / "one.txt")
    two = run_cli("tag", model, src, "-o", tmp_path / "two.txt", "--jobs", 2)
    assert one.exit_code == 0 and two.exit_code == 0
    assert (tmp_path / "two.txt").read_bytes() == (tmp_path / "one.txt").read_bytes()


@pytest.mark.parametrize("jobs", [1, 2])
def test_jobs_bounds_the_decoding_threads(model, tmp_path, jobs):
    """--jobs is a number of cores also where the input is decoded in this process
    (--marginals and --constraints cannot be cut into blocks): the kernels get N threads."""
    import numba

    before = numba.get_num_threads()
    try:
        numba.set_num_threads(numba.config.NUMBA_NUM_THREADS)
        r = run_cli("tag", model, DEV, "-o", tmp_path / "out.txt", "--jobs", jobs)
        assert r.exit_code == 0, r.output
        assert numba.get_num_threads() == min(jobs, numba.config.NUMBA_NUM_THREADS)
    finally:
        numba.set_num_threads(before)


def test_a_short_input_is_tagged_without_workers(model, tmp_path, monkeypatch):
    """--jobs 2 on an input of one block starts no worker process (nor numba for it)."""

    def no_workers(*args, **kwargs):
        raise AssertionError("worker processes started for a short input")

    monkeypatch.setattr(parallel, "tag_parallel", no_workers)
    one = run_cli("tag", model, DEV, "-o", tmp_path / "one.txt")
    two = run_cli("tag", model, DEV, "-o", tmp_path / "two.txt", "--jobs", 2)
    assert one.exit_code == two.exit_code == 0, two.output
    assert (tmp_path / "two.txt").read_bytes() == (tmp_path / "one.txt").read_bytes()


def test_a_worker_that_dies_is_one_error_line(model, tmp_path):
    """A worker process that ends in the middle (killed, out of memory) is an error naming
    the input, exit status 1, no output file; the other worker is ended too. (In a process of
    its own: the workers are forked, and inherit the worker made to die, only from a process
    with no other thread.)"""
    import subprocess
    import sys

    src = tmp_path / "in.txt"
    src.write_bytes(SAMPLE.read_bytes() * 4)
    out = tmp_path / "out.txt"
    script = f"""
import os, sys
import tagger.tagging.files as files
import tagger.tagging.parallel as parallel

parallel.BLOCK_BYTES = 2048  # many blocks from a small file
files.PARALLEL_MIN_BYTES = 0  # and workers for it
real = parallel._tag_block

def dies(block, first_line):
    if first_line > 1:  # the first block is tagged, a later one kills its worker
        os._exit(9)
    return real(block, first_line)

parallel._tag_block = dies
sys.argv = ["tagger", "tag", {str(model)!r}, {str(src)!r}, "-o", {str(out)!r}, "--jobs", "2"]
from tagger.cli import main
main()
"""
    r = subprocess.run(
        [sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=300
    )
    assert r.returncode == 1, r.stderr
    assert r.stderr.splitlines() == [
        f"error: {src}: a tagging worker process ended unexpectedly (exit status 9); tag "
        "with --jobs 1 to see why"
    ]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.txt"]


def test_spawned_workers_tag_as_forked_ones_do(model, tmp_path, small_blocks, monkeypatch):
    """From a process that runs other threads the workers are spawned (a fork could copy a
    lock another thread holds) and load the model themselves: the same output."""
    src = tmp_path / "in.txt"
    src.write_bytes((SAMPLE.read_bytes() + DEV.read_bytes()) * 2)
    one = run_cli("tag", model, src, "-o", tmp_path / "one.txt")
    import multiprocessing

    methods = []
    get_context = multiprocessing.get_context

    def recorded(method=None):
        methods.append(method)
        return get_context(method)

    monkeypatch.setattr(parallel.threading, "active_count", lambda: 2)
    monkeypatch.setattr(multiprocessing, "get_context", recorded)
    two = run_cli("tag", model, src, "-o", tmp_path / "two.txt", "--jobs", 2)
    assert one.exit_code == 0 and two.exit_code == 0, two.output
    assert methods == ["spawn"]
    assert (tmp_path / "two.txt").read_bytes() == (tmp_path / "one.txt").read_bytes()
