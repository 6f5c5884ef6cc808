"""The checks of one rule of a constraint file: the rule kinds each level takes, the keys each
rule takes, and :func:`parse_rule`, which turns one ``[[instance]]`` or ``[[corpus]]`` table
into a :class:`~tagger.constraints.rules.Rule`. A :class:`Checker` collects every mistake with
its key path instead of stopping at the first, so that :mod:`.language` (which reads the file
and checks its top level) reports them all at once.
"""

from __future__ import annotations

import difflib
import math
import re
from typing import Any

from tagger.constraints.rules import PROPERTIES, Rule, normalize_word, sequence_element
from tagger.io.patterns import PatternError, compile_pattern

#: the rules of an ``[[instance]]`` table (one sequence at a time) and what each says
INSTANCE_RULES = {
    "start": "a sequence may only start with one of `labels`",
    "end": "a sequence may only end with one of `labels`",
    "one-segment": 'each of `labels` (or "all") forms at most one contiguous segment',
    "tokens": "tokens in `words` or matching `pattern` (or the `mark`ed tokens of each run "
    "matching `sequence`) take one of `take` / none of `avoid`",
    "only-inside": "tokens with `property` (or matching `pattern`) appear only inside `labels`",
    "change-on-punctuation": "labels change only at punctuation",
    "count": "the number of tokens (or segments, `unit`) with one of `labels` is within "
    "`min`..`max`",
    "contains": "every segment of each of `labels` contains a token in `words`, matching "
    "`pattern` or with `property`",
    "order": "segments of the `before` labels come before every segment of the `after` labels",
}
#: the rules of a ``[[corpus]]`` table (over the unlabeled corpus) and what each says
CORPUS_RULES = {
    "label-fraction": "over the unlabeled corpus, the fraction of tokens with one of `labels` "
    "is about `fraction` (give or take `tolerance`)",
    "change-off-punctuation": "the fraction of label changes not on punctuation is about "
    "`fraction` (give or take `tolerance`)",
}
#: a sequence element that looks like a token class missing one of its brackets (<digit, digit>)
_HALF_CLASS = re.compile(r"^(<[A-Za-z]+|[A-Za-z]+>)$")
#: the keys every rule takes, and those of each rule besides them
COMMON_KEYS = {"rule", "name", "hard", "weight", "shape"}
RULE_KEYS = {
    "start": {"labels"},
    "end": {"labels"},
    "one-segment": {"labels"},
    "tokens": {"words", "pattern", "sequence", "mark", "take", "avoid", "case_sensitive"},
    "only-inside": {"property", "pattern", "labels", "case_sensitive"},
    "change-on-punctuation": set(),
    "count": {"labels", "min", "max", "unit"},
    "contains": {"labels", "words", "pattern", "property", "case_sensitive"},
    "order": {"before", "after"},
    "label-fraction": {"labels", "fraction", "tolerance"},
    "change-off-punctuation": {"fraction", "tolerance"},
}


