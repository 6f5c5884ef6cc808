"""The Python API on the shipped samples: fit, predict, evaluate, save, load, inspect.

A chunker is trained once per module on ``corpora/sample_chunk.txt`` with a few epochs; the
tests predict with it, score it against seqeval, round-trip it through files, damage the files
and read its inspection report.
"""

from __future__ import annotations

import hashlib
import io
import json
import re
import zipfile
from pathlib import Path

import numpy as np
import pytest
from seqeval.metrics import f1_score as seqeval_f1

from tagger.api import Tagger
from tagger.errors import CorpusFormatError, ModelFileError, NotFittedError, TaggerError
from tagger.features import FeatureSpec, Featurized
from tagger.io import read_corpus
from tagger.sentence import Sentence

from _helpers import SAMPLES

PARAMS = {"epochs": 4}
SEED = 7


def _read(name: str) -> list[Sentence]:
    path = SAMPLES / name
    if not path.is_file():
        pytest.skip(f"sample corpus {path} is missing")
    return list(read_corpus(path))


@pytest.fixture(scope="module")
def train() -> list[Sentence]:
    return _read("sample_chunk.txt")


@pytest.fixture(scope="module")
def dev() -> list[Sentence]:
    return _read("sample_chunk_dev.txt")


@pytest.fixture(scope="module")
def tagger(train) -> Tagger:
    return Tagger(
        features="chunk", learner="m3n-subgradient", params=PARAMS, seed=SEED, select=False
    ).fit(train)


