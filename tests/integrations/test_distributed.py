"""Sharded tagging on Dask (tagger.integrations.distributed, ``tagger tag --output-dir``): each
output shard equals ``tagger tag`` of its input, a rerun skips finished shards, a killed worker
loses no
finished shard and the run still completes."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

pytest.importorskip("dask.distributed")

from tagger.api import Tagger  # noqa: E402
from tagger.cli.commands import cli  # noqa: E402
from tagger.errors import TaggerError  # noqa: E402
from tagger.integrations.distributed import expand_inputs, tag_shards  # noqa: E402
from tagger.io import load_corpus  # noqa: E402
from tagger.tagging.files import tag_file  # noqa: E402

from _helpers import ROOT, SAMPLE_DEV


@pytest.fixture
def shards(tmp_path):
    blocks = SAMPLE_DEV.read_text().strip().split("\n\n") * 3
    d = tmp_path / "shards"
    d.mkdir()
    for i in range(6):
        (d / f"part{i}.txt").write_text("\n\n".join(blocks[i::6]) + "\n")
    return d


def _expected(model, shard: Path, tmp: Path) -> str:
    out = tmp / f"one-{shard.name}"
    tag_file(str(model), str(shard), str(out))
    return out.read_text()


def test_expand_inputs(shards, tmp_path):
    assert expand_inputs(str(shards / "*.txt")) == sorted(str(p) for p in shards.iterdir())
    assert expand_inputs(str(shards)) == expand_inputs([str(shards / "*.txt")])
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "part0.txt").write_text("x\n")
    with pytest.raises(TaggerError, match="share file names"):
        expand_inputs([str(shards), str(tmp_path / "other")])
    with pytest.raises(TaggerError, match="no input file matches '.*none-\\*.txt';"):
        expand_inputs(str(tmp_path / "none-*.txt"))
    with pytest.raises(TaggerError, match="no input file matches '.*none-\\*.txt';"):
        expand_inputs([str(shards / "*.txt"), str(tmp_path / "none-*.txt")])
    (shards / "sub").mkdir()
    assert expand_inputs(str(shards)) == sorted(str(p) for p in shards.glob("*.txt"))
    with pytest.raises(TaggerError, match="sub .matched by '.*/\\*'. is a directory"):
        expand_inputs(str(shards / "*"))
    (shards / "sub").rmdir()
    (shards / "gone.txt").symlink_to(tmp_path / "nowhere.txt")
    for pattern in (shards, shards / "*.txt", shards / "gone.txt"):
        with pytest.raises(TaggerError, match="gone.txt.* is a broken symbolic link"):
            expand_inputs(str(pattern))


def test_checks_come_before_anything_is_created(model, shards, tmp_path):
    """A scheduler that does not answer is reported at once (not after Dask's 30 s of
    retries), before the output directory is made."""
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    out = tmp_path / "out"
    with pytest.raises(TaggerError, match=f"no Dask scheduler answers at tcp://127.0.0.1:{port}"):
        tag_shards(model, str(shards), out, scheduler=f"tcp://127.0.0.1:{port}")
    with pytest.raises(TaggerError, match="has no port number") as caught:
        tag_shards(model, str(shards), out, scheduler="127.0.0.1")
    assert isinstance(caught.value, ValueError)
    with pytest.raises(TaggerError, match="holds the input"):
        tag_shards(model, str(shards), shards)
    assert not out.exists()


@pytest.mark.parametrize(
    "address, parsed",
    [
        ("tcp://10.0.0.1:8786", ("tcp", "10.0.0.1", 8786)),
        ("host.example:8786", ("tcp", "host.example", 8786)),
        ("tls://[::1]:8786", ("tls", "::1", 8786)),
        ("inproc://10.0.0.1/123/1", ("inproc", "10.0.0.1/123/1", None)),
    ],
)
def test_scheduler_addresses_dask_takes_are_accepted(address, parsed):
    from tagger.integrations.shard_checks import check_scheduler_address

    assert check_scheduler_address(address) == parsed


@pytest.mark.parametrize("bad", ["binary", "empty"])
def test_a_shard_that_cannot_be_tagged_is_one_line_without_dask_logs(model, shards, tmp_path, bad):
    """The command line's own run (forked workers): a shard that is not text, or is empty,
    ends it with one error line naming the shard and nothing from Dask (no 'Compute Failed'
    block, no traceback); the shards tagged before it stay, no partial file does."""
    import subprocess
    import sys

    (shards / "part9.txt").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00" if bad == "binary" else b"")
    out = tmp_path / "out"
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            "import cli; cli.main()",
            "tag",
            str(model),
            str(shards / "*"),
            "--output-dir",
            str(out),
            "--jobs",
            "2",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 1, done.stderr
    *tagged, last = done.stderr.strip().splitlines()
    assert last.startswith(f"error: {shards / 'part9.txt'}"), done.stderr
    assert all(line.startswith("tagged ") for line in tagged), done.stderr
    # a shard may have been renamed into place just before the error, unannounced: whole
    kept = sorted(p.name for p in out.iterdir())
    assert {Path(line.split(" -> ")[1]).name for line in tagged} <= set(kept)
    for name in kept:
        assert (out / name).read_text() == _expected(model, shards / name, tmp_path)


def test_shards_equal_tagging_each_file_and_a_rerun_skips_them(model, shards, tmp_path):
    out = tmp_path / "out"
    results = tag_shards(model, str(shards / "*.txt"), out, workers=2)
    assert [r.status for r in results] == ["tagged"] * 6
    for shard in sorted(shards.iterdir()):
        assert (out / shard.name).read_text() == _expected(model, shard, tmp_path)
    (out / "part3.txt").unlink()
    again = tag_shards(model, str(shards), out, workers=2)
    assert {r.input: r.status for r in again} == {
        str(s): ("tagged" if s.name == "part3.txt" else "skipped") for s in sorted(shards.iterdir())
    }
    assert (out / "part3.txt").read_text() == _expected(model, shards / "part3.txt", tmp_path)


@pytest.mark.slow
@pytest.mark.ci
def test_a_killed_worker_loses_no_shard(model, shards, tmp_path):
    from dask.distributed import Client, LocalCluster

    cluster = LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
    )
    client = Client(cluster)
    try:
        pids = list(client.run(os.getpid).values())
        killed = []

        def kill_one(result):  # after the first finished shard, a worker dies
            if not killed:
                os.kill(pids[0], signal.SIGKILL)
                killed.append(pids[0])

        out = tmp_path / "out"
        results = tag_shards(
            model, str(shards), out, scheduler=cluster.scheduler_address, progress=kill_one
        )
        assert killed and sorted(r.status for r in results) == ["tagged"] * 6
        for shard in sorted(shards.iterdir()):
            assert (out / shard.name).read_text() == _expected(model, shard, tmp_path)
        assert not [p for p in out.iterdir() if p.name.startswith(".tagger-")]  # no leftovers
    finally:
        client.close()
        cluster.close()


def test_command_line(model, shards, tmp_path):
    run = CliRunner().invoke
    out = tmp_path / "out"
    r = run(cli, ["tag", str(model), str(shards / "*.txt"), "--output-dir", str(out), "-j", "2"])
    assert r.exit_code == 0, r.output
    assert "6 shard(s) tagged, 0 already done" in r.stderr
    r = run(cli, ["tag", str(model), str(shards / "*.txt"), "--output-dir", str(out)])
    assert "0 shard(s) tagged, 6 already done" in r.stderr
    for args, fragment in (
        ([str(shards / "part0.txt"), str(shards / "part1.txt")], "--output-dir"),
        ([str(shards / "part0.txt"), "--scheduler", "tcp://x:1"], "--output-dir DIR"),
        ([str(shards), "--output-dir", str(out), "-o", "x.txt"], "drop -o"),
    ):
        r = run(cli, ["tag", str(model), *args])
        assert r.exit_code == 2 and fragment in r.stderr, r.output


def test_annealing_decodes_the_unlabeled_sentences_on_a_cluster_with_the_same_result(tmp_path):
    """ssvm-annealing with ``scheduler=``: each round's decoding of the unlabeled sentences
    runs on the cluster's worker processes, and the weights are those of the run that decodes
    them here, to the bit."""
    from dask.distributed import LocalCluster

    from tagger.constraints import ConstraintSet

    recipes = ROOT / "corpora"
    train = load_corpus(recipes / "recipes_train.txt", "tab")[:10]
    dev = load_corpus(recipes / "recipes_dev.txt", "tab")
    unlabeled = load_corpus(recipes / "recipes_unlabeled.txt", "text", labeled=False)
    rules = ConstraintSet.load(ROOT / "constraints" / "recipes.toml")
    params = {"steps": 2, "rounds": 1, "epochs": 3, "start_epochs": 5}

    def fit(**extra):
        tg = Tagger(
            features="citation",
            learner="ssvm-annealing",
            params={**params, **extra},
            seed=0,
            select=False,
        )
        return tg.fit(train, dev=dev, unlabeled=unlabeled, constraints=rules).weights_

    here = fit()
    with LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
    ) as cluster:
        there = fit(scheduler=cluster.scheduler_address, partitions=3)
    assert np.count_nonzero(here) > 0
    assert np.array_equal(here, there)


def test_annealing_with_no_scheduler_at_the_address_says_so(monkeypatch):
    from tagger.learners.solvers import dask_client

    monkeypatch.setattr(dask_client, "CONNECT_TIMEOUT", "1s")
    tg = Tagger(
        features="citation",
        learner="ssvm-annealing",
        select=False,
        params={"scheduler": "tcp://127.0.0.1:9", "steps": 1},
    )
    train = load_corpus(ROOT / "corpora" / "recipes_train.txt", "tab")[:5]
    unlabeled = load_corpus(ROOT / "corpora" / "recipes_unlabeled.txt", "text", labeled=False)
    with pytest.raises(TaggerError, match="no Dask scheduler answers at tcp://127.0.0.1:9"):
        tg.fit(train, unlabeled=unlabeled[:20])


def test_workers_are_forked_only_while_no_other_thread_runs(model, shards, tmp_path, monkeypatch):
    """A fresh process (the command line) forks ready workers before the scheduler starts;
    a process with other threads running gets spawned workers (forking beside threads can
    leave a child waiting for a lock forever). Both give the outputs of tagging each file."""
    import subprocess
    import sys
    import threading

    import tagger.integrations.distributed as distributed

    out = tmp_path / "forked"
    code = (
        "import sys, tagger.integrations.distributed as d\n"
        "used = []\n"
        "real = d._forked_cluster\n"
        "d._forked_cluster = lambda *a: (used.append(1), real(*a))[1]\n"
        "d.tag_shards(sys.argv[1], sys.argv[2], sys.argv[3], workers=2)\n"
        "print(len(used))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, str(model), str(shards), str(out)],
        capture_output=True,
        text=True,
        check=True,
    )
    assert done.stdout.split() == ["1"]
    assert done.stderr == ""
    stop = threading.Event()
    other = threading.Thread(target=stop.wait)
    other.start()
    try:
        monkeypatch.setattr(distributed, "_forked_cluster", lambda *a: pytest.fail("forked"))
        spawned = tmp_path / "spawned"
        tag_shards(model, str(shards), spawned, workers=2)
    finally:
        stop.set()
        other.join()
    for shard in sorted(shards.iterdir()):
        expected = _expected(model, shard, tmp_path)
        assert (out / shard.name).read_text() == expected
        assert (spawned / shard.name).read_text() == expected


def test_local_workers_that_die_at_start_are_a_clear_error(model, shards, tmp_path):
    """A forked worker that exits before joining the scheduler ends the command with one
    line naming what happened, not a broken-pipe traceback or a wait."""
    import subprocess
    import sys

    code = (
        "import os, sys, tagger.integrations.distributed as d\n"
        "from tagger.errors import TaggerError\n"
        "d._serve = lambda pipe, digest: os._exit(3)\n"
        "try:\n"
        "    d.tag_shards(sys.argv[1], sys.argv[2], sys.argv[3], workers=2)\n"
        "except TaggerError as exc:\n"
        "    print(exc)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, str(model), str(shards), str(tmp_path / "out")],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    assert done.stdout.startswith(
        "the 2 local Dask workers did not start: 2 of them exited (codes [3, 3])"
    )
