"""The rules of a :class:`~tagger.constraints.language.ConstraintSet` compiled against a label
list into arrays the numba kernels read (:class:`CompiledConstraints`), and the per-token
indicators that word lists, patterns and token properties become on a corpus
(:class:`TokenIndicators`). Built from :mod:`.rules` alone: the language hands its rules down.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from tagger.constraints.rules import (
    CHANGES,
    CONTAINS,
    COUNT_SEGMENTS,
    COUNT_TOKENS,
    FRACTION_CHANGE,
    FRACTION_LABEL,
    ORDER,
    SEGMENTS,
    UNARY,
    Rule,
    boundary_on_punctuation,
    element_matches,
    has_property,
    normalize_word,
)

# ---------------------------------------------------------------------------------------------
# compiled arrays


@dataclass
class TokenIndicators:
    """Per-token indicators of one corpus: ``ind[r, i]`` for indicator row r and token i."""

    ind: np.ndarray  # uint8 (n_rows, N)
    offsets: np.ndarray  # int64 (n_sequences + 1)

    @property
    def n_sequences(self) -> int:
        return len(self.offsets) - 1

    def sentences(self, start: int, stop: int) -> TokenIndicators:
        """The indicators of sequences start..stop-1 on their own (copies)."""
        t0, t1 = int(self.offsets[start]), int(self.offsets[stop])
        return TokenIndicators(
            np.ascontiguousarray(self.ind[:, t0:t1]), self.offsets[start : stop + 1] - t0
        )

    @staticmethod
    def concatenate(parts: Sequence[TokenIndicators]) -> TokenIndicators:
        ind = (
            np.concatenate([p.ind for p in parts], axis=1) if parts else np.zeros((0, 0), np.uint8)
        )
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

    compiled: CompiledConstraints
    indicators: TokenIndicators


class CompiledConstraints:
    """A constraint set over a model's label list, as arrays for the numba kernels.

    Instance constraint c: ``kind[c]``, ``mask[c, l]`` (the "bad" labels of a unary rule, the
    labels concerned otherwise; an order rule's ``before`` labels), ``other[c, l]`` (an order
    rule's ``after`` labels), indicator row ``row[c]`` (-1: none), bounds ``lo[c]``/``hi[c]``,
    weight ``weight[c]``, ``squared[c]``, ``hard[c]``. Corpus constraint k: ``ckind[k]``,
    ``cmask[k, l]``, ``crow[k]``, ``target[k]``, ``tol[k]``, ``cweight[k]``, ``csquared[k]``,
    ``chard[k]``. Indicator rows are computed per corpus by :meth:`indicators`.
    """

    def __init__(self, rules: Sequence[Rule], label_names: list[str]):
        """``rules``: those of a constraint set, every label they name among ``label_names``
        (:meth:`ConstraintSet.compile` narrows them to a model's labels first)."""
        self.label_names = list(label_names)
        L = len(label_names)
        lid = {lab: i for i, lab in enumerate(label_names)}
        inst = [r for r in rules if r.level == "instance"]
        corp = [r for r in rules if r.level == "corpus"]
        self.instance_rules, self.corpus_rules = inst, corp
        C, K = len(inst), len(corp)
        self.kind = np.zeros(C, np.int32)
        self.mask = np.zeros((max(C, 1), L), np.bool_)[:C]
        self.other = np.zeros((max(C, 1), L), np.bool_)[:C]
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
            if r.rule in ("start", "end"):  # a unary rule on the first (last) token
                self.kind[c] = UNARY
                self.mask[c, :] = True
                self.mask[c, ids] = False
                self.row[c] = row_for((r.rule,), (r.rule,))
            elif r.rule in ("tokens", "only-inside", "contains"):
                self.kind[c] = CONTAINS if r.rule == "contains" else UNARY
                if r.rule == "contains":
                    self.mask[c, ids] = True
                elif r.rule == "tokens" and r.options["mode"] == "avoid":
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
            elif r.rule == "order":
                self.kind[c] = ORDER
                self.mask[c, [lid[x] for x in r.options["before"]]] = True
                self.other[c, [lid[x] for x in r.options["after"]]] = True
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
            self.cweight[k], self.csquared[k], self.chard[k] = (
                r.weight,
                r.shape == "squared",
                r.hard,
            )
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
            elif d[0] == "end":
                ind[r, offsets[1:][lengths > 0] - 1] = 1
            elif d[0] == "boundary":
                for s, toks in enumerate(toks_list):
                    a = int(offsets[s])
                    for t in range(1, len(toks)):
                        if not boundary_on_punctuation(toks[t - 1], toks[t]):
                            ind[r, a + t] = 1
            elif d[1].options.get("sequence"):
                ind[r] = sequence_matches(d[1], toks_list)
            else:
                rule: Rule = d[1]
                ind[r] = rule_matches(rule, flat)
        return TokenIndicators(ind, offsets)


def sequence_matches(rule: Rule, toks_list: list) -> np.ndarray:
    """1 at the ``mark``ed tokens of every run of consecutive tokens (within a sentence)
    matching the rule's ``sequence``."""
    seq, mark = rule.options["sequence"], rule.options["mark"]
    cs = rule.options.get("case_sensitive", False)
    k = len(seq)
    out = []
    for toks in toks_list:
        row = np.zeros(len(toks), np.uint8)
        hit = [[element_matches(el, tok, cs) for tok in toks] for el in seq]
        for t in range(len(toks) - k + 1):
            if all(hit[j][t + j] for j in range(k)):
                row[[t + m for m in mark]] = 1
        out.append(row)
    return np.concatenate(out) if out else np.zeros(0, np.uint8)


def rule_matches(rule: Rule, tokens: list[str]) -> np.ndarray:
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
            if not hit and prop is not None and has_property(tok, prop):
                hit = True
            v = cache[tok] = int(hit)
        out[i] = v
    return out
