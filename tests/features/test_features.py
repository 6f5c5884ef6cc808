"""Feature specifications and the featurizer.

The featurizer never builds attribute strings: it maps view values to integer ids and template
instances to exact 64-bit keys. ``Featurizer.string_attributes`` is the slow string path a
CRFsuite-style tagger would take. The central tests here check that both paths agree token by
token: the names of a token's integer attributes are exactly those of its string attributes
that exist among the fitted attributes. This checks offsets, sentence boundaries (BOS/EOS),
conjunctions and the dropping of attributes with an unknown component.
"""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tagger.errors import FeatureSpecError
from tagger.features import PRESETS, TOKEN_FUNCTIONS, FeatureSpec, Featurizer
from tagger.features.word_clusters import WordClusters
from tagger.io import read_corpus
from tagger.sentence import Sentence

from _helpers import SAMPLES


def _spec(templates, views=None, columns=("word",), clusters=None, **featurizer) -> FeatureSpec:
    data = {"featurizer": {"columns": list(columns), "templates": list(templates), **featurizer}}
    if views:
        data["views"] = views
    return FeatureSpec.from_dict(data, clusters=clusters)


def _sample(name: str) -> list[Sentence]:
    path = SAMPLES / name
    if not path.is_file():
        pytest.skip(f"sample corpus {path} is missing")
    return list(read_corpus(path))


def _token_names(fz: Featurizer, X, i: int) -> list[str]:
    return [fz.attribute_name(int(a)) for a in X.attrs[X.indptr[i] : X.indptr[i + 1]]]


def _all_names(fz: Featurizer) -> list[str]:
    return [fz.attribute_name(i) for i in range(fz.n_attributes)]


def _assert_paths_agree(fz: Featurizer, sentences: list[Sentence]) -> tuple[int, int]:
    """Integer attributes == known string attributes for every token; returns (kept, dropped)."""
    known = set(_all_names(fz))
    X = fz.transform(sentences)
    assert X.n_sentences == len(sentences)
    assert X.n_tokens == sum(len(s) for s in sentences)
    kept = dropped = 0
    for s_idx, sent in enumerate(sentences):
        strings = fz.string_attributes(sent)
        assert len(strings) == len(sent)
        for t, feats in enumerate(strings):
            i = int(X.offsets[s_idx]) + t
            names = _token_names(fz, X, i)
            assert len(names) == len(set(names)), names
            expected = {f for f in feats if f in known}
            assert set(names) == expected, (sent.tokens, t)
            kept += len(expected)
            dropped += len(feats) - len(expected)
    return kept, dropped


# ------------------------------------------------------------------------------ specifications


def test_every_mistake_is_reported_at_once():
    data = {
        "featurizer": {
            "columns": ["word", "pos"],
            "templates": ["word[0]", "nosuch[0]", "word[x]", "pos[-1]|pos[0]"],
            "min_count": 0,
            "colour": "red",
        },
        "views": {"year": {"function": "regex", "pattern": "(19"}},
    }
    with pytest.raises(FeatureSpecError) as info:
        FeatureSpec.from_dict(data)
    msg = str(info.value)
    lines = msg.splitlines()
    assert lines[0] == "invalid feature specification:"
    assert len(lines) == 1 + 5, msg
    expected = {
        "unknown view 'nosuch'": "featurizer.templates[1]",
        "'word[x]' is not of the form view[offset]": "featurizer.templates[2]",
        "not a valid regular expression": "views.year.pattern",
        "unknown key": "featurizer.colour",
        "min_count must be an integer >= 1; got 0": "featurizer.min_count",
    }
    for fragment, where in expected.items():
        hits = [ln for ln in lines[1:] if fragment in ln]
        assert len(hits) == 1, (fragment, msg)
        assert where in hits[0]


