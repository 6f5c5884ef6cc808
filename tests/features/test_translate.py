"""attribute_map: the same attribute under two featurizers fitted on different sentences, checked
against the attributes' names (an independent path through the vocabularies)."""

from __future__ import annotations

import numpy as np

from tagger.features import FeatureSpec, Featurizer
from tagger.features.translate import attribute_map
from tagger.io import load_corpus

from _helpers import SAMPLE


def test_every_attribute_maps_to_the_attribute_of_the_same_name_or_to_none():
    sentences = load_corpus(SAMPLE, format="conll")
    spec = FeatureSpec.load("chunk")
    first = Featurizer(spec).fit(sentences[::2])  # even sentences
    second = Featurizer(spec).fit(sentences[1::2])  # odd ones: many attributes differ
    mapped = attribute_map(first, second, np.arange(first.n_attributes))
    names = {second.attribute_name(j): j for j in range(second.n_attributes)}
    expected = [names.get(first.attribute_name(i), -1) for i in range(first.n_attributes)]
    assert mapped.tolist() == expected
    assert 0 < int((mapped >= 0).sum()) < first.n_attributes  # both cases happen
