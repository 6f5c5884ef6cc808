"""The kernels' thread count: the cores a process may use (its affinity mask, a cgroup quota
read from files given as parameters), the order of what sets the count (an option, key or
keyword; then NUMBA_NUM_THREADS, OMP_NUM_THREADS; then the usable cores), its checks on the
command line, in a configuration file and in the API, and that the model never keeps it."""

from __future__ import annotations

import os
import warnings

import pytest

import tagger
from tagger import jit
from tagger.errors import ConfigError, TaggerWarning

from _helpers import ROOT, SAMPLE, run_cli

GOOD = "The DT B-NP\ncat NN I-NP\nsat VBD B-VP\n\nA DT B-NP\ndog NN I-NP\n"


# ---------------------------------------------------------------------- the cgroup quota


@pytest.mark.parametrize(
    "cpu_max, cores",
    [
        ("max 100000\n", None),
        ("200000 100000\n", 2),
        ("250000 100000\n", 2),  # the floor: 2.5 cores run 2 threads
        ("50000 100000\n", 1),  # half a core still runs one thread
        ("1000 100000\n", 1),
        ("300000\n", 3),  # the period left out: the kernel's default 100000
        ("", None),
        ("lots of\n", None),
    ],
)
def test_cgroup_v2_cpu_max(cpu_max, cores):
    assert jit.quota_cores(cpu_max=cpu_max) == cores


@pytest.mark.parametrize(
    "quota, period, cores",
    [("-1\n", "100000\n", None), ("400000\n", "100000\n", 4), ("30000", "100000", 1)],
)
def test_cgroup_v1_quota_and_period(quota, period, cores):
    assert jit.quota_cores(cfs_quota=quota, cfs_period=period) == cores


def test_the_quota_files_are_found_under_the_cgroup_root(tmp_path):
    assert jit.cgroup_cores(tmp_path) is None  # no quota files: no limit
    v1 = tmp_path / "v1" / "cpu,cpuacct"
    v1.mkdir(parents=True)
    (v1 / "cpu.cfs_quota_us").write_text("300000\n")
    (v1 / "cpu.cfs_period_us").write_text("100000\n")
    assert jit.cgroup_cores(tmp_path / "v1") == 3
    (tmp_path / "v2").mkdir()
    (tmp_path / "v2" / "cpu.max").write_text("150000 100000\n")
    assert jit.cgroup_cores(tmp_path / "v2") == 1


def test_usable_cores_is_the_affinity_mask_cut_to_the_quota(tmp_path):
    assert jit.usable_cores({0, 1, 2, 3}, tmp_path) == 4
    (tmp_path / "cpu.max").write_text("200000 100000\n")
    assert jit.usable_cores({0, 1, 2, 3}, tmp_path) == 2
    assert jit.usable_cores({5}, tmp_path) == 1
    (tmp_path / "cpu.max").write_text("10000 100000\n")  # a tenth of a core
    assert jit.usable_cores({0, 1, 2, 3}, tmp_path) == 1
    assert jit.usable_cores() >= 1  # this machine's own


# ---------------------------------------------------------------------- who sets the count


@pytest.mark.parametrize(
    "requested, environ, threads",
    [
        (None, {}, 8),
        (None, {"OMP_NUM_THREADS": "3"}, 3),
        (None, {"NUMBA_NUM_THREADS": "2", "OMP_NUM_THREADS": "3"}, 2),
        (None, {"OMP_NUM_THREADS": "64"}, 8),  # cut to the usable cores without a word
        (4, {"NUMBA_NUM_THREADS": "2"}, 4),  # the option wins
        (1, {}, 1),
    ],
)
def test_the_option_then_the_environment_then_the_usable_cores(requested, environ, threads):
    assert jit.resolve_threads(requested, environ, usable=8) == (threads, None)


