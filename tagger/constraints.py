"""Declarative domain constraints: a TOML language, its validation, and compiled numba kernels.

A domain expert writes what they know about the fields of their sequences in a TOML file
(``constraints/README.md`` explains the format for non-programmers; ``constraints/citations.toml``
is the citation list of ALGORITHMS.md section 4). This module

1. parses and checks a file, reporting every mistake at once with its key path
   (:meth:`ConstraintSet.load`, :class:`tagger.errors.ConstraintError`);
2. compiles it against a label list into arrays (:class:`CompiledConstraints`): per constraint a
   kind, a label mask, bounds and a penalty weight / shape; per corpus the token indicators that
   word lists, patterns and token properties turn into (:meth:`CompiledConstraints.indicators`);
3. counts violations per sequence and per corpus, and the change of the penalty when one label
   is switched (numba; :class:`ViolationState`), which the semi-supervised learner's constraint
   matching and constrained decoding both use.

Penalties (ALGORITHMS.md section 4). An instance constraint c counts phi_c(x, y) and is violated
by d = max(0, phi_c - hi_c) + max(0, lo_c - phi_c); a corpus constraint compares the ratio
r_c = sum_j num_c(x_j, y_j) / sum_j den_c(x_j, y_j) with its target p_c and is violated by
d = max(0, |r_c - p_c| - tolerance_c). The penalty is rho_c * d (``shape = "linear"``) or
rho_c * d^2 (``"squared"``); a corpus penalty is further multiplied by the number of sequences,
so that a weight means the same for a corpus term as for one instance term per sequence. Hard
constraints get a very large rho (chosen by the caller: ``hard_weight``) and, at tag time, are
enforced exactly where the expanded-state Viterbi of :mod:`tagger.inference.constrained` can.
"""

from __future__ import annotations

import difflib
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

import numba
import numpy as np

from tagger._config import NUMBA_OPTS, NUMBA_PARALLEL_OPTS
from tagger.errors import ConstraintError

try:  # Python 3.11+
    import tomllib
except ModuleNotFoundError:  # pragma: no cover
    import tomli as tomllib

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
_QUOTES = ("\"", "``", "''", "\u201c", "\u201d", "\u201e", "\u00ab", "\u00bb")
_NUMBER = re.compile(r"^[0-9]+([.,/-][0-9]+)*$")
_TRAILING = ".,;:!?)]}\"'`\u2019\u201d"
_LEADING = "([{\"'`\u2018\u201c"


def _is_punct(s: str) -> bool:
    return bool(s) and not any(ch.isalnum() for ch in s)


def _has_property(token: str, prop: str) -> bool:
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
    return (_is_punct(prev) or prev[-1] in _TRAILING or _is_punct(token)
            or token[0] in _LEADING)


def normalize_word(s: str, case_sensitive: bool = False) -> str:
    """A word as word lists compare it: surrounding punctuation stripped (``pp.`` -> ``pp``),
    lower-cased unless the rule is case sensitive."""
    stripped = s.strip(_TRAILING + _LEADING + "-")
    if not stripped:
        stripped = s
    return stripped if case_sensitive else stripped.lower()


# ---------------------------------------------------------------------------------------------
# the parsed file


@dataclass
class Rule:
    """One constraint as written (validated), before compilation against a label list."""

    path: str                 # key path in the file, e.g. "instance[3]"
    level: str                # "instance" or "corpus"
    rule: str                 # rule name
    name: str
    labels: list[str]         # labels the rule is about (all labels for "all")
    hard: bool
    weight: float
    shape: str                # "linear" or "squared"
    options: dict = field(default_factory=dict)