@pytest.fixture(scope="module")
def saved(tagger, tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("api") / "chunk.tgm"
    tagger.save(path)
    return path


# ------------------------------------------------------------------------------ fit / predict


def test_predict_gives_one_known_label_per_token(tagger, train, dev):
    pred = tagger.predict(dev)
    assert [len(p) for p in pred] == [len(s) for s in dev]
    known = {lab for s in train for lab in s.labels}
    assert {lab for p in pred for lab in p} <= known
    assert set(tagger.labels_.labels) == known


def test_evaluate_agrees_with_an_independent_count(tagger, train, dev):
    for data, floor in ((train, 0.85), (dev, 0.6)):
        pred = tagger.predict(data)
        gold = [s.labels for s in data]
        n = sum(len(g) for g in gold)
        correct = sum(a == b for g, p in zip(gold, pred) for a, b in zip(g, p))
        result = tagger.evaluate(data)
        assert result["n_tokens"] == n and result["n_sentences"] == len(data)
        assert result["accuracy"] == pytest.approx(correct / n)
        assert result["chunk_level"] is True
        assert result["f1"] == pytest.approx(seqeval_f1(gold, pred), abs=1e-12)
        assert result["accuracy"] > floor  # it learned something from 74 sentences


def test_training_info(tagger, train):
    info = tagger.info_
    assert info["learner"] == "m3n-subgradient" and info["seed"] == SEED
    assert info["params"]["epochs"] == 4
    assert info["n_train_sentences"] == len(train)
    assert info["n_train_tokens"] == sum(len(s) for s in train)
    assert info["n_params"] >= info["n_nonzero"] == tagger.n_nonzero_ > 0
    assert len(tagger.trace_) == 4


def test_predict_empty_and_unseen(tagger):
    known = set(tagger.labels_.labels)
    sentences = [
        Sentence([[], []]),
        Sentence(
            [["Zorblax", "quindled", "the", "frumious", "snark"], ["NNP", "VBD", "DT", "JJ", "NN"]]
        ),
        Sentence([[], []]),
        Sentence([["Qwv"], ["XX"]]),  # unseen word and unseen POS tag
    ]
    pred = tagger.predict(sentences)
    assert [len(p) for p in pred] == [0, 5, 0, 1]
    assert all(lab in known for p in pred for lab in p)
    assert tagger.predict([]) == []
    assert tagger.predict([Sentence([[], []])]) == [[]]


def test_predict_is_batch_independent(tagger, dev):
    whole = tagger.predict(dev)
    one_by_one = [tagger.predict([s])[0] for s in dev]
    assert whole == one_by_one
    streamed = [labels for _, labels in tagger.tag_stream(iter(dev), batch_size=4)]
    assert streamed == whole
    assert [s for s, _ in tagger.tag_stream(dev, batch_size=3)] == dev


def test_fit_accepts_a_generator_and_a_spec_file(train, tmp_path):
    spec = tmp_path / "small.toml"
    spec.write_text(
        '[featurizer]\ncolumns = ["word", "pos"]\n'
        'templates = ["word[0]", "pos[0]", "pos[-1]|pos[0]"]\n',
        "utf-8",
    )
    tg = Tagger(features=spec, params={"epochs": 2}, select=False).fit(iter(train))
    assert tg.featurizer_.spec.name == "small"
    assert tg.info_["n_train_sentences"] == len(train)
    tg2 = Tagger(features=FeatureSpec.load(spec), params={"epochs": 2}, select=False).fit(train)
    np.testing.assert_array_equal(tg.weights_, tg2.weights_)


# ------------------------------------------------------------------------------ errors on fit


def test_fit_without_labels(train):
    unlabeled = [Sentence(s.columns) for s in train[:5]]
    with pytest.raises(TaggerError, match="has no labels") as info:
        Tagger(features="chunk", params=PARAMS, select=False).fit(unlabeled)
    assert "\n" not in str(info.value)


@pytest.mark.parametrize("data", [[], [Sentence([[], []])]], ids=["nothing", "empty-sentence"])
def test_fit_on_no_sentences(data):
    with pytest.raises(TaggerError, match="contains no sentences"):
        Tagger(features="chunk", params=PARAMS, select=False).fit(data)


def test_fit_with_unlabeled_dev(train):
    with pytest.raises(TaggerError, match="dev data has no labels"):
        Tagger(features="chunk", params=PARAMS, select=False).fit(
            train, dev=[Sentence(train[0].columns)]
        )


def test_too_few_columns(tagger, train):
    one_column = [Sentence([s.columns[0]], s.labels) for s in train[:5]]
    with pytest.raises(CorpusFormatError, match="1 input column.*read 2 .*word, pos"):
        Tagger(features="chunk", params=PARAMS, select=False).fit(one_column)
    with pytest.raises(CorpusFormatError, match="input column"):
        tagger.predict(one_column)


def test_not_fitted(tmp_path):
    tg = Tagger()
    with pytest.raises(NotFittedError):
        tg.predict([Sentence([["a"], ["DT"]])])
    with pytest.raises(NotFittedError):
        tg.save(tmp_path / "x.tgm")
    with pytest.raises(NotFittedError):
        tg.inspect()
    assert not (tmp_path / "x.tgm").exists()


# ------------------------------------------------------------------------------ save / load


def test_load_predicts_identically(tagger, saved, train, dev):
    back = Tagger.load(saved)
    np.testing.assert_array_equal(back.weights_, tagger.weights_)
    assert back.labels_.labels == tagger.labels_.labels
    extra = [Sentence([["Zorblax", "sold", "shares"], ["NNP", "VBD", "NNS"]]), Sentence([[], []])]
    for data in (train, dev, extra):
        assert back.predict(data) == tagger.predict(data)
    assert back.evaluate(dev) == tagger.evaluate(dev)
    assert back.inspect() == tagger.inspect()
    assert back.info_["seed"] == SEED and back.learner == "m3n-subgradient"


def test_same_seed_same_bytes(train, tmp_path):
    paths = []
    for k in range(2):
        path = tmp_path / f"m{k}.tgm"
        Tagger(features="chunk", params={"epochs": 2}, seed=11, select=False).fit(train).save(path)
        paths.append(path)
    other = tmp_path / "other.tgm"
    Tagger(features="chunk", params={"epochs": 2}, seed=12, select=False).fit(train).save(other)
    assert paths[0].read_bytes() == paths[1].read_bytes()
    assert other.read_bytes() != paths[0].read_bytes()


def _one_line_model_error(path) -> str:
    with pytest.raises(ModelFileError) as info:
        Tagger.load(path)
    msg = str(info.value)
    assert msg and "\n" not in msg
    return msg


def _rewrite(src: Path, dst: Path, edit_header=None, drop=None, edit_member=None) -> None:
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dst, "w", zipfile.ZIP_DEFLATED) as zout:
        for item in zin.infolist():
            data = zin.read(item.filename)
            if item.filename == drop:
                continue
            if item.filename == "tagger.json" and edit_header:
                header = json.loads(data)
                edit_header(header)
                data = json.dumps(header).encode("utf-8")
                edited = data
            if item.filename == "tagger.json.sha256" and edit_header:  # the edit reaches the checks
                data = hashlib.sha256(edited).hexdigest().encode()
            if edit_member and item.filename == edit_member[0]:
                data = edit_member[1](data)
            zout.writestr(item, data)