@pytest.mark.parametrize(
    "data, fragment",
    [
        (
            {"featurizer": {"columns": [], "templates": ["word[0]"]}},
            "columns must be a non-empty list",
        ),
        (
            {"featurizer": {"columns": ["word"], "templates": []}},
            "templates must be a non-empty list",
        ),
        (
            {"featurizer": {"columns": ["word"], "templates": ["word[0]", "word[ 0 ]"]}},
            "duplicate template 'word[0]'",
        ),
        (
            {
                "featurizer": {"columns": ["word"], "templates": ["x[0]"]},
                "views": {"x": {"function": "suffix"}},
            },
            "views.x.length must be a positive integer",
        ),
        (
            {
                "featurizer": {"columns": ["word"], "templates": ["x[0]"]},
                "views": {"x": {"function": "prefix", "length": 0}},
            },
            "views.x.length",
        ),
        (
            {
                "featurizer": {"columns": ["word"], "templates": ["x[0]"]},
                "views": {"x": {"function": "sparkle"}},
            },
            "unknown token function 'sparkle'",
        ),
        (
            {
                "featurizer": {"columns": ["word"], "templates": ["x[0]"]},
                "views": {"x": {"function": "lower", "column": "pos"}},
            },
            "unknown column 'pos'",
        ),
        (
            {
                "featurizer": {"columns": ["word"], "templates": ["word[0]"]},
                "views": {"word": {"function": "lower"}},
            },
            "already taken",
        ),
        (
            {"featurizer": {"columns": ["word"], "templates": ["word[0]"], "all_pairs": "yes"}},
            "all_pairs must be true or false",
        ),
        (
            {"featurizer": {"columns": ["word"], "templates": ["word[0]"], "min_count": 1.5}},
            "min_count must be an integer",
        ),
        (
            {"featurizer": {"columns": ["word"], "templates": ["word[0]"]}, "extra": {}},
            "extra: unknown table",
        ),
        ({"columns": ["word"]}, "needs a [featurizer] table"),
    ],
)
def test_single_mistakes_are_named(data, fragment):
    with pytest.raises(FeatureSpecError) as info:
        FeatureSpec.from_dict(data)
    assert fragment in str(info.value)


def test_load_from_file_names_the_file(tmp_path):
    good = tmp_path / "good.toml"
    good.write_text(
        '[featurizer]\ncolumns = ["word"]\ntemplates = ["word[0]", "suf[0]"]\n'
        '[views.suf]\nfunction = "suffix"\nlength = 2\n',
        "utf-8",
    )
    spec = FeatureSpec.load(good)
    assert spec.name == "good" and spec.template_names == ["word[0]", "suf[0]"]
    bad = tmp_path / "bad.toml"
    bad.write_text('[featurizer]\ncolumns = ["word"]\ntemplates = ["wrd[0]"]\n', "utf-8")
    with pytest.raises(FeatureSpecError, match="(?s)bad.toml: .*unknown view 'wrd'"):
        FeatureSpec.load(bad)
    broken = tmp_path / "broken.toml"
    broken.write_text("[featurizer\n", "utf-8")
    with pytest.raises(FeatureSpecError, match="not valid TOML"):
        FeatureSpec.load(broken)
    with pytest.raises(FeatureSpecError, match="neither a preset"):
        FeatureSpec.load(tmp_path / "missing.toml")
    latin1 = tmp_path / "latin1.toml"
    latin1.write_bytes(b'[featurizer]\ncolumns = ["mot", "cat\xe9gorie"]\n')
    with pytest.raises(FeatureSpecError, match="latin1.toml: not UTF-8"):
        FeatureSpec.load(latin1)
    with pytest.raises(FeatureSpecError, match="cannot read"):
        FeatureSpec.load(tmp_path)


@pytest.mark.parametrize(
    "data, fragment",
    [
        ({"featurizer": ["word"]}, "featurizer must be a table"),
        (
            {
                "featurizer": {"columns": ["word"], "templates": ["v[0]"]},
                "views": {"v": {"column": []}},
            },
            "views.v.column: unknown column []",
        ),
        (
            {
                "featurizer": {"columns": ["word"], "templates": ["v[0]"]},
                "views": {"v": {"function": "length", "max": "ten"}},
            },
            "views.v.max must be a positive",
        ),
    ],
)
def test_wrongly_typed_values_are_named(data, fragment):
    with pytest.raises(FeatureSpecError) as info:
        FeatureSpec.from_dict(data)
    assert fragment in str(info.value)


def test_template_names_are_canonical():
    spec = _spec(["bias", " word[ +1 ] ", "word[-1]|word[0]"])
    assert spec.template_names == ["bias", "word[1]", "word[-1]|word[0]"]
    assert spec.templates == [[], [(0, 1)], [(0, -1), (0, 0)]]


@pytest.mark.parametrize(
    "preset, columns, must_have",
    [
        ("chunk", ["word", "pos"], ["word[0]", "pos[-1]|pos[0]", "pos[-2]|pos[-1]|pos[0]"]),
        ("pos", ["word"], ["bias", "suf3[0]", "lower[-1]|lower[0]"]),
        ("citation", ["word"], ["bias", "year[0]", "lower[0]|lower[1]"]),
    ],
)
def test_presets_load(preset, columns, must_have):
    assert preset in PRESETS
    spec = FeatureSpec.load(preset)
    assert spec.name == preset
    assert spec.columns == columns
    assert len(spec.templates) == len(spec.template_names) == len(set(spec.template_names))
    for name in must_have:
        assert name in spec.template_names
    for comps in spec.templates:
        for v, _ in comps:
            assert 0 <= v < len(spec.views)


