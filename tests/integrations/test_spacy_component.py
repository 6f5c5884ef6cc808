"""The spaCy component ``sparse_tagger`` and DocBin training input.

Two small models are trained once on the shipped sample (a POS tagger from words, a chunker
from words and POS); every label the component writes is compared with what ``Tagger.predict``
gives for the same input, and spaCy's Scorer with our conlleval implementation.
"""

from __future__ import annotations

import os
import pickle
import subprocess
import sys
import textwrap

import numpy as np
import pytest

spacy = pytest.importorskip("spacy")
from click.testing import CliRunner  # noqa: E402
from spacy.tokens import Doc, DocBin, Span  # noqa: E402
from spacy.training import Example  # noqa: E402

from tagger import Tagger  # noqa: E402
from tagger.cli.commands import cli  # noqa: E402
from tagger.evaluation.labels import bio_spans  # noqa: E402
from tagger.evaluation.metrics import evaluate  # noqa: E402
from tagger.integrations.spacy_component import ComponentConfigError  # noqa: E402
from tagger.io import load_corpus  # noqa: E402
from tagger.sentence import Sentence  # noqa: E402

from _brute import labelings, path_scores  # noqa: E402
from _entry_points import entry_point_site  # noqa: E402
from _helpers import ROOT, SAMPLE  # noqa: E402
from _models import same_model  # noqa: E402

DEV = ROOT / "corpora" / "sample_chunk_dev.txt"
PARAMS = {"epochs": 4}


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("spacy")
    train = load_corpus(SAMPLE)
    chunk = Tagger(features="chunk", learner="m3n-subgradient", params=PARAMS, select=False).fit(
        train
    )
    chunk.save(tmp / "chunk.tgm")
    pos_train = load_corpus(SAMPLE, label_column=1)
    pos = Tagger(features="pos", learner="m3n-subgradient", params=PARAMS, select=False).fit(
        pos_train
    )
    pos.save(tmp / "pos.tgm")
    return {
        "dir": tmp,
        "chunk": tmp / "chunk.tgm",
        "pos": tmp / "pos.tgm",
        "chunk_tagger": chunk,
        "pos_tagger": pos,
    }


@pytest.fixture(scope="module")
def dev():
    return load_corpus(DEV)


def _spans(doc, key="chunks"):
    return [(s.label_, s.start, s.end) for s in doc.spans[key]]


def _two_stage(models):
    nlp = spacy.blank("en")
    nlp.add_pipe("sparse_tagger", name="pos", config={"model": str(models["pos"])})
    nlp.add_pipe(
        "sparse_tagger",
        name="chunker",
        config={"model": str(models["chunk"]), "target": "spans", "spans_key": "chunks"},
    )
    return nlp


def test_pos_then_chunk_pipeline_equals_the_api(models, dev):
    nlp = _two_stage(models)
    docs = list(nlp.pipe(Doc(nlp.vocab, words=s.tokens) for s in dev))
    from tagger.sentence import Sentence

    pos = models["pos_tagger"].predict([Sentence([s.tokens]) for s in dev])
    chunks = models["chunk_tagger"].predict([Sentence([s.tokens, p]) for s, p in zip(dev, pos)])
    assert [[t.tag_ for t in d] for d in docs] == pos
    assert [_spans(d) for d in docs] == [bio_spans(c) for c in chunks]


def test_chunker_without_pos_fails_at_add_pipe_naming_the_column(models):
    nlp = spacy.blank("en")
    with pytest.raises(ComponentConfigError) as err:
        nlp.add_pipe("sparse_tagger", config={"model": str(models["chunk"]), "target": "spans"})
    msg = str(err.value)
    assert "'pos'" in msg and "Token.tag_" in msg and "preannotated" in msg
    assert "sparse_tagger" not in nlp.pipe_names


def test_pipeline_order_is_checked_at_initialize(models):
    nlp = _two_stage(models)
    nlp.remove_pipe("pos")
    nlp.add_pipe("sparse_tagger", name="pos", config={"model": str(models["pos"])}, last=True)
    with pytest.raises(ComponentConfigError, match="no component before 'chunker'"):
        nlp.initialize()
    good = _two_stage(models)
    good.initialize()  # the right order passes


def test_preannotated_docs_and_a_doc_without_tags(models, dev):
    nlp = spacy.blank("en")
    nlp.add_pipe(
        "sparse_tagger",
        config={
            "model": str(models["chunk"]),
            "target": "spans",
            "spans_key": "chunks",
            "preannotated": True,
        },
    )
    docs = [Doc(nlp.vocab, words=s.tokens, tags=s.columns[1]) for s in dev]
    got = [_spans(d) for d in nlp.pipe(docs)]
    want = [bio_spans(p) for p in models["chunk_tagger"].predict(dev)]
    assert got == want
    with pytest.raises(ComponentConfigError, match=r"Doc 1 of the batch has no Token\.tag_"):
        nlp(Doc(nlp.vocab, words=["no", "tags"]))