INSTANCE_RULES = {
    "start": "a sequence may only start with one of `labels`",
    "one-segment": "each of `labels` (or \"all\") forms at most one contiguous segment",
    "tokens": "tokens in `words` or matching `pattern` take one of `take` / none of `avoid`",
    "only-inside": "tokens with `property` (or matching `pattern`) appear only inside `labels`",
    "change-on-punctuation": "labels change only at punctuation",
    "count": "the number of tokens (or segments, `unit`) with one of `labels` is within "
             "`min`..`max`",
}
CORPUS_RULES = {
    "label-fraction": "over the unlabeled corpus, the fraction of tokens with one of `labels` "
                      "is about `fraction` (give or take `tolerance`)",
    "change-off-punctuation": "the fraction of label changes not on punctuation is about "
                              "`fraction` (give or take `tolerance`)",
}
_COMMON_KEYS = {"rule", "name", "hard", "weight", "shape"}
_RULE_KEYS = {
    "start": {"labels"},
    "one-segment": {"labels"},
    "tokens": {"words", "pattern", "take", "avoid", "case_sensitive"},
    "only-inside": {"property", "pattern", "labels", "case_sensitive"},
    "change-on-punctuation": set(),
    "count": {"labels", "min", "max", "unit"},
    "label-fraction": {"labels", "fraction", "tolerance"},
    "change-off-punctuation": {"fraction", "tolerance"},
}
_TOP_KEYS = {"labels", "defaults", "instance", "corpus", "description"}
_DEFAULT_KEYS = {"hard", "weight", "shape"}


class _Checker:
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
            self.err(path, "expected a non-empty list of labels" + (' or "all"' if allow_all else ""))
            return []
        out = []
        for i, lab in enumerate(value):
            p = f"{path}[{i}]"
            if not isinstance(lab, str):
                self.err(p, f"expected a label name (text), got {lab!r}")
            elif lab not in self.labels:
                close = difflib.get_close_matches(lab, self.labels, n=3, cutoff=0.5)
                if not close:
                    close = difflib.get_close_matches(lab.lower(), [x.lower() for x in self.labels],
                                                      n=3, cutoff=0.5)
                hint = f"; did you mean {' or '.join(repr(c) for c in close)}?" if close else \
                    f"; known labels: {', '.join(self.labels)}"
                self.err(p, f"unknown label {lab!r}{hint}")
            else:
                out.append(lab)
        return out

    def number(self, d: dict, key: str, path: str, low=None, high=None, integer=False,
               default=None):
        if key not in d:
            return default
        v = d[key]
        p = f"{path}.{key}"
        if isinstance(v, bool) or not isinstance(v, (int, float)) or (integer and not isinstance(v, int)):
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
            return re.compile(v, 0 if case_sensitive else re.IGNORECASE)
        except re.error as exc:
            self.err(path, f"bad regular expression {v!r}: {exc}")
            return None


@dataclass
class ConstraintSet:
    """A validated constraint file: the labels it speaks about and its rules."""

    labels: list[str]
    rules: list[Rule]
    source: str = "<constraints>"
    description: str = ""

    # ---- loading
    @classmethod
    def load(cls, path: str | Path) -> "ConstraintSet":
        path = Path(path)
        try:
            text = path.read_text(encoding="utf-8")
        except OSError as exc:
            raise ConstraintError(f"{path}: cannot read the constraint file ({exc.strerror})") from None
        except UnicodeDecodeError:
            raise ConstraintError(f"{path}: the constraint file is not UTF-8 text") from None
        return cls.from_text(text, str(path))

    @classmethod
    def from_text(cls, text: str, source: str = "<constraints>") -> "ConstraintSet":
        try:
            data = tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            raise ConstraintError(f"{source}: not valid TOML: {exc}") from None
        return cls.from_dict(data, source)

    @classmethod
    def from_dict(cls, data: dict, source: str = "<constraints>") -> "ConstraintSet":
        """Check everything and raise one :class:`ConstraintError` listing every mistake."""
        labels = data.get("labels")
        ck = _Checker([])
        if not (isinstance(labels, list) and labels and all(isinstance(x, str) and x for x in labels)):
            ck.err("labels", "expected the list of label names this file speaks about, e.g. "
                             'labels = ["author", "title"]')
            labels = []
        elif len(set(labels)) != len(labels):
            dup = sorted({x for x in labels if labels.count(x) > 1})
            ck.err("labels", f"listed twice: {', '.join(dup)}")
        ck.labels = list(dict.fromkeys(labels))
        for key in data:
            if key not in _TOP_KEYS:
                ck.err(key, _unknown_key(key, _TOP_KEYS))
        defaults = data.get("defaults", {})
        if not isinstance(defaults, dict):
            ck.err("defaults", "expected a table [defaults] with hard, weight, shape")
            defaults = {}
        for key in defaults:
            if key not in _DEFAULT_KEYS:
                ck.err(f"defaults.{key}", _unknown_key(key, _DEFAULT_KEYS))
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
                rule = _parse_rule(ck, item, path, level, table, d_hard, d_weight, d_shape)
                if rule is not None:
                    rules.append(rule)
        if not data.get("instance") and not data.get("corpus") and not ck.errors:
            ck.err("instance", "the file has no [[instance]] or [[corpus]] constraint")
        if ck.errors:
            n = len(ck.errors)
            raise ConstraintError(f"{source}: {n} mistake{'s' if n > 1 else ''} in the constraint "
                                  f"file:\n" + "\n".join(ck.errors))
        desc = data.get("description", "")
        return cls(ck.labels, rules, source, desc if isinstance(desc, str) else "")

    # ---- compilation
    def compile(self, label_names: Sequence[str]) -> "CompiledConstraints":
        """Arrays over the model's labels. Every label of the file must be one of them."""
        names = list(label_names)
        missing = [lab for lab in self.labels if lab not in names]
        if missing:
            raise ConstraintError(
                f"{self.source}: label(s) {', '.join(missing)} of the constraint file are not "
                f"labels of the model ({', '.join(names)})")
        return CompiledConstraints(self, names)