# ------------------------------------------------------------------------------ token functions

_FUNCTION_EXAMPLES = {
    "identity": ({}, [("Hello", "Hello"), ("", "")]),
    "lower": ({}, [("HeLLo", "hello"), ("ÉCOLE", "école")]),
    "shape": ({}, [("Hello-World42", "Xxxxx-Xxxxxdd"), ("U.S.", "X.X."), ("Éa", "Xx")]),
    "short_shape": ({}, [("Hello-World42", "Xx-Xxd"), ("aaa", "x"), ("1,000.5", "d,d.d")]),
    "prefix": ({"length": 3}, [("Hello", "Hel"), ("Hi", "Hi")]),
    "suffix": ({"length": 3}, [("walking", "ing"), ("a", "a")]),
    "length": ({"max": 4}, [("abc", "3"), ("abcdefg", "4"), ("", "0")]),
    "is_digit": ({}, [("123", "1"), ("12a", "0"), ("1.5", "0")]),
    "has_digit": ({}, [("a1", "1"), ("abc", "0")]),
    "is_punct": ({}, [(",.!", "1"), ("a.", "0"), ("", "0"), ("--", "1")]),
    "is_upper": ({}, [("NASA", "1"), ("NaSA", "0"), ("A1", "1"), ("12", "0")]),
    "is_title": ({}, [("Hello", "1"), ("hello", "0"), ("HELLO", "0")]),
    "has_upper": ({}, [("heLlo", "1"), ("hello", "0")]),
    "has_hyphen": ({}, [("well-known", "1"), ("wellknown", "0")]),
    "is_alpha": ({}, [("abc", "1"), ("ab1", "0"), ("a-b", "0")]),
    "regex": (
        {"pattern": "^(19|20)[0-9][0-9]$"},
        [("1999", "1"), ("2024", "1"), ("1899", "0"), ("19999", "0")],
    ),
    # the table is _CLUSTERS: as written, then lowercased, "-" for a word it lacks
    "cluster": (
        {"clusters": "c.tsv", "prefix": 2},
        [("dog", "01"), ("Dog", "01"), ("Cat", "00"), ("cat", "10"), ("zebra", "-")],
    ),
}
_CLUSTERS = {"c.tsv": WordClusters(("dog", "cat", "Cat"), ("0110", "1011", "00"))}


def test_examples_cover_every_token_function():
    assert set(_FUNCTION_EXAMPLES) == set(TOKEN_FUNCTIONS)


@pytest.mark.parametrize("function", sorted(_FUNCTION_EXAMPLES))
def test_token_function_examples(function):
    opts, cases = _FUNCTION_EXAMPLES[function]
    spec = _spec(["v[0]"], views={"v": {"function": function, **opts}}, clusters=_CLUSTERS)
    fn = spec.views[-1].fn
    for token, expected in cases:
        assert fn(token) == expected, (function, token)


def test_length_has_a_default_cap_and_regex_can_ignore_case():
    spec = _spec(
        ["n[0]", "m[0]", "mi[0]"],
        views={
            "n": {"function": "length"},
            "m": {"function": "regex", "pattern": "^may$"},
            "mi": {"function": "regex", "pattern": "^may$", "ignore_case": True},
        },
    )
    n, m, mi = (v.fn for v in spec.views[1:])
    assert n("a" * 25) == "10" and n("abcd") == "4"
    assert m("May") == "0" and mi("May") == "1" and mi("Mayday") == "0"


# ------------------------------------------------------------------------------ string vs integer


@pytest.mark.parametrize(
    "preset, sample",
    [
        ("chunk", "sample_chunk.txt"),
        ("pos", "sample_pos.conllu"),
        ("citation", "sample_citations.txt"),
    ],
)
def test_integer_path_matches_string_path_on_presets(preset, sample):
    sentences = _sample(sample)
    cut = 2 * len(sentences) // 3
    train, held_out = sentences[:cut], sentences[cut:]
    fz = Featurizer(FeatureSpec.load(preset)).fit(train)
    # the fitted attributes are exactly the distinct string attributes of the training data
    distinct = {f for s in train for feats in fz.string_attributes(s) for f in feats}
    names = _all_names(fz)
    assert len(names) == len(set(names)) == fz.n_attributes
    assert set(names) == distinct
    kept, dropped = _assert_paths_agree(fz, train)
    assert dropped == 0
    kept, dropped = _assert_paths_agree(fz, held_out)
    assert kept > 0 and dropped > 0  # the held-out part has unseen words