def test_ents_target(models, dev):
    nlp = spacy.blank("en")
    nlp.add_pipe(
        "sparse_tagger",
        config={"model": str(models["chunk"]), "target": "ents", "preannotated": True},
    )
    docs = list(nlp.pipe(Doc(nlp.vocab, words=s.tokens, tags=s.columns[1]) for s in dev))
    want = [bio_spans(p) for p in models["chunk_tagger"].predict(dev)]
    assert [[(e.label_, e.start, e.end) for e in d.ents] for d in docs] == want


def test_predict_leaves_docs_alone_and_set_annotations_writes(models, dev):
    nlp = spacy.blank("en")
    pipe = nlp.add_pipe("sparse_tagger", config={"model": str(models["pos"])})
    docs = [Doc(nlp.vocab, words=s.tokens) for s in dev[:3]]
    preds = pipe.predict(docs)
    assert all(not d.has_annotation("TAG") for d in docs)
    pipe.set_annotations(docs, preds)
    from tagger.sentence import Sentence

    assert [[t.tag_ for t in d] for d in docs] == models["pos_tagger"].predict(
        [Sentence([s.tokens]) for s in dev[:3]]
    )


def test_pipe_decodes_one_batch_per_kernel_call(models, dev, monkeypatch):
    calls = []
    original = Tagger.predict_batch

    def counting(self, sentences, constraints=None, marginals=False):
        calls.append(len(sentences))
        return original(self, sentences, constraints, marginals)

    monkeypatch.setattr(Tagger, "predict_batch", counting)
    nlp = spacy.blank("en")
    nlp.add_pipe("sparse_tagger", config={"model": str(models["pos"]), "batch_size": 4})
    docs = [Doc(nlp.vocab, words=s.tokens) for s in dev] + [Doc(nlp.vocab, words=[])]
    list(nlp.pipe(docs, batch_size=4))
    n = len(docs)
    assert len(calls) == -(-n // 4)
    assert sum(calls) == n - 1  # the empty Doc takes no rows


def test_to_disk_spacy_load_and_bytes_round_trip(models, dev, tmp_path):
    import shutil

    src = tmp_path / "pos.tgm"
    shutil.copy(models["pos"], src)
    nlp = spacy.blank("en")
    nlp.add_pipe("sparse_tagger", config={"model": str(src)})
    nlp.to_disk(tmp_path / "pipeline")
    src.unlink()  # the saved pipeline carries its own copy
    loaded = spacy.load(tmp_path / "pipeline")
    words = dev[0].tokens
    want = [t.tag_ for t in nlp(Doc(nlp.vocab, words=words))]
    assert [t.tag_ for t in loaded(Doc(loaded.vocab, words=words))] == want
    fresh = spacy.blank("en")
    fresh.add_pipe("sparse_tagger")  # no model yet
    with pytest.raises(ComponentConfigError, match="no model"):
        fresh(Doc(fresh.vocab, words=words))
    fresh.from_bytes(nlp.to_bytes())
    assert [t.tag_ for t in fresh(Doc(fresh.vocab, words=words))] == want


def test_pickle_and_n_process_2(models, dev):
    nlp = _two_stage(models)
    docs = [Doc(nlp.vocab, words=s.tokens) for s in dev]
    want = [_spans(d) for d in nlp.pipe(docs)]
    clone = pickle.loads(pickle.dumps(nlp))
    assert [_spans(d) for d in clone.pipe(Doc(clone.vocab, words=s.tokens) for s in dev)] == want
    docs = [Doc(nlp.vocab, words=s.tokens) for s in dev]
    assert [_spans(d) for d in nlp.pipe(docs, n_process=2, batch_size=4)] == want


def test_scores_match_our_conlleval(models, dev):
    nlp = _two_stage(models)
    examples = []
    for s in dev:
        ref = Doc(nlp.vocab, words=s.tokens, tags=s.columns[1])
        ref.spans["chunks"] = [Span(ref, a, b, label=t) for t, a, b in bio_spans(s.labels)]
        examples.append(Example(Doc(nlp.vocab, words=s.tokens), ref))
    scores = nlp.evaluate(examples)  # runs the pipeline on copies of the examples
    docs = list(nlp.pipe(Doc(nlp.vocab, words=s.tokens) for s in dev))
    pred = [[t.tag_ for t in d] for d in docs]
    ours_pos = evaluate([s.columns[1] for s in dev], pred)
    chunks = [["O"] * len(d) for d in docs]
    for lab, d in zip(chunks, docs):
        for sp in d.spans["chunks"]:
            lab[sp.start] = "B-" + sp.label_
            for i in range(sp.start + 1, sp.end):
                lab[i] = "I-" + sp.label_
    ours_chunk = evaluate([s.labels for s in dev], chunks)
    assert scores["tag_acc"] == pytest.approx(ours_pos["accuracy"])
    assert scores["spans_chunks_f"] == pytest.approx(ours_chunk["f1"])
    assert scores["spans_chunks_p"] == pytest.approx(ours_chunk["precision"])


def test_marginals_extension_matches_brute_force(models, tmp_path):
    tg = Tagger(features="chunk", learner="crf-l2", params={"epochs": 30}, select=False).fit(
        load_corpus(SAMPLE)
    )
    tg.save(tmp_path / "crf.tgm")
    nlp = spacy.blank("en")
    nlp.add_pipe(
        "sparse_tagger",
        config={
            "model": str(tmp_path / "crf.tgm"),
            "target": "spans",
            "preannotated": True,
            "scores": "chunk_prob",
        },
    )
    words, tags = ["The", "company", "reported", "a"], ["DT", "NN", "VBD", "DT"]
    doc = nlp(Doc(nlp.vocab, words=words, tags=tags))
    from tagger.sentence import Sentence

    E = tg.featurizer_.encode([Sentence([words, tags])])
    state = tg.model_.state_scores_from_views(E, tg.weights_)
    trans = tg.model_.transitions(tg.weights_)
    L = state.shape[1]
    paths = labelings(len(words), L)
    score = path_scores(state, trans, paths)
    p = np.exp(score - score.max())
    p /= p.sum()
    best = paths[np.argmax(score)]
    for t, tok in enumerate(doc):
        assert tok._.chunk_prob == pytest.approx(p[paths[:, t] == best[t]].sum(), abs=1e-9)


def test_config_errors(models):
    nlp = spacy.blank("en")
    with pytest.raises(ComponentConfigError, match="Universal POS"):
        nlp.add_pipe("sparse_tagger", config={"model": str(models["pos"]), "target": "pos"})
    with pytest.raises(ComponentConfigError, match="target must be one of"):
        nlp.add_pipe("sparse_tagger", config={"model": str(models["pos"]), "target": "heads"})
    with pytest.raises(ComponentConfigError, match="'scores' needs a CRF model.*m3n-subgradient"):
        nlp.add_pipe(
            "sparse_tagger",
            config={"model": str(models["chunk"]), "scores": "p", "target": "spans"},
        )
    with pytest.raises(ComponentConfigError, match="cannot be combined"):
        nlp.add_pipe(
            "sparse_tagger",
            config={"model": str(models["pos"]), "scores": "p", "constraints": "fields.toml"},
        )
    missing = nlp.add_pipe("sparse_tagger", name="later", config={"model": "nowhere.tgm"})
    with pytest.raises(ComponentConfigError, match="nowhere.tgm does not exist"):
        missing(Doc(nlp.vocab, words=["a"]))
    for empty in ("", "  "):
        with pytest.raises(ComponentConfigError, match="the model path is empty"):
            nlp.add_pipe("sparse_tagger", name="empty", config={"model": empty})


def test_initialize_with_a_model_and_no_examples_warns_of_nothing(models):
    import warnings

    nlp = spacy.blank("en")
    nlp.add_pipe("sparse_tagger", config={"model": str(models["pos"])})
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # spaCy's placeholder Example is no training data
        nlp.initialize()
    assert [t.tag_ for t in nlp("The company said")] == models["pos_tagger"].predict(
        [Sentence([["The", "company", "said"]])]
    )[0]


def test_entry_point_needs_no_import_of_tagger(models, tmp_path):
    site = entry_point_site(tmp_path)
    code = textwrap.dedent(f"""
        import sys
        import spacy
        from spacy.tokens import Doc
        assert "tagger" not in sys.modules
        nlp = spacy.blank("en")
        nlp.add_pipe("sparse_tagger", config={{"model": {str(models["pos"])!r}}})
        doc = nlp(Doc(nlp.vocab, words=["The", "company", "said"]))
        print(" ".join(t.tag_ for t in doc))
    """)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(site), str(ROOT)]))
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, cwd=tmp_path
    )
    assert out.returncode == 0, out.stderr
    from tagger.sentence import Sentence

    want = models["pos_tagger"].predict([Sentence([["The", "company", "said"]])])[0]
    assert out.stdout.split() == want