class Checker:
    """The mistakes found so far (``path: message``) and the labels the file speaks about."""

    def __init__(self, labels: list[str]):
        self.errors: list[str] = []
        self.labels = labels

    def err(self, path: str, message: str) -> None:
        self.errors.append(f"{path}: {message}")

    def label_list(self, value: Any, path: str, allow_all: bool = False) -> list[str]:
        if allow_all and value == "all":
            return list(self.labels)
        if isinstance(value, str):
            value = [value]
        if not isinstance(value, list) or not value:
            self.err(
                path, "expected a non-empty list of labels" + (' or "all"' if allow_all else "")
            )
            return []
        out = []
        for i, lab in enumerate(value):
            p = f"{path}[{i}]"
            if not isinstance(lab, str):
                self.err(p, f"expected a label name (text), got {lab!r}")
            elif lab not in self.labels:
                close = difflib.get_close_matches(lab, self.labels, n=3, cutoff=0.5)
                if not close:
                    close = difflib.get_close_matches(
                        lab.lower(), [x.lower() for x in self.labels], n=3, cutoff=0.5
                    )
                hint = (
                    f"; did you mean {' or '.join(repr(c) for c in close)}?"
                    if close
                    else f"; known labels: {', '.join(self.labels)}"
                )
                self.err(p, f"unknown label {lab!r}{hint}")
            else:
                out.append(lab)
        return out

    def number(
        self, d: dict, key: str, path: str, low=None, high=None, integer=False, default=None
    ):
        if key not in d:
            return default
        v = d[key]
        p = f"{path}.{key}"
        if (
            isinstance(v, bool)
            or not isinstance(v, (int, float))
            or (integer and not isinstance(v, int))
        ):
            self.err(p, f"expected {'a whole number' if integer else 'a number'}, got {v!r}")
            return default
        if not math.isfinite(v):
            self.err(p, f"expected a finite number, got {v!r}")
            return default
        if (low is not None and v < low) or (high is not None and v > high):
            rng = f"between {low} and {high}" if high is not None else f"at least {low}"
            self.err(p, f"must be {rng}, got {v!r}")
            return default
        return v

    def pattern(self, v: Any, path: str, case_sensitive: bool):
        if not isinstance(v, str) or not v:
            self.err(path, f"expected a regular expression (text), got {v!r}")
            return None
        try:
            # RE2 matches in linear time: a pattern such as ^(a+)+$ cannot hang tagging
            return compile_pattern(v, ignore_case=not case_sensitive)
        except PatternError as exc:
            self.err(path, f"bad regular expression {v!r}: {exc}")
            return None


def _word_list(ck: Checker, item: dict, path: str, cs: bool) -> list[str]:
    words = item.get("words", [])
    if isinstance(words, str):
        words = [words]
    if not isinstance(words, list) or not all(isinstance(w, str) and w for w in words):
        ck.err(f"{path}.words", f"expected a list of words (text), got {words!r}")
        words = []
    elif "words" in item and not words:
        ck.err(
            f"{path}.words",
            "expected at least one word, got an empty list (a rule on no words is never "
            "applied): list the words or remove the key",
        )
    return sorted({normalize_word(w, cs) for w in words})


def _property(ck: Checker, prop: Any, path: str) -> Any:
    if not isinstance(prop, str) or prop not in PROPERTIES:
        close = difflib.get_close_matches(str(prop), list(PROPERTIES), n=1, cutoff=0.5)
        hint = f"did you mean {close[0]!r}? " if close else ""
        ck.err(
            f"{path}.property", f"unknown property {prop!r}; {hint}known: {', '.join(PROPERTIES)}"
        )
    return prop


def unknown_key(key: str, known) -> str:
    """The message for a key that is none of ``known``, with the closest one as a hint."""
    close = difflib.get_close_matches(key, sorted(known), n=1, cutoff=0.6)
    hint = f"; did you mean {close[0]!r}?" if close else ""
    return f"unknown key {key!r}{hint} (known: {', '.join(sorted(known))})"