def test_chunk_dev_sample_against_chunk_sample():
    fz = Featurizer(FeatureSpec.load("chunk")).fit(_sample("sample_chunk.txt"))
    kept, dropped = _assert_paths_agree(fz, _sample("sample_chunk_dev.txt"))
    assert kept > 0 and dropped > 0


def test_boundaries_and_conjunctions_by_hand():
    spec = _spec(["w[-1]|w[0]", "w[2]", "bias"], views={"w": {"function": "lower"}})
    fz = Featurizer(spec).fit([Sentence([["A", "B", "C"]])])
    assert sorted(_all_names(fz)) == sorted(
        [
            "bias",
            "w[-1]|w[0]=__BOS__|a",
            "w[-1]|w[0]=a|b",
            "w[-1]|w[0]=b|c",
            "w[2]=c",
            "w[2]=__EOS__",
        ]
    )
    X = fz.transform([Sentence([["a", "b", "c"]]), Sentence([["x"]]), Sentence([["b", "C"]])])
    assert [sorted(_token_names(fz, X, i)) for i in range(X.n_tokens)] == [
        ["bias", "w[-1]|w[0]=__BOS__|a", "w[2]=c"],
        ["bias", "w[-1]|w[0]=a|b", "w[2]=__EOS__"],
        ["bias", "w[-1]|w[0]=b|c", "w[2]=__EOS__"],
        # 'x' is unknown: the conjunction with it is dropped, w[2] (after the end) is not
        ["bias", "w[2]=__EOS__"],
        # BOS|b was never seen; b|c was (lowercased)
        ["bias", "w[2]=__EOS__"],
        ["bias", "w[-1]|w[0]=b|c", "w[2]=__EOS__"],
    ]


_ALPHABET = ["a", "ab", "Ab", "b1", "-", "Ba", "abc", "1", "A"]
_VIEWS = {
    "low": {"function": "lower"},
    "suf": {"function": "suffix", "length": 1},
    "shp": {"function": "short_shape"},
    "p": {"function": "prefix", "length": 1, "column": "tag"},
}
_component = st.tuples(
    st.sampled_from(["word", "tag", "low", "suf", "shp", "p"]), st.integers(-3, 3)
)


@settings(deadline=None, max_examples=60, suppress_health_check=[HealthCheck.too_slow])
@given(
    sentences=st.lists(
        st.lists(
            st.tuples(st.sampled_from(_ALPHABET), st.sampled_from(["N", "V", "Dx", "Dy"])),
            min_size=0,
            max_size=6,
        ),
        min_size=2,
        max_size=8,
    ),
    templates=st.lists(st.lists(_component, min_size=1, max_size=3), min_size=1, max_size=5),
    n_train=st.integers(1, 7),
    bias=st.booleans(),
)
def test_integer_path_matches_string_path_random(sentences, templates, n_train, bias):
    names = []
    for comps in templates:
        name = "|".join(f"{v}[{o}]" for v, o in comps)
        if name not in names:
            names.append(name)
    if bias:
        names.append("bias")
    spec = _spec(names, views=_VIEWS, columns=("word", "tag"))
    sents = [Sentence([[w for w, _ in s], [t for _, t in s]]) for s in sentences]
    train = [s for s in sents[:n_train] if len(s)] or [Sentence([["a"], ["N"]])]
    fz = Featurizer(spec).fit(train)
    distinct = {f for s in train for feats in fz.string_attributes(s) for f in feats}
    assert set(_all_names(fz)) == distinct
    _assert_paths_agree(fz, train)
    _assert_paths_agree(fz, sents)  # includes empty sentences and unseen strings


# ------------------------------------------------------------------------------ unseen words


def test_unseen_words_keep_derived_view_attributes():
    spec = _spec(
        ["word[0]", "suf3[0]", "sshape[0]", "word[-1]|suf3[0]"],
        views={"suf3": {"function": "suffix", "length": 3}, "sshape": {"function": "short_shape"}},
    )
    train = [Sentence([["They", "were", "walking", "home"]]), Sentence([["We", "like", "singing"]])]
    fz = Featurizer(spec).fit(train)
    X = fz.transform([Sentence([["They", "zorbing"]])])
    names = set(_token_names(fz, X, 1))
    assert "suf3[0]=ing" in names and "sshape[0]=x" in names
    assert not any(n.startswith("word[0]=") for n in names)  # 'zorbing' was never seen
    assert "word[-1]|suf3[0]=They|ing" not in names  # not a training conjunction
    assert not any("zorbing" in n for n in _all_names(fz))


