"""The state label switching works on (counts, segments and corpus sums kept current under
single-label switches) and the per-rule violation report.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from tagger._config import NUMBA_OPTS
from tagger.constraints.compiled import CompiledConstraints, TokenIndicators
from tagger.constraints.penalties import (
    CorpusRules,
    InstanceRules,
    PenaltyRules,
    all_phi,
    all_segments,
    corpus_parts,
    corpus_penalty,
    instance_penalty,
    switch_corpus,
    switch_phi,
)
from tagger.jit import njit


class Counts(NamedTuple):
    """What a labeling's violations are made of, kept current under switches: ``phi`` (n, C)
    per sequence and instance rule, ``segs`` (n, L) segments per label, ``num`` / ``den`` the
    corpus rules' totals."""

    phi: np.ndarray
    segs: np.ndarray
    num: np.ndarray
    den: np.ndarray


class Proposal(NamedTuple):
    """One proposed switch's new counts (:func:`switch_penalty_delta` fills them,
    :func:`apply_switch` makes them current)."""

    phi: np.ndarray  # float64[C]: the sequence's new phi
    dnum: np.ndarray  # float64[K]: change of the corpus numerators
    dden: np.ndarray  # float64[K]: change of the corpus denominators

    @classmethod
    def empty(cls, n_instance: int, n_corpus: int) -> Proposal:
        return cls(np.zeros(n_instance), np.zeros(n_corpus), np.zeros(n_corpus))


# ---------------------------------------------------------------------------------------------
# the state the label switching works on


class ViolationState:
    """Violation counts of a labeled corpus, kept up to date under single-label switches.

    ``phi`` (n_sequences, C) per sequence and constraint; ``num`` / ``den`` the corpus totals;
    ``segs`` (n_sequences, L) segment counts. ``rho`` / ``crho`` are the penalty weights in
    use (the file's weights, hard ones replaced by ``hard_weight``).
    """

    def __init__(
        self,
        cc: CompiledConstraints,
        ti: TokenIndicators,
        y: np.ndarray,
        hard_weight: float = 1000.0,
        scale: float = 1.0,
    ):
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
        all_phi(self.y, ti.ind, ti.offsets, cc.kind, cc.mask, cc.other, cc.row, self.phi)
        all_segments(self.y, ti.offsets, self.segs)
        corpus_parts(self.y, ti.ind, ti.offsets, cc.ckind, cc.cmask, cc.crow, self.num, self.den)

    def penalty(self) -> float:
        cc = self.cc
        total = 0.0
        for s in range(self.phi.shape[0]):
            total += instance_penalty(self.phi[s], cc.lo, cc.hi, self.rho, cc.squared)
        return total + corpus_penalty(
            self.num, self.den, cc.target, cc.tol, self.crho, cc.csquared, self.ti.n_sequences
        )

    def records(self) -> tuple[PenaltyRules, Counts]:
        """The rules (with the weights in use) and the counts, as the switching kernels take
        them; the counts are this state's own arrays, updated in place."""
        cc, ti = self.cc, self.ti
        rules = PenaltyRules(
            ti.ind,
            ti.offsets,
            InstanceRules(cc.kind, cc.mask, cc.other, cc.row, cc.lo, cc.hi, self.rho, cc.squared),
            CorpusRules(cc.ckind, cc.cmask, cc.crow, cc.target, cc.tol, self.crho, cc.csquared),
        )
        return rules, Counts(self.phi, self.segs, self.num, self.den)


@njit(**NUMBA_OPTS)
def switch_penalty_delta(y, s, t, new, rules, counts, proposal):
    """Change of the total penalty if y[t] (in sequence s) became ``new``; fills
    ``proposal`` for :func:`apply_switch`."""
    ind, offsets = rules.ind, rules.offsets
    kind, mask, other, row, lo, hi, rho, squared = rules.instance
    ckind, cmask, crow, target, tol, crho, csquared = rules.corpus
    phi, segs, num, den = counts
    phi_new, dnum, dden = proposal
    a, b = offsets[s], offsets[s + 1]
    switch_phi(y, ind, a, b, t, new, kind, mask, other, row, segs[s], phi[s], phi_new)
    delta = instance_penalty(phi_new, lo, hi, rho, squared) - instance_penalty(
        phi[s], lo, hi, rho, squared
    )
    if ckind.shape[0] > 0:
        switch_corpus(y, ind, a, b, t, new, ckind, cmask, crow, dnum, dden)
        n_seq = offsets.shape[0] - 1
        before = corpus_penalty(num, den, target, tol, crho, csquared, n_seq)
        after = corpus_penalty(num + dnum, den + dden, target, tol, crho, csquared, n_seq)
        delta += after - before
    return delta


@njit(**NUMBA_OPTS)
def apply_switch(y, s, t, new, offsets, counts, proposal):
    """Make the switch whose delta was just computed."""
    phi, segs, num, den = counts
    phi_new, dnum, dden = proposal
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
        rows.append(
            {
                "constraint": r.name,
                "level": "instance",
                "hard": r.hard,
                "violated_sequences": int(np.count_nonzero(d > 0)),
                "sequences": n,
                "rate": float(np.count_nonzero(d > 0) / n) if n else 0.0,
                "violations": float(d.sum()),
            }
        )
    for k, r in enumerate(cc.corpus_rules):
        ratio = st.num[k] / st.den[k] if st.den[k] > 0 else float("nan")
        dev = abs(ratio - cc.target[k]) - cc.tol[k] if st.den[k] > 0 else 0.0
        rows.append(
            {
                "constraint": r.name,
                "level": "corpus",
                "hard": r.hard,
                "value": float(ratio),
                "target": float(cc.target[k]),
                "tolerance": float(cc.tol[k]),
                "violated": bool(dev > 0),
                "violation": float(max(dev, 0.0)),
            }
        )
    return rows