def _unknown_key(key: str, known) -> str:
    close = difflib.get_close_matches(key, sorted(known), n=1, cutoff=0.6)
    hint = f"; did you mean {close[0]!r}?" if close else ""
    return f"unknown key {key!r}{hint} (known: {', '.join(sorted(known))})"


def _parse_rule(ck: _Checker, item: dict, path: str, level: str, table: dict, d_hard, d_weight,
                d_shape) -> Rule | None:
    rule = item.get("rule")
    if rule not in table:
        other = CORPUS_RULES if level == "instance" else INSTANCE_RULES
        if rule in other:
            ck.err(f"{path}.rule", f"{rule!r} is a {'corpus' if level == 'instance' else 'instance'}"
                                   f"-level rule; put it in a [[{'corpus' if level == 'instance' else 'instance'}]] table")
        else:
            close = difflib.get_close_matches(str(rule), list(table), n=1, cutoff=0.5)
            hint = f"did you mean {close[0]!r}? " if close else ""
            ck.err(f"{path}.rule", f"unknown rule {rule!r}; {hint}known {level} rules: "
                                   f"{', '.join(table)}")
        return None
    allowed = _COMMON_KEYS | _RULE_KEYS[rule]
    for key in item:
        if key not in allowed:
            ck.err(f"{path}.{key}", _unknown_key(key, allowed))
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

    if rule in ("start", "one-segment", "count", "label-fraction", "only-inside"):
        if need("labels"):
            labels = ck.label_list(item["labels"], f"{path}.labels", allow_all=(rule != "start"))
    if rule == "tokens":
        if "words" not in item and "pattern" not in item:
            ck.err(path, "the 'tokens' rule needs `words` (a list) or `pattern` (a regular "
                         "expression), or both")
        words = item.get("words", [])
        if isinstance(words, str):
            words = [words]
        if not isinstance(words, list) or not all(isinstance(w, str) and w for w in words):
            ck.err(f"{path}.words", f"expected a list of words (text), got {words!r}")
            words = []
        opts["words"] = sorted({normalize_word(w, cs) for w in words})
        if "pattern" in item:
            opts["pattern"] = ck.pattern(item["pattern"], f"{path}.pattern", cs)
        has_take, has_avoid = "take" in item, "avoid" in item
        if has_take == has_avoid:
            ck.err(path, "the 'tokens' rule needs exactly one of `take` (labels these tokens "
                         "must have) or `avoid` (labels they must not have)")
        elif has_take:
            labels = ck.label_list(item["take"], f"{path}.take")
            opts["mode"] = "take"
        else:
            labels = ck.label_list(item["avoid"], f"{path}.avoid")
            opts["mode"] = "avoid"
    if rule == "only-inside":
        prop, pat = item.get("property"), item.get("pattern")
        if (prop is None) == (pat is None):
            ck.err(path, "the 'only-inside' rule needs exactly one of `property` "
                         f"({', '.join(PROPERTIES)}) or `pattern`")
        elif prop is not None:
            if prop not in PROPERTIES:
                close = difflib.get_close_matches(str(prop), list(PROPERTIES), n=1, cutoff=0.5)
                hint = f"did you mean {close[0]!r}? " if close else ""
                ck.err(f"{path}.property", f"unknown property {prop!r}; {hint}known: "
                                           f"{', '.join(PROPERTIES)}")
            opts["property"] = prop
        else:
            opts["pattern"] = ck.pattern(pat, f"{path}.pattern", cs)
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


