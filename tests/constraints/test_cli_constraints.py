"""Constraints on the command line: a bad file gives one line listing every mistake (exit 1);
semi-supervised training, constrained tagging, the constraint report and the saved trace on a
small synthetic field-segmentation task."""

from __future__ import annotations

import json

import numpy as np
import pytest
from click.testing import CliRunner

from _addresses import RULES, addresses
from cli import cli

BAD = """
labels = ["name", "street", "city"]
[[instance]]
rule = "start"
labels = ["nmae"]
[[instance]]
rule = "tokens"
pattern = '([0-9]'
take = ["city"]
[[instance]]
rule = "one-segment"
labels = "all"
wieght = 2
"""


def _run(*args):
    return CliRunner().invoke(cli, [str(a) for a in args], catch_exceptions=False)


def _write(path, rng, n, labeled=True):
    lines = []
    for toks, labs in addresses(rng, n):
        lines += [f"{t}\t{lab if labeled else 'name'}" for t, lab in zip(toks, labs)] + [""]
    path.write_text("\n".join(lines) + "\n")


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("cons")
    rng = np.random.default_rng(0)
    _write(d / "train.tsv", rng, 4)
    _write(d / "dev.tsv", rng, 10)
    _write(d / "unl.tsv", rng, 40, labeled=False)
    (d / "good.toml").write_text(RULES)
    (d / "bad.toml").write_text(BAD)
    return d


def test_bad_constraint_file_lists_every_mistake_and_exits_1(files):
    r = _run("train", files / "train.tsv", "--unlabeled", files / "unl.tsv", "--constraints",
             files / "bad.toml", "-o", files / "m.tgm")
    assert r.exit_code == 1
    lines = r.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ")
    for fragment in ("3 mistakes", "instance[0].labels[0]: unknown label 'nmae'; did you mean "
                     "'name'", "instance[1].pattern: bad regular expression",
                     "instance[2].wieght: unknown key"):
        assert fragment in lines[0]
    assert not (files / "m.tgm").exists()
    r = _run("tag", files / "m.tgm", files / "dev.tsv", "--constraints", files / "bad.toml")
    assert r.exit_code == 1 and "3 mistakes" in r.stderr


def test_semisupervised_training_tagging_report_and_trace(files):
    model = files / "semi.tgm"
    r = _run("train", files / "train.tsv", "--unlabeled", files / "unl.tsv", "--constraints",
             files / "good.toml", "--dev", files / "dev.tsv", "--test", files / "dev.tsv",
             "--features", "citation", "-o", model, "--set", "steps=2", "--set", "epochs=3")
    assert r.exit_code == 0, r.output
    assert "read 40 unlabeled sentences" in r.stderr
    assert "ssvm-annealing: step=2" in r.stderr
    summary = r.stderr
    # the trace is saved: dev and test scores per annealing step, the kept row marked
    r = _run("trace", model, "--json")
    rows = json.loads(r.stdout)
    assert [row["step"] for row in rows][:1] == [0] and rows[-1]["step"] == 2
    assert all("dev_acc" in row and "test_acc" in row for row in rows)
    best = max(row["dev_acc"] for row in rows)
    assert [row for row in rows if row.get("selected")][-1]["dev_acc"] == best
    # the summary reports the dev score of the weights saved, not of the last step
    assert f"dev of the saved weights: dev_acc {best}\n" in summary
    assert "*" in _run("trace", model).stdout
    png = files / "trace.png"
    r = _run("trace", model, "--plot", png)
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        assert r.exit_code == 2 and "needs matplotlib" in r.stderr
    else:
        assert r.exit_code == 0 and png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    # constrained tagging keeps the hard rules on every sentence
    r = _run("tag", model, files / "dev.tsv", "--constraints", files / "good.toml")
    assert r.exit_code == 0
    blocks = [b for b in r.stdout.strip().split("\n\n")]
    for b in blocks:
        labels = [line.split("\t")[1] for line in b.splitlines()]
        assert labels[0] == "name"
        runs = [lab for i, lab in enumerate(labels) if i == 0 or labels[i - 1] != lab]
        assert len(runs) == len(set(runs))
    # the report: one row per constraint, gold and predicted rates
    r = _run("eval", model, files / "dev.tsv", "--constraints", files / "good.toml", "--json")
    rep = json.loads(r.stdout)["constraints"]
    assert len(rep) == 4
    assert rep[0]["gold_rate"] == 0.0 and rep[1]["gold_rate"] == 0.0
    r = _run("eval", model, files / "dev.tsv", "--constraints", files / "good.toml",
             "--decode-constraints")
    assert r.exit_code == 0 and "gold" in r.stdout and "predicted" in r.stdout
