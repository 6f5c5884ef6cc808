"""Checking a constraint file against labeled data, without a model (``tagger constraints
check``: what each rule matched and how often the gold labels break it), and the label check
``tagger train`` runs before training.

A label the file names that the data never use is either a typo or a different spelling (the
data say ``AUTHOR``, the file ``author``), which would silently train a model with invented
labels, or a field the labeled data lack that only the rules describe. The first kind has a
close match among the data's labels (the same letters in another case, or a string similarity
of at least ``CLOSE``) and stops training; the second is reported and allowed.
"""

from __future__ import annotations

import difflib
from collections.abc import Sequence

import numpy as np

from tagger.constraints.feasibility import infeasible_report
from tagger.constraints.language import ConstraintSet
from tagger.constraints.matches import counted, rule_matches
from tagger.constraints.violations import violation_report
from tagger.errors import ConstraintError

#: difflib similarity from which an unknown label is taken for a misspelling of a known one
CLOSE = 0.8


def suggestion(label: str, known: Sequence[str]) -> str | None:
    """The data label ``label`` most likely means: same letters in another case, else the
    closest by difflib's ratio (at least ``CLOSE``); None when nothing is close."""
    same_case = [k for k in known if k.lower() == label.lower()]
    if same_case:
        return same_case[0]
    close = difflib.get_close_matches(label, list(known), n=1, cutoff=CLOSE)
    return close[0] if close else None


def label_check(cset: ConstraintSet, data_labels: Sequence[str]) -> dict:
    """``{"unused": [(label, suggestion or None)], "unmentioned": [labels]}``: the file's labels
    the data never use, and the data's labels the file never names."""
    known = sorted(set(data_labels))
    unused = [(lab, suggestion(lab, known)) for lab in cset.labels if lab not in known]
    mentioned = set(cset.labels)
    return {"unused": unused, "unmentioned": [lab for lab in known if lab not in mentioned]}


def check_training_labels(cset: ConstraintSet, data_labels: Sequence[str]) -> None:
    """Stop training with one :class:`ConstraintError` naming every label of the file that
    looks like a misspelling of a label of the training data."""
    typos = [(lab, s) for lab, s in label_check(cset, data_labels)["unused"] if s is not None]
    if typos:
        listed = ", ".join(f"{lab!r} (did you mean {s!r}?)" for lab, s in typos)
        raise ConstraintError(
            f"{cset.source}: label(s) of the constraint file are not labels of "
            f"the training data: {listed}; labels are case-sensitive: spell "
            f"them as the data do (tagger constraints check FILE DATA lists "
            f"them)"
        )


def check(cset: ConstraintSet, sentences: Sequence) -> dict:
    """The file against labeled ``sentences``: the label check and, per rule, what it matched
    (:func:`~tagger.constraints.matches.rule_matches`: ``matched``, ``unit``, and a ``hint``
    when nothing) and its violations by the gold labels (instance rules: share of sentences
    with a violation, and the violation amount per token; corpus rules: the measured value
    against target and tolerance). ``never_matched`` lists the rules that matched nothing, as
    :func:`never_matched_lines` words them; ``no_labeling`` says on how many sentences the hard
    rules leave no labeling at all, and which rules conflict on the first
    (:func:`~tagger.constraints.feasibility.infeasible_report`; None when none)."""
    data_labels = sorted({lab for s in sentences for lab in s.labels})
    names = sorted(set(data_labels) | set(cset.labels))
    compiled = cset.compile(names)
    index = {lab: i for i, lab in enumerate(names)}
    y = np.array([index[lab] for s in sentences for lab in s.labels], dtype=np.int32)
    n_tokens = max(len(y), 1)
    indicators = compiled.indicators(sentences)
    found = rule_matches(
        compiled, indicators, [s.tokens for s in sentences], [s.labels for s in sentences]
    )
    rules = compiled.instance_rules + compiled.corpus_rules
    rows = []
    for rule, r, m in zip(rules, violation_report(compiled, indicators, y), found):
        r = dict(r, path=rule.path, line=rule.line, **m)
        if r["level"] == "instance":
            r["token_rate"] = r["violations"] / n_tokens
        rows.append(r)
    report = {
        "source": cset.source,
        "n_sentences": len(sentences),
        "n_tokens": int(len(y)),
        **label_check(cset, data_labels),
        "rules": rows,
    }
    report["never_matched"] = never_matched_lines(report)
    # sentences on which the hard rules leave no labeling at all, and the rules that conflict
    report["no_labeling"] = infeasible_report(compiled, indicators)
    return report