# ---------------------------------------------------------------------------------------------
# compiled arrays


@dataclass
class TokenIndicators:
    """Per-token indicators of one corpus: ``ind[r, i]`` for indicator row r and token i."""

    ind: np.ndarray        # uint8 (n_rows, N)
    offsets: np.ndarray    # int64 (n_sequences + 1)

    @property
    def n_sequences(self) -> int:
        return len(self.offsets) - 1

    @staticmethod
    def concatenate(parts: Sequence["TokenIndicators"]) -> "TokenIndicators":
        ind = np.concatenate([p.ind for p in parts], axis=1) if parts else np.zeros((0, 0), np.uint8)
        offs = [np.zeros(1, np.int64)]
        base = 0
        for p in parts:
            offs.append(p.offsets[1:] + base)
            base += int(p.offsets[-1])
        return TokenIndicators(np.ascontiguousarray(ind), np.concatenate(offs))


@dataclass
class ConstraintData:
    """Compiled constraints together with the token indicators of the corpus they apply to
    (what a learner receives in ``TrainingProblem.constraints``)."""

    compiled: "CompiledConstraints"
    indicators: TokenIndicators


class CompiledConstraints:
    """A constraint set over a model's label list, as arrays for the numba kernels.

    Instance constraint c: ``kind[c]``, ``mask[c, l]`` (the "bad" labels of a unary rule, the
    labels concerned otherwise), indicator row ``row[c]`` (-1: none), bounds ``lo[c]``/``hi[c]``,
    weight ``weight[c]``, ``squared[c]``, ``hard[c]``. Corpus constraint k: ``ckind[k]``,
    ``cmask[k, l]``, ``crow[k]``, ``target[k]``, ``tol[k]``, ``cweight[k]``, ``csquared[k]``,
    ``chard[k]``. Indicator rows are computed per corpus by :meth:`indicators`.
    """

    def __init__(self, spec: ConstraintSet, label_names: list[str]):
        self.spec = spec
        self.label_names = list(label_names)
        L = len(label_names)
        lid = {lab: i for i, lab in enumerate(label_names)}
        inst = [r for r in spec.rules if r.level == "instance"]
        corp = [r for r in spec.rules if r.level == "corpus"]
        self.instance_rules, self.corpus_rules = inst, corp
        C, K = len(inst), len(corp)
        self.kind = np.zeros(C, np.int32)
        self.mask = np.zeros((max(C, 1), L), np.bool_)[:C]
        self.row = np.full(C, -1, np.int32)
        self.lo = np.zeros(C)
        self.hi = np.zeros(C)
        self.weight = np.zeros(C)
        self.squared = np.zeros(C, np.bool_)
        self.hard = np.zeros(C, np.bool_)
        # indicator rows: ("start",) / ("tokens", rule index) / ("boundary",)
        self._row_defs: list[tuple] = []
        row_of: dict = {}

        def row_for(key, make):
            if key not in row_of:
                row_of[key] = len(self._row_defs)
                self._row_defs.append(make)
            return row_of[key]

        for c, r in enumerate(inst):
            ids = [lid[x] for x in r.labels]
            self.weight[c], self.squared[c], self.hard[c] = r.weight, r.shape == "squared", r.hard
            if r.rule == "start":
                self.kind[c] = UNARY
                self.mask[c, :] = True
                self.mask[c, ids] = False
                self.row[c] = row_for(("start",), ("start",))
            elif r.rule in ("tokens", "only-inside"):
                self.kind[c] = UNARY
                if r.rule == "tokens" and r.options["mode"] == "avoid":
                    self.mask[c, ids] = True
                else:
                    self.mask[c, :] = True
                    self.mask[c, ids] = False
                self.row[c] = row_for(("rule", c), ("rule", r))
            elif r.rule == "one-segment":
                self.kind[c] = SEGMENTS
                self.mask[c, ids] = True
            elif r.rule == "change-on-punctuation":
                self.kind[c] = CHANGES
                self.row[c] = row_for(("boundary",), ("boundary",))
            elif r.rule == "count":
                self.kind[c] = COUNT_TOKENS if r.options["unit"] == "tokens" else COUNT_SEGMENTS
                self.mask[c, ids] = True
                self.lo[c] = r.options["min"]
                self.hi[c] = np.inf if r.options["max"] is None else r.options["max"]
        self.ckind = np.zeros(K, np.int32)
        self.cmask = np.zeros((max(K, 1), L), np.bool_)[:K]
        self.crow = np.full(K, -1, np.int32)
        self.target = np.zeros(K)
        self.tol = np.zeros(K)
        self.cweight = np.zeros(K)
        self.csquared = np.zeros(K, np.bool_)
        self.chard = np.zeros(K, np.bool_)
        for k, r in enumerate(corp):
            self.cweight[k], self.csquared[k], self.chard[k] = r.weight, r.shape == "squared", r.hard
            self.target[k], self.tol[k] = r.options["fraction"], r.options["tolerance"]
            if r.rule == "label-fraction":
                self.ckind[k] = FRACTION_LABEL
                self.cmask[k, [lid[x] for x in r.labels]] = True
            else:
                self.ckind[k] = FRACTION_CHANGE
                self.crow[k] = row_for(("boundary",), ("boundary",))
        self.n_rows = len(self._row_defs)

    @property
    def n_labels(self) -> int:
        return len(self.label_names)

    @property
    def n_instance(self) -> int:
        return len(self.kind)

    @property
    def n_corpus(self) -> int:
        return len(self.ckind)

    @property
    def names(self) -> list[str]:
        return [r.name for r in self.instance_rules] + [r.name for r in self.corpus_rules]

    def indicators(self, sentences: Sequence) -> TokenIndicators:
        """Token indicator rows for ``sentences`` (``Sentence`` records or token lists).

        Row kinds: sequence start; a rule's word list / pattern / property; a "boundary not
        on punctuation" row (token t: the change between t-1 and t would not be on
        punctuation)."""
        toks_list = [getattr(s, "tokens", s) for s in sentences]
        lengths = np.fromiter((len(t) for t in toks_list), np.int64, len(toks_list))
        offsets = np.zeros(len(toks_list) + 1, np.int64)
        np.cumsum(lengths, out=offsets[1:])
        N = int(offsets[-1])
        ind = np.zeros((self.n_rows, N), np.uint8)
        flat = [tok for toks in toks_list for tok in toks]
        for r, d in enumerate(self._row_defs):
            if d[0] == "start":
                ind[r, offsets[:-1][lengths > 0]] = 1
            elif d[0] == "boundary":
                for s, toks in enumerate(toks_list):
                    a = int(offsets[s])
                    for t in range(1, len(toks)):
                        if not boundary_on_punctuation(toks[t - 1], toks[t]):
                            ind[r, a + t] = 1
            else:
                rule: Rule = d[1]
                ind[r] = _rule_matches(rule, flat)
        return TokenIndicators(ind, offsets)


