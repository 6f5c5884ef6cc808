"""Label index and BIO chunk spans; seqeval's get_entities (which follows conlleval) is the
independent oracle for the chunk rules."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from seqeval.metrics.sequence_labeling import get_entities

from tagger.errors import UnknownLabelError
from tagger.evaluation.labels import (
    LabelIndex,
    bio_spans,
    chunk_starts_ends,
    is_bio,
    label_tag_type,
    split_label,
)
from tagger.sentence import Sentence


def test_label_index_from_sentences_is_sorted_and_deterministic():
    sents = [Sentence([["a", "b"]], ["I-NP", "B-NP"]), Sentence([["c"]], ["O"])]
    idx = LabelIndex.from_sentences(sents)
    assert idx.labels == ["B-NP", "I-NP", "O"]
    assert LabelIndex.from_sentences(reversed(sents)) == idx
    assert LabelIndex.from_sentences([["O", "B-NP"], ["I-NP"]]) == idx
    assert len(idx) == 3 and "O" in idx and "X" not in idx and list(idx) == idx.labels
    with pytest.raises(ValueError, match="no labels"):
        LabelIndex.from_sentences([Sentence([["a"]])])


def test_encode_decode():
    idx = LabelIndex(["O", "B-NP", "I-NP"])
    ids = idx.encode(["B-NP", "I-NP", "O", "O"])
    assert ids.dtype == np.int32 and ids.tolist() == [1, 2, 0, 0]
    assert idx.decode(ids) == ["B-NP", "I-NP", "O", "O"]
    assert idx.decode([2, 0]) == ["I-NP", "O"]
    assert idx.encode([]).tolist() == []
    with pytest.raises(UnknownLabelError) as e:
        idx.encode(["O", "B-VP"])
    assert "'B-VP'" in str(e.value) and "O, B-NP, I-NP" in str(e.value)
    with pytest.raises(ValueError, match="out of range"):
        idx.decode([3])
    ids, offsets = idx.encode_many([["O", "B-NP"], [], ["I-NP"]])
    assert ids.tolist() == [0, 1, 2] and offsets.tolist() == [0, 2, 2, 3]


def test_to_list_from_list():
    idx = LabelIndex(["title", "author"])
    assert LabelIndex.from_list(idx.to_list()) == idx
    assert idx.id("author") == 1 and idx.add("date") == 2 and idx.add("title") == 0
    with pytest.raises(ValueError, match="duplicates"):
        LabelIndex.from_list(["a", "b", "a"])
    with pytest.raises(UnknownLabelError):
        idx.id("pages")


def test_is_bio():
    assert is_bio(["O", "B-NP", "I-NP"])
    assert is_bio(["I-NP", "I-VP", "B-NP"])  # IOB1
    assert is_bio(["S-PER", "E-PER", "O"])  # IOBES
    assert is_bio(["O"])
    assert not is_bio([])
    assert not is_bio(["NN", "O"])
    assert not is_bio(["author", "title"])
    assert not is_bio(["B-", "O"])


def test_split_label():
    assert split_label("B-NP") == ("B", "NP")
    assert split_label("I-NP-X") == ("I", "NP-X")
    assert split_label("O") == ("O", "")
    assert split_label("NN") == ("O", "")


def test_bio_spans_conlleval_cases():
    assert bio_spans(["B-NP", "I-NP", "O", "B-VP"]) == [("NP", 0, 2), ("VP", 3, 4)]
    # I- after O starts a chunk; I- of another type starts a chunk (IOB1)
    assert bio_spans(["O", "I-NP", "I-NP", "I-VP"]) == [("NP", 1, 3), ("VP", 3, 4)]
    # B- after I- of the same type starts a new chunk; single-token chunks
    assert bio_spans(["I-NP", "B-NP", "B-NP"]) == [("NP", 0, 1), ("NP", 1, 2), ("NP", 2, 3)]
    # B-X I-Y: type change
    assert bio_spans(["B-NP", "I-PP"]) == [("NP", 0, 1), ("PP", 1, 2)]
    assert bio_spans([]) == []
    assert bio_spans(["O", "O"]) == []
    # IOBES
    assert bio_spans(["S-A", "B-A", "E-A", "E-A", "I-A"]) == [
        ("A", 0, 1),
        ("A", 1, 3),
        ("A", 3, 4),
        ("A", 4, 5),
    ]


BIO = ["O", "B-A", "I-A", "B-B", "I-B", "B-C", "I-C"]
IOBES = BIO + ["E-A", "S-A", "E-B", "S-B"]


def seqeval_spans(labels):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return [(t, s, e + 1) for t, s, e in get_entities(list(labels))]


@settings(max_examples=500, deadline=None)
@given(st.lists(st.sampled_from(BIO), max_size=30))
def test_bio_spans_match_seqeval(labels):
    assert bio_spans(labels) == seqeval_spans(labels)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(IOBES), max_size=30))
def test_iobes_spans_match_seqeval(labels):
    assert bio_spans(labels) == seqeval_spans(labels)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.lists(st.sampled_from(IOBES), max_size=12), max_size=8))
def test_vectorized_spans_match_reference(sentences):
    names = IOBES
    ids = np.array([names.index(x) for s in sentences for x in s], dtype=np.int64)
    offsets = np.cumsum([0] + [len(s) for s in sentences])
    tag_of, type_of, type_names = label_tag_type(names)
    starts, ends, types = chunk_starts_ends(ids, offsets, tag_of, type_of)
    expected = []
    for s, off in zip(sentences, offsets):
        expected.extend((t, a + off, b + off) for t, a, b in bio_spans(s))
    got = [(type_names[t], int(a), int(b)) for t, a, b in zip(types, starts, ends)]
    assert got == expected
