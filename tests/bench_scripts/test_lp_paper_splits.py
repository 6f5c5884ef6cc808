"""bench/lp_paper.py one split at a time: a run of one split of one corpus writes its own JSON,
``--table`` builds the table of one commit's split files (mean ± sample standard deviation
over the splits, the missing splits named, other commits and other settings never mixed in),
and bad input is one line on stderr with exit status 2."""

from __future__ import annotations

import importlib.util
import json
import math
import os
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from _helpers import ROOT

SCRIPT = ROOT / "bench" / "lp_paper.py"


def run(*args, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, str(SCRIPT), *map(str, args)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, **(env or {})},
    )


def script_module():
    spec = importlib.util.spec_from_file_location("lp_paper_under_test", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def fake_split(folder, corpus, split, commit, finished, rows, train_size=60):
    """A split file as the script writes one; ``rows``: learner -> (Err_all, Err_voc, CPU s,
    wall s, iterations, converged)."""
    params = {"hmm": {}, "perceptron": {"epochs": 100}}
    data = {
        "command": "python bench/lp_paper.py ...",
        "machine": {
            "cores": 2,
            "usable_cores": 2,
            "cpu": "test cpu",
            "commit": commit,
            "load_average_at_start": [0.5, 0.5, 0.5],
        },
        "corpus": corpus,
        "split": split,
        "splits": 5,
        "train_size": train_size,
        "params": {n: params[n] for n in rows},
        "options": ["--learners", ",".join(rows), "--train-size", str(train_size)],
        "wall_s": 10.0,
        "finished": finished,
        "load_average_at_end": [0.7, 0.6, 0.5],
        "results": [
            {
                "corpus": corpus,
                "split": split,
                "learner": n,
                "err_all": ea,
                "err_voc": ev,
                "cpu_s": cpu,
                "wall_s": wall,
                "iterations": it,
                "converged": conv,
            }
            for n, (ea, ev, cpu, wall, it, conv) in rows.items()
        ],
    }
    path = folder / f"lp-paper-{corpus}-split{split}.json"
    path.write_text(json.dumps(data))
    return path


def section(text: str, corpus: str) -> str:
    return text.split(f"## {corpus}\n", 1)[1].split("\n## ", 1)[0]


def row(text: str, learner: str) -> list[str]:
    line = next(ln for ln in text.splitlines() if ln.startswith(f"| {learner} |"))
    return [c.strip() for c in line.strip("|").split("|")]


def mean_sd(a: float, b: float) -> tuple[float, float]:
    m = (a + b) / 2
    return m, math.sqrt((a - m) ** 2 + (b - m) ** 2)  # sample sd: divided by n - 1 = 1


def test_the_split_is_the_protocols():
    # split k: the 6,700 of default_rng(0), permuted by default_rng(k + 1), 5,700 / 1,000
    module = script_module()
    n = 10_948
    pool = np.random.default_rng(0).choice(n, 6700, replace=False)
    for k in (0, 4):
        perm = np.random.default_rng(k + 1).permutation(6700)
        train, test = module._split(list(range(n)), k)
        assert train == list(pool[perm[:5700]]) and test == list(pool[perm[5700:]])


@pytest.mark.slow
@pytest.mark.ci
def test_one_split_writes_its_json_and_the_table_reads_it(corpora, tmp_path):
    env = {"TAGGER_CORPORA": str(corpora), "NUMBA_NUM_THREADS": "1"}
    args = ["--train-size", 60, "--learners", "hmm,perceptron", "--workers", 1]
    r = run("--corpus", "conll2000", "--split", 2, *args, "--out-dir", tmp_path, env=env)
    assert r.returncode == 0, r.stderr
    data = json.loads((tmp_path / "lp-paper-conll2000-split2.json").read_text())
    assert (data["corpus"], data["split"], data["splits"], data["train_size"]) == (
        "conll2000",
        2,
        5,
        60,
    )
    assert data["machine"]["commit"] and "lp_paper.py --corpus conll2000" in data["command"]
    assert len(data["machine"]["load_average_at_start"]) == 3
    assert len(data["load_average_at_end"]) == 3
    assert data["params"] == {"hmm": {}, "perceptron": {"epochs": 100}}
    assert [x["learner"] for x in data["results"]] == ["hmm", "perceptron"]
    for x in data["results"]:
        assert x["split"] == 2 and 0 < x["err_voc"] < x["err_all"] < 100
        assert x["cpu_s"] > 0 and x["wall_s"] > 0 and x["iterations"] >= 1
        assert isinstance(x["converged"], bool) and x["nonzero"] > 0
        assert len(x["load_average_at_finish"]) == 3
    # both jobs ran in the one worker: each progress row is headed by its own job alone
    hmm_rows = [ln for ln in r.stderr.splitlines() if ln.lstrip().startswith("[conll2000 2 hmm]")]
    assert hmm_rows and not any("perceptron" in ln for ln in hmm_rows)
    rerun = shlex.split(data["rerun"])
    assert rerun[:6] == ["python", "bench/lp_paper.py", "--corpus", "conll2000", "--split", "2"]

    table = run("--table", "--out-dir", tmp_path)
    assert table.returncode == 0, table.stderr
    hmm = row(section(table.stdout, "conll2000"), "hmm")
    assert hmm[1] == f"{data['results'][0]['err_all']:.2f}" and hmm[-1] == "2"
    assert len(table.stderr.splitlines()) == 9  # the other four splits and gum's five


def test_table_mean_and_sd_of_one_commit(tmp_path):
    a = {"hmm": (10.0, 5.0, 1.0, 2.0, 1, True), "perceptron": (6.25, 2.5, 3.0, 4.0, 100, True)}
    b = {"hmm": (12.5, 6.0, 1.5, 2.5, 1, True), "perceptron": (5.5, 2.0, 5.0, 6.0, 80, False)}
    fake_split(tmp_path, "conll2000", 0, "c0ffee1", "2024-05-02T10:00:00+00:00", a)
    fake_split(tmp_path, "conll2000", 3, "c0ffee1", "2024-05-02T12:00:00+00:00", b)
    fake_split(tmp_path, "gum", 1, "c0ffee1", "2024-05-02T11:00:00+00:00", a)
    # an older commit's split: never mixed in, and named where its split is missing
    old = {"hmm": (90.0, 90.0, 9.0, 9.0, 9, False)}
    fake_split(tmp_path, "conll2000", 1, "0ldc0de", "2024-05-01T10:00:00+00:00", old)

    r = run("--table", "--out-dir", tmp_path)
    assert r.returncode == 0, r.stderr
    assert "at commit c0ffee1" in r.stdout and "90.00" not in r.stdout
    conll = section(r.stdout, "conll2000")
    for learner, digits in (("hmm", 2), ("perceptron", 2)):
        cells = row(conll, learner)
        for column, i in (("Err_all", 0), ("Err_voc", 1), ("CPU s", 2), ("wall s", 3)):
            m, sd = mean_sd(a[learner][i], b[learner][i])
            d = digits if i < 2 else 1
            assert cells[1 + i] == f"{m:.{d}f} ± {sd:.{d}f}", (learner, column)
    assert row(conll, "perceptron")[5:] == ["90.0 ± 14.1", "1/2", "0, 3"]
    # one split of gum: its values, no sd
    assert row(section(r.stdout, "gum"), "hmm")[1:3] == ["10.00", "5.00"]

    # the missing splits of c0ffee1, each with the command that makes it
    assert "Missing for this commit: conll2000 splits 1, 2, 4." in conll
    missing = r.stderr.splitlines()
    assert len(missing) == 3 + 4
    expected = shlex.join(
        [
            *("python", "bench/lp_paper.py", "--corpus", "gum", "--split", "3"),
            *("--learners", "hmm,perceptron", "--train-size", "60", "--out-dir", str(tmp_path)),
        ]
    )
    assert any("gum split 3" in line and expected in line for line in missing)
    (held,) = [line for line in missing if "conll2000 split 1 " in line]
    assert "holds commit 0ldc0de" in held

    # --commit: the older commit's own table
    r = run("--table", "--commit", "0ldc", "--out-dir", tmp_path)
    assert r.returncode == 0, r.stderr
    assert row(section(r.stdout, "conll2000"), "hmm")[1:3] == ["90.00", "90.00"]
    assert "perceptron" not in section(r.stdout, "conll2000").split("published")[0]

    # -o: the same table as a page headed by the command that regenerates it
    page = tmp_path / "pages" / "table.md"
    page.parent.mkdir()
    r = run("--table", "--commit", "c0ffee1", "--out-dir", tmp_path, "-o", page)
    assert r.returncode == 0, r.stderr
    text = page.read_text(encoding="utf-8")
    head, body = text.split("\n\n", 1)
    assert head.startswith("<!-- Generated by python bench/lp_paper.py --table --commit c0ffee1 ")
    assert body == run("--table", "--commit", "c0ffee1", "--out-dir", tmp_path).stdout
    assert [p.name for p in page.parent.iterdir()] == ["table.md"]


def one_line_error(r: subprocess.CompletedProcess) -> str:
    assert r.returncode == 2, (r.stdout, r.stderr)
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in r.stderr, r.stderr
    assert lines[0].startswith("lp_paper.py: error: ")
    return lines[0]


@pytest.mark.parametrize(
    "args, expected",
    [
        (["--corpus", "gum", "--split", "5"], "split 5 is out of range: the splits are 0 to 4"),
        (["--corpus", "gum", "--split", "-1"], "split -1 is out of range"),
        (["--corpus", "brown", "--split", "0"], "unknown corpus 'brown'"),
        (["--corpus", "gum", "--split", "one"], "--split: invalid int value"),
        (["--corpus", "gum"], "name one split of one corpus"),
        (["--corpus", "gum", "--split", "0", "--learners", "hmm,nope"], "unknown learner 'nope'"),
        (["--table", "--split", "0"], "--table builds the table"),
        (["--corpus", "gum", "--split", "0", "-o", "t.md"], "-o goes with --table"),
    ],
)
def test_bad_arguments(args, expected, tmp_path):
    line = one_line_error(run(*args, "--out-dir", tmp_path))
    assert expected in line
    assert list(tmp_path.iterdir()) == []


def test_a_page_names_its_commit(tmp_path):
    fake_split(
        tmp_path, "gum", 0, "c0ffee1", "2024-05-02T10:00:00+00:00", {"hmm": (1, 1, 1, 1, 1, 1)}
    )
    line = one_line_error(run("--table", "--out-dir", tmp_path, "-o", tmp_path / "t.md"))
    assert "name it with --commit SHA" in line
    assert not (tmp_path / "t.md").exists()


def test_table_without_split_files(tmp_path):
    line = one_line_error(run("--table", "--out-dir", tmp_path))
    assert "no split file" in line and str(tmp_path) in line


@pytest.mark.parametrize(
    "content, why",
    [
        ("{", "not JSON"),
        (json.dumps([1, 2]), "not an object"),
        (json.dumps({"machine": {"commit": "c0ffee1"}, "corpus": "gum", "split": 2}), "train_size"),
    ],
)
def test_unreadable_split_file(content, why, tmp_path):
    fake_split(
        tmp_path, "gum", 0, "c0ffee1", "2024-05-02T10:00:00+00:00", {"hmm": (1, 1, 1, 1, 1, True)}
    )
    bad = tmp_path / "lp-paper-gum-split2.json"
    bad.write_text(content)
    line = one_line_error(run("--table", "--out-dir", tmp_path))
    rerun = shlex.join(
        [
            "python",
            "bench/lp_paper.py",
            "--corpus",
            "gum",
            "--split",
            "2",
            "--out-dir",
            str(tmp_path),
        ]
    )
    assert str(bad) in line and why in line and line.endswith(f"rerun {rerun}")


def test_other_settings_are_not_mixed(tmp_path):
    rows = {"hmm": (1.0, 1.0, 1.0, 1.0, 1, True)}
    fake_split(tmp_path, "gum", 0, "c0ffee1", "2024-05-02T10:00:00+00:00", rows, train_size=60)
    fake_split(tmp_path, "gum", 1, "c0ffee1", "2024-05-02T11:00:00+00:00", rows, train_size=300)
    line = one_line_error(run("--table", "--out-dir", tmp_path))
    assert "other settings" in line and "train_size 300 against 60" in line


def test_an_unknown_commit_is_refused(tmp_path):
    rows = {"hmm": (1.0, 1.0, 1.0, 1.0, 1, True)}
    fake_split(tmp_path, "gum", 0, "c0ffee1", "2024-05-02T10:00:00+00:00", rows)
    line = one_line_error(run("--table", "--commit", "deadbeef", "--out-dir", tmp_path))
    assert "no split file of commit deadbeef" in line and "c0ffee1" in line


def test_a_learner_that_fails_in_its_worker_is_one_line_naming_the_run_to_repeat(
    monkeypatch, capsys
):
    from concurrent.futures import ThreadPoolExecutor

    module = script_module()

    def job(j):
        if j["learner"] == "lp-simplex":
            raise MemoryError()
        return {
            "corpus": j["corpus"],
            "split": j["split"],
            "learner": j["learner"],
            "err_all": 5.0,
            "err_voc": 2.0,
            "cpu_s": 1.0,
            "wall_s": 1.0,
            "iterations": 3,
            "converged": True,
        }

    monkeypatch.setattr(module, "run_job", job)
    jobs = [
        {"corpus": "gum", "split": 3, "learner": n, "params": {}, "train_size": 5700}
        for n in ("hmm", "lp-simplex")
    ]
    results, failed = module.run_jobs(jobs, ThreadPoolExecutor(max_workers=2))
    assert list(results) == ["hmm"] and "gum split 3 hmm: Err_all 5.00" in capsys.readouterr().out
    assert [(j["learner"], type(e)) for j, e in failed] == [("lp-simplex", MemoryError)]
    line = module.failure_line(failed[0][0], failed[0][1], ["--workers", "2"], module.C.OUT)
    assert "\n" not in line
    assert line.startswith("lp_paper.py: error: lp-simplex failed on gum split 3: MemoryError:")
    assert "out of memory" in line and "no split file was written" in line
    assert line.endswith("python bench/lp_paper.py --corpus gum --split 3 --workers 2")
    # a worker the system killed: every job it had left fails the same way
    from concurrent.futures.process import BrokenProcessPool

    broken = module.failure_line(jobs[0], BrokenProcessPool("gone"), [], module.C.OUT)
    assert "its worker process died" in broken and "\n" not in broken


def _live_members(pgid: int) -> list[int]:
    """The processes of group ``pgid`` that have not exited (a zombie waiting for a reaper that
    may never come, in a container, has exited)."""
    live = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == pgid and fields[0] != "Z":
            live.append(int(stat.parent.name))
    return live


@pytest.mark.slow
@pytest.mark.ci
@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads the process table in /proc")
def test_a_run_killed_takes_its_busy_worker_with_it(corpora, tmp_path):
    """SIGKILL to the script while its worker trains (nothing of the script runs after it):
    the worker ends too, instead of training on for up to the bound."""
    env = {**os.environ, "TAGGER_CORPORA": str(corpora), "NUMBA_NUM_THREADS": "1"}
    args = ["--corpus", "gum", "--split", 0, "--train-size", 1000, "--learners", "lp-simplex"]
    proc = subprocess.Popen(
        [sys.executable, str(SCRIPT), *map(str, args), "--workers", "1", "--out-dir", tmp_path],
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
        env=env,
    )
    try:
        for line in proc.stderr:  # the worker's first progress row: it is at work
            if "[gum 0 lp-simplex]" in line:
                break
        else:
            pytest.fail(f"the run ended before its worker reported (exit {proc.wait()})")
        assert len(_live_members(proc.pid)) >= 2  # the script and its worker at least
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        deadline = time.monotonic() + 30
        while _live_members(proc.pid) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert _live_members(proc.pid) == [], "a worker outlived the killed run"
    finally:
        for pid in _live_members(proc.pid):
            os.kill(pid, signal.SIGKILL)
        proc.stderr.close()