def _rule_matches(rule: Rule, tokens: list[str]) -> np.ndarray:
    cs = rule.options.get("case_sensitive", False)
    words = set(rule.options.get("words", ()))
    pat = rule.options.get("pattern")
    prop = rule.options.get("property")
    out = np.zeros(len(tokens), np.uint8)
    cache: dict[str, int] = {}
    for i, tok in enumerate(tokens):
        v = cache.get(tok)
        if v is None:
            hit = False
            if words and normalize_word(tok, cs) in words:
                hit = True
            if not hit and pat is not None and pat.search(tok):
                hit = True
            if not hit and prop is not None and _has_property(tok, prop):
                hit = True
            v = cache[tok] = int(hit)
        out[i] = v
    return out


# ---------------------------------------------------------------------------------------------
# numba kernels: counts


@numba.njit(**NUMBA_OPTS)
def _sequence_phi(y, ind, a, b, kind, mask, row, out):
    """phi_c of the sequence on tokens a..b-1 (labels y[a:b]) for every instance constraint."""
    C = kind.shape[0]
    L = mask.shape[1]
    segs = np.zeros(L, np.int64)
    for t in range(a, b):
        if t == a or y[t] != y[t - 1]:
            segs[y[t]] += 1
    for c in range(C):
        k = kind[c]
        v = 0.0
        if k == UNARY:
            r = row[c]
            for t in range(a, b):
                if ind[r, t] and mask[c, y[t]]:
                    v += 1.0
        elif k == SEGMENTS:
            for lab in range(L):
                if mask[c, lab] and segs[lab] > 1:
                    v += segs[lab] - 1
        elif k == CHANGES:
            r = row[c]
            for t in range(a + 1, b):
                if y[t] != y[t - 1] and ind[r, t]:
                    v += 1.0
        elif k == COUNT_TOKENS:
            for t in range(a, b):
                if mask[c, y[t]]:
                    v += 1.0
        else:  # COUNT_SEGMENTS
            for lab in range(L):
                if mask[c, lab]:
                    v += segs[lab]
        out[c] = v


