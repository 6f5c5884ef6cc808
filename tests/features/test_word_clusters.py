"""Word clusters from raw text (tagger.features.word_clusters), the ``cluster`` views that read
them, the model files that keep them, and ``tagger clusters``.

The clustering is checked on a corpus built so that the answer is known: two word classes that
never share a context (nouns after determiners and before verbs, verbs after nouns and before
adverbs), so the first split of the tree must separate them; and the same text always gives
the same file.
"""

from __future__ import annotations

import pickle
import random

import pytest

from tagger.errors import CorpusFormatError, FeatureSpecError
from tagger.features import FeatureSpec
from tagger.features.word_clusters import (
    UNKNOWN_CLUSTER,
    WordClusters,
    cluster_words,
    read_clusters,
    write_clusters,
)
from tagger.io import read_corpus

from _helpers import SAMPLE, cluster_spec, run_cli, sample_clusters

NOUNS = ["dog", "cat", "horse", "bird", "fish", "cow", "goat", "mouse"]
VERBS = ["runs", "sleeps", "eats", "jumps", "swims", "sings", "walks", "hides"]


def _two_class_text(n: int = 3000, seed: int = 0) -> list[list[str]]:
    rng = random.Random(seed)
    det, adv = ["the", "a", "every"], ["fast", "slowly", "often", "quietly"]
    return [
        [rng.choice(det), rng.choice(NOUNS), rng.choice(VERBS), rng.choice(adv)] for _ in range(n)
    ]


def test_the_first_split_separates_words_that_never_share_a_context():
    clusters, counts = cluster_words(_two_class_text(), min_count=1, leaf_size=1)
    path = dict(zip(clusters.words, clusters.bits))
    assert {path[w][0] for w in NOUNS} != {path[w][0] for w in VERBS}
    for group in (NOUNS, VERBS):
        assert len({path[w][0] for w in group}) == 1, {w: path[w] for w in group}
    assert counts["dog"] == sum(s.count("dog") for s in _two_class_text())


def test_the_same_text_gives_the_same_clusters_and_file(tmp_path):
    text = _two_class_text(seed=3)
    a, counts = cluster_words(text, min_count=1)
    b, _ = cluster_words([list(s) for s in text], min_count=1)
    assert a == b
    write_clusters(tmp_path / "a.tsv", a, counts)
    write_clusters(tmp_path / "b.tsv", b, counts)
    assert (tmp_path / "a.tsv").read_bytes() == (tmp_path / "b.tsv").read_bytes()
    back = read_clusters(tmp_path / "a.tsv")
    assert back.words == a.words and back.bits == a.bits


def test_min_count_and_max_words_bound_the_vocabulary():
    text = _two_class_text(500) + [["rare", "words", "once"]]
    clusters, _ = cluster_words(text, min_count=2)
    assert "rare" not in clusters.words and "dog" in clusters.words
    top, counts = cluster_words(text, min_count=1, max_words=5)
    assert len(top) == 5
    kept = {w for w, _ in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:5]}
    assert set(top.words) == kept


def test_words_are_lowercased_unless_asked_and_looked_up_as_written_then_lowercased():
    text = [[w.capitalize() if i % 2 else w for w in s] for i, s in enumerate(_two_class_text())]
    lower, _ = cluster_words(text, min_count=1)
    assert "dog" in lower.words and "Dog" not in lower.words
    assert lower.path("Dog") == lower.path("dog") != UNKNOWN_CLUSTER
    assert lower.path("zebra") == UNKNOWN_CLUSTER
    cased, _ = cluster_words(text, min_count=1, lowercase=False)
    assert "Dog" in cased.words and "dog" in cased.words


def test_too_little_text_is_one_error_naming_the_source():
    with pytest.raises(CorpusFormatError, match="t.txt: fewer than two words occur 2 times"):
        cluster_words([["one", "two"]], source="t.txt")


@pytest.mark.parametrize(
    "content, where, fragment",
    [
        ("0101\n", ":1:", "expected BITS<TAB>WORD"),
        ("0\tcat\n01x\tdog\t3\n", ":2:", "made of 0 and 1"),
        ("01\t\t3\n", ":1:", "the word (second field) is empty"),
        ("01\tdog\t3\n10\tdog\t1\n", ":2:", "the word 'dog' has a cluster already"),
        ("\n", ":", "has no words"),
    ],
)
def test_a_bad_clusters_file_names_its_line(tmp_path, content, where, fragment):
    path = tmp_path / "c.tsv"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(FeatureSpecError) as info:
        read_clusters(path)
    assert str(info.value).startswith(f"{path}{where}") and fragment in str(info.value)


def test_liangs_two_field_layout_is_read(tmp_path):
    path = tmp_path / "paths"
    path.write_text("0\tdog\n10\tcat\n11\tThe\n", encoding="utf-8")
    c = read_clusters(path)
    assert c.path("dog") == "0" and c.path("The") == "11" and c.path("the") == "-"


# ------------------------------------------------------------------ cluster views and models


def test_cluster_views_give_the_path_prefix_and_read_the_file_beside_the_feature_file(tmp_path):
    clusters = sample_clusters()
    spec = cluster_spec(tmp_path, clusters)
    views = {v.name: v.fn for v in spec.views}
    word = clusters.words[0]
    assert views["call"](word) == clusters.path(word)
    assert views["c2"](word) == clusters.path(word)[:2]
    assert views["c2"]("no-such-word-here") == UNKNOWN_CLUSTER
    assert list(spec.cluster_tables) == ["clusters.tsv"]
    again = pickle.loads(pickle.dumps(spec))
    assert again.cluster_tables["clusters.tsv"] == clusters


@pytest.mark.parametrize(
    "options, fragment",
    [
        ({}, "views.c.clusters must name a clusters file"),
        ({"clusters": "c.tsv", "prefix": -1}, "views.c.prefix must be a whole number"),
        ({"clusters": "c.tsv", "prefix": True}, "views.c.prefix must be a whole number"),
        ({"clusters": "missing.tsv"}, "no such clusters file"),
    ],
)
def test_a_bad_cluster_view_is_one_message_with_its_key_path(tmp_path, options, fragment):
    write_clusters(tmp_path / "c.tsv", WordClusters(("a", "b"), ("0", "1")))
    data = {
        "featurizer": {"columns": ["word"], "templates": ["c[0]"]},
        "views": {"c": {"function": "cluster", **options}},
    }
    with pytest.raises(FeatureSpecError, match=fragment):
        FeatureSpec.from_dict(data, base=tmp_path)


# ------------------------------------------------------------------ tagger clusters


def test_the_clusters_command_writes_a_file_train_can_use(tmp_path):
    out = tmp_path / "c.tsv"
    r = run_cli("clusters", SAMPLE, "-o", out)
    assert r.exit_code == 0, r.output
    assert "words in" in r.stderr and "clusters" in r.stderr
    clusters = read_clusters(out)
    assert len(clusters) > 50
    assert clusters == cluster_words([list(s.columns[0]) for s in read_corpus(SAMPLE)])[0]


def test_the_clusters_command_says_when_the_text_is_too_small(tmp_path):
    text = tmp_path / "t.txt"
    text.write_text("just one line\n", encoding="utf-8")
    out = tmp_path / "c.tsv"
    r = run_cli("clusters", text, "-o", out)
    assert r.exit_code == 1
    lines = r.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and "fewer than two words" in lines[0]
    assert not out.exists() and not list(tmp_path.glob(".tagger-*"))
