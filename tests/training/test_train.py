"""One training function: ``tagger train``, ``tagger.train`` (with a dict, a TOML file or a
``TrainingConfig``), ``Tagger.fit``, the scikit-learn estimator and the spaCy component all
train through :func:`tagger.api.train`, so the same sentences and settings give the same model
(the arrays and the header, but the configuration kept for ``--config-from``, whose data paths
differ where the sentences come from another place). Also: the API's defaults are the command
line's (the feature preset follows the data, the strength is chosen), and the rules refuse
what ``tagger train`` refuses."""

from __future__ import annotations

import warnings

import pytest

import tagger
from tagger.api import Tagger
from tagger.errors import ConfigError, TaggerWarning
from tagger.io import load_corpus
from tagger.training.config import SettingError, TrainingConfig

from _helpers import SAMPLE, SAMPLE_DEV, run_cli
from _models import same_model

#: small settings, so that every way of training runs in a second on the sample
SEED = 3
EPOCHS = 2


@pytest.fixture(scope="module")
def cli_model(tmp_path_factory):
    """``tagger train`` at its defaults: the preset from the file, the strength chosen on a
    held-out tenth of the sample."""
    path = tmp_path_factory.mktemp("train") / "cli.tgm"
    result = run_cli("train", SAMPLE, "-o", path, "--seed", SEED, "--set", f"epochs={EPOCHS}", "-q")
    assert result.exit_code == 0, result.output
    return path


@pytest.fixture(autouse=True)
def _small_held_out_part():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TaggerWarning)  # the sample's held-out tenth is small
        yield


def _as_dict(output) -> dict:
    return {
        "data": {"train": [str(SAMPLE)]},
        "model": {"seed": SEED, "output": str(output)},
        "params": {"epochs": EPOCHS},
    }


def test_the_api_with_a_dict_a_file_and_the_object_trains_the_cli_model(cli_model, tmp_path):
    from_dict = tmp_path / "dict.tgm"
    tagger.train(_as_dict(from_dict))
    assert from_dict.read_bytes() == cli_model.read_bytes()  # the configuration too

    toml = tmp_path / "train.toml"
    toml.write_text(TrainingConfig.from_dict(_as_dict("file.tgm")).to_toml(), "utf-8")
    from_file = tmp_path / "file.tgm"
    tagger.train(toml, output=from_file)  # the keyword wins over the file's output
    assert same_model(from_file, cli_model)

    from_object = tmp_path / "object.tgm"
    cfg = TrainingConfig.from_dict(_as_dict(from_object))
    returned = tagger.train(cfg)
    assert from_object.read_bytes() == cli_model.read_bytes()
    assert returned.to_bytes() == from_object.read_bytes()


def test_keywords_alone_train_the_cli_model(cli_model, tmp_path):
    out = tmp_path / "kw.tgm"
    tagger.train(train=SAMPLE, seed=SEED, params={"epochs": EPOCHS}, output=out)
    assert out.read_bytes() == cli_model.read_bytes()


def test_tagger_fit_on_sentences_trains_the_cli_model(cli_model, tmp_path):
    fitted = Tagger(seed=SEED, params={"epochs": EPOCHS}).fit(load_corpus(SAMPLE))
    fitted.save(tmp_path / "fit.tgm")
    assert same_model(tmp_path / "fit.tgm", cli_model)
    # sentences in memory cannot be named by a configuration: none is kept
    assert "config" not in fitted.info_


def test_the_estimator_trains_the_cli_model(cli_model, tmp_path):
    from tagger.integrations.sklearn import SparseTaggerEstimator

    sentences = load_corpus(SAMPLE)
    X = [list(zip(*s.columns)) for s in sentences]
    y = [list(s.labels) for s in sentences]
    est = SparseTaggerEstimator(seed=SEED, epochs=EPOCHS).fit(X, y)
    est.tagger_.save(tmp_path / "est.tgm")
    assert same_model(tmp_path / "est.tgm", cli_model)


def test_the_spacy_component_trains_the_cli_model(cli_model, tmp_path):
    spacy = pytest.importorskip("spacy")
    from spacy.tokens import Doc, Span
    from spacy.training import Example

    from tagger.evaluation.labels import bio_spans

    nlp = spacy.blank("en")
    nlp.add_pipe(
        "sparse_tagger",
        name="chunker",
        config={
            "target": "spans",
            "spans_key": "chunks",
            "preannotated": True,
            "seed": SEED,
            "params": {"epochs": EPOCHS},
        },
    )
    examples = []
    for s in load_corpus(SAMPLE):
        doc = Doc(nlp.vocab, words=s.tokens, tags=s.columns[1])
        doc.spans["chunks"] = [Span(doc, a, b, label=t) for t, a, b in bio_spans(s.labels)]
        examples.append(Example(nlp.make_doc(doc.text), doc))
    nlp.initialize(lambda: examples)
    nlp.get_pipe("chunker").tagger.save(tmp_path / "spacy.tgm")
    assert same_model(tmp_path / "spacy.tgm", cli_model)