@numba.njit(**NUMBA_PARALLEL_OPTS)
def _all_phi(y, ind, offsets, kind, mask, row, out):
    for s in numba.prange(offsets.shape[0] - 1):
        _sequence_phi(y, ind, offsets[s], offsets[s + 1], kind, mask, row, out[s])


@numba.njit(**NUMBA_OPTS)
def _sequence_corpus(y, ind, a, b, ckind, cmask, crow, num, den):
    """num[k], den[k]: one sequence's share of every corpus constraint's totals."""
    for k in range(ckind.shape[0]):
        n = 0.0
        d = 0.0
        if ckind[k] == FRACTION_LABEL:
            for t in range(a, b):
                if cmask[k, y[t]]:
                    n += 1.0
            d = b - a
        else:
            r = crow[k]
            for t in range(a + 1, b):
                if y[t] != y[t - 1]:
                    d += 1.0
                    if ind[r, t]:
                        n += 1.0
        num[k] = n
        den[k] = d


@numba.njit(**NUMBA_OPTS)
def _corpus_parts(y, ind, offsets, ckind, cmask, crow, num, den):
    """num[k], den[k]: the corpus totals of every corpus constraint's ratio."""
    for k in range(ckind.shape[0]):
        num[k] = 0.0
        den[k] = 0.0
    for s in range(offsets.shape[0] - 1):
        a, b = offsets[s], offsets[s + 1]
        for k in range(ckind.shape[0]):
            if ckind[k] == FRACTION_LABEL:
                for t in range(a, b):
                    if cmask[k, y[t]]:
                        num[k] += 1.0
                den[k] += b - a
            else:
                r = crow[k]
                for t in range(a + 1, b):
                    if y[t] != y[t - 1]:
                        den[k] += 1.0
                        if ind[r, t]:
                            num[k] += 1.0


@numba.njit(**NUMBA_OPTS)
def _excess(phi, lo, hi):
    d = 0.0
    if phi > hi:
        d += phi - hi
    if phi < lo:
        d += lo - phi
    return d


@numba.njit(**NUMBA_OPTS)
def _shaped(d, squared):
    return d * d if squared else d


@numba.njit(**NUMBA_OPTS)
def _instance_penalty(phi, lo, hi, rho, squared):
    p = 0.0
    for c in range(phi.shape[0]):
        p += rho[c] * _shaped(_excess(phi[c], lo[c], hi[c]), squared[c])
    return p


@numba.njit(**NUMBA_OPTS)
def _corpus_penalty(num, den, target, tol, crho, csquared, n_seq):
    p = 0.0
    for k in range(num.shape[0]):
        r = num[k] / den[k] if den[k] > 0 else target[k]
        d = abs(r - target[k]) - tol[k]
        if d > 0:
            p += crho[k] * n_seq * _shaped(d, csquared[k])
    return p


# ---------------------------------------------------------------------------------------------
# numba kernels: the change of everything when y[t] switches to a new label


