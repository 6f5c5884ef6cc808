"""``tagger constraints check`` says what each rule matched in the labeled data, and warns
about each rule that matched nothing: a rule broken by 0 % of the sentences because it never
applied is told apart from one that holds. The counts below are counted by hand on two ads
written here, whose numbers are placeholders as in the classified-ads corpus."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tagger.constraints import ConstraintSet
from tagger.constraints.check import check
from tagger.errors import TaggerWarning
from tagger.sentence import Sentence

from _helpers import run_cli

ADS = [
    (
        ["*NUMBER*2*1", "br", "$*NUMBER*9", "call", "*NUMBER*5"],
        ["size", "size", "rent", "contact", "contact"],
    ),
    (
        ["2", "bedrooms", ",", "no", "pets"],
        ["size", "size", "size", "restrictions", "restrictions"],
    ),
]

RULES = """
labels = ["size", "rent", "contact", "restrictions", "photos"]

[[instance]]
name = "a number before br is the size"
rule = "tokens"
sequence = ["<number>", "br|bedrooms"]
take = ["size"]

[[instance]]
name = "digits before br are the size"
rule = "tokens"
sequence = ["<digit>", "br|bedrooms"]
take = ["size"]

[[instance]]
name = "a bare placeholder before br"
rule = "tokens"
sequence = ["*NUMBER*", "br"]
take = ["size"]

[[instance]]
rule = "tokens"
words = ["pets"]
take = ["restrictions"]

[[instance]]
rule = "only-inside"
property = "digit"
labels = ["size", "rent", "contact"]

[[instance]]
rule = "one-segment"
labels = "all"

[[instance]]
rule = "count"
labels = ["contact"]
max = 3

[[instance]]
rule = "order"
before = ["rent"]
after = ["contact"]

[[instance]]
rule = "change-on-punctuation"

[[instance]]
rule = "contains"
labels = ["photos"]
words = ["jpg"]

[[corpus]]
rule = "label-fraction"
labels = ["restrictions"]
fraction = 0.2
tolerance = 0.1
"""

#: per rule, counted by hand on ADS: what it matched, in which unit
EXPECTED = [
    (1, "stretches"),  # "2 bedrooms": *NUMBER*2*1 is no <number>
    (2, "stretches"),  # "*NUMBER*2*1 br" and "2 bedrooms"
    (0, "stretches"),  # the word *NUMBER* is no word of the ads
    (1, "words"),  # pets
    (4, "words"),  # *NUMBER*2*1, $*NUMBER*9, *NUMBER*5, 2
    (5, "stretches"),  # size rent contact | size restrictions
    (2, "words"),  # call *NUMBER*5
    (1, "sentences"),  # the first ad has rent and contact
    (3, "changes"),  # size>rent, rent>contact | size>restrictions
    (0, "stretches"),  # no photos stretch
    (2, "words"),  # no pets
]


def _sentences():
    return [Sentence([tokens], labels=labels) for tokens, labels in ADS]


@pytest.fixture()
def files(tmp_path):
    (tmp_path / "ads.toml").write_text(RULES)
    lines = []
    for tokens, labels in ADS:
        lines += [f"{t}\t{lab}" for t, lab in zip(tokens, labels)] + [""]
    (tmp_path / "ads.tsv").write_text("\n".join(lines) + "\n")
    return tmp_path


def test_every_rule_reports_what_it_matched():
    report = check(ConstraintSet.from_text(RULES, "ads.toml"), _sentences())
    assert [(r["matched"], r["unit"]) for r in report["rules"]] == EXPECTED
    # the rules that matched nothing are not broken, which is why the count is needed
    never = [r for r in report["rules"] if r["matched"] == 0]
    assert [r["path"] for r in never] == ["instance[2]", "instance[9]"]
    assert all(r["rate"] == 0.0 for r in never)
    assert [r["line"] for r in never] == [16, 49]
    assert "sequence[0] '*NUMBER*' matches no word" in never[0]["hint"]
    assert "no word of the data has the label photos" in never[1]["hint"]
    assert all("hint" not in r for r in report["rules"] if r["matched"])


def test_a_class_that_matches_nothing_gets_a_hint_naming_the_class_that_does():
    rules = (
        'labels = ["size"]\n[[instance]]\nrule = "tokens"\nsequence = ["<number>", "br"]\n'
        'take = ["size"]\n'
    )
    sentences = [Sentence([["*NUMBER*2*1", "br"]], labels=["size", "size"])]
    (line,) = check(ConstraintSet.from_text(rules, "ads.toml"), sentences)["never_matched"]
    assert line.startswith(
        "ads.toml:2: instance[0] 'tokens size' matched nothing in the 1 labeled sentence "
        "(0 stretches), so its 0.0% breaks mean it never applied, not that it holds: "
        "sequence[0] '<number>' matches no word: <number> is a number"
    )
    assert "<digit> matches every word with a digit in it" in line
    assert "constraints/README.md" in line


def test_the_command_prints_the_counts_and_warns_once_per_rule_that_matched_nothing(files):
    with pytest.warns(TaggerWarning) as seen:
        r = run_cli("constraints", "check", files / "ads.toml", files / "ads.tsv")
    assert r.exit_code == 0, r.output
    warned = [str(w.message) for w in seen]
    assert len(warned) == 2
    assert warned[0].startswith(f"{files / 'ads.toml'}:16: instance[2] 'a bare placeholder")
    assert warned[1].startswith(f"{files / 'ads.toml'}:49: instance[9] 'contains photos'")
    rows = {line.split("  ")[0]: line for line in r.stdout.splitlines()}
    assert "1 stretch " in rows["a number before br is the size"]
    assert "2 stretches" in rows["digits before br are the size"]
    assert "0 stretches" in rows["a bare placeholder before br"]
    assert "1 sentence " in rows["order rent/contact"]
    with pytest.warns(TaggerWarning):
        r = run_cli("constraints", "check", files / "ads.toml", files / "ads.tsv", "--json")
    report = json.loads(r.stdout)
    assert [(row["matched"], row["unit"]) for row in report["rules"]] == EXPECTED
    assert len(report["never_matched"]) == 2


def test_the_warnings_are_one_line_each_on_stderr(files):
    cli_py = Path(__file__).resolve().parents[2] / "cli.py"
    r = subprocess.run(
        [sys.executable, str(cli_py), "constraints", "check", "ads.toml", "ads.tsv"],
        capture_output=True,
        text=True,
        cwd=files,
    )
    assert r.returncode == 0, r.stderr
    lines = r.stderr.splitlines()
    assert len(lines) == 2 and all(line.startswith("warning: ads.toml:") for line in lines)
    assert "matched nothing" in lines[0] and "a bare placeholder before br" in lines[0]