@pytest.mark.parametrize(
    "environ, threads, named",
    [
        ({"NUMBA_NUM_THREADS": "lots", "OMP_NUM_THREADS": "3"}, 3, "NUMBA_NUM_THREADS='lots'"),
        ({"OMP_NUM_THREADS": "0"}, 8, "OMP_NUM_THREADS='0'"),
        ({"NUMBA_NUM_THREADS": "-2"}, 8, "NUMBA_NUM_THREADS='-2'"),
        ({"NUMBA_NUM_THREADS": "1.5", "OMP_NUM_THREADS": "x"}, 8, "NUMBA_NUM_THREADS='1.5'"),
        # str.isdigit() takes these; int() refuses the first and reads the second
        ({"NUMBA_NUM_THREADS": "\u00b2"}, 8, "NUMBA_NUM_THREADS='\u00b2'"),
        ({"OMP_NUM_THREADS": "\u0663"}, 8, "OMP_NUM_THREADS='\u0663'"),
    ],
)
def test_a_variable_that_is_no_count_is_ignored_and_said(environ, threads, named):
    got, note = jit.resolve_threads(None, environ, usable=8)
    assert got == threads
    assert note is not None and note.startswith(named) and note.endswith("ignored")


@pytest.mark.parametrize("value", ["0", "-1", "two", "\u00b2"])
def test_a_numba_threads_variable_that_is_no_count_is_one_warning(value, tmp_path):
    """numba itself refuses to import under NUMBA_NUM_THREADS=0 (a traceback): the command
    trains on every usable core and says once that the value is ignored."""
    import subprocess
    import sys

    (tmp_path / "g.txt").write_text(GOOD)
    env = dict(os.environ, NUMBA_NUM_THREADS=value)
    r = subprocess.run(
        [
            sys.executable,
            "-c",
            "import cli; cli.main()",
            "train",
            str(tmp_path / "g.txt"),
            "-o",
            str(tmp_path / "m.tgm"),
            "-q",
            "--set",
            "epochs=1",
            "--no-select",
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert r.returncode == 0, r.stderr
    lines = [ln for ln in r.stderr.splitlines() if "NUMBA_NUM_THREADS" in ln]
    assert lines == [
        f"warning: NUMBA_NUM_THREADS={value!r} is not a number of threads (a whole number, at "
        "least 1); ignored"
    ], r.stderr
    assert "Traceback" not in r.stderr
    assert (tmp_path / "m.tgm").is_file()


def test_asking_for_more_threads_than_cores_uses_the_cores_and_says_so():
    threads, note = jit.resolve_threads(12, {}, usable=2)
    assert threads == 2
    assert note is not None and "12 threads" in note and "2 cores" in note
    threads, note = jit.resolve_threads(3, {}, usable=1)
    assert threads == 1 and "1 core " in note


# ---------------------------------------------------------------------- checks of the value


@pytest.mark.parametrize("value", ["0", "-2", "two", "1.5"])
def test_a_bad_threads_option_is_a_usage_error(value, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "g.txt").write_text(GOOD)
    for args in (
        ["train", "g.txt", "-o", "m.tgm"],
        ["path", "g.txt", "--dev", "g.txt", "--values", "1"],
        ["eval", "m.tgm", "g.txt"],
    ):
        result = run_cli(*args, "--threads", value)
        assert result.exit_code == 2, result.output
        assert "--threads" in result.stderr
    assert not (tmp_path / "m.tgm").exists()


@pytest.mark.parametrize("value", ["0", "-1", '"4"', "2.5", "true"])
def test_a_bad_threads_key_names_the_file_and_the_key(value, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "g.txt").write_text(GOOD)
    (tmp_path / "train.toml").write_text(
        f'threads = {value}\n[data]\ntrain = ["g.txt"]\n[model]\noutput = "m.tgm"\n'
    )
    result = run_cli("train", "--config", "train.toml")
    assert result.exit_code == 1, result.output
    assert result.stderr.startswith("error: train.toml: threads: expected an integer")
    assert len(result.stderr.splitlines()) == 1


@pytest.mark.parametrize("value", [0, -3, 2.5, True, "4"])
def test_a_bad_threads_keyword_is_a_config_error(value, tmp_path):
    (tmp_path / "g.txt").write_text(GOOD)
    with pytest.raises(ConfigError, match="threads: expected an integer"):
        tagger.train(train=str(tmp_path / "g.txt"), threads=value)


def test_the_threads_key_is_read_and_written(tmp_path):
    from tagger.training.config import TrainingConfig

    path = tmp_path / "t.toml"
    path.write_text('threads = 3\n[data]\ntrain = ["g.txt"]\n')
    cfg = TrainingConfig.from_file(path)
    assert cfg.threads == 3
    assert TrainingConfig.from_dict(cfg.to_dict()).threads == 3
    assert cfg.merged({"threads": 2}).threads == 2
    lines = cfg.to_toml().splitlines()
    assert lines.index("threads = 3") < lines.index("[data]")  # TOML: before any table
    assert "# threads = 4" in TrainingConfig().to_toml()  # commented: the default


# ---------------------------------------------------------------------- training uses it


@pytest.fixture
def recorded_threads(monkeypatch):
    # a Dask LocalCluster started earlier in the same process (as the Dask tests do) leaves
    # OMP_NUM_THREADS=1 behind; these tests are about the default without one
    for name in jit.THREAD_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    calls: list[int] = []
    monkeypatch.setattr(jit, "set_threads", calls.append)
    return calls


def _train(tmp_path, **settings):
    (tmp_path / "g.txt").write_text(GOOD)
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        tg = tagger.train(
            train=str(tmp_path / "g.txt"),
            learner="perceptron",
            select=False,
            params={"epochs": 1},
            **settings,
        )
    return tg, [str(w.message) for w in seen if issubclass(w.category, TaggerWarning)]


def test_training_applies_the_threads_and_the_model_does_not_keep_them(
    tmp_path, recorded_threads, monkeypatch
):
    monkeypatch.setattr(jit, "usable_cores", lambda: 4)
    tg, notes = _train(tmp_path, threads=3)
    assert recorded_threads == [3] and not notes
    assert "threads" not in tg.info_["config"]
    assert "threads" not in str(tg.info_)


def test_training_cuts_too_many_threads_to_the_cores_with_one_warning(
    tmp_path, recorded_threads, monkeypatch
):
    monkeypatch.setattr(jit, "usable_cores", lambda: 1)
    _, notes = _train(tmp_path, threads=6)
    assert recorded_threads == [1]
    assert len([n for n in notes if "6 threads" in n]) == 1


def test_without_a_count_training_takes_the_environment_or_the_cores(
    tmp_path, recorded_threads, monkeypatch
):
    monkeypatch.setattr(jit, "usable_cores", lambda: 4)
    monkeypatch.delenv("NUMBA_NUM_THREADS", raising=False)
    monkeypatch.setenv("OMP_NUM_THREADS", "2")
    _train(tmp_path)
    monkeypatch.delenv("OMP_NUM_THREADS")
    _train(tmp_path)
    assert recorded_threads == [2, 4]


def test_the_command_line_passes_its_threads_to_training(tmp_path, recorded_threads, monkeypatch):
    monkeypatch.setattr(jit, "usable_cores", lambda: 4)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "train.toml").write_text("threads = 2\n")
    args = ["train", SAMPLE, "-o", "m.tgm", "-q", "--no-select", "--learner", "perceptron"]
    assert run_cli(*args, "--set", "epochs=1").exit_code == 0
    assert run_cli(*args, "--config", "train.toml").exit_code == 0
    assert run_cli(*args, "--config", "train.toml", "--threads", "3").exit_code == 0
    assert recorded_threads == [4, 2, 3]
