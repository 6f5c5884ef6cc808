"""Training the spaCy component inside spaCy: ``nlp.initialize`` trains it from the Examples as
the API does from the same sentences, ``spacy train`` on DocBins produces a pipeline whose
labels are the API's, ``update`` says once that it leaves the model alone, the score weights
follow the target and saved configs name no model path relative to the working directory."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import warnings

import pytest

spacy = pytest.importorskip("spacy")
from spacy.tokens import Doc, DocBin, Span  # noqa: E402
from spacy.training import Example  # noqa: E402

from tagger import Tagger  # noqa: E402
from tagger.errors import TaggerWarning  # noqa: E402
from tagger.evaluation.labels import bio_spans  # noqa: E402
from tagger.evaluation.metrics import evaluate  # noqa: E402
from tagger.io import load_corpus  # noqa: E402
from tagger.sentence import Sentence  # noqa: E402

from _entry_points import entry_point_site  # noqa: E402
from _helpers import ROOT, SAMPLE  # noqa: E402

DEV = ROOT / "corpora" / "sample_chunk_dev.txt"
PARAMS = {"epochs": 3}


def _docs(nlp, path):
    docs = []
    for s in load_corpus(path):
        doc = Doc(nlp.vocab, words=s.tokens, tags=s.columns[1])
        doc.spans["chunks"] = [Span(doc, a, b, label=t) for t, a, b in bio_spans(s.labels)]
        docs.append(doc)
    return docs


def _api_models():
    """The two stages trained by the API on the sample: POS from words, chunks from words and
    gold POS, at the component's defaults (selection on a held-out tenth, seed 0)."""
    pos = Tagger(features="pos", learner="m3n-subgradient", params=PARAMS, seed=0, select=True).fit(
        load_corpus(SAMPLE, label_column=1)
    )
    chunk = Tagger(
        features="chunk", learner="m3n-subgradient", params=PARAMS, seed=0, select=True
    ).fit(load_corpus(SAMPLE))
    return pos, chunk


def _pipeline(nlp):
    nlp.add_pipe(
        "sparse_tagger",
        name="pos",
        config={"features": "pos", "learner": "m3n-subgradient", "params": PARAMS},
    )
    nlp.add_pipe(
        "sparse_tagger",
        name="chunker",
        config={
            "target": "spans",
            "spans_key": "chunks",
            "features": "chunk",
            "learner": "m3n-subgradient",
            "params": PARAMS,
        },
    )
    return nlp


def _two_stage(pos, chunk, dev):
    """Labels of the API's two stages on ``dev``: POS predicted, then chunks from it."""
    tags = pos.predict([Sentence([s.tokens]) for s in dev])
    return tags, chunk.predict([Sentence([s.tokens, t]) for s, t in zip(dev, tags)])


def test_initialize_trains_each_component_as_the_api_does():
    nlp = _pipeline(spacy.blank("en"))
    examples = [Example(nlp.make_doc(d.text), d) for d in _docs(nlp, SAMPLE)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TaggerWarning)  # the sample's held-out tenth is small
        nlp.initialize(lambda: examples)
    pos, chunk = _api_models()
    assert nlp.get_pipe("pos").tagger.to_bytes() == pos.to_bytes()
    assert nlp.get_pipe("chunker").tagger.to_bytes() == chunk.to_bytes()
    dev = load_corpus(DEV)
    tags, chunks = _two_stage(pos, chunk, dev)
    docs = list(nlp.pipe([nlp.make_doc(" ".join(s.tokens)) for s in dev]))
    assert [[t.tag_ for t in d] for d in docs] == tags
    assert [[(sp.label_, sp.start, sp.end) for sp in d.spans["chunks"]] for d in docs] == [
        bio_spans(c) for c in chunks
    ]
    # spacy train ranks checkpoints by the scores these components produce
    weights = nlp.config["training"]["score_weights"]
    assert weights["tag_acc"] and weights["spans_chunks_f"]
    assert "spans_sc_f" not in weights


def test_initialize_without_examples_says_there_are_none():
    """nlp.initialize() hands each component a placeholder Example of its own (three words, no
    annotation): the component says that no training examples came, not what Example 1
    lacks."""
    from tagger.errors import ComponentConfigError

    nlp = spacy.blank("en")
    nlp.add_pipe("sparse_tagger")
    with pytest.raises(ComponentConfigError, match=r"nlp.initialize\(\) was given no training"):
        nlp.initialize()
    with pytest.raises(ComponentConfigError, match="initialize got no training Examples"):
        nlp.initialize(lambda: [])


def test_update_says_once_that_it_leaves_the_model():
    nlp = _pipeline(spacy.blank("en"))
    examples = [Example(nlp.make_doc(d.text), d) for d in _docs(nlp, SAMPLE)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TaggerWarning)
        nlp.initialize(lambda: examples)
    before = nlp.get_pipe("pos").tagger.to_bytes()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(3):
            losses = nlp.update(examples[:4])
    said = [w for w in caught if issubclass(w.category, TaggerWarning)]
    assert len(said) == 2 and all("update steps leave it" in str(w.message) for w in said)
    assert losses["pos"] == 0.0
    assert nlp.get_pipe("pos").tagger.to_bytes() == before