def parse_rule(
    ck: Checker, item: dict, path: str, level: str, table: dict, d_hard, d_weight, d_shape
) -> Rule | None:
    """The rule of one ``[[instance]]`` / ``[[corpus]]`` table, or None when its name is not a
    rule of ``table``; every mistake goes to ``ck``. ``d_hard``, ``d_weight`` and ``d_shape``
    are the file's ``[defaults]``."""
    rule = item.get("rule")
    if not isinstance(rule, str):
        ck.err(
            f"{path}.rule",
            f"expected a rule name (text), got {rule!r}; known {level} rules: {', '.join(table)}",
        )
        return None
    if rule not in table:
        other = CORPUS_RULES if level == "instance" else INSTANCE_RULES
        if rule in other:
            level_of_rule = "corpus" if level == "instance" else "instance"
            ck.err(
                f"{path}.rule",
                f"{rule!r} is a {level_of_rule}-level rule; put it in a [[{level_of_rule}]] table",
            )
        else:
            close = difflib.get_close_matches(str(rule), list(table), n=1, cutoff=0.5)
            hint = f"did you mean {close[0]!r}? " if close else ""
            ck.err(
                f"{path}.rule",
                f"unknown rule {rule!r}; {hint}known {level} rules: {', '.join(table)}",
            )
        return None
    allowed = COMMON_KEYS | RULE_KEYS[rule]
    for key in item:
        if key not in allowed:
            ck.err(f"{path}.{key}", unknown_key(key, allowed))
    hard = item.get("hard", d_hard)
    if not isinstance(hard, bool):
        ck.err(f"{path}.hard", f"expected true or false, got {hard!r}")
        hard = False
    weight = ck.number(item, "weight", path, low=0.0, default=d_weight)
    shape = item.get("shape", d_shape)
    if shape not in ("linear", "squared"):
        ck.err(f"{path}.shape", f'expected "linear" or "squared", got {shape!r}')
        shape = "linear"
    name = item.get("name", "")
    if not isinstance(name, str):
        ck.err(f"{path}.name", f"expected text, got {name!r}")
        name = ""
    opts: dict = {}
    labels: list[str] = []
    cs = item.get("case_sensitive", False)
    if not isinstance(cs, bool):
        ck.err(f"{path}.case_sensitive", f"expected true or false, got {cs!r}")
        cs = False
    opts["case_sensitive"] = cs

    def need(key):
        if key not in item:
            ck.err(path, f"the {rule!r} rule needs `{key}`")
            return False
        return True

    if rule in (
        "start",
        "end",
        "one-segment",
        "count",
        "label-fraction",
        "only-inside",
        "contains",
    ):
        if need("labels"):
            labels = ck.label_list(
                item["labels"], f"{path}.labels", allow_all=rule not in ("start", "end")
            )
    if rule == "tokens" and "sequence" in item:
        if "words" in item or "pattern" in item:
            ck.err(
                path,
                "the 'tokens' rule takes `sequence` or `words` / `pattern`, not both: "
                "write two rules",
            )
        opts["sequence"], opts["mark"], opts["sequence_text"] = _sequence(ck, item, path, cs)
    elif rule == "tokens" and "mark" in item:
        ck.err(f"{path}.mark", "`mark` picks tokens of a `sequence`; this rule has none")
    if rule == "tokens":
        if "words" not in item and "pattern" not in item and "sequence" not in item:
            ck.err(
                path,
                "the 'tokens' rule needs `words` (a list), `pattern` (a regular "
                "expression) or both, or a `sequence` of tokens",
            )
        opts["words"] = _word_list(ck, item, path, cs)
        if "pattern" in item:
            opts["pattern"] = ck.pattern(item["pattern"], f"{path}.pattern", cs)
        has_take, has_avoid = "take" in item, "avoid" in item
        if has_take == has_avoid:
            ck.err(
                path,
                "the 'tokens' rule needs exactly one of `take` (labels these tokens "
                "must have) or `avoid` (labels they must not have)",
            )
        elif has_take:
            labels = ck.label_list(item["take"], f"{path}.take")
            opts["mode"] = "take"
        else:
            labels = ck.label_list(item["avoid"], f"{path}.avoid")
            opts["mode"] = "avoid"
    if rule == "only-inside":
        prop, pat = item.get("property"), item.get("pattern")
        if (prop is None) == (pat is None):
            ck.err(
                path,
                "the 'only-inside' rule needs exactly one of `property` "
                f"({', '.join(PROPERTIES)}) or `pattern`",
            )
        elif prop is not None:
            opts["property"] = _property(ck, prop, path)
        else:
            opts["pattern"] = ck.pattern(pat, f"{path}.pattern", cs)
    if rule == "contains":
        if not any(k in item for k in ("words", "pattern", "property")):
            ck.err(
                path,
                "the 'contains' rule needs `words` (a list), `pattern` (a regular "
                f"expression) or `property` ({', '.join(PROPERTIES)}): what every "
                "segment must contain",
            )
        opts["words"] = _word_list(ck, item, path, cs)
        if "pattern" in item:
            opts["pattern"] = ck.pattern(item["pattern"], f"{path}.pattern", cs)
        if "property" in item:
            opts["property"] = _property(ck, item["property"], path)
    if rule == "order":
        sides = {}
        for key in ("before", "after"):
            if need(key):
                sides[key] = ck.label_list(item[key], f"{path}.{key}")
        both = set(sides.get("before", ())) & set(sides.get("after", ()))
        if both:
            ck.err(
                f"{path}.after",
                f"label(s) {', '.join(sorted(both))} are both `before` and "
                "`after`; a label cannot come before itself",
            )
        opts["before"], opts["after"] = sides.get("before", []), sides.get("after", [])
        labels = opts["before"] + opts["after"]
    if rule == "count":
        lo = ck.number(item, "min", path, low=0, integer=True, default=0)
        hi = ck.number(item, "max", path, low=0, integer=True, default=None)
        if "min" not in item and "max" not in item:
            ck.err(path, "the 'count' rule needs `min`, `max` or both")
        if lo is not None and hi is not None and lo > hi:
            ck.err(f"{path}.min", f"min ({lo}) is larger than max ({hi})")
        unit = item.get("unit", "tokens")
        if unit not in ("tokens", "segments"):
            ck.err(f"{path}.unit", f'expected "tokens" or "segments", got {unit!r}')
        opts.update(min=lo if lo is not None else 0, max=hi, unit=unit)
    if rule in CORPUS_RULES:
        if need("fraction"):
            opts["fraction"] = ck.number(item, "fraction", path, low=0.0, high=1.0, default=0.0)
        opts["tolerance"] = ck.number(item, "tolerance", path, low=0.0, high=1.0, default=0.0)
    if rule == "change-on-punctuation":
        labels = []
    if not name:
        name = f"{rule}" + (f" {'/'.join(labels)}" if labels and len(labels) <= 4 else "")
    return Rule(path, level, rule, name, labels, hard, float(weight), shape, opts)


