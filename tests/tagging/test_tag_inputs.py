"""One set of inputs for every command: ``tagger tag`` reads every source ``train`` and ``eval``
read (corpus files, datasets files, DocBins) and writes the input's format, JSON lines or another
format; text comes back as text; ``train --json``; streaming datasets are tagged lazily."""

from __future__ import annotations

import json

import numpy as np
import pytest

from tagger.api import Tagger
from tagger.io import load_corpus

from _helpers import SAMPLE, SAMPLE_DEV, SAMPLES, run_cli


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    d = tmp_path_factory.mktemp("inputs")
    out = {}
    for name, learner in (("m3n", "m3n-subgradient"), ("crf", "crf-l2")):
        path = d / f"{name}.tgm"
        r = run_cli(
            "train",
            SAMPLE,
            "-o",
            path,
            "--learner",
            learner,
            "--no-select",
            "--set",
            "epochs=3",
            "-q",
        )
        assert r.exit_code == 0, r.output
        out[name] = path
    return out


@pytest.fixture(scope="module")
def dev():
    return load_corpus(SAMPLE_DEV)


def _jsonl(text: str) -> list[dict]:
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def test_text_input_comes_back_as_text(models, dev, tmp_path):
    pos = tmp_path / "pos.tgm"
    assert (
        run_cli(
            "train",
            SAMPLE,
            "--label-column",
            1,
            "--features",
            "pos",
            "-o",
            pos,
            "--no-select",
            "--set",
            "epochs=2",
            "-q",
        ).exit_code
        == 0
    )
    text = tmp_path / "t.txt"
    text.write_text("".join(" ".join(s.tokens) + "\n" for s in dev))
    r = run_cli("tag", pos, text)
    assert r.exit_code == 0, r.output
    lines = r.stdout.splitlines()
    want = Tagger.load(pos).predict(load_corpus(text, format="text"))
    assert len(lines) == len(dev)
    for line, s, labels in zip(lines, dev, want):
        pairs = [item.rsplit("/", 1) for item in line.split(" ")]
        assert [t for t, _ in pairs] == s.tokens and [lab for _, lab in pairs] == labels

    # untokenized prose (punctuation attached to the words) is tokenized, as --format raw does:
    # "years." is two tokens, not one word tagged as a whole
    prose = SAMPLES / "sample_text.txt"
    r = run_cli("tag", pos, prose)
    assert r.exit_code == 0, r.output
    raw = list(load_corpus(prose, format="raw"))
    want = Tagger.load(pos).predict(raw)
    lines = r.stdout.splitlines()
    assert len(lines) == len(raw)
    for line, s, labels in zip(lines, raw, want):
        assert line == " ".join(f"{t}/{lab}" for t, lab in zip(s.tokens, labels))
    assert "years/" in lines[0] and "years." not in lines[0]
    # --format text keeps such lines split at spaces
    r = run_cli("tag", pos, prose, "--format", "text")
    assert r.stdout.splitlines()[0].split(" ")[-1].startswith("years./")


@pytest.mark.parametrize(
    "lines, fmt",
    [
        (["The school board voted on Thursday .", "It rained ."], "text"),  # tokenized
        (["1/2 cucumber , sliced", "1 1/4 cups lukewarm water"], "text"),
        (["It has n't cost $ 1,000 at 10:30 , or 12.5 % ."], "text"),
        (["`` We are pleased , '' he said ."], "text"),
        (["The school board voted on Thursday.", "It rained."], "raw"),
        (['"We are very pleased," a spokeswoman said', "Shares fell 6% after it warned"], "raw"),
        (["Dr. Okafor's team hasn't published the results yet"], "raw"),
        (["Prices rose, then fell", "no punctuation here", "none here either"], "text"),
    ],
)
def test_one_sentence_per_line_is_guessed_tokenized_or_not(tmp_path, lines, fmt):
    """Text is guessed to be prose to tokenize (raw) when at least half its lines have
    punctuation attached to a word; tokenized text, a number's own punctuation and a minority
    of such lines keep it pre-tokenized text."""
    from tagger.io import detect_format

    path = tmp_path / "t.txt"
    path.write_text("\n".join(lines) + "\n")
    assert detect_format(path) == fmt


def test_jsonl_output_of_a_conll_file(models, dev):
    r = run_cli("tag", models["m3n"], SAMPLE_DEV, "--output-format", "jsonl")
    assert r.exit_code == 0, r.output
    records = _jsonl(r.stdout)
    want = Tagger.load(models["m3n"]).predict(dev)
    assert [rec["word"] for rec in records] == [s.tokens for s in dev]
    assert [rec["pos"] for rec in records] == [s.columns[1] for s in dev]
    assert [rec["predicted"] for rec in records] == want


