"""The SDM learners on CoNLL-2000 chunking (slow: full-corpus training).

Relative claims only: the EM-style L1-M3N keeps a small fraction of the L2 M3N's weights at
nearly its F1, both learned by the same dual solver on the same data.
"""

from __future__ import annotations

import pytest

from tagger.api import Tagger
from tagger.io import load_corpus


@pytest.fixture(scope="module")
def conll(corpora):
    d = corpora / "conll2000"
    return load_corpus(d / "train.txt"), load_corpus(d / "test.txt")


@pytest.mark.slow
def test_em_is_an_order_of_magnitude_sparser_than_l2_at_nearly_its_f1(conll):
    train, test = conll
    l2 = Tagger(
        features="chunk", learner="m3n-l2", params={"C": 0.1, "epochs": 10}, select=False
    ).fit(train)
    em = Tagger(features="chunk", learner="m3n-em", params={"lambda": 200.0}, select=False).fit(
        train
    )
    f1_l2, f1_em = l2.evaluate(test)["f1"], em.evaluate(test)["f1"]
    assert em.n_nonzero_ * 10 < l2.n_nonzero_
    assert f1_em > f1_l2 - 0.005
    # the dual solver's own bookkeeping: the L2 run's dual never fell and stayed below its primal
    duals = [r["dual"] for r in l2.trace_]
    assert all(b >= a for a, b in zip(duals, duals[1:]))
    assert all(r["objective"] >= r["dual"] for r in l2.trace_)
    # EM removed parameters from its later M-steps
    assert em.trace_[-1]["active"] < em.trace_[0]["active"] / 10
