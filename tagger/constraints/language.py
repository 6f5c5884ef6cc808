"""The constraint language: a TOML file parsed and checked (every mistake reported at once with
its key path) into :class:`ConstraintSet`, and compiled against a model's labels. This module
reads the file and checks its top level (``labels``, ``[defaults]``, the ``[[instance]]`` and
``[[corpus]]`` lists); each rule's own checks are :mod:`.rule_checks`. The rule kinds, token
properties and :class:`Rule` are :mod:`.rules`; the names of both are importable from here too.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from tagger.constraints.compiled import CompiledConstraints
from tagger.constraints.model_labels import rules_for_labels
from tagger.constraints.rule_checks import (
    CORPUS_RULES,
    INSTANCE_RULES,
    Checker,
    parse_rule,
    unknown_key,
)
from tagger.constraints.rules import (
    CHANGES,
    CONTAINS,
    COUNT_SEGMENTS,
    COUNT_TOKENS,
    FRACTION_CHANGE,
    FRACTION_LABEL,
    ORDER,
    PROPERTIES,
    SEGMENTS,
    UNARY,
    Rule,
    boundary_on_punctuation,
    element_matches,
    has_property,
    normalize_word,
    sequence_element,
)
from tagger.errors import ConstraintError
from tagger.io import toml_file

# the names of .rules and the rule tables of .rule_checks stay importable from here, where
# they were defined first
__all__ = [
    "ConstraintSet",
    "INSTANCE_RULES",
    "CORPUS_RULES",
    "Rule",
    "UNARY",
    "SEGMENTS",
    "CHANGES",
    "COUNT_TOKENS",
    "COUNT_SEGMENTS",
    "CONTAINS",
    "ORDER",
    "FRACTION_LABEL",
    "FRACTION_CHANGE",
    "PROPERTIES",
    "has_property",
    "boundary_on_punctuation",
    "normalize_word",
    "sequence_element",
    "element_matches",
]


# ---------------------------------------------------------------------------------------------
# the parsed file


_HEADER = re.compile(r"^\s*\[\[\s*(instance|corpus)\s*\]\]\s*(#.*)?$")
_TOP_KEYS = {"labels", "defaults", "instance", "corpus", "description"}
_DEFAULT_KEYS = {"hard", "weight", "shape"}


@dataclass
class ConstraintSet:
    """A validated constraint file: the labels it speaks about and its rules."""

    labels: list[str]
    rules: list[Rule]
    source: str = "<constraints>"
    description: str = ""

    # ---- loading
    @classmethod
    def load(cls, path: str | Path) -> ConstraintSet:
        text = toml_file.read_text(path, ConstraintError, "constraint file")
        return cls.from_text(text, str(path))

    @classmethod
    def from_text(cls, text: str, source: str = "<constraints>") -> ConstraintSet:
        data = toml_file.parse(text, source, ConstraintError)
        cset = cls.from_dict(data, source)
        lines = table_lines(text, data)
        for rule in cset.rules:
            rule.line = lines.get(rule.path)
        return cset

    @classmethod
    def from_dict(cls, data: dict, source: str = "<constraints>") -> ConstraintSet:
        """Check everything and raise one :class:`ConstraintError` listing every mistake."""
        labels = data.get("labels")
        ck = Checker([])
        if not (
            isinstance(labels, list) and labels and all(isinstance(x, str) and x for x in labels)
        ):
            ck.err(
                "labels",
                "expected the list of label names this file speaks about, e.g. "
                'labels = ["author", "title"]',
            )
            labels = []
        elif len(set(labels)) != len(labels):
            dup = sorted({x for x in labels if labels.count(x) > 1})
            ck.err("labels", f"listed twice: {', '.join(dup)}")
        ck.labels = list(dict.fromkeys(labels))
        for key in data:
            if key not in _TOP_KEYS:
                ck.err(key, unknown_key(key, _TOP_KEYS))
        defaults = data.get("defaults", {})
        if not isinstance(defaults, dict):
            ck.err("defaults", "expected a table [defaults] with hard, weight, shape")
            defaults = {}
        for key in defaults:
            if key not in _DEFAULT_KEYS:
                ck.err(f"defaults.{key}", unknown_key(key, _DEFAULT_KEYS))
        d_hard = defaults.get("hard", False)
        if not isinstance(d_hard, bool):
            ck.err("defaults.hard", f"expected true or false, got {d_hard!r}")
            d_hard = False
        d_weight = ck.number(defaults, "weight", "defaults", low=0.0, default=1.0)
        d_shape = defaults.get("shape", "linear")
        if d_shape not in ("linear", "squared"):
            ck.err("defaults.shape", f'expected "linear" or "squared", got {d_shape!r}')
            d_shape = "linear"
        rules: list[Rule] = []
        for level, table in (("instance", INSTANCE_RULES), ("corpus", CORPUS_RULES)):
            items = data.get(level, [])
            if isinstance(items, dict):
                items = [items]
            if not isinstance(items, list):
                ck.err(level, f"expected [[{level}]] tables")
                continue
            for i, item in enumerate(items):
                path = f"{level}[{i}]"
                if not isinstance(item, dict):
                    ck.err(path, f"expected a [[{level}]] table")
                    continue
                rule = parse_rule(ck, item, path, level, table, d_hard, d_weight, d_shape)
                if rule is not None:
                    rules.append(rule)
        if not data.get("instance") and not data.get("corpus") and not ck.errors:
            ck.err("instance", "the file has no [[instance]] or [[corpus]] constraint")
        if ck.errors:
            n = len(ck.errors)
            raise ConstraintError(
                f"{source}: {n} mistake{'s' if n > 1 else ''} in the constraint "
                f"file:\n" + "\n".join(ck.errors)
            )
        desc = data.get("description", "")
        return cls(ck.labels, rules, source, desc if isinstance(desc, str) else "")

    # ---- compilation
    def compile(self, label_names: Sequence[str]) -> CompiledConstraints:
        """Arrays over a model's labels, for decoding with them. When the model lacks labels
        the file names, the rules are those that still say something about the labelings it
        can make (:func:`~tagger.constraints.model_labels.rules_for_labels`): a
        :class:`~tagger.errors.TaggerWarning` names the rules dropped, and a
        :class:`~tagger.errors.ConstraintError` says when none is left to decode with."""
        names = list(label_names)
        return CompiledConstraints(rules_for_labels(self, names), names)


def table_lines(text: str, data: dict) -> dict[str, int]:
    """``{"instance[3]": line}``: the line of each ``[[instance]]`` / ``[[corpus]]`` header,
    counted in the order the file gives them. A level written another way (an inline array,
    ``instance = [{...}]``) has fewer headers than tables and gets no lines rather than wrong
    ones."""
    found: dict[str, list[int]] = {"instance": [], "corpus": []}
    for number, line in enumerate(text.splitlines(), start=1):
        m = _HEADER.match(line)
        if m:
            found[m.group(1)].append(number)
    out = {}
    for level, numbers in found.items():
        tables = data.get(level, [])
        count = 1 if isinstance(tables, dict) else len(tables) if isinstance(tables, list) else 0
        if len(numbers) == count:
            out.update({f"{level}[{i}]": n for i, n in enumerate(numbers)})
    return out