def test_train_on_a_docbin_equals_training_on_the_conll_file(tmp_path):
    nlp = spacy.blank("en")
    db = DocBin()
    for s in load_corpus(SAMPLE):
        doc = Doc(nlp.vocab, words=s.tokens, tags=s.columns[1])
        doc.spans["chunks"] = [Span(doc, a, b, label=t) for t, a, b in bio_spans(s.labels)]
        db.add(doc)
    db.to_disk(tmp_path / "train.spacy")
    run = CliRunner().invoke
    a = run(
        cli,
        [
            "train",
            str(tmp_path / "train.spacy"),
            "-o",
            str(tmp_path / "a.tgm"),
            "--fields",
            "words,tag,spans:chunks",
            "--set",
            "epochs=3",
            "-q",
        ],
    )
    b = run(cli, ["train", str(SAMPLE), "-o", str(tmp_path / "b.tgm"), "--set", "epochs=3", "-q"])
    assert a.exit_code == 0, a.output
    assert b.exit_code == 0, b.output
    assert same_model(tmp_path / "a.tgm", tmp_path / "b.tgm")  # but the data paths kept
    # the default fields of a DocBin with tags and one span group are the same
    c = run(
        cli,
        [
            "train",
            str(tmp_path / "train.spacy"),
            "-o",
            str(tmp_path / "c.tgm"),
            "--set",
            "epochs=3",
            "-q",
        ],
    )
    assert c.exit_code == 0, c.output
    assert same_model(tmp_path / "c.tgm", tmp_path / "b.tgm")
    bad = run(
        cli,
        [
            "train",
            str(tmp_path / "train.spacy"),
            "-o",
            str(tmp_path / "d.tgm"),
            "--fields",
            "words,ents",
            "-q",
        ],
    )
    assert bad.exit_code == 1
    assert "Doc 1 has no doc.ents" in bad.output


