"""Constraints on the command line: a bad file gives one line listing every mistake (exit 1);
semi-supervised training, constrained tagging, the constraint report and the saved trace on a
small synthetic field-segmentation task."""

from __future__ import annotations

import json

import numpy as np
import pytest

from _addresses import RULES, addresses
from _helpers import run_cli

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
    r = run_cli(
        "train",
        files / "train.tsv",
        "--unlabeled",
        files / "unl.tsv",
        "--constraints",
        files / "bad.toml",
        "-o",
        files / "m.tgm",
    )
    assert r.exit_code == 1
    lines = r.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ")
    for fragment in (
        "3 mistakes",
        "instance[0].labels[0]: unknown label 'nmae'; did you mean 'name'",
        "instance[1].pattern: bad regular expression",
        "instance[2].wieght: unknown key",
    ):
        assert fragment in lines[0]
    assert not (files / "m.tgm").exists()
    r = run_cli("tag", files / "m.tgm", files / "dev.tsv", "--constraints", files / "bad.toml")
    assert r.exit_code == 1 and "3 mistakes" in r.stderr


def test_semisupervised_training_tagging_report_and_trace(files):
    model = files / "semi.tgm"
    r = run_cli(
        "train",
        files / "train.tsv",
        "--unlabeled",
        files / "unl.tsv",
        "--constraints",
        files / "good.toml",
        "--dev",
        files / "dev.tsv",
        "--test",
        files / "dev.tsv",
        "--features",
        "citation",
        "-o",
        model,
        "--set",
        "steps=2",
        "--set",
        "epochs=3",
    )
    assert r.exit_code == 0, r.output
    assert "read 40 unlabeled sentences" in r.stderr
    assert "ssvm-annealing: step=2" in r.stderr
    summary = r.stderr
    # the trace is saved: dev and test scores per annealing step, the kept row marked
    r = run_cli("trace", model, "--json")
    rows = json.loads(r.stdout)
    assert [row["step"] for row in rows][:1] == [0] and rows[-1]["step"] == 2
    assert all("dev_acc" in row and "test_acc" in row for row in rows)
    best = max(row["dev_acc"] for row in rows)
    assert [row for row in rows if row.get("selected")][-1]["dev_acc"] == best
    # the summary reports the dev score of the weights saved, not of the last step
    assert f"dev of the saved weights: dev_acc {best}\n" in summary
    assert "*" in run_cli("trace", model).stdout
    png = files / "trace.png"
    r = run_cli("trace", model, "--plot", png)
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        assert r.exit_code == 2 and "needs matplotlib" in r.stderr
    else:
        assert r.exit_code == 0 and png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    # constrained tagging keeps the hard rules on every sentence
    r = run_cli("tag", model, files / "dev.tsv", "--constraints", files / "good.toml")
    assert r.exit_code == 0
    blocks = [b for b in r.stdout.strip().split("\n\n")]
    for b in blocks:
        labels = [line.split("\t")[1] for line in b.splitlines()]
        assert labels[0] == "name"
        runs = [lab for i, lab in enumerate(labels) if i == 0 or labels[i - 1] != lab]
        assert len(runs) == len(set(runs))
    # the report: one row per constraint, gold and predicted rates
    r = run_cli("eval", model, files / "dev.tsv", "--constraints", files / "good.toml", "--json")
    rep = json.loads(r.stdout)["constraints"]
    assert len(rep) == 4
    assert rep[0]["gold_rate"] == 0.0 and rep[1]["gold_rate"] == 0.0
    # decoding under the rules scores without the gold break rates; --rule-report adds them
    decode = ("eval", model, files / "dev.tsv", "--constraints", files / "good.toml")
    r = run_cli(*decode, "--decode-constraints")
    assert r.exit_code == 0 and "accuracy" in r.stdout
    assert "gold" not in r.stdout and "predicted" not in r.stdout
    r = run_cli(*decode, "--decode-constraints", "--json")
    assert "constraints" not in json.loads(r.stdout)
    r = run_cli(*decode, "--decode-constraints", "--rule-report")
    assert r.exit_code == 0 and "gold" in r.stdout and "predicted" in r.stdout
    r = run_cli(*decode, "--decode-constraints", "--rule-report", "--json")
    assert len(json.loads(r.stdout)["constraints"]) == 4
    r = run_cli("eval", model, files / "dev.tsv", "--rule-report")
    assert r.exit_code == 2 and "--rule-report needs --constraints FILE" in r.stderr


def _first_labels(path):
    """The first gold label of every sentence of a two-column file, read directly."""
    firsts, new = [], True
    for line in path.read_text().splitlines():
        if not line.strip():
            new = True
            continue
        if new:
            firsts.append(line.split("\t")[-1])
            new = False
    return firsts


