"""Hard rules that leave no labeling: which sentences (against enumeration of every labeling),
which rules conflict (the set enumeration finds infeasible, each rule of it needed), and what
training and ``tagger constraints check`` say about them."""

from __future__ import annotations

import json

import numpy as np
import pytest

from tagger.constraints import ConstraintSet, ViolationState
from tagger.constraints.feasibility import (
    conflicting_rules,
    feasible_sentences,
    infeasible_report,
)

from _addresses import RULES, addresses
from _brute import labelings
from _helpers import run_cli
from _rule_texts import HARD, LABELS, WORDS

#: HARD's rules and two more that some token sequences cannot meet with them: no c after a d,
#: and "z" is c or d
RULES_TEXT = (
    HARD
    + """
[[instance]]
rule = "order"
before = ["c"]
after = ["d"]
[[instance]]
rule = "tokens"
words = ["z"]
avoid = ["a", "b"]
"""
)


def _feasible_by_enumeration(cc, toks, rules=None):
    """Whether some labeling of the tokens meets every hard rule of ``cc`` (only those of
    ``rules``, indices, when given), from the violations of all L^T labelings."""
    ys = labelings(len(toks), len(LABELS), np.int32)
    st = ViolationState(cc, cc.indicators([toks] * len(ys)), ys.ravel())
    broken = (st.phi > cc.hi) | (st.phi < cc.lo)
    hard = np.flatnonzero(cc.hard) if rules is None else np.asarray(rules, dtype=np.int64)
    return bool((~broken[:, hard].any(axis=1)).any())


def test_feasibility_and_conflicting_rules_against_enumeration():
    cset = ConstraintSet.from_text(RULES_TEXT)
    cc = cset.compile(LABELS)
    rng = np.random.default_rng(29)
    sentences = [
        [WORDS[i] for i in rng.integers(0, len(WORDS), int(rng.integers(1, 7)))] for _ in range(150)
    ]
    ti = cc.indicators(sentences)
    feasible = feasible_sentences(cc, ti)
    index = {id(r): c for c, r in enumerate(cc.instance_rules)}
    n_bad = 0
    for s, toks in enumerate(sentences):
        assert feasible[s] == _feasible_by_enumeration(cc, toks), toks
        found = [index[id(r)] for r in conflicting_rules(cc, ti, s)]
        if feasible[s]:
            assert found == []
            continue
        n_bad += 1
        # the rules named leave no labeling together, and each of them is needed for that
        assert found and not _feasible_by_enumeration(cc, toks, found)
        for c in found:
            assert _feasible_by_enumeration(cc, toks, [x for x in found if x != c]), (toks, c)
    assert 10 < n_bad < len(sentences)  # both kinds of sentence were checked


def test_two_start_rules_without_a_common_label_are_named_by_check(tmp_path):
    text = RULES_TEXT.split('[[instance]]\nrule = "one-segment"')[0] + (
        '[[instance]]\nrule = "start"\nlabels = ["c"]\n'
    )
    cset = ConstraintSet.from_text(text, "two-starts.toml")
    cc = cset.compile(LABELS)
    ti = cc.indicators([["x", "y"], ["pp"], ["z", ",", "9"]])
    report = infeasible_report(cc, ti)
    assert report is not None and report["sentences"] == report["of"] == 3
    assert report["rules"] == ["instance[0]", "instance[1]"]
    assert report["conflict"] == (
        "instance[0] 'start a/b' (line 5), instance[1] 'start c' (line 8) cannot both hold"
    )


def _address_files(tmp_path, rules: str):
    rng = np.random.default_rng(3)
    for name, n, labeled in (("train.tsv", 4, True), ("unl.tsv", 30, False)):
        lines = []
        for toks, labs in addresses(rng, n):
            lines += [f"{t}\t{lab if labeled else 'name'}" for t, lab in zip(toks, labs)] + [""]
        (tmp_path / name).write_text("\n".join(lines) + "\n")
    (tmp_path / "rules.toml").write_text(rules)


def test_training_stops_before_it_starts_when_no_unlabeled_sentence_has_a_labeling(tmp_path):
    # RULES says addresses start with a name; a second hard start rule wants a city
    rules = RULES + '[[instance]]\nrule = "start"\nlabels = ["city"]\nhard = true\n'
    _address_files(tmp_path, rules)
    r = run_cli(
        "train",
        tmp_path / "train.tsv",
        "--unlabeled",
        tmp_path / "unl.tsv",
        "--constraints",
        tmp_path / "rules.toml",
        "-o",
        tmp_path / "m.tgm",
        "-q",
    )
    assert r.exit_code == 1, r.output
    lines = r.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), r.stderr
    assert "leave no labeling of any of the 30 sentences of the unlabeled data" in lines[0]
    assert "instance[0] 'start" in lines[0] and "instance[3] 'start" in lines[0]
    assert "cannot both hold" in lines[0] and "hard = false" in lines[0]
    assert not (tmp_path / "m.tgm").exists()
    # the same file checked on the labeled data says the same in its table
    r = run_cli("constraints", "check", tmp_path / "rules.toml", tmp_path / "train.tsv", "--json")
    assert r.exit_code == 0, r.output
    found = json.loads(r.stdout)["no_labeling"]
    assert found["sentences"] == found["of"] == 4
    assert found["rules"] == ["instance[0]", "instance[3]"]


@pytest.mark.parametrize("hard", ["true", "false"])
def test_rules_that_leave_a_labeling_say_nothing(tmp_path, hard):
    rules = RULES + f'[[instance]]\nrule = "start"\nlabels = ["city"]\nhard = {hard}\n'
    if hard == "true":  # a start rule that agrees with the first: still a labeling
        rules = rules.replace('labels = ["city"]', 'labels = ["name", "city"]')
    _address_files(tmp_path, rules)
    r = run_cli("constraints", "check", tmp_path / "rules.toml", tmp_path / "train.tsv", "--json")
    assert r.exit_code == 0 and json.loads(r.stdout)["no_labeling"] is None
