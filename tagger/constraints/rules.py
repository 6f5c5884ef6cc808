"""What the constraint language and its compiled form share: the rule kinds the numba kernels
switch on, the token properties and word matching that rules name, and :class:`Rule`, one
constraint as written. :mod:`.language` parses files into rules; :mod:`.compiled` turns rules
into arrays; both read this module and neither reads the other's insides.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

# ---------------------------------------------------------------------------------------------
# kinds (the numba kernels switch on these)

#: a token-level rule: token t violates it when its indicator is set and y_t is a "bad" label
#: (start rule, word lists and patterns, token properties only inside given labels)
UNARY = 0
#: sum over the listed labels of max(0, segments(label) - 1)
SEGMENTS = 1
#: label changes between t-1 and t where the boundary is not on punctuation
CHANGES = 2
#: number of tokens whose label is listed (count bounds)
COUNT_TOKENS = 3
#: number of segments whose label is listed (count bounds)
COUNT_SEGMENTS = 4
#: segments of the listed labels that contain no flagged token (``contains``)
CONTAINS = 5
#: segments of the listed labels that start after a token of the rule's ``after`` labels
ORDER = 6

#: corpus kinds: fraction of tokens with a listed label; fraction of changes off punctuation
FRACTION_LABEL = 0
FRACTION_CHANGE = 1

#: properties a token may have (``only-inside`` rules); punctuation is also what
#: ``change-on-punctuation`` looks at
PROPERTIES = {
    "quote": "contains a double quotation mark (\" `` '' or typographic double quotes); a "
    "single ' or ` is an apostrophe (Master's, '91, D'Andrea), not a quotation",
    "punct": "is made of punctuation only",
    "digit": "contains a digit",
    "number": "is a number (digits, optionally with . , - / inside)",
    "capitalized": "starts with an upper-case letter",
    "upper": "is all upper-case letters",
}
_QUOTES = ('"', "``", "''", "\u201c", "\u201d", "\u201e", "\u00ab", "\u00bb")
_NUMBER = re.compile(r"^[0-9]+([.,/-][0-9]+)*$")
_TRAILING = ".,;:!?)]}\"'`\u2019\u201d"
_LEADING = "([{\"'`\u2018\u201c"


def _is_punct(s: str) -> bool:
    return bool(s) and not any(ch.isalnum() for ch in s)


def has_property(token: str, prop: str) -> bool:
    if prop == "quote":
        return any(q in token for q in _QUOTES)
    if prop == "punct":
        return _is_punct(token)
    if prop == "digit":
        return any(ch.isdigit() for ch in token)
    if prop == "number":
        return bool(_NUMBER.match(token))
    if prop == "capitalized":
        return bool(token) and token[0].isupper()
    if prop == "upper":
        return any(ch.isalpha() for ch in token) and token.upper() == token
    raise KeyError(prop)


def boundary_on_punctuation(prev: str, token: str) -> bool:
    """Is the boundary between two tokens "on punctuation"?

    Yes when the previous token is punctuation or ends with a closing mark (``Smith,`` ``1994.``
    ``)``), or the token is punctuation or starts with an opening mark (``(1994)``, a quote).
    Works for corpora that split punctuation off (the CPF citation files) and for those that
    keep it attached (``tagged_references.txt``).
    """
    if not prev or not token:
        return True
    return _is_punct(prev) or prev[-1] in _TRAILING or _is_punct(token) or token[0] in _LEADING


def normalize_word(s: str, case_sensitive: bool = False) -> str:
    """A word as word lists compare it: surrounding punctuation stripped (``pp.`` -> ``pp``),
    lower-cased unless the rule is case sensitive."""
    stripped = s.strip(_TRAILING + _LEADING + "-")
    if not stripped:
        stripped = s
    return stripped if case_sensitive else stripped.lower()


# ---------------------------------------------------------------------------------------------
# token sequences (`tokens` rules with `sequence`)


def sequence_element(text: str, case_sensitive: bool) -> tuple[str, Any]:
    """One element of a sequence: ``<property>`` or words separated by ``|`` (compared as
    `words` are)."""
    if text.startswith("<") and text.endswith(">"):
        return ("property", text[1:-1])
    return ("words", frozenset(normalize_word(w, case_sensitive) for w in text.split("|") if w))


def element_matches(element: tuple[str, Any], token: str, case_sensitive: bool) -> bool:
    kind, value = element
    if kind == "property":
        return has_property(token, value)
    return normalize_word(token, case_sensitive) in value


# ---------------------------------------------------------------------------------------------
# one constraint as written


@dataclass
class Rule:
    """One constraint as written (validated), before compilation against a label list."""

    path: str  # key path in the file, e.g. "instance[3]"
    level: str  # "instance" or "corpus"
    rule: str  # rule name
    name: str
    labels: list[str]  # labels the rule is about (all labels for "all")
    hard: bool
    weight: float
    shape: str  # "linear" or "squared"
    options: dict = field(default_factory=dict)
    line: int | None = None  # line of its table header in the file, when the file has one


def listed_rules(rules: list[Rule]) -> str:
    """The rules as a constraint file names them, for messages: ``instance[0] 'start B-VP'
    (line 4), ...``."""
    return ", ".join(
        f"{rule.path} {rule.name!r}" + (f" (line {rule.line})" if rule.line is not None else "")
        for rule in rules
    )