def never_matched_lines(report: dict) -> list[str]:
    """One line per rule that matched nothing in the data (the ``warning:`` lines of ``tagger
    constraints check``): the rule as the file names it, that its breaks mean nothing, and the
    hint."""
    out = []
    for r in report["rules"]:
        if r["matched"]:
            continue
        at = f"{report['source']}:{r['line']}" if r.get("line") is not None else report["source"]
        broken = (
            "its 0.0% breaks mean it never applied, not that it holds"
            if r["level"] == "instance"
            else "its measured fraction says nothing about it"
        )
        out.append(
            f"{at}: {r['path']} {r['constraint']!r} matched nothing in the "
            f"{counted(report['n_sentences'], 'sentences').replace(' ', ' labeled ', 1)} "
            f"(0 {r['unit']}), so {broken}: {r['hint']}"
        )
    return out


def check_text(report: dict) -> str:
    """``tagger constraints check``'s table."""
    lines = [
        f"{report['source']}: valid; {len(report['rules'])} rules, checked on "
        f"{report['n_sentences']} sentences ({report['n_tokens']} tokens)"
    ]
    for lab, s in report["unused"]:
        hint = (
            f" (did you mean {s!r}? labels are case-sensitive)"
            if s
            else " (no labeled sentence uses it: it is learned from the rules alone)"
        )
        lines.append(f"label {lab!r} of the file is not used by the data{hint}")
    if report["unmentioned"]:
        lines.append("labels of the data the file never names: " + ", ".join(report["unmentioned"]))
    none = report.get("no_labeling")
    if none:
        lines.append(
            f"the hard rules leave no labeling of {none['sentences']} of the {none['of']} "
            f"sentences (decoded breaking the fewest rules): on sentence {none['first'] + 1}, "
            f"{none['conflict']}"
        )
    width = max([len("rule")] + [len(r["constraint"]) for r in report["rules"]])
    matched = [counted(r["matched"], r["unit"]) for r in report["rules"]]
    mwidth = max([len("matched")] + [len(m) for m in matched])
    lines += [
        "",
        f"{'rule':<{width}}  {'kind':<13}  {'matched':>{mwidth}}  {'sentences':>9}  "
        f"{'per token':>9}",
    ]
    for r, m in zip(report["rules"], matched):
        kind = f"{r['level']}{' hard' if r['hard'] else ''}"
        if r["level"] == "instance":
            a, b = f"{100 * r['rate']:.1f}%", f"{r['token_rate']:.4f}"
        else:
            a, b = f"{r['value']:.3f}", f"+-{r['tolerance']:g} of {r['target']:g}"
        lines.append(f"{r['constraint']:<{width}}  {kind:<13}  {m:>{mwidth}}  {a:>9}  {b:>9}")
    lines += [
        "matched: the words its word list, pattern or token class matched, the runs of words its "
        "sequence matched, or the stretches, sentences or label changes it looked at (0: the "
        "rule never applied, and its 0.0% says nothing)",
        "sentences, per token: instance rules, the share of sentences whose gold labels break "
        "the rule at least once and the amount broken per token; corpus rules, the measured "
        "fraction, then the file's tolerance and target",
    ]
    return "\n".join(lines)
