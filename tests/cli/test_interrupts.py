"""Ctrl-C (SIGINT) or SIGTERM while ``tagger tag`` works: the command stops (the test bounds the
wait at ``HANG`` seconds, against a hang only: how fast it stops is not a test's business) with exit
status 130 (SIGINT) or 143 (SIGTERM) and the one line ``error: interrupted``, no traceback from
it or from its workers, leaves no partial output (no ``.part`` file, no output file) and no
process of its own running. SIGINT goes to the whole process group, as a terminal sends it;
SIGTERM to the group too, as ``timeout`` and job schedulers send it, or to the command's
process alone, as ``kill PID`` does. Each run is signalled at a random moment after start-up
(the seed is printed).

Sharded tagging (``--output-dir``) keeps the shards finished before the signal, and a rerun
tags the rest."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from _helpers import ROOT, SAMPLE

#: seconds from the signal after which the command counts as hung
HANG = 60.0

#: the exit status of each signal, and whether it is sent to the process group
EXIT = {signal.SIGINT: 130, signal.SIGTERM: 143}


@pytest.fixture(scope="module")
def setup(corpora, tmp_path_factory):
    work = tmp_path_factory.mktemp("interrupts")
    model = work / "m.tgm"
    subprocess.run(
        [
            sys.executable,
            "-c",
            "import cli; cli.main()",
            "train",
            str(SAMPLE),
            "-o",
            str(model),
            "--set",
            "epochs=2",
            "-q",
        ],
        cwd=ROOT,
        check=True,
    )
    test = (corpora / "conll2000" / "test.txt").read_text()
    big = work / "big.txt"
    big.write_text(test * 60)
    shards = work / "shards"
    shards.mkdir()
    for i in range(12):  # long enough that a quiet machine is still tagging at the signal
        (shards / f"part{i:02d}.txt").write_text(test * 6)
    return model, big, shards


def _deliverable_sigint() -> None:
    """A shell starts background jobs with SIGINT ignored, and Python keeps an ignored SIGINT
    ignored: restore the default so that the command sees Ctrl-C as a terminal user's would,
    however the test run itself was started."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _group_gone(pgid: int) -> bool:
    """Whether no process of the group is left (its members exit as the command does; a
    moment is allowed for the system to reap them)."""
    for _ in range(50):
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.1)
    return False


