"""``m3n-l2`` trains label-pair-template and second-order models end to end: through the
Python API and the command line, on the shipped chunking sample; the model tags, and the
saved file loads and tags the same. The solver's optimum itself is checked against a
brute-force QP in tests/learners/test_sdm_structures.py."""

from __future__ import annotations

import pytest

from tagger.api import Tagger
from tagger.features import FeatureSpec
from tagger.io import read_corpus

from _helpers import SAMPLE, SAMPLE_DEV, run_cli

PAIRS = """
[featurizer]
columns = ["word", "pos"]
templates = ["bias", "word[0]", "pos[0]", "pos[-1]|pos[0]"]
pair_templates = ["pos[0]"]
"""
FIRST_ORDER = """
[featurizer]
columns = ["word", "pos"]
templates = ["bias", "word[0]", "pos[0]", "pos[-1]|pos[0]"]
"""
#: what each structure's run checks of the trained model
STRUCTURES = {
    "pairs": (PAIRS, 1, lambda model: model.n_pair > 0 and model.order == 1),
    "order2": (FIRST_ORDER, 2, lambda model: model.n_trip > 0 and model.order == 2),
    "order2+pairs": (PAIRS, 2, lambda model: model.n_pair > 0 and model.n_trip > 0),
}


@pytest.mark.parametrize("structure", sorted(STRUCTURES))
def test_m3n_l2_trains_through_the_api_and_the_file_tags_the_same(structure, tmp_path):
    spec, order, shape = STRUCTURES[structure]
    features = tmp_path / "f.toml"
    features.write_text(spec)
    if order == 2:
        features.write_text(spec.replace("[featurizer]", "[featurizer]\norder = 2"))
    train, dev = list(read_corpus(SAMPLE)), list(read_corpus(SAMPLE_DEV))
    tagger = Tagger(
        features=FeatureSpec.load(features),
        learner="m3n-l2",
        params={"C": 1.0, "epochs": 30, "tol": 0.0},
        select=False,
    ).fit(train)
    assert shape(tagger.model_)
    duals = [row["dual"] for row in tagger.trace_]
    assert all(d2 >= d1 for d1, d2 in zip(duals, duals[1:]))
    assert all(row["objective"] >= row["dual"] for row in tagger.trace_)
    assert len(duals) == 30 and tagger.trace_[-1]["gap"] < 0.5 * tagger.trace_[0]["gap"]
    assert tagger.evaluate(train)["accuracy"] > 0.95  # a max-margin fit of its own data
    assert tagger.evaluate(dev)["accuracy"] > 0.6
    tagger.save(tmp_path / "m.tgm")
    back = Tagger.load(tmp_path / "m.tgm")
    assert shape(back.model_) and back.model_.n_weights == tagger.model_.n_weights
    assert back.predict(dev) == tagger.predict(dev)


@pytest.mark.parametrize("structure", ["pairs", "order2"])
def test_m3n_l2_trains_through_the_command_line(structure, tmp_path):
    spec, order, shape = STRUCTURES[structure]
    features = tmp_path / "f.toml"
    features.write_text(spec)
    model, out = tmp_path / "m.tgm", tmp_path / "dev.txt"
    args = ["train", SAMPLE, "--features", features, "--learner", "m3n-l2", "--set", "C=1"]
    args += ["--set", "epochs=10", "-o", model, "-q"]
    if order == 2:
        args += ["--order", "2"]
    done = run_cli(*args)
    assert done.exit_code == 0, done.output
    done = run_cli("tag", model, SAMPLE_DEV, "-o", out)
    assert done.exit_code == 0, done.output
    tagger = Tagger.load(model)
    assert shape(tagger.model_) and tagger.learner == "m3n-l2"
    assert tagger.params["C"] == 1.0 and len(tagger.trace_) == 10
    dev = list(read_corpus(SAMPLE_DEV))
    tagged = [line.split()[-1] for line in out.read_text().splitlines() if line.strip()]
    assert tagged == [label for labels in tagger.predict(dev) for label in labels]
    assert len(tagged) == sum(len(s.labels) for s in dev)


def test_the_refusal_names_the_sdm_learners(tmp_path):
    features = tmp_path / "f.toml"
    features.write_text(PAIRS)
    args = ["train", SAMPLE, "--features", features, "--learner", "perceptron"]
    done = run_cli(*args, "-o", tmp_path / "x.tgm", "-q")
    assert done.exit_code == 2
    assert "does not train label-pair templates" in done.output
    able = done.output.split("use one of ")[1].split(", or drop")[0].split(", ")
    assert {"m3n-l2", "m3n-em", "m3n-owlqn", "crf-l1", "crf-l2", "ssvm-annealing"} <= set(able)
    assert "perceptron" not in able
    assert not (tmp_path / "x.tgm").exists()