def test_transform_before_fit_and_missing_columns():
    fz = Featurizer(_spec(["word[0]"]))
    with pytest.raises(RuntimeError, match="before fit"):
        fz.transform([Sentence([["a"]])])
    fz2 = Featurizer(_spec(["pos[0]"], columns=("word", "pos")))
    with pytest.raises(FeatureSpecError, match="2 input column"):
        fz2.fit([Sentence([["a", "b"]])])


# ------------------------------------------------------------------------------ min_count


@pytest.mark.parametrize("min_count", [2, 3, 5])
def test_min_count_drops_rare_attributes(min_count):
    sentences = _sample("sample_chunk.txt")
    spec_data = FeatureSpec.load("chunk").source
    base = FeatureSpec.from_dict(spec_data)
    counted = FeatureSpec.from_dict(
        {**spec_data, "featurizer": {**spec_data["featurizer"], "min_count": min_count}}
    )
    counts = Counter(
        f for s in sentences for feats in Featurizer(base).string_attributes(s) for f in feats
    )
    fz = Featurizer(counted).fit(sentences)
    assert set(_all_names(fz)) == {f for f, c in counts.items() if c >= min_count}
    assert fz.n_attributes < len(counts)
    kept, dropped = _assert_paths_agree(fz, sentences)
    assert dropped == sum(c for c in counts.values() if c < min_count)


# ------------------------------------------------------------------------------ prune, persistence


def test_prune_keeps_the_mapping_consistent():
    sentences = _sample("sample_chunk.txt")
    dev = _sample("sample_chunk_dev.txt")
    fz = Featurizer(FeatureSpec.load("chunk")).fit(sentences)
    old_names = _all_names(fz)
    X_old = fz.transform(dev)
    keep = np.random.default_rng(0).random(fz.n_attributes) < 0.3
    new_id = fz.prune(keep)
    assert fz.n_attributes == int(keep.sum())
    assert np.all(new_id[~keep] == -1)
    np.testing.assert_array_equal(new_id[keep], np.arange(int(keep.sum())))
    for old in np.flatnonzero(keep)[::7]:
        assert fz.attribute_name(int(new_id[old])) == old_names[old]
    X_new = fz.transform(dev)
    np.testing.assert_array_equal(X_new.offsets, X_old.offsets)
    for i in range(X_old.n_tokens):
        old = X_old.attrs[X_old.indptr[i] : X_old.indptr[i + 1]]
        new = X_new.attrs[X_new.indptr[i] : X_new.indptr[i + 1]]
        assert sorted(new.tolist()) == sorted(new_id[old[keep[old]]].tolist())
    _assert_paths_agree(fz, dev)


def test_array_round_trip_transforms_identically():
    sentences = _sample("sample_citations.txt")
    fz = Featurizer(FeatureSpec.load("citation")).fit(sentences[:20])
    meta, arrays = fz.to_arrays()
    fz2 = Featurizer.from_arrays(meta, arrays)
    assert _all_names(fz2) == _all_names(fz)
    a, b = fz.transform(sentences[20:]), fz2.transform(sentences[20:])
    for name in ("indptr", "attrs", "offsets"):
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name))


def test_type_cache_is_bounded_and_trimming_changes_nothing(monkeypatch):
    """Tagging an endless stream of new strings must not grow the per-column cache without
    bound; after a trim the attributes are the same as before."""
    import tagger.features.featurizer as features
    from tagger.sentence import Sentence

    spec = FeatureSpec.from_dict(
        {
            "featurizer": {
                "columns": ["word"],
                "templates": ["word[0]", "suf2[0]", "word[-1]|word[0]"],
            },
            "views": {"suf2": {"column": "word", "function": "suffix", "length": 2}},
        }
    )
    train = [
        Sentence([["the", "cat", "sat"]], ["D", "N", "V"]),
        Sentence([["a", "dog", "ran"]], ["D", "N", "V"]),
    ]
    fz = Featurizer(spec).fit(train)
    monkeypatch.setattr(features, "TYPE_CACHE_LIMIT", 5)
    probe = [Sentence([["the", "bat", "sat"]])]
    before = fz.transform(probe)
    for k in range(20):
        fz.transform([Sentence([[f"new{k}a", f"new{k}b", "cat"]])])
        assert len(fz._type_cache[0]) <= 6 + 5 + 3
    after = fz.transform(probe)
    assert before.attrs.tolist() == after.attrs.tolist()
    assert before.indptr.tolist() == after.indptr.tolist()