def _signal(
    args: list[str], sig: int, to_group: bool, delay: float, **environ: str
) -> tuple[int, float, str]:
    """Run ``tagger ARGS`` (with ``environ`` added to its environment) in a session of its
    own, send ``sig`` after ``delay`` seconds; its exit status, seconds from the signal to its
    exit, stderr."""
    env = dict(os.environ, PYTHONFAULTHANDLER="1", **environ)  # a hang dumps every thread
    proc = subprocess.Popen(
        [sys.executable, "-c", "import cli; cli.main()", *args],
        cwd=ROOT,
        start_new_session=True,
        stdout=subprocess.DEVNULL,
        preexec_fn=_deliverable_sigint,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    time.sleep(delay)
    sent = time.monotonic()
    try:
        if to_group:
            os.killpg(proc.pid, sig)
        else:
            os.kill(proc.pid, sig)
    except ProcessLookupError:  # already done
        pass
    try:
        _, err = proc.communicate(timeout=20)
    except subprocess.TimeoutExpired:
        alive = proc.poll() is None
        if alive:
            os.kill(proc.pid, signal.SIGABRT)
        group = subprocess.run(
            ["ps", "-o", "pid,stat,cmd", "-g", str(proc.pid)], capture_output=True, text=True
        ).stdout
        os.killpg(proc.pid, signal.SIGKILL)
        _, err = proc.communicate()
        pytest.fail(
            f"tagger {' '.join(args)} hung after {signal.Signals(sig).name} at {delay:.2f} s "
            f"(main process {'alive' if alive else f'exited {proc.returncode}'}):\n{group}\n{err}"
        )
    took = time.monotonic() - sent
    left = not _group_gone(proc.pid)
    if left:
        os.killpg(proc.pid, signal.SIGKILL)
    assert not left, f"processes of the command outlived it ({signal.Signals(sig).name}):\n{err}"
    return proc.returncode, took, err


def _check(setup, tmp_path, tries: int, seed: int, sig=signal.SIGINT, to_group=True, jobs=2):
    model, big, _ = setup
    rng = random.Random(seed)
    print(f"\nseed {seed}: {tries} runs of tag --jobs {jobs}, {signal.Signals(sig).name}")
    interrupted = 0
    for k in range(tries):
        out_dir = tmp_path / f"run{k}"
        out_dir.mkdir()
        out = out_dir / "tagged.txt"
        delay = rng.uniform(0.8, 3.0)
        args = ["tag", str(model), str(big), "--jobs", str(jobs), "-o", str(out)]
        code, took, err = _signal(args, sig, to_group, delay)
        left = sorted(p.name for p in out_dir.iterdir())
        if code == 0:  # finished before the signal: the whole output is there
            assert left == ["tagged.txt"], left
            continue
        interrupted += 1
        assert code == EXIT[sig], (delay, code, err)
        assert took <= HANG, (delay, took)
        assert err.strip().splitlines() == ["error: interrupted"], err
        assert left == [], (delay, left)
    print(f"{interrupted} of {tries} runs interrupted (the others finished first), no hang")
    assert interrupted >= tries // 2, "most signals should arrive while tagging"


@pytest.mark.slow
@pytest.mark.ci
def test_ctrl_c_during_parallel_tagging_a_few_times(setup, tmp_path):
    _check(setup, tmp_path, tries=3, seed=1)


@pytest.mark.slow
def test_ctrl_c_during_parallel_tagging_thirty_times(setup, tmp_path, request):
    """30 tries, or ``--interrupt-tries N`` (``-s`` prints how many runs were interrupted)."""
    _check(setup, tmp_path, tries=request.config.getoption("interrupt_tries"), seed=2)


@pytest.mark.slow
@pytest.mark.ci
@pytest.mark.parametrize(
    "to_group, jobs",
    [(True, 2), (False, 2), (False, 1)],
    ids=["group-jobs-2", "main-process-jobs-2", "main-process-jobs-1"],
)
def test_sigterm_is_handled_as_ctrl_c_is(setup, tmp_path, to_group, jobs):
    """SIGTERM to the process group (``timeout``, a job scheduler) or to the command alone
    (``kill PID``): exit 143, one line, no partial file, no worker left behind."""
    _check(
        setup, tmp_path, tries=2, seed=3 + jobs, sig=signal.SIGTERM, to_group=to_group, jobs=jobs
    )


@pytest.mark.slow
def test_sigterm_during_parallel_tagging_thirty_times(setup, tmp_path, request):
    tries = request.config.getoption("interrupt_tries")
    _check(setup, tmp_path, tries=tries, seed=6, sig=signal.SIGTERM)


@pytest.mark.slow
@pytest.mark.ci
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_a_signal_during_sharded_tagging_keeps_finished_shards(setup, tmp_path, sig):
    """Stopped while Dask tags the shards: exit status and one line as above (the shards
    finished before it named on lines of their own), only whole shards in the output
    directory, no worker left; the rerun tags exactly the shards that were missing."""
    pytest.importorskip("dask.distributed")
    model, _, shards = setup
    seed = 7 + int(sig)
    rng = random.Random(seed)
    print(f"\nseed {seed}")
    out = tmp_path / "out"
    args = ["tag", str(model), str(shards / "*.txt"), "--output-dir", str(out), "--jobs", "2"]
    code, took, err = _signal(args, sig, True, rng.uniform(1.5, 3.0))
    lines = err.strip().splitlines()
    done = sorted(p.name for p in out.iterdir()) if out.exists() else []
    if code == 0:
        pytest.skip("the run finished before the signal")
    assert code == EXIT[sig], err
    assert took <= HANG, took
    assert lines[-1] == "error: interrupted", err
    assert all(ln.startswith("tagged ") for ln in lines[:-1]), err
    # a shard may be whole (renamed into place) an instant before the signal and unannounced
    assert set(Path(ln.split(" -> ")[1]).name for ln in lines[:-1]) <= set(done)
    # a signal that lands after the last shard, while the cluster closes, still interrupts a
    # command that had not finished: then every shard is whole and the rerun has nothing to do
    assert len(done) <= 12
    for name in done:  # whole: a line for each input line
        tagged = (out / name).read_text().count("\n")
        assert tagged == (shards / name).read_text().count("\n"), name
    rerun = subprocess.run(
        [sys.executable, "-c", "import cli; cli.main()", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert rerun.returncode == 0, rerun.stderr
    assert f"{12 - len(done)} shard(s) tagged, {len(done)} already done" in rerun.stderr
    assert sorted(p.name for p in out.iterdir()) == sorted(p.name for p in shards.iterdir())


@pytest.mark.slow
@pytest.mark.ci
@pytest.mark.parametrize(
    "sig, to_group",
    [(signal.SIGINT, True), (signal.SIGTERM, True), (signal.SIGTERM, False)],
    ids=["SIGINT", "SIGTERM-group", "SIGTERM-main-process"],
)
def test_a_signal_while_a_first_training_compiles_in_two_processes(tmp_path, sig, to_group):
    """The README's second command on an empty numba cache compiles in this process and a
    helper (tagger.precompile) for several seconds: a signal then stops both (the helper
    killed and reaped by the command even when the signal reached the command alone), with
    the exit status and the one line, and no model file."""
    seed = 11 + int(sig) + to_group
    delay = random.Random(seed).uniform(1.5, 4.0)
    print(f"\nseed {seed}: {signal.Signals(sig).name} after {delay:.2f} s")
    model = tmp_path / "m.tgm"
    dev = SAMPLE.with_name("sample_chunk_dev.txt")
    args = ["train", str(SAMPLE), "--dev", str(dev), "-o", str(model), "-q"]
    code, took, err = _signal(args, sig, to_group, delay, NUMBA_CACHE_DIR=str(tmp_path / "c"))
    assert code == EXIT[sig], (delay, code, err)
    assert took <= HANG, (delay, took)
    assert err.strip().splitlines() == ["error: interrupted"], err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c"]


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_a_signal_while_the_command_starts_ends_it_with_the_one_line(sig):
    """A signal while the command's modules are still being imported: the one line and the
    status, even where an import swallows the exception (a library's bare ``except:``), which
    would otherwise let the command run on as if no signal had come."""
    script = f"""
import importlib.abc, os, signal, sys, time

class SignalDuringImport(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name == "tagger.cli.commands":
            try:
                os.kill(os.getpid(), {int(sig)})
                time.sleep(2)  # the handler runs here
            except:  # noqa: E722, a library's bare except
                pass
        return None

sys.meta_path.insert(0, SignalDuringImport())
sys.argv = ["tagger", "learners"]
from tagger.cli import main
main()
"""
    proc = subprocess.run(
        [sys.executable, "-c", script],
        cwd=ROOT,
        capture_output=True,
        text=True,
        preexec_fn=_deliverable_sigint,
        timeout=HANG,
    )
    assert proc.returncode == EXIT[sig], proc.stderr
    assert proc.stderr.splitlines() == ["error: interrupted"]
    assert proc.stdout == ""
