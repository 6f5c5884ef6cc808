"""Checking a constraint file against labeled data, without a model (``tagger constraints
check``), and the label check ``tagger train`` runs before training.

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

from tagger.constraints.language import ConstraintSet
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
    """The file against labeled ``sentences``: the label check and each rule's violations by
    the gold labels (instance rules: share of sentences with a violation, and the violation
    amount per token; corpus rules: the measured value against target and tolerance)."""
    data_labels = sorted({lab for s in sentences for lab in s.labels})
    names = sorted(set(data_labels) | set(cset.labels))
    compiled = cset.compile(names)
    index = {lab: i for i, lab in enumerate(names)}
    y = np.array([index[lab] for s in sentences for lab in s.labels], dtype=np.int32)
    n_tokens = max(len(y), 1)
    rows = []
    for r in violation_report(compiled, compiled.indicators(sentences), y):
        if r["level"] == "instance":
            r = dict(r, token_rate=r["violations"] / n_tokens)
        rows.append(r)
    return {
        "source": cset.source,
        "n_sentences": len(sentences),
        "n_tokens": int(len(y)),
        **label_check(cset, data_labels),
        "rules": rows,
    }


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
    width = max([len("rule")] + [len(r["constraint"]) for r in report["rules"]])
    lines += ["", f"{'rule':<{width}}  {'kind':<13}  {'sentences':>9}  {'per token':>9}"]
    for r in report["rules"]:
        kind = f"{r['level']}{' hard' if r['hard'] else ''}"
        if r["level"] == "instance":
            a, b = f"{100 * r['rate']:.1f}%", f"{r['token_rate']:.4f}"
        else:
            a, b = f"{r['value']:.3f}", f"+-{r['tolerance']:g} of {r['target']:g}"
        lines.append(f"{r['constraint']:<{width}}  {kind:<13}  {a:>9}  {b:>9}")
    lines.append(
        "instance rules: share of sentences whose gold labels break the rule at least "
        "once, and the amount broken per token; corpus rules: the measured fraction, "
        "then the file's tolerance and target"
    )
    return "\n".join(lines)
