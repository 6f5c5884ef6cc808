"""Tagging a model with label-pair templates, or of order 2, under a constraint file: on short
sentences, whose labelings can all be listed, the labeling tagged meets every hard rule and
scores as high (its joint feature vector times the weights) as the best labeling that meets
them (and, at order 2, has only allowed label pairs)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from tagger import jit
from tagger.api import Tagger
from tagger.constraints import ConstraintSet, ViolationState
from tagger.io import load_corpus
from tagger.sentence import Sentence

from _helpers import SAMPLE, SAMPLE_DEV

RULES = """
labels = ["B-NP", "I-NP", "B-VP", "I-VP", "B-PP", "O"]
[defaults]
hard = true
[[instance]]
rule = "start"
labels = ["B-VP", "B-PP", "O"]
[[instance]]
rule = "tokens"
words = ["of", "for", "in"]
take = ["B-PP"]
[[instance]]
rule = "one-segment"
labels = ["B-VP"]
"""


def _features(tmp_path, extra: str) -> str:
    path = tmp_path / "features.toml"
    path.write_text(
        '[featurizer]\ncolumns = ["word", "pos"]\n'
        'templates = ["bias", "word[0]", "pos[0]", "pos[-1]", "pos[1]"]\n' + extra + "\n"
    )
    return str(path)


def _score(tagger, sentence, labels) -> float:
    _, index, model, w = tagger.fitted()
    X = tagger.featurize([sentence])
    y = np.array([index.labels.index(lab) for lab in labels], dtype=np.int32)
    return float(model.joint_features(X, 0, y) @ w)


@pytest.mark.parametrize("structure", ['pair_templates = ["pos[0]", "word[0]"]', "order = 2"])
def test_models_beyond_first_order_decode_the_best_labeling_meeting_the_hard_rules(
    tmp_path, structure
):
    train = load_corpus(SAMPLE, "conll")
    features = _features(tmp_path, structure)
    tagger = Tagger(features=features, learner="crf-l1", params={"epochs": 25}, select=False)
    tagger.fit(train)
    rules = ConstraintSet.from_text(RULES)
    cc = tagger.compile_constraints(rules)
    names = tagger.labels_.labels
    second = tagger.fitted()[2].second  # the allowed label pairs of an order-2 model
    dev = load_corpus(SAMPLE_DEV, "conll")
    short = [Sentence([c[:3] for c in s.columns], None) for s in dev[:6]]
    short.append(Sentence([["rates", "of", "interest"], ["NNS", "IN", "NN"]], None))
    predicted = tagger.predict(short, constraints=rules)
    unconstrained = tagger.predict(short)
    moved = 0
    for s, labels, free in zip(short, predicted, unconstrained):
        ids = np.array([names.index(lab) for lab in labels], np.int32)
        assert ViolationState(cc, cc.indicators([s]), ids).penalty() == 0
        best = -np.inf
        for cand in itertools.product(names, repeat=len(s)):
            y = np.array([names.index(lab) for lab in cand], np.int32)
            if second is not None and not second.allows(y):
                continue
            if ViolationState(cc, cc.indicators([s]), y).penalty() == 0:
                best = max(best, _score(tagger, s, cand))
        assert _score(tagger, s, labels) == pytest.approx(best, abs=1e-9)
        moved += labels != free
    assert moved > 0  # the rules changed some predictions: the test decides something


@pytest.mark.parametrize("structure", ['pair_templates = ["pos[0]"]', "order = 2"])
def test_the_parallel_kernel_tags_as_the_serial_twin_does(tmp_path, structure):
    """Constrained tagging of a model beyond first order by the parallel kernel (large
    inputs) and by its serial twin: the same labels."""
    train = load_corpus(SAMPLE, "conll")
    tagger = Tagger(
        features=_features(tmp_path, structure),
        learner="crf-l1",
        params={"epochs": 10},
        select=False,
    )
    tagger.fit(train)
    rules = ConstraintSet.from_text(RULES)
    dev = load_corpus(SAMPLE_DEV, "conll")
    before = jit.parallel_min_bytes()
    try:
        jit.set_parallel_min_bytes(jit.PARALLEL_MIN_BYTES)
        serial = tagger.predict(dev, constraints=rules)
        jit.set_parallel_min_bytes(0)
        parallel = tagger.predict(dev, constraints=rules)
    finally:
        jit.set_parallel_min_bytes(before)
    assert serial == parallel
