"""A fit in parts (text read in batches and not kept) gives the featurizer of one fit over
the batches joined: the same vocabularies, attributes and features."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from tagger.features import FeatureSpec, Featurizer
from tagger.io import read_corpus

from _helpers import SAMPLE


@pytest.mark.parametrize("preset, min_count", [("chunk", 1), ("chunk", 2), ("pos", 1)])
def test_fit_in_parts_equals_one_fit(preset, min_count):
    sentences = list(read_corpus(SAMPLE))
    spec = dataclasses.replace(FeatureSpec.load(preset), min_count=min_count)
    whole = Featurizer(spec).fit(sentences)
    parts = Featurizer(spec)
    parts.begin_fit()
    cuts = [0, 5, 6, 30, len(sentences)]
    views = [parts.grow_views(sentences[a:b]) for a, b in zip(cuts[:-1], cuts[1:])]
    parts.end_fit(views)
    assert parts.vocabs_ == whole.vocabs_
    np.testing.assert_array_equal(parts.attr_keys_, whole.attr_keys_)
    a, b = whole.transform(sentences), parts.transform(sentences)
    for name in ("indptr", "attrs", "offsets"):
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name))
    # a batch's stored view ids give its features without the text
    first = parts.transform_views(*views[0])
    np.testing.assert_array_equal(first.attrs, whole.transform(sentences[:5]).attrs)