def _sequence(ck: Checker, item: dict, path: str, cs: bool) -> tuple[list, list[int], list]:
    """The elements of a rule's ``sequence``, the marked positions, and the elements as
    written (reports quote them)."""
    seq = item["sequence"]
    if isinstance(seq, str):
        seq = seq.split()
    if not (isinstance(seq, list) and seq and all(isinstance(x, str) and x for x in seq)):
        ck.err(
            f"{path}.sequence",
            f'expected a list of tokens, e.g. ["no", "pets|pet"] or '
            f'["<number>", "br|bedrooms"], got {seq!r}',
        )
        return [], [], []
    elements = []
    for i, text in enumerate(seq):
        el = sequence_element(text, cs)
        if el[0] == "property" and el[1] not in PROPERTIES:
            close = difflib.get_close_matches(el[1], list(PROPERTIES), n=1, cutoff=0.5)
            hint = f"did you mean '<{close[0]}>'? " if close else ""
            ck.err(
                f"{path}.sequence[{i}]",
                f"unknown property {text!r}; {hint}known: "
                + ", ".join(f"<{p}>" for p in PROPERTIES),
            )
        elif el[0] == "words" and _HALF_CLASS.match(text):
            ck.err(
                f"{path}.sequence[{i}]",
                f"expected a token class in angle brackets such as '<digit>', got {text!r} "
                f"with one bracket; close it, or write the word without brackets",
            )
        elif el[0] == "words" and any(ch.isspace() for ch in text):
            ck.err(
                f"{path}.sequence[{i}]",
                f"expected one token (words separated by |), got {text!r} with a space: a "
                f"token never contains one; give each token as its own element",
            )
        elif el[0] == "words" and not el[1]:
            ck.err(f"{path}.sequence[{i}]", f"expected words separated by |, got {text!r}")
        elements.append(el)
    mark = item.get("mark", list(range(len(seq))))
    if isinstance(mark, int) and not isinstance(mark, bool):
        mark = [mark]
    if not (
        isinstance(mark, list)
        and mark
        and all(isinstance(m, int) and not isinstance(m, bool) and 0 <= m < len(seq) for m in mark)
    ):
        ck.err(
            f"{path}.mark",
            f"expected positions in the sequence (0 to {len(seq) - 1}) of "
            f"the tokens that take the labels, got {mark!r}",
        )
        mark = list(range(len(seq)))
    return elements, sorted(set(mark)), list(seq)
