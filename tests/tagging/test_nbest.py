"""``tagger tag --nbest N`` and :func:`tagger.tagging.nbest.predict_nbest`: the head of the list
is the model's prediction, every labeling scores what the model gives it (its joint feature
vector times the weights), a CRF's probabilities are exp(score - log Z) and sum to one over
all labelings, a sentence with fewer labelings than asked gets them all, and the command line
writes each sentence N times after its comment line (or an ``nbest`` list as JSON lines) and
refuses what it cannot combine in one line."""

from __future__ import annotations

import itertools
import json
import math

import numpy as np
import pytest
from click.testing import CliRunner

from tagger.api import Tagger
from tagger.cli.commands import cli
from tagger.io import load_corpus
from tagger.sentence import Sentence
from tagger.tagging.nbest import predict_nbest

from _helpers import SAMPLE, SAMPLE_DEV


@pytest.fixture(scope="module")
def data():
    return load_corpus(SAMPLE, "conll"), load_corpus(SAMPLE_DEV, "conll")


@pytest.fixture(scope="module")
def crf(data):
    return Tagger(features="chunk", learner="crf-l1", select=False).fit(data[0])


@pytest.fixture(scope="module")
def m3n(data):
    return Tagger(features="chunk", params={"epochs": 20}, select=False).fit(data[0])


def _joint_score(tagger, sentence, labels) -> float:
    """F(x, y; w) from the joint feature vector: independent of the decoders."""
    _, index, model, w = tagger.fitted()
    X = tagger.featurize([sentence])
    y = np.array([index.labels.index(lab) for lab in labels], dtype=np.int32)
    return float(model.joint_features(X, 0, y) @ w)


@pytest.mark.parametrize("which", ["crf", "m3n"])
def test_the_list_starts_with_the_prediction_and_scores_are_the_models(which, data, request):
    tagger = request.getfixturevalue(which)
    dev = data[1][:6]
    found = predict_nbest(tagger, dev, 4)
    assert [f[0].labels for f in found] == tagger.predict(dev)
    for s, labelings in zip(dev, found):
        assert len(labelings) == 4
        assert len({tuple(x.labels) for x in labelings}) == 4
        scores = [x.score for x in labelings]
        assert scores == sorted(scores, reverse=True)
        for x in labelings:
            assert math.isclose(x.score, _joint_score(tagger, s, x.labels), abs_tol=1e-9)
            assert (x.probability is None) == (which == "m3n")


def test_crf_probabilities_sum_to_one_over_every_labeling(crf):
    """Two tokens and L labels: asking for all L^2 labelings gives a distribution, each
    probability exp(F)/sum exp(F) over the enumeration of the joint scores."""
    sentence = Sentence([["The", "company"], ["DT", "NN"]], None)
    L = len(crf.labels_.labels)
    (labelings,) = predict_nbest(crf, [sentence], L * L)
    assert len(labelings) == L * L
    joint = {
        pair: _joint_score(crf, sentence, list(pair))
        for pair in itertools.product(crf.labels_.labels, repeat=2)
    }
    top = max(joint.values())
    log_z = top + math.log(sum(math.exp(v - top) for v in joint.values()))
    for x in labelings:
        assert math.isclose(x.probability, math.exp(joint[tuple(x.labels)] - log_z), rel_tol=1e-9)
    assert math.isclose(sum(x.probability for x in labelings), 1.0, rel_tol=1e-9)


def test_a_sentence_with_fewer_labelings_gets_them_all_and_empty_ones_one(crf):
    L = len(crf.labels_.labels)
    one = Sentence([["company"], ["NN"]], None)
    found = predict_nbest(crf, [one, Sentence([[], []], None)], L + 5)
    assert len(found[0]) == L and sorted(x.labels[0] for x in found[0]) == sorted(
        crf.labels_.labels
    )
    assert found[1] == [([], 0.0, 1.0)]


@pytest.mark.parametrize("extra", ['pair_templates = ["pos[0]"]', "order = 2"])
def test_label_pair_and_second_order_models_list_their_prediction_first(data, tmp_path, extra):
    spec = tmp_path / "features.toml"
    spec.write_text(
        '[featurizer]\ncolumns = ["word", "pos"]\n'
        'templates = ["bias", "word[0]", "pos[0]", "pos[-1]", "pos[1]"]\n' + extra + "\n"
    )
    tagger = Tagger(features=str(spec), learner="crf-l1", params={"epochs": 20}, select=False)
    tagger.fit(data[0])
    dev = data[1][:5]
    found = predict_nbest(tagger, dev, 3)
    assert [f[0].labels for f in found] == tagger.predict(dev)
    for s, labelings in zip(dev, found):
        for x in labelings:
            assert math.isclose(x.score, _joint_score(tagger, s, x.labels), abs_tol=1e-9)


def test_the_command_line_writes_each_sentence_n_times(crf, tmp_path):
    model = tmp_path / "crf.tgm"
    crf.save(model)
    dev = load_corpus(SAMPLE_DEV, "conll")[:3]
    r = CliRunner().invoke(cli, ["tag", str(model), str(SAMPLE_DEV), "--nbest", "2"])
    assert r.exit_code == 0, r.output
    blocks = [b for b in r.stdout.strip().split("\n\n") if b]
    expected = predict_nbest(crf, dev, 2)
    for i, s in enumerate(dev):
        for rank in range(2):
            lines = blocks[2 * i + rank].splitlines()
            x = expected[i][rank]
            assert lines[0] == (
                f"# nbest {rank + 1}/2 score {x.score:.6f} probability {x.probability:.6f}"
            )
            assert [line.split()[-1] for line in lines[1:]] == x.labels
            assert [line.split()[0] for line in lines[1:]] == s.columns[0]
    r = CliRunner().invoke(
        cli, ["tag", str(model), str(SAMPLE_DEV), "--nbest", "3", "--output-format", "jsonl"]
    )
    first = json.loads(r.stdout.splitlines()[0])
    assert [x["predicted"] for x in first["nbest"]] == [
        x.labels for x in predict_nbest(crf, dev[:1], 3)[0]
    ]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--nbest", "0"], "--nbest"),
        (["--nbest", "x"], "--nbest"),
        (["--nbest", "2", "--marginals"], "does not take --marginals"),
        (["--nbest", "2", "--constraints", "c.toml"], "does not take --constraints"),
        (["--nbest", "2", "--output-dir", "out"], "leave out --output-dir"),
    ],
)
def test_what_nbest_cannot_combine_is_a_usage_error(crf, tmp_path, args, message):
    model = tmp_path / "crf.tgm"
    crf.save(model)
    r = CliRunner().invoke(cli, ["tag", str(model), str(SAMPLE_DEV), *args])
    assert r.exit_code == 2, r.output
    assert message in r.output and len(r.output.strip().splitlines()) == 1
