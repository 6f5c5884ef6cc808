"""evaluate() against seqeval (default mode, which follows conlleval) and against a direct
token count."""

from __future__ import annotations

import random
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from seqeval.metrics.sequence_labeling import get_entities, precision_recall_fscore_support

from tagger.evaluation.metrics import evaluate, evaluate_ids, format_report
from tagger.io import read_conll

BIO = ["O", "B-NP", "I-NP", "B-VP", "I-VP", "B-PP", "I-PP"]
IOBES = BIO + ["E-NP", "S-NP", "E-VP", "S-VP"]


def seqeval_scores(gold, pred):
    """Overall (micro) and per-type P/R/F1/support from seqeval."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        types = sorted(
            {t for t, _, _ in get_entities(gold)} | {t for t, _, _ in get_entities(pred)}
        )
        if not types:
            return (0.0, 0.0, 0.0), {}
        overall = precision_recall_fscore_support(gold, pred, average="micro")[:3]
        p, r, f, s = precision_recall_fscore_support(gold, pred, average=None)
    per = {t: (float(p[i]), float(r[i]), float(f[i]), int(s[i])) for i, t in enumerate(types)}
    return tuple(float(x) for x in overall), per


def check_against_seqeval(gold, pred):
    res = evaluate(gold, pred)
    assert res["chunk_level"]
    overall, per = seqeval_scores(gold, pred)
    assert (res["precision"], res["recall"], res["f1"]) == overall
    got = {
        t: (m["precision"], m["recall"], m["f1"], m["support"]) for t, m in res["per_label"].items()
    }
    assert got == per
    n_gold = sum(len(get_entities(g)) for g in gold)
    n_pred = sum(len(get_entities(p)) for p in pred)
    assert (res["n_gold_chunks"], res["n_pred_chunks"]) == (n_gold, n_pred)


@st.composite
def paired_bio(draw, alphabet=BIO):
    lengths = draw(st.lists(st.integers(0, 12), min_size=1, max_size=8))
    gold = [draw(st.lists(st.sampled_from(alphabet), min_size=n, max_size=n)) for n in lengths]
    # predictions: mostly copies of gold with edits, so that many chunks match
    pred = []
    for g in gold:
        p = list(g)
        for i in range(len(p)):
            if draw(st.booleans()) and draw(st.booleans()):
                p[i] = draw(st.sampled_from(alphabet))
        pred.append(p)
    return gold, pred


@settings(max_examples=400, deadline=None)
@given(paired_bio())
def test_chunk_scores_match_seqeval(pair):
    gold, pred = pair
    if not any(lab != "O" for g in gold for lab in g):
        gold[0] = gold[0] + ["B-NP"]
        pred[0] = pred[0] + ["O"]
    check_against_seqeval(*pair)


@settings(max_examples=200, deadline=None)
@given(paired_bio(IOBES))
def test_iobes_chunk_scores_match_seqeval(pair):
    gold, pred = pair
    gold[0] = gold[0] + ["S-NP"]
    pred[0] = pred[0] + ["B-VP"]
    check_against_seqeval(gold, pred)


def test_conlleval_corner_cases():
    gold = [["B-NP", "I-NP", "O", "B-VP"], ["I-NP", "B-NP"]]
    pred = [["B-NP", "I-NP", "O", "I-VP"], ["B-NP", "B-NP"]]
    res = evaluate(gold, pred)
    # gold chunks: NP(0,2) VP(3,4) | NP(0,1) NP(1,2); pred: NP(0,2) VP(3,4) | NP(0,1) NP(1,2)
    assert (res["n_gold_chunks"], res["n_pred_chunks"], res["n_correct_chunks"]) == (4, 4, 4)
    assert res["f1"] == 1.0 and res["accuracy"] == 4 / 6
    # chunks do not cross sentences
    res = evaluate([["B-NP"], ["I-NP"]], [["B-NP"], ["I-NP"]])
    assert res["n_gold_chunks"] == 2
    res = evaluate([["B-NP", "I-NP"]], [["B-NP", "I-VP"]])
    assert (res["precision"], res["recall"], res["f1"]) == (0.0, 0.0, 0.0)
    assert set(res["per_label"]) == {"NP", "VP"} and res["per_label"]["VP"]["support"] == 0
    check_against_seqeval(gold, pred)


def test_token_level_for_non_bio_labels():
    gold = [["author", "author", "title"], ["date"]]
    pred = [["author", "title", "title"], ["title"]]
    res = evaluate(gold, pred)
    assert not res["chunk_level"]
    assert res["accuracy"] == 0.5 and res["precision"] == res["recall"] == res["f1"] == 0.5
    assert res["n_tokens"] == 4 and res["n_sentences"] == 2 and res["n_gold_chunks"] is None
    assert res["per_label"]["author"] == {
        "precision": 1.0,
        "recall": 0.5,
        "f1": 2 / 3,
        "support": 2,
    }
    assert res["per_label"]["title"] == {"precision": 1 / 3, "recall": 1.0, "f1": 0.5, "support": 1}
    assert res["per_label"]["date"] == {"precision": 0.0, "recall": 0.0, "f1": 0.0, "support": 1}
    assert "processed 4 tokens" in format_report(res)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.lists(st.sampled_from(["NN", "VB", "DT", "JJ"]), min_size=1, max_size=6),
        min_size=1,
        max_size=5,
    ),
    st.randoms(use_true_random=False),
)
def test_token_level_matches_direct_count(gold, rnd):
    pred = [
        [lab if rnd.random() < 0.6 else rnd.choice(["NN", "VB", "DT", "XX"]) for lab in g]
        for g in gold
    ]
    res = evaluate(gold, pred)
    pairs = [(a, b) for g, p in zip(gold, pred) for a, b in zip(g, p)]
    assert res["accuracy"] == sum(a == b for a, b in pairs) / len(pairs)
    for lab, m in res["per_label"].items():
        tp = sum(a == b == lab for a, b in pairs)
        found = sum(b == lab for _, b in pairs)
        true = sum(a == lab for a, _ in pairs)
        assert m["support"] == true
        assert m["precision"] == (tp / found if found else 0.0)
        assert m["recall"] == (tp / true if true else 0.0)


def test_length_mismatch_is_an_error():
    with pytest.raises(ValueError, match="2 gold sentences but 1"):
        evaluate([["O"], ["O"]], [["O"]])
    with pytest.raises(ValueError, match="sentence 1: 2 gold labels but 1 predicted"):
        evaluate([["O"], ["O", "B-NP"]], [["O"], ["O"]])


def test_evaluate_ids():
    names = ["O", "B-NP", "I-NP"]
    res = evaluate_ids([1, 2, 0, 1], [1, 2, 0, 0], [0, 3, 4], names)
    assert res["chunk_level"] and res["precision"] == 1.0 and res["recall"] == 0.5
    with pytest.raises(ValueError, match="offsets"):
        evaluate_ids([1, 2], [1, 2], [0, 1], names)
    with pytest.raises(ValueError, match="label ids"):
        evaluate_ids([1, 5], [1, 2], [0, 2], names)


def test_conll2000_test_against_seqeval(corpora):
    sents = list(read_conll(corpora / "conll2000" / "test.txt"))
    gold = [s.labels for s in sents]
    labels = sorted({lab for g in gold for lab in g})
    rng = random.Random(1)
    pred = [[lab if rng.random() < 0.9 else rng.choice(labels) for lab in g] for g in gold]
    res = evaluate(gold, pred)
    assert res["n_gold_chunks"] == 23852  # conlleval's count for the CoNLL-2000 test set
    check_against_seqeval(gold, pred)
    assert evaluate(gold, gold)["f1"] == 1.0


def test_per_sentence_shares_add_up_to_the_scores_and_match_each_sentence():
    from tagger.evaluation.labels import bio_spans

    seed = 7
    print("seed", seed)
    rng = np.random.default_rng(seed)
    labels = ["O", "B-NP", "I-NP", "B-VP", "I-VP"]
    gold, pred = [], []
    for _ in range(60):
        n = int(rng.integers(0, 12))
        gold.append([labels[i] for i in rng.integers(0, 5, n)])
        pred.append([labels[i] for i in rng.integers(0, 5, n)])
    for chunk_level in (True, False):
        m = evaluate(gold, pred, chunk_level=chunk_level, per_sentence=True)
        num, den = m["sentence_shares"]
        main = m["f1"] if chunk_level else m["accuracy"]
        assert num.sum() / den.sum() == pytest.approx(main)
        for i, (g, p) in enumerate(zip(gold, pred)):
            if chunk_level:  # 2 TP / (found + gold), sentence by sentence
                gs, ps = set(bio_spans(g)), set(bio_spans(p))
                assert (num[i], den[i]) == (2 * len(gs & ps), len(gs) + len(ps))
            else:
                assert (num[i], den[i]) == (sum(a == b for a, b in zip(g, p)), len(g))
