"""What each rule of a constraint file found to apply to in labeled data (``tagger
constraints check``): the words its word list, pattern or token class matched, the stretches
its sequence or labels made, the sentences or label changes it looked at.

A rule broken by 0 % of the labeled sentences either holds or never applied: a sequence of
``<number>`` on ads whose numbers are placeholders such as ``*NUMBER*2*1`` (a ``<digit>``, not
a ``<number>``) matches no word and so is never broken. The count tells the two apart, and a
rule that matched nothing gets a hint about what to check.

A *stretch* is a maximal run of words with the same label (the segments the rules count).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from tagger.constraints.compiled import CompiledConstraints, TokenIndicators
from tagger.constraints.rules import PROPERTIES, Rule, element_matches

#: a token class that is easily taken for another, and what to try instead
_OTHER_CLASS = {
    "number": "<digit> matches every word with a digit in it, placeholders such as "
    "*NUMBER*2*1 included",
    "digit": "a placeholder without digits such as *NUMBER* or *DATE* is <upper>",
    "capitalized": "a word that starts with a mark, such as *NAME* or (Smith), is not "
    "<capitalized>; <upper> matches words in capitals",
    "upper": "<capitalized> matches words that start with a capital",
    "punct": "a word with a letter or digit in it is not <punct>",
    "quote": "a single ' or ` is an apostrophe, not a quotation mark",
}
_CLASSES_DOC = "the token classes are defined in constraints/README.md"


#: the units of ``matched``, and each one's singular
UNITS = {"words": "word", "stretches": "stretch", "sentences": "sentence", "changes": "change"}


def counted(count: int, unit: str) -> str:
    """``3 words``, ``1 stretch``."""
    return f"{count} {UNITS[unit] if count == 1 else unit}"


def stretches(labels: Sequence[str], wanted: set[str]) -> int:
    """How many maximal runs of one label, that label one of ``wanted``, ``labels`` holds."""
    return sum(
        1 for t, lab in enumerate(labels) if lab in wanted and (t == 0 or labels[t - 1] != lab)
    )


def changes(labels: Sequence[str]) -> int:
    """How many times the label changes from one word to the next."""
    return sum(1 for t in range(1, len(labels)) if labels[t] != labels[t - 1])


def sequence_runs(rule: Rule, toks_list: Sequence[Sequence[str]]) -> int:
    """How many runs of consecutive words (within a sentence) match the rule's ``sequence``
    (overlapping runs each count)."""
    seq, cs = rule.options["sequence"], rule.options.get("case_sensitive", False)
    k, runs = len(seq), 0
    for toks in toks_list:
        hit = [[element_matches(el, tok, cs) for tok in toks] for el in seq]
        runs += sum(1 for t in range(len(toks) - k + 1) if all(hit[j][t + j] for j in range(k)))
    return runs


def _class_hint(cls: str) -> str:
    other = _OTHER_CLASS.get(cls)
    return f"<{cls}> {PROPERTIES[cls]}" + (f"; {other}" if other else "")


def _sequence_hint(rule: Rule, flat: list[str]) -> str:
    """Which elements of a sequence match no word at all, with a hint on the classes among
    them; or that each matches somewhere but never in this order."""
    cs = rule.options.get("case_sensitive", False)
    lonely = []
    for i, (el, text) in enumerate(zip(rule.options["sequence"], rule.options["sequence_text"])):
        if not any(element_matches(el, tok, cs) for tok in flat):
            what = f"sequence[{i}] {text!r} matches no word"
            if el[0] == "property" and el[1] in PROPERTIES:
                what += f": {_class_hint(el[1])}; {_CLASSES_DOC}"
            lonely.append(what)
    if lonely:
        return "; ".join(lonely)
    return "each element matches some word, but never all of them in a row in one sentence"


def _token_hint(rule: Rule) -> str:
    parts = []
    if rule.options.get("words"):
        case = "" if rule.options.get("case_sensitive") else ", in any case"
        parts.append(
            f"its words are compared with whole words, without surrounding punctuation{case}"
        )
    if rule.options.get("pattern") is not None:
        parts.append("its pattern is searched in each word (RE2 syntax)")
    prop = rule.options.get("property")
    if prop in PROPERTIES:
        parts.append(f"{_class_hint(prop)}; {_CLASSES_DOC}")
    return "; ".join(parts)


def _labels_hint(labels: Sequence[str]) -> str:
    return (
        f"no word of the data has the label{'s' if len(labels) > 1 else ''} "
        f"{', '.join(labels)} (labels are case-sensitive)"
    )


def rule_matches(
    compiled: CompiledConstraints,
    indicators: TokenIndicators,
    toks_list: Sequence[Sequence[str]],
    labels_list: Sequence[Sequence[str]],
) -> list[dict]:
    """Per rule of ``compiled`` (instance rules, then corpus rules, as
    :func:`~tagger.constraints.violations.violation_report` orders them): ``matched`` (a
    count), ``unit`` (``words``, ``stretches``, ``sentences`` or ``changes``) and, when it
    matched nothing, ``hint``: why, and what to check. ``indicators`` are those of the
    sentences whose ``toks_list`` and gold ``labels_list`` are given."""
    flat = [tok for toks in toks_list for tok in toks]
    rows = []
    for c, rule in enumerate(compiled.instance_rules):
        row = compiled.row[c]
        count, unit, hint = _instance_match(rule, toks_list, labels_list, flat)
        if count is None:  # a rule on words: its indicator row holds the matches
            count = int(np.count_nonzero(indicators.ind[row])) if row >= 0 else 0
        rows.append(_row(count, unit, hint))
    for rule in compiled.corpus_rules:
        if rule.rule == "label-fraction":
            wanted = set(rule.labels)
            count = sum(lab in wanted for labels in labels_list for lab in labels)
            rows.append(_row(count, "words", _labels_hint(rule.labels)))
        else:
            count = sum(changes(labels) for labels in labels_list)
            rows.append(_row(count, "changes", "the gold labels never change within a sentence"))
    return rows


def _row(count: int, unit: str, hint: str) -> dict:
    row: dict = {"matched": int(count), "unit": unit}
    if count == 0:
        row["hint"] = hint
    return row


def _instance_match(rule: Rule, toks_list, labels_list, flat) -> tuple[int | None, str, str]:
    """(count or None for "read the indicator row", unit, hint when nothing matched)."""
    kind = rule.rule
    if kind in ("start", "end"):
        return sum(1 for toks in toks_list if toks), "sentences", "the data hold no sentence"
    if kind == "tokens" and rule.options.get("sequence"):
        return sequence_runs(rule, toks_list), "stretches", _sequence_hint(rule, flat)
    if kind in ("tokens", "only-inside"):
        return None, "words", _token_hint(rule)
    if kind == "change-on-punctuation":
        count = sum(changes(labels) for labels in labels_list)
        return count, "changes", "the gold labels never change within a sentence"
    if kind == "order":
        before, after = set(rule.options["before"]), set(rule.options["after"])
        count = sum(1 for labels in labels_list if before & set(labels) and after & set(labels))
        hint = (
            f"no sentence has both a `before` label ({', '.join(sorted(before))}) and an "
            f"`after` label ({', '.join(sorted(after))})"
        )
        return count, "sentences", hint
    wanted = set(rule.labels)
    if kind == "count" and rule.options.get("unit") == "tokens":
        count = sum(lab in wanted for labels in labels_list for lab in labels)
        return count, "words", _labels_hint(rule.labels)
    # one-segment, contains, count of segments: the stretches of the rule's labels
    count = sum(stretches(labels, wanted) for labels in labels_list)
    return count, "stretches", _labels_hint(rule.labels)
