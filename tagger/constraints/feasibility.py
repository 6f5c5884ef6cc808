"""Hard rules that no labeling can meet together, found on the text and named rule by rule.

For each sentence, the expanded-state Viterbi of :mod:`tagger.constraints.decoding` knows
whether some labeling meets every hard rule it enforces exactly (start, end, token and
property rules, ``one-segment``, ``change-on-punctuation``, ``contains``, ``order``); where
none does, it decodes the labeling that breaks the fewest. A file whose hard rules contradict
each other on every sentence (two ``start`` rules without a label in common, a word list that
sends a word to a label another rule forbids there) is a mistake, and one that does so on some
sentences is worth knowing about: training would impute labelings that break the rules anyway.

:func:`feasible_sentences` decodes the sentences with scores that carry no information (only
keeping a label from one token to the next is rewarded, which keeps the decoding cheap), so that
the rules alone decide whether a labeling exists. :func:`conflicting_rules` names the rules
that conflict on one sentence by a deletion filter: each hard rule in turn is left out, and
stays out when the others still leave no labeling; every rule left is then needed for the
conflict. :func:`infeasible_report` gives both (``tagger constraints check`` prints it), and
:func:`check_feasible` words them as the one line training raises, when no sentence has a
labeling, or warns, when most have none.

Hard ``count`` rules, and ``one-segment`` rules over more labels than the expanded state
carries, are met by label switching, not by the Viterbi: a conflict that involves them is not
found here.
"""

from __future__ import annotations

import copy
import warnings

import numpy as np

from tagger.constraints.compiled import CompiledConstraints, TokenIndicators
from tagger.constraints.decoding import constrained_decode
from tagger.constraints.rules import Rule, listed_rules
from tagger.errors import ConstraintError, TaggerWarning


def feasible_sentences(cc: CompiledConstraints, ti: TokenIndicators) -> np.ndarray:
    """bool per sentence of ``ti``: whether some labeling meets every hard rule of ``cc`` that
    the expanded-state Viterbi enforces (an empty sentence always has one)."""
    offsets = np.ascontiguousarray(ti.offsets, dtype=np.int64)
    L = cc.n_labels
    state = np.zeros((int(offsets[-1]), L))
    # any scores would do; rewarding a label kept from one token to the next makes the best
    # path split few segments, so the lazy expansion needs few one-segment bits
    stay = np.eye(L)
    _, feasible = constrained_decode(state, offsets, stay, cc, ti, soft=False, max_passes=0)
    return feasible


def _with_hard(cc: CompiledConstraints, keep: list[int]) -> CompiledConstraints:
    """``cc`` with only the instance rules ``keep`` hard (the others soft; decoding with
    ``soft=False`` then ignores them). The indicator rows stay those of ``cc``."""
    out = copy.copy(cc)
    out.hard = np.zeros_like(cc.hard)
    out.hard[keep] = True
    return out


def conflicting_rules(cc: CompiledConstraints, ti: TokenIndicators, s: int) -> list[Rule]:
    """Hard instance rules of ``cc`` that leave no labeling of sentence ``s`` of ``ti``
    together, each of them needed for that (the module docstring's deletion filter); empty when
    the sentence has a labeling."""
    one = ti.sentences(s, s + 1)
    active = [c for c in range(cc.n_instance) if cc.hard[c]]
    if feasible_sentences(_with_hard(cc, active), one)[0]:
        return []
    for c in list(active):
        trial = [x for x in active if x != c]
        if not feasible_sentences(_with_hard(cc, trial), one)[0]:
            active = trial
    return [cc.instance_rules[c] for c in active]


def infeasible_report(
    cc: CompiledConstraints, ti: TokenIndicators, feasible: np.ndarray | None = None
) -> dict | None:
    """None when the hard rules of ``cc`` leave some labeling of every non-empty sentence of
    ``ti``; else ``{"sentences": how many have none, "of": non-empty sentences, "first": the
    first such sentence's index, "rules": the rules that conflict there, "conflict": those
    rules in words}``. ``feasible``: :func:`feasible_sentences`'s answer, when known."""
    empty = np.diff(ti.offsets) == 0
    if feasible is None:
        feasible = feasible_sentences(cc, ti)
    bad = np.flatnonzero(~feasible & ~empty)
    if not len(bad):
        return None
    first = int(bad[0])
    found = conflicting_rules(cc, ti, first)
    verb = {1: "cannot hold", 2: "cannot both hold"}.get(len(found), "cannot all hold")
    return {
        "sentences": len(bad),
        "of": int((~empty).sum()),
        "first": first,
        "rules": [rule.path for rule in found],
        "conflict": f"{listed_rules(found)} {verb}",
    }


def check_feasible(
    cc: CompiledConstraints,
    ti: TokenIndicators,
    source: str,
    what: str,
    warn_share: float = 0.5,
) -> None:
    """Before training on the sentences of ``ti`` (the ``what``, e.g. "unlabeled data"): one
    :class:`~tagger.errors.ConstraintError` when the hard rules of ``cc`` leave no labeling of
    any of them, one warning line when they leave none for more than ``warn_share`` of them
    (a few such sentences are expected, and decoded breaking the fewest rules: a year inside a
    title where years must be DATE), each naming the rules that conflict on the first."""
    feasible = feasible_sentences(cc, ti)
    n_text = int((np.diff(ti.offsets) > 0).sum())
    if int((~feasible).sum()) <= warn_share * n_text:  # (an empty sentence is feasible)
        return
    found = infeasible_report(cc, ti, feasible)
    assert found is not None
    n, of, first = found["sentences"], found["of"], found["first"] + 1
    fix = (
        "make one of them soft (hard = false) or correct it; tagger constraints check "
        "FILE DATA shows what each rule matches"
    )
    if n == of:
        raise ConstraintError(
            f"{source}: the hard rules leave no labeling of any of the {of:,} sentences of the "
            f"{what}: on its sentence {first}, {found['conflict']}; {fix}"
        )
    warnings.warn(
        f"{source}: the hard rules leave no labeling of {n:,} of the {of:,} sentences of the "
        f"{what} (those get the labeling that breaks the fewest): on its sentence {first}, "
        f"{found['conflict']}; {fix}",
        TaggerWarning,
        stacklevel=2,
    )