def test_other_format_version(saved, tmp_path):
    bad = tmp_path / "future.tgm"
    _rewrite(saved, bad, edit_header=lambda h: h.update(format_version=99))
    msg = _one_line_model_error(bad)
    assert "version 99" in msg and "reads version 1" in msg


@pytest.mark.parametrize(
    "damage",
    [
        "truncated",
        "flipped-byte",
        "empty",
        "not-a-zip",
        "no-header",
        "no-weights",
        "weights-changed",
    ],
)
def test_damaged_file(damage, saved, tmp_path):
    data = saved.read_bytes()
    bad = tmp_path / f"{damage}.tgm"
    if damage == "truncated":
        bad.write_bytes(data[: len(data) // 2])
    elif damage == "flipped-byte":
        # a byte inside the weights member's compressed data
        with zipfile.ZipFile(saved) as zf:
            info = zf.getinfo("arrays/weights.npy")
        pos = (
            info.header_offset + 30 + len(info.filename) + len(info.extra) + info.compress_size // 2
        )
        bad.write_bytes(data[:pos] + bytes([data[pos] ^ 0xFF]) + data[pos + 1 :])
    elif damage == "empty":
        bad.write_bytes(b"")
    elif damage == "not-a-zip":
        bad.write_text("B-NP I-NP O\n", "utf-8")
    elif damage == "no-header":
        _rewrite(saved, bad, drop="tagger.json")
    elif damage == "no-weights":
        _rewrite(saved, bad, drop="arrays/weights.npy")
    elif damage == "weights-changed":

        def change(raw: bytes) -> bytes:
            arr = np.load(io.BytesIO(raw))
            arr = arr.copy()
            arr[0] += 1.0
            out = io.BytesIO()
            np.save(out, arr)
            return out.getvalue()

        _rewrite(saved, bad, edit_member=("arrays/weights.npy", change))
    msg = _one_line_model_error(bad)
    assert str(bad) in msg


def test_missing_model_file(tmp_path):
    msg = _one_line_model_error(tmp_path / "nowhere.tgm")
    assert "does not exist" in msg


def test_labels_dropped_is_detected(saved, tmp_path):
    # one label fewer than the transition matrix expects
    bad = tmp_path / "labels.tgm"
    _rewrite(saved, bad, edit_header=lambda h: h["meta"]["labels"].pop())
    assert "damaged or inconsistent" in _one_line_model_error(bad)


# ------------------------------------------------------------------------------ inspect


_NAME = re.compile(
    r"^(bias|[A-Za-z_][A-Za-z0-9_]*\[-?\d+\](\|[A-Za-z_][A-Za-z0-9_]*\[-?\d+\])*=.+)$"
)


def test_inspect(tagger, train):
    top = 5
    report = tagger.inspect(top=top)
    for key in (
        "n_params",
        "n_nonzero",
        "n_attributes",
        "labels",
        "learner",
        "top_features",
        "transitions",
        "start",
        "end",
    ):
        assert key in report
    assert report["n_params"] >= report["n_nonzero"] > 0
    assert report["n_nonzero"] == np.count_nonzero(tagger.weights_)
    labels = report["labels"]
    assert labels == sorted({lab for s in train for lab in s.labels})
    assert set(report["top_features"]) == set(labels)
    templates = set(tagger.featurizer_.spec.template_names)
    for feats in report["top_features"].values():
        assert len(feats) <= top
        mags = [abs(v) for _, v in feats]
        assert mags == sorted(mags, reverse=True) and all(m > 0 for m in mags)
        for name, _ in feats:
            assert _NAME.match(name), name
            assert name.split("=", 1)[0] in templates
    # a determiner opens a noun phrase: among the strongest B-NP features is 'DT' or 'the'
    bnp = dict(tagger.inspect(top=50)["top_features"]["B-NP"])
    assert any(bnp.get(name, 0) > 0 for name in ("pos[0]=DT", "word[0]=the", "word[0]=The"))
    # transitions: the L x L table of the model's transition weights, by label name
    trans = report["transitions"]
    assert set(trans) == set(labels) and all(set(row) == set(labels) for row in trans.values())
    matrix = tagger.model_.transitions(tagger.weights_)
    for i, a in enumerate(tagger.labels_.labels):
        for j, b in enumerate(tagger.labels_.labels):
            assert trans[a][b] == matrix[i, j]
    assert set(report["start"]) == set(report["end"]) == set(labels)


def test_top_feature_weights_are_the_model_weights(tagger):
    """A listed (feature, weight) moves the state score of its label by exactly that weight."""
    fz, model, w = tagger.featurizer_, tagger.model_, tagger.weights_
    name_to_attr = {fz.attribute_name(a): a for a in range(fz.n_attributes)}
    report = tagger.inspect(top=3)
    for label, feats in report["top_features"].items():
        li = tagger.labels_.labels.index(label)
        for name, value in feats:
            a = name_to_attr[name]
            # a one-token featurized input holding only this attribute
            X = Featurized(np.array([0, 1]), np.array([a], dtype=np.int32), np.array([0, 1]))
            scores = model.state_scores(X, w)
            start, end = model.start_end(w)
            assert scores[0, li] - start[li] - end[li] == pytest.approx(value, abs=1e-12)


def test_evaluate_on_data_with_none_of_the_model_labels_is_an_error(tagger):
    from tagger.errors import UnknownLabelError

    other = [Sentence([["Smith", ","], ["NNP", ","]], ["author", "author"])]
    with pytest.raises(UnknownLabelError, match="none of the evaluation data's labels"):
        tagger.evaluate(other)


def test_evaluate_lists_gold_labels_the_model_never_saw(tagger, train):
    sent = train[0]
    odd = Sentence(sent.columns, ["B-XYZ"] + list(sent.labels[1:]))
    result = tagger.evaluate([odd])
    assert result["unknown_labels"] == ["B-XYZ"]
    assert tagger.evaluate(train[:3])["unknown_labels"] == []


def test_loading_the_api_imports_no_learner():
    """Tagging never trains: importing the API must not import the learners (and with them
    scipy's optimizers and HiGHS), which would double the start-up of `tagger tag`."""
    import subprocess
    import sys

    code = (
        "import sys, tagger.api\n"
        "mods = [m for m in sys.modules if m.startswith('tagger.learners.')"
        " and m != 'tagger.learners.base']\n"
        "print(sorted(mods), 'scipy.optimize' in sys.modules, 'highspy' in sys.modules)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.strip()
    assert out == "[] False False"


def test_getting_one_learner_imports_only_its_module():
    """`tagger train --learner X` pays for X's imports alone: get_learner imports the module
    named after the learner, the same class LEARNERS lists, and not the LP learners' scipy
    optimizers when the learner does not use them."""
    import subprocess
    import sys

    code = (
        "import sys\n"
        "from tagger.learners import get_learner\n"
        "cls = get_learner('ssvm-annealing')\n"
        "mods = [m for m in sys.modules if m.startswith('tagger.learners.')]\n"
        "print(cls.name, 'tagger.learners.lp_simplex' in mods, 'scipy.optimize' in "
        "sys.modules)\n"
        "from tagger.learners import LEARNERS\n"
        "print(all(get_learner(n) is c for n, c in LEARNERS.items()))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.split()
    assert out == ["ssvm-annealing", "False", "False", "True"]