def test_with_dev_data_the_api_and_tagger_fit_train_the_cli_model(tmp_path):
    cli = tmp_path / "cli.tgm"
    result = run_cli(
        "train",
        SAMPLE,
        "--dev",
        SAMPLE_DEV,
        "-o",
        cli,
        "--seed",
        SEED,
        "--set",
        f"epochs={EPOCHS}",
        "-q",
    )
    assert result.exit_code == 0, result.output
    api = tagger.train(train=[SAMPLE], dev=SAMPLE_DEV, seed=SEED, params={"epochs": EPOCHS})
    assert api.to_bytes() == cli.read_bytes()
    fit = Tagger(seed=SEED, params={"epochs": EPOCHS}).fit(
        load_corpus(SAMPLE), dev=load_corpus(SAMPLE_DEV)
    )
    fit.save(tmp_path / "fit.tgm")
    assert same_model(tmp_path / "fit.tgm", cli)


def test_the_api_default_chooses_the_strength_and_the_preset_as_the_cli_does(cli_model):
    fitted = Tagger().fit(load_corpus(SAMPLE))
    assert fitted.featurizer_.spec.name == "chunk"
    chosen = fitted.info_["selection"]
    cli = Tagger.load(cli_model).info_["selection"]
    assert chosen["param"] == cli["param"] and chosen["scored_on"] == cli["scored_on"]
    # select=False is the learner's default strength, as --no-select
    fixed = Tagger(select=False, params={"epochs": EPOCHS}).fit(load_corpus(SAMPLE))
    assert "selection" not in fixed.info_


def test_the_kept_configuration_trains_the_same_model_again(tmp_path):
    first = tagger.train(
        train=SAMPLE,
        dev=SAMPLE_DEV,
        seed=SEED,
        params={"epochs": EPOCHS},
        output=tmp_path / "first.tgm",
    )
    assert first.info_["config"]["model"]["features"] == "chunk"
    tagger.train(TrainingConfig.from_model(tmp_path / "first.tgm"), output=tmp_path / "again.tgm")
    assert (tmp_path / "again.tgm").read_bytes() == (tmp_path / "first.tgm").read_bytes()


@pytest.mark.parametrize(
    "settings, key",
    [
        ({"learner": "nosuch"}, "model.learner"),
        ({"features": "nosuch"}, "model.features"),
        ({"constraints": "constraints/citations.toml"}, "data.unlabeled"),
        ({"output": SAMPLE}, "model.output"),
        ({"train": []}, None),
    ],
)
def test_the_rules_refuse_what_the_command_line_refuses(settings, key, tmp_path, monkeypatch):
    monkeypatch.chdir(SAMPLE.parents[1])
    if key is None:  # empty sentences: the data, not a setting, are wrong
        with pytest.raises(Exception, match="contains no sentences"):
            tagger.train(**{"train": SAMPLE, **settings})
        return
    with pytest.raises(SettingError) as info:
        tagger.train(**{"train": SAMPLE, "output": tmp_path / "m.tgm", **settings})
    assert info.value.key == key


def test_bad_settings_name_the_key():
    with pytest.raises(ConfigError, match="model.seed: expected an integer"):
        tagger.train(train=SAMPLE, seed="x")
    with pytest.raises(ConfigError, match="one of the settings"):
        tagger.train(train=SAMPLE, colour=1)
    with pytest.raises(ConfigError, match="params.colour: expected a parameter of m3n-owlqn"):
        tagger.train(train=SAMPLE, params={"colour": 1})
    with pytest.raises(ConfigError, match="learner auto chooses"):
        tagger.train(train=SAMPLE, learner="auto", params={"c1": 1.0})


def test_unlabeled_data_make_the_default_learner_ssvm_annealing():
    from tagger.learners import DEFAULT_LEARNER
    from tagger.training.run import default_learner

    assert default_learner("", True) == "ssvm-annealing"
    assert default_learner("", False) == DEFAULT_LEARNER
    assert default_learner("crf-l1", True) == "crf-l1"


def test_the_configuration_object_round_trips_its_dict_form():
    cfg = TrainingConfig.from_dict({"data": {"train": "a.txt"}, "model": {"seed": 2}})
    assert cfg.data["train"] == ["a.txt"] and cfg.model["seed"] == 2
    assert TrainingConfig.from_dict(cfg.to_dict()) == cfg
    assert cfg.merged({"seed": 5, "params": {"c1": 1.0}}).to_dict()["model"]["seed"] == 5
    with pytest.raises(ConfigError, match="model.colour"):
        TrainingConfig.from_dict({"model": {"colour": 1}})