def test_constraints_check_without_a_model(files):
    r = run_cli("constraints", "check", files / "good.toml")
    assert r.exit_code == 0 and "valid;" in r.stdout and "give labeled DATA" in r.stdout
    # some sentences begin with the street, against the start rule
    rng = np.random.default_rng(5)
    lines = []
    for k, (toks, labs) in enumerate(addresses(rng, 12)):
        if k % 3 == 0:
            labs = ["street"] + labs[1:]
        lines += [f"{t}\t{lab}" for t, lab in zip(toks, labs)] + [""]
    (files / "mixed.tsv").write_text("\n".join(lines) + "\n")
    r = run_cli("constraints", "check", files / "good.toml", files / "mixed.tsv", "--json")
    assert r.exit_code == 0, r.output
    report = json.loads(r.stdout)
    firsts = _first_labels(files / "mixed.tsv")
    assert report["n_sentences"] == len(firsts)
    start = [
        row
        for row in report["rules"]
        if row["level"] == "instance" and row["constraint"].startswith("start")
    ]
    assert start, [row["constraint"] for row in report["rules"]]
    # RULES' start rule names the labels a sentence may begin with: its rate is the share of
    # sentences that begin otherwise, counted here from the file's text
    import tomllib

    rule = next(x for x in tomllib.loads(RULES)["instance"] if x["rule"] == "start")
    expected = sum(lab not in rule["labels"] for lab in firsts) / len(firsts)
    assert expected > 0 and start[0]["rate"] == pytest.approx(expected)
    assert report["unused"] == [] or all(s is None for _, s in report["unused"])


def test_case_mismatched_labels_are_named_by_check_and_stop_training(files):
    upper = RULES
    for lab in ("name", "street", "city"):
        upper = upper.replace(f'"{lab}"', f'"{lab.upper()}"')
    (files / "upper.toml").write_text(upper)
    r = run_cli("constraints", "check", files / "upper.toml", files / "dev.tsv")
    assert r.exit_code == 0
    assert "label 'NAME' of the file is not used by the data (did you mean 'name'?" in r.stdout
    assert "labels of the data the file never names: " in r.stdout
    r = run_cli(
        "train",
        files / "train.tsv",
        "--unlabeled",
        files / "unl.tsv",
        "--constraints",
        files / "upper.toml",
        "-o",
        files / "upper.tgm",
        "--set",
        "steps=1",
    )
    assert r.exit_code == 1
    lines = r.stderr.splitlines()
    assert len(lines) == 1 and "'NAME' (did you mean 'name'?)" in lines[0]
    assert not (files / "upper.tgm").exists()


def test_a_label_only_the_rules_name_is_allowed():
    from tagger.constraints import ConstraintSet
    from tagger.constraints.check import check_training_labels, label_check

    cset = ConstraintSet.from_text(
        RULES.replace(
            'labels = ["name", "street", "city"]', 'labels = ["name", "street", "city", "zip"]'
        )
    )
    assert label_check(cset, ["city", "name", "street"])["unused"] == [("zip", None)]
    check_training_labels(cset, ["city", "name", "street"])  # no error: not a misspelling


def test_a_pattern_python_warns_about_prints_nothing_more(tmp_path):
    import subprocess
    import sys
    from pathlib import Path

    cli_py = Path(__file__).resolve().parents[2] / "cli.py"
    f = tmp_path / "nested.toml"
    f.write_text(
        'labels = ["a", "b"]\n[[instance]]\nrule = "tokens"\npattern = "[[a]x"\ntake = ["a"]\n'
    )
    r = subprocess.run(
        [sys.executable, "-W", "default", str(cli_py), "constraints", "check", str(f)],
        capture_output=True,
        text=True,
    )
    assert r.returncode == 0 and r.stderr == "", r.stderr


def test_the_recipe_example_of_the_constraint_docs_runs(tmp_path):
    # the two commands constraints/README.md gives for its second example, on the shipped sample
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    corpora, toml = root / "corpora", root / "constraints" / "recipes.toml"
    model = tmp_path / "recipes.tgm"
    result = run_cli(
        "train",
        corpora / "recipes_train.txt",
        "--unlabeled",
        corpora / "recipes_unlabeled.txt",
        "--constraints",
        toml,
        "--dev",
        corpora / "recipes_dev.txt",
        "-o",
        model,
        "-q",
    )
    assert result.exit_code == 0, result.output
    result = run_cli("eval", model, corpora / "recipes_test.txt", "--constraints", toml, "--json")
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["n_sentences"] == 60
    # the labeled sample breaks none of the file's instance rules (the file says so)
    gold_rates = [r["gold_rate"] for r in report["constraints"] if r["level"] == "instance"]
    assert gold_rates and max(gold_rates) == 0.0
