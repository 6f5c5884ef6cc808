"""Constraint files over four labels and the words their rules speak of: what the constrained
decoding and feasibility tests enumerate labelings under."""

from __future__ import annotations

LABELS = ["a", "b", "c", "d"]
WORDS = ["pp", "x", ",", "y", "9", "z", "."]

HARD = """
labels = ["a", "b", "c", "d"]
[defaults]
hard = true
[[instance]]
rule = "start"
labels = ["a", "b"]
[[instance]]
rule = "one-segment"
labels = ["a", "c", "d"]
[[instance]]
rule = "tokens"
words = ["pp"]
take = ["c", "d"]
[[instance]]
rule = "tokens"
pattern = '^[0-9]$'
avoid = ["a"]
[[instance]]
rule = "change-on-punctuation"
"""

#: the rules a segment-free Viterbi enforces exactly once they are token masks: the last label,
#: and the marked tokens of a matched sequence
HARD_ENDS = """
labels = ["a", "b", "c", "d"]
[defaults]
hard = true
[[instance]]
rule = "end"
labels = ["b", "c"]
[[instance]]
rule = "tokens"
sequence = ["x", "y|z"]
take = ["d"]
[[instance]]
rule = "tokens"
sequence = ["<digit>", "<punct>"]
mark = [1]
avoid = ["b"]
[[instance]]
rule = "one-segment"
labels = ["d"]
"""

#: rules about whole segments: what they contain and their order, with a one-segment rule and
#: a token rule that interact with them
SEGMENT_RULES = """
labels = ["a", "b", "c", "d"]
[defaults]
hard = true
[[instance]]
rule = "contains"
labels = ["c"]
pattern = '^[0-9]$'
[[instance]]
rule = "contains"
labels = ["a", "b"]
words = ["x", "y", "z"]
[[instance]]
rule = "order"
before = ["a"]
after = ["c", "d"]
[[instance]]
rule = "order"
before = ["b"]
after = ["a"]
[[instance]]
rule = "one-segment"
labels = ["d"]
[[instance]]
rule = "tokens"
words = ["pp"]
take = ["c", "d"]
"""

COUNTS = """
labels = ["a", "b", "c", "d"]
[[instance]]
rule = "one-segment"
labels = "all"
hard = true
[[instance]]
rule = "count"
labels = ["b"]
max = 1
hard = true
"""

#: soft rules over three labels (an instance rule of each kind label switching scores and a
#: squared corpus rule): what the switching tests lower the objective under
SWITCH_RULES = """
labels = ["a", "b", "c"]
[[instance]]
rule = "one-segment"
labels = "all"
weight = 0.5
[[instance]]
rule = "tokens"
words = ["x"]
take = ["b"]
[[corpus]]
rule = "label-fraction"
labels = ["a"]
fraction = 0.4
weight = 2.0
shape = "squared"
"""
