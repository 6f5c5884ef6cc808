"""Models with word-cluster features (tagger.features.word_clusters): the model file keeps the
clusters, so tagging needs no file; a model whose cluster tables were edited away is one line;
clusters made from other text are one warning. These train models, so they live here rather
than with the feature tests, which CI also runs with numba's JIT off."""

from __future__ import annotations

import hashlib
import json
import warnings
import zipfile

import numpy as np
import pytest

from tagger.api import Tagger
from tagger.errors import TaggerWarning
from tagger.features import Featurizer
from tagger.features.word_clusters import (
    UNKNOWN_CLUSTER,
    WordClusters,
)
from tagger.io import read_corpus
from tagger.model.files import HEADER_NAME, HEADER_SHA256_NAME

from _helpers import SAMPLE, SAMPLE_DEV, cluster_spec, run_cli, sample_clusters

NOUNS = ["dog", "cat", "horse", "bird", "fish", "cow", "goat", "mouse"]
VERBS = ["runs", "sleeps", "eats", "jumps", "swims", "sings", "walks", "hides"]


def test_a_model_keeps_its_clusters_and_tags_without_the_file(tmp_path):
    if not SAMPLE.is_file():
        pytest.skip("the sample corpus is missing")
    spec = cluster_spec(tmp_path, sample_clusters())
    train, dev = list(read_corpus(SAMPLE)), list(read_corpus(SAMPLE_DEV))
    tagger = Tagger(features=spec, learner="m3n-owlqn", params={"c1": 0.5}, select=False)
    tagger.fit(train)
    before = tagger.predict(dev)
    tagger.save(tmp_path / "m.tgm")
    (tmp_path / "clusters.tsv").unlink()
    loaded = Tagger.load(tmp_path / "m.tgm")
    assert loaded.predict(dev) == before
    assert np.array_equal(loaded.weights_, tagger.weights_)
    fz = Featurizer(spec).fit(train)
    meta, arrays = fz.to_arrays()
    assert meta["clusters"] == ["clusters.tsv"]
    assert "feat.clusters0.words.data" in arrays


def _edited(model, out, edit):
    """``model`` with its header's features edited by ``edit`` and its checksum renewed."""
    with zipfile.ZipFile(model) as z:
        members = {n: z.read(n) for n in z.namelist()}
    header = json.loads(members[HEADER_NAME])
    edit(header["meta"]["features"])
    members[HEADER_NAME] = json.dumps(header).encode()
    if HEADER_SHA256_NAME in members:
        members[HEADER_SHA256_NAME] = hashlib.sha256(members[HEADER_NAME]).hexdigest().encode()
    with zipfile.ZipFile(out, "w") as z:
        for name, data in members.items():
            z.writestr(name, data)
    return out


@pytest.mark.parametrize(
    "edit, fragment",
    [
        (lambda f: f.update(clusters=["clusters.tsv", "more.tsv"]), "no array feat.clusters1"),
        (lambda f: f.update(clusters="clusters.tsv"), "must be a list of file names"),
        (lambda f: f.pop("clusters"), "the clusters 'clusters.tsv' of a cluster view are not"),
    ],
)
def test_a_model_whose_clusters_were_edited_away_is_one_line_and_reads_no_other_file(
    tmp_path, monkeypatch, edit, fragment
):
    if not SAMPLE.is_file():
        pytest.skip("the sample corpus is missing")
    spec = cluster_spec(tmp_path, sample_clusters())
    tagger = Tagger(features=spec, learner="m3n-owlqn", params={"c1": 0.5}, select=False)
    tagger.fit(list(read_corpus(SAMPLE))).save(tmp_path / "m.tgm")
    bad = _edited(tmp_path / "m.tgm", tmp_path / "bad.tgm", edit)
    monkeypatch.chdir(tmp_path)  # clusters.tsv is here: loading must not read it
    r = run_cli("tag", bad, SAMPLE_DEV)
    assert r.exit_code == 1
    lines = r.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and fragment in lines[0], r.stderr


def test_clusters_made_from_other_text_are_one_warning(tmp_path):
    if not SAMPLE.is_file():
        pytest.skip("the sample corpus is missing")
    train = list(read_corpus(SAMPLE))
    other = WordClusters(tuple(NOUNS + VERBS), tuple(format(i, "05b") for i in range(16)))
    spec = cluster_spec(tmp_path, other)
    words = [tok for s in train for tok in s.columns[0]]
    known = sum(other.path(t) != UNKNOWN_CLUSTER for t in words) / len(words)
    with pytest.warns(TaggerWarning, match=f"know {100 * known:.0f} % of the training tokens"):
        Tagger(features=spec, params={"c1": 0.5}, select=False).fit(train)
    # the sample's own clusters know most of its tokens: no warning
    (tmp_path / "own").mkdir()
    own = cluster_spec(tmp_path / "own", sample_clusters())
    with warnings.catch_warnings():
        warnings.simplefilter("error", TaggerWarning)
        Tagger(features=own, params={"c1": 0.5}, select=False).fit(train)