def test_jsonl_marginals_are_the_apis(models, dev):
    r = run_cli("tag", models["crf"], SAMPLE_DEV, "--output-format", "jsonl", "--marginals")
    assert r.exit_code == 0, r.output
    records = _jsonl(r.stdout)
    tagger = Tagger.load(models["crf"])
    want = tagger.predict_marginals(dev)
    for rec, m in zip(records, want):
        got = np.array([[row[lab] for lab in tagger.labels_.labels] for row in rec["marginals"]])
        assert np.allclose(got, m, atol=1e-6)
        assert np.allclose(got.sum(axis=1), 1.0, atol=1e-5)


def test_other_output_formats_and_jobs(models, dev, tmp_path):
    one = run_cli("tag", models["m3n"], SAMPLE_DEV, "--output-format", "tab")
    two = run_cli("tag", models["m3n"], SAMPLE_DEV, "--output-format", "tab", "-j", "2")
    assert one.exit_code == 0 and two.exit_code == 0, two.output
    assert one.stdout == two.stdout
    want = Tagger.load(models["m3n"]).predict(dev)
    blocks = [b for b in one.stdout.split("\n\n") if b.strip()]
    assert [[ln.split("\t")[-1] for ln in b.splitlines()] for b in blocks] == want
    jl = run_cli("tag", models["m3n"], SAMPLE_DEV, "--output-format", "jsonl", "-j", "2")
    assert [rec["predicted"] for rec in _jsonl(jl.stdout)] == want


def test_a_parquet_file_is_tagged_like_its_conll_file(models, dev, tmp_path):
    datasets = pytest.importorskip("datasets")
    ds = datasets.Dataset.from_dict(
        {
            "tokens": [s.tokens for s in dev],
            "pos": [s.columns[1] for s in dev],
            "chunk": [s.labels for s in dev],
        }
    )
    ds.to_parquet(str(tmp_path / "dev.parquet"))
    want = Tagger.load(models["m3n"]).predict(dev)
    r = run_cli("tag", models["m3n"], tmp_path / "dev.parquet")  # default fields, JSON lines
    assert r.exit_code == 0, r.output
    records = _jsonl(r.stdout)
    assert [rec["predicted"] for rec in records] == want
    assert [rec["tokens"] for rec in records] == [s.tokens for s in dev]
    r = run_cli(
        "tag",
        models["m3n"],
        tmp_path / "dev.parquet",
        "--fields",
        "tokens,pos",
        "--output-format",
        "conll",
    )
    blocks = [b for b in r.stdout.split("\n\n") if b.strip()]
    assert [[ln.split(" ")[-1] for ln in b.splitlines()] for b in blocks] == want
    # a model reading more columns than the fields name is told so
    bad = run_cli("tag", models["m3n"], tmp_path / "dev.parquet", "--fields", "tokens")
    assert bad.exit_code == 1 and "--fields" in bad.stderr and "Traceback" not in bad.output


def test_a_docbin_is_tagged_like_its_conll_file(models, dev, tmp_path):
    spacy = pytest.importorskip("spacy")
    from spacy.tokens import Doc, DocBin

    nlp = spacy.blank("en")
    db = DocBin()
    for s in dev:
        db.add(Doc(nlp.vocab, words=s.tokens, tags=s.columns[1]))
    db.to_disk(tmp_path / "dev.spacy")
    r = run_cli("tag", models["m3n"], tmp_path / "dev.spacy", "--fields", "words,tag")
    assert r.exit_code == 0, r.output
    records = _jsonl(r.stdout)
    assert [rec["predicted"] for rec in records] == Tagger.load(models["m3n"]).predict(dev)
    assert list(records[0]) == ["words", "tag", "predicted"]


def test_a_streaming_dataset_is_tagged_lazily(models, dev, tmp_path):
    datasets = pytest.importorskip("datasets")
    from tagger.errors import DatasetSourceError

    ds = datasets.Dataset.from_dict(
        {"tokens": [s.tokens for s in dev], "pos": [s.columns[1] for s in dev]}
    )
    ds.to_parquet(str(tmp_path / "dev.parquet"))
    stream = datasets.load_dataset(
        "parquet", data_files=str(tmp_path / "dev.parquet"), split="train", streaming=True
    )
    tagger = Tagger.load(models["m3n"])
    out = tagger.tag_dataset(stream)
    assert isinstance(out, datasets.IterableDataset)
    assert [row["predicted"] for row in out] == tagger.predict(dev)
    with pytest.raises(DatasetSourceError, match="streaming"):
        tagger.tag_dataset(stream, num_proc=2)


def test_train_json_summary(tmp_path):
    r = run_cli(
        "train", SAMPLE, "-o", tmp_path / "m.tgm", "--no-select", "--set", "epochs=2", "--json"
    )
    assert r.exit_code == 0, r.output
    summary = json.loads(r.stdout)
    tagger = Tagger.load(tmp_path / "m.tgm")
    assert summary["n_nonzero"] == tagger.n_nonzero_
    assert summary["model_bytes"] == (tmp_path / "m.tgm").stat().st_size
    assert summary["labels"] == list(tagger.labels_.labels)
    assert summary["n_train_sentences"] == len(load_corpus(SAMPLE))