@pytest.mark.slow
def test_nlp_pipe_on_conll2000_test_equals_tagger_tag(corpora, tmp_path):
    """The whole CoNLL-2000 test set: spans from nlp.pipe are the chunks `tagger tag` writes."""
    train = load_corpus(corpora / "conll2000" / "train.txt")[:1500]
    tg = Tagger(features="chunk", params={"epochs": 5}, select=False).fit(train)
    tg.save(tmp_path / "chunk.tgm")
    test = corpora / "conll2000" / "test.txt"
    r = CliRunner().invoke(
        cli, ["tag", str(tmp_path / "chunk.tgm"), str(test), "-o", str(tmp_path / "out.txt")]
    )
    assert r.exit_code == 0, r.output
    want = [bio_spans(s.labels) for s in load_corpus(tmp_path / "out.txt")]
    nlp = spacy.blank("en")
    nlp.add_pipe(
        "sparse_tagger",
        config={
            "model": str(tmp_path / "chunk.tgm"),
            "target": "spans",
            "spans_key": "chunks",
            "preannotated": True,
        },
    )
    sents = load_corpus(test)
    docs = [Doc(nlp.vocab, words=s.tokens, tags=s.columns[1]) for s in sents]
    assert [_spans(d) for d in nlp.pipe(docs, batch_size=1000)] == want


def test_constraints_decode_as_the_api_does(models, dev, tmp_path):
    """With a constraint file the component's chunks are Tagger.predict(constraints=...)'s."""
    tagger = models["chunk_tagger"]
    rules = tmp_path / "rules.toml"
    labels = ", ".join(f'"{lab}"' for lab in tagger.labels_.labels)
    rules.write_text(
        f'labels = [{labels}]\n\n[[instance]]\nname = "starts outside a chunk"\n'
        f'rule = "start"\nlabels = ["O"]\nhard = true\n',
        encoding="utf-8",
    )
    expected = tagger.predict(dev, constraints=str(rules))
    assert all(labs[0] == "O" for labs in expected if labs)
    assert expected != tagger.predict(dev)  # the rule changes some labels
    nlp = spacy.blank("en")
    nlp.add_pipe(
        "sparse_tagger",
        config={
            "model": str(models["chunk"]),
            "target": "spans",
            "spans_key": "chunks",
            "preannotated": True,
            "constraints": str(rules),
        },
    )
    docs = [Doc(nlp.vocab, words=s.tokens, tags=s.columns[1]) for s in dev]
    assert [_spans(d) for d in nlp.pipe(docs)] == [bio_spans(p) for p in expected]