@numba.njit(**NUMBA_OPTS)
def switch_phi(y, ind, a, b, t, new, kind, mask, row, segs, phi, out):
    """New phi of the sequence a..b-1 if y[t] became ``new`` (``segs``: its segments per label,
    ``phi``: its current phi). O(C) plus O(1) per constraint."""
    old = y[t]
    # segment-start changes at t and t+1: (label, +-1) for up to four entries
    dl = np.empty(4, np.int64)
    dv = np.empty(4, np.int64)
    n = 0
    s_old = t == a or y[t - 1] != old
    s_new = t == a or y[t - 1] != new
    if s_old:
        dl[n] = old
        dv[n] = -1
        n += 1
    if s_new:
        dl[n] = new
        dv[n] = 1
        n += 1
    if t + 1 < b:
        nx = y[t + 1]
        before = nx != old
        after = nx != new
        if before != after:
            dl[n] = nx
            dv[n] = 1 if after else -1
            n += 1
    for c in range(kind.shape[0]):
        k = kind[c]
        v = phi[c]
        if k == UNARY:
            r = row[c]
            if ind[r, t]:
                v += (1.0 if mask[c, new] else 0.0) - (1.0 if mask[c, old] else 0.0)
        elif k == SEGMENTS:
            # labels touched: apply all deltas to the touched labels' excess
            for i in range(n):
                lab = dl[i]
                if not mask[c, lab]:
                    continue
                # was this label already handled by an earlier entry?
                seen = False
                for j in range(i):
                    if dl[j] == lab:
                        seen = True
                if seen:
                    continue
                tot = 0
                for j in range(n):
                    if dl[j] == lab:
                        tot += dv[j]
                before_e = segs[lab] - 1 if segs[lab] > 1 else 0
                after_s = segs[lab] + tot
                after_e = after_s - 1 if after_s > 1 else 0
                v += after_e - before_e
        elif k == CHANGES:
            r = row[c]
            if t > a and ind[r, t]:
                v += (1.0 if y[t - 1] != new else 0.0) - (1.0 if y[t - 1] != old else 0.0)
            if t + 1 < b and ind[r, t + 1]:
                v += (1.0 if y[t + 1] != new else 0.0) - (1.0 if y[t + 1] != old else 0.0)
        elif k == COUNT_TOKENS:
            v += (1.0 if mask[c, new] else 0.0) - (1.0 if mask[c, old] else 0.0)
        else:
            for i in range(n):
                if mask[c, dl[i]]:
                    v += dv[i]
        out[c] = v


@numba.njit(**NUMBA_OPTS)
def switch_corpus(y, ind, a, b, t, new, ckind, cmask, crow, dnum, dden):
    """Change of every corpus total if y[t] became ``new``."""
    old = y[t]
    for k in range(ckind.shape[0]):
        dn = 0.0
        dd = 0.0
        if ckind[k] == FRACTION_LABEL:
            dn = (1.0 if cmask[k, new] else 0.0) - (1.0 if cmask[k, old] else 0.0)
        else:
            r = crow[k]
            if t > a:
                ch_o = 1.0 if y[t - 1] != old else 0.0
                ch_n = 1.0 if y[t - 1] != new else 0.0
                dd += ch_n - ch_o
                if ind[r, t]:
                    dn += ch_n - ch_o
            if t + 1 < b:
                ch_o = 1.0 if y[t + 1] != old else 0.0
                ch_n = 1.0 if y[t + 1] != new else 0.0
                dd += ch_n - ch_o
                if ind[r, t + 1]:
                    dn += ch_n - ch_o
        dnum[k] = dn
        dden[k] = dd


@numba.njit(**NUMBA_OPTS)
def _segments_of(y, a, b, segs):
    for lab in range(segs.shape[0]):
        segs[lab] = 0
    for t in range(a, b):
        if t == a or y[t] != y[t - 1]:
            segs[y[t]] += 1


@numba.njit(**NUMBA_PARALLEL_OPTS)
def _all_segments(y, offsets, segs):
    for s in numba.prange(offsets.shape[0] - 1):
        _segments_of(y, offsets[s], offsets[s + 1], segs[s])


# ---------------------------------------------------------------------------------------------
# the state the label switching works on


class ViolationState:
    """Violation counts of a labeled corpus, kept up to date under single-label switches.

    ``phi`` (n_sequences, C) per sequence and constraint; ``num`` / ``den`` the corpus totals;
    ``segs`` (n_sequences, L) segment counts. ``rho`` / ``crho`` are the penalty weights in
    use (the file's weights, hard ones replaced by ``hard_weight``).
    """

    def __init__(self, cc: CompiledConstraints, ti: TokenIndicators, y: np.ndarray,
                 hard_weight: float = 1000.0, scale: float = 1.0):
        self.cc, self.ti = cc, ti
        self.y = np.ascontiguousarray(y, dtype=np.int32)
        n = ti.n_sequences
        self.rho = np.where(cc.hard, hard_weight, cc.weight) * scale
        self.crho = np.where(cc.chard, hard_weight, cc.cweight) * scale
        self.phi = np.zeros((n, cc.n_instance))
        self.segs = np.zeros((n, cc.n_labels), np.int64)
        self.num = np.zeros(cc.n_corpus)
        self.den = np.zeros(cc.n_corpus)
        self.recount()

    def recount(self) -> None:
        cc, ti = self.cc, self.ti
        _all_phi(self.y, ti.ind, ti.offsets, cc.kind, cc.mask, cc.row, self.phi)
        _all_segments(self.y, ti.offsets, self.segs)
        _corpus_parts(self.y, ti.ind, ti.offsets, cc.ckind, cc.cmask, cc.crow, self.num, self.den)

    def penalty(self) -> float:
        cc = self.cc
        total = 0.0
        for s in range(self.phi.shape[0]):
            total += _instance_penalty(self.phi[s], cc.lo, cc.hi, self.rho, cc.squared)
        return total + _corpus_penalty(self.num, self.den, cc.target, cc.tol, self.crho,
                                       cc.csquared, self.ti.n_sequences)

    def args(self) -> tuple:
        """Everything the switching kernels take, in their order."""
        cc, ti = self.cc, self.ti
        return (ti.ind, ti.offsets, cc.kind, cc.mask, cc.row, cc.lo, cc.hi, self.rho, cc.squared,
                cc.ckind, cc.cmask, cc.crow, cc.target, cc.tol, self.crho, cc.csquared,
                self.phi, self.segs, self.num, self.den)