def test_a_relative_model_path_is_kept_absolute(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    Tagger(features="pos", params={"epochs": 1}, select=False).fit(
        load_corpus(SAMPLE, label_column=1)
    ).save("pos.tgm")
    nlp = spacy.blank("en")
    nlp.add_pipe("sparse_tagger", config={"model": "pos.tgm"})
    nlp.to_disk(tmp_path / "pipeline")
    saved = (tmp_path / "pipeline" / "config.cfg").read_text()
    assert f'model = "{tmp_path / "pos.tgm"}"' in saved
    # loaded elsewhere, with another pos.tgm in the working directory: the bundled copy is used
    other = tmp_path / "elsewhere"
    other.mkdir()
    monkeypatch.chdir(other)
    Tagger(features="chunk", params={"epochs": 1}, select=False).fit(load_corpus(SAMPLE)).save(
        "pos.tgm"
    )
    loaded = spacy.load(tmp_path / "pipeline")
    assert loaded.get_pipe("sparse_tagger").labels == nlp.get_pipe("sparse_tagger").labels


def _spacy_train(tmp_path, config: str):
    """``spacy train`` in a subprocess on the sample's DocBins; (its run, the environment)."""
    nlp = spacy.blank("en")
    for name, path in (("train", SAMPLE), ("dev", DEV)):
        db = DocBin()
        for doc in _docs(nlp, path):
            db.add(doc)
        db.to_disk(tmp_path / f"{name}.spacy")
    cfg = tmp_path / "config.cfg"
    cfg.write_text(config)
    env = dict(
        os.environ,
        PYTHONPATH=os.pathsep.join(
            [str(entry_point_site(tmp_path)), str(ROOT), os.environ.get("PYTHONPATH", "")]
        ),
    )
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "spacy",
            "train",
            str(cfg),
            "--output",
            str(tmp_path / "out"),
            "--paths.train",
            str(tmp_path / "train.spacy"),
            "--paths.dev",
            str(tmp_path / "dev.spacy"),
        ],
        env=env,
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    return run, env


@pytest.mark.slow
@pytest.mark.ci
def test_spacy_train_on_docbins_gives_the_apis_labels(tmp_path):
    run, env = _spacy_train(tmp_path, CONFIG)
    assert run.stderr.count("update steps leave it") == 2
    best = tmp_path / "out" / "model-last"
    saved = (best / "config.cfg").read_text()
    assert "model = null" in saved
    # the pipeline's labels and spaCy's score are those of the API's two stages
    dev = load_corpus(DEV)
    tags, chunks = _two_stage(*_api_models(), dev)
    texts = tmp_path / "texts.json"
    texts.write_text(json.dumps([" ".join(s.tokens) for s in dev]))
    code = (
        f"import spacy, json; nlp = spacy.load({str(best)!r}); "
        f"docs = [nlp(t) for t in json.load(open({str(texts)!r}))]; "
        "print(json.dumps([[t.tag_ for t in d] for d in docs]))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, cwd=ROOT.parent
    )
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout) == tags
    meta = json.loads((best / "meta.json").read_text())
    f1 = evaluate([s.labels for s in dev], chunks, chunk_level=True)["f1"]
    assert meta["performance"]["spans_chunks_f"] == pytest.approx(f1, abs=1e-4)


@pytest.mark.slow
@pytest.mark.ci
def test_spacy_train_scores_a_preannotated_chunker_on_gold_tags_as_tagger_eval(tmp_path):
    _spacy_train(
        tmp_path,
        CONFIG.replace('pipeline = ["pos", "chunker"]', 'pipeline = ["chunker"]')
        .replace('spans_key = "chunks"', 'spans_key = "chunks"\npreannotated = true')
        .replace(
            "path = ${paths.dev}",
            "path = ${paths.dev}\naugmenter = "
            '{"@augmenters": "sparse_tagger.gold_inputs.v1", "fields": ["tag"]}',
        ),
    )
    chunk = _api_models()[1]
    dev = load_corpus(DEV)
    f1 = evaluate([s.labels for s in dev], chunk.predict(dev), chunk_level=True)["f1"]
    meta = json.loads((tmp_path / "out" / "model-last" / "meta.json").read_text())
    assert meta["performance"]["spans_chunks_f"] == pytest.approx(f1, abs=1e-4)


CONFIG = """
[paths]
train = null
dev = null

[system]
seed = 0
gpu_allocator = null

[nlp]
lang = "en"
pipeline = ["pos", "chunker"]
batch_size = 1000

[components]

[components.pos]
factory = "sparse_tagger"
target = "tag"
features = "pos"
learner = "m3n-subgradient"

[components.pos.params]
epochs = 3

[components.chunker]
factory = "sparse_tagger"
target = "spans"
spans_key = "chunks"
features = "chunk"
learner = "m3n-subgradient"

[components.chunker.params]
epochs = 3

[corpora]

[corpora.train]
@readers = "spacy.Corpus.v1"
path = ${paths.train}

[corpora.dev]
@readers = "spacy.Corpus.v1"
path = ${paths.dev}

[training]
seed = ${system.seed}
gpu_allocator = ${system.gpu_allocator}
max_steps = 1
eval_frequency = 1

[training.optimizer]
@optimizers = "Adam.v1"

[initialize]
"""
