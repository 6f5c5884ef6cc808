"""Constrained decoding on the command line and in the API with a model trained on a sample
that lacks a label the constraint file names: it decodes with the rules that still apply and
says in one warning line which rules it dropped; only a file with nothing left is refused."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from tagger.errors import TaggerWarning

from _addresses import addresses
from _helpers import run_cli

#: the addresses' rules; the model below has no city, so the last two rules are dropped and the
#: one-segment rule keeps name and street
RULES = """
labels = ["name", "street", "city"]

[[instance]]
rule = "start"
labels = ["name"]
hard = true

[[instance]]
rule = "one-segment"
labels = "all"
hard = true

[[instance]]
rule = "tokens"
words = ["road"]
take = ["street"]

[[instance]]
name = "the city comes last"
rule = "end"
labels = ["city"]
hard = true

[[instance]]
name = "a city names a city"
rule = "contains"
labels = ["city"]
words = ["Paris", "Rome", "Oslo", "Bern"]
"""

#: the same rules written for a model with name and street only
NARROWED = """
labels = ["name", "street"]

[[instance]]
rule = "start"
labels = ["name"]
hard = true

[[instance]]
rule = "one-segment"
labels = ["name", "street"]
hard = true

[[instance]]
rule = "tokens"
words = ["road"]
take = ["street"]
"""

CITY_ONLY = 'labels = ["name", "city"]\n[[instance]]\nrule = "end"\nlabels = ["city"]\n'


def _write(path, pairs):
    lines = []
    for toks, labs in pairs:
        lines += [f"{t}\t{lab}" for t, lab in zip(toks, labs)] + [""]
    path.write_text("\n".join(lines) + "\n")


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("nocity")
    rng = np.random.default_rng(3)
    # the sample has no city: every address cut after its street
    no_city = [
        ([t for t, lab in zip(toks, labs) if lab != "city"], [x for x in labs if x != "city"])
        for toks, labs in addresses(rng, 30)
    ]
    _write(d / "train.tsv", no_city[:20])
    _write(d / "test.tsv", no_city[20:])
    (d / "rules.toml").write_text(RULES)
    (d / "narrowed.toml").write_text(NARROWED)
    (d / "city.toml").write_text(CITY_ONLY)
    r = run_cli("train", d / "train.tsv", "--no-select", "-q", "-o", d / "m.tgm")
    assert r.exit_code == 0, r.output
    return d


def _labels(stdout: str) -> list[list[str]]:
    return [
        [line.split("\t")[-1] for line in block.splitlines()]
        for block in stdout.strip().split("\n\n")
    ]


def test_tag_decodes_with_the_rules_left_and_warns_in_one_line(files):
    cli_py = Path(__file__).resolve().parents[2] / "cli.py"
    r = subprocess.run(
        [sys.executable, str(cli_py), "tag", "m.tgm", "test.tsv", "--constraints", "rules.toml"],
        capture_output=True,
        text=True,
        cwd=files,
    )
    assert r.returncode == 0, r.stderr
    lines = r.stderr.splitlines()
    assert len(lines) == 1, r.stderr
    assert lines[0] == (
        "warning: rules.toml: the model has no label city (the model's labels: name, street); "
        "decoding without the 2 rules that name only labels it lacks: instance[3] 'the city "
        "comes last' (line 19), instance[4] 'a city names a city' (line 25); these rules apply "
        "to their other labels: instance[1] 'one-segment name/street/city' (line 9)"
    )
    predicted = _labels(r.stdout)
    assert len(predicted) == 10
    # the hard rules left hold on every address: it starts with the name, one stretch each
    for labels in predicted:
        assert labels[0] == "name"
        runs = [lab for i, lab in enumerate(labels) if i == 0 or labels[i - 1] != lab]
        assert len(runs) == len(set(runs))
    # and the decoding is the one under the file written for the model's labels
    narrowed = files / "narrowed.toml"
    same = run_cli("tag", files / "m.tgm", files / "test.tsv", "--constraints", narrowed)
    assert same.exit_code == 0 and same.stdout == r.stdout


def test_eval_and_the_api_decode_with_the_rules_left(files):
    from tagger import Tagger
    from tagger.io import load_corpus

    with pytest.warns(TaggerWarning, match="the model has no label city"):
        r = run_cli(
            "eval",
            files / "m.tgm",
            files / "test.tsv",
            "--constraints",
            files / "rules.toml",
            "--decode-constraints",
            "--json",
        )
    assert r.exit_code == 0, r.output
    scored = json.loads(r.stdout)
    r = run_cli(
        "eval",
        files / "m.tgm",
        files / "test.tsv",
        "--constraints",
        files / "narrowed.toml",
        "--decode-constraints",
        "--json",
    )
    assert json.loads(r.stdout)["accuracy"] == scored["accuracy"]
    tagger = Tagger.load(files / "m.tgm")
    sentences = load_corpus(str(files / "test.tsv"))
    with pytest.warns(TaggerWarning, match=r"instance\[3\] 'the city comes last'"):
        predicted = tagger.predict(sentences, constraints=str(files / "rules.toml"))
    assert predicted == tagger.predict(sentences, constraints=str(files / "narrowed.toml"))


def test_a_file_with_no_rule_left_is_refused_in_one_line(files):
    r = run_cli("tag", files / "m.tgm", files / "test.tsv", "--constraints", files / "city.toml")
    assert r.exit_code == 1
    lines = r.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"error: {files / 'city.toml'}: the model ")
    assert "every [[instance]] rule of the constraint file names only those labels" in lines[0]
    assert r.stdout == ""


def test_the_rule_report_counts_every_rule_as_written(files):
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error", TaggerWarning)  # nothing is dropped from a report
        r = run_cli(
            "eval",
            files / "m.tgm",
            files / "test.tsv",
            "--constraints",
            files / "rules.toml",
            "--json",
        )
    assert r.exit_code == 0, r.output
    rows = {row["constraint"]: row for row in json.loads(r.stdout)["constraints"]}
    assert len(rows) == 5
    # no address of the sample has a city, so every one breaks "the city comes last", by its
    # gold labels and by the predictions, which cannot name a city either
    last = rows["the city comes last"]
    assert last["gold_rate"] == 1.0 and last["pred_rate"] == 1.0