@numba.njit(**NUMBA_OPTS)
def switch_penalty_delta(y, s, t, new, ind, offsets, kind, mask, row, lo, hi, rho, squared,
                         ckind, cmask, crow, target, tol, crho, csquared, phi, segs, num, den,
                         phi_new, dnum, dden):
    """Change of the total penalty if y[t] (in sequence s) became ``new``; fills phi_new,
    dnum, dden for :func:`apply_switch`."""
    a, b = offsets[s], offsets[s + 1]
    switch_phi(y, ind, a, b, t, new, kind, mask, row, segs[s], phi[s], phi_new)
    delta = _instance_penalty(phi_new, lo, hi, rho, squared) - \
        _instance_penalty(phi[s], lo, hi, rho, squared)
    if ckind.shape[0] > 0:
        switch_corpus(y, ind, a, b, t, new, ckind, cmask, crow, dnum, dden)
        n_seq = offsets.shape[0] - 1
        before = _corpus_penalty(num, den, target, tol, crho, csquared, n_seq)
        after = _corpus_penalty(num + dnum, den + dden, target, tol, crho, csquared, n_seq)
        delta += after - before
    return delta


@numba.njit(**NUMBA_OPTS)
def apply_switch(y, s, t, new, offsets, phi, segs, num, den, phi_new, dnum, dden):
    """Make the switch whose delta was just computed."""
    a, b = offsets[s], offsets[s + 1]
    old = y[t]
    # segment bookkeeping
    if t == a or y[t - 1] != old:
        segs[s, old] -= 1
    if t == a or y[t - 1] != new:
        segs[s, new] += 1
    if t + 1 < b:
        nx = y[t + 1]
        if nx != old:
            segs[s, nx] -= 1
        if nx != new:
            segs[s, nx] += 1
    y[t] = new
    for c in range(phi.shape[1]):
        phi[s, c] = phi_new[c]
    for k in range(num.shape[0]):
        num[k] += dnum[k]
        den[k] += dden[k]


def violation_report(cc: CompiledConstraints, ti: TokenIndicators, y: np.ndarray) -> list[dict]:
    """Per constraint: how many sequences violate it (instance) or the corpus ratio (corpus)."""
    st = ViolationState(cc, ti, y)
    rows = []
    n = ti.n_sequences
    for c, r in enumerate(cc.instance_rules):
        d = np.maximum(st.phi[:, c] - cc.hi[c], 0) + np.maximum(cc.lo[c] - st.phi[:, c], 0)
        rows.append({"constraint": r.name, "level": "instance", "hard": r.hard,
                     "violated_sequences": int(np.count_nonzero(d > 0)), "sequences": n,
                     "rate": float(np.count_nonzero(d > 0) / n) if n else 0.0,
                     "violations": float(d.sum())})
    for k, r in enumerate(cc.corpus_rules):
        ratio = st.num[k] / st.den[k] if st.den[k] > 0 else float("nan")
        dev = abs(ratio - cc.target[k]) - cc.tol[k] if st.den[k] > 0 else 0.0
        rows.append({"constraint": r.name, "level": "corpus", "hard": r.hard,
                     "value": float(ratio), "target": float(cc.target[k]),
                     "tolerance": float(cc.tol[k]), "violated": bool(dev > 0),
                     "violation": float(max(dev, 0.0))})
    return rows
