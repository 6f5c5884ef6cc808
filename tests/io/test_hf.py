"""Hugging Face ``datasets`` sources and ``Dataset.map`` tagging.

Fixtures are built in a tmp dir from the real CoNLL-2000 files (a slice); no test uses the
network: the hub test points the endpoint at a closed local port.
"""

from __future__ import annotations

import pytest

datasets = pytest.importorskip("datasets")
from click.testing import CliRunner  # noqa: E402
from datasets import ClassLabel, Dataset, Features, List, Value  # noqa: E402

from tagger import Tagger  # noqa: E402
from tagger.cli.commands import cli  # noqa: E402
from tagger.io import (  # noqa: E402
    hf,  # noqa: E402
    load_corpus,
    write_corpus,
)
from tagger.sentence import Sentence  # noqa: E402

from _models import same_model  # noqa: E402

N_SENT = 300


@pytest.fixture(scope="module")
def conll(corpora, tmp_path_factory):
    """A slice of CoNLL-2000's train.txt as a CoNLL file, parquet (ClassLabel columns, as on
    the hub) and JSON lines (strings)."""
    tmp = tmp_path_factory.mktemp("hf")
    sents = load_corpus(corpora / "conll2000" / "train.txt")[:N_SENT]
    path = tmp / "train.txt"
    with open(path, "w") as fh:
        write_corpus(fh, sents)
    pos = sorted({p for s in sents for p in s.columns[1]})
    chunk = sorted({c for s in sents for c in s.labels})
    feats = Features(
        {
            "id": Value("string"),
            "tokens": List(Value("string")),
            "pos_tags": List(ClassLabel(names=pos)),
            "chunk_tags": List(ClassLabel(names=chunk)),
        }
    )
    ds = Dataset.from_dict(
        {
            "id": [str(i) for i in range(len(sents))],
            "tokens": [s.tokens for s in sents],
            "pos_tags": [[pos.index(p) for p in s.columns[1]] for s in sents],
            "chunk_tags": [[chunk.index(c) for c in s.labels] for s in sents],
        },
        features=feats,
    )
    ds.to_parquet(str(tmp / "train.parquet"))
    Dataset.from_dict(
        {
            "tokens": [s.tokens for s in sents],
            "pos_tags": [s.columns[1] for s in sents],
            "chunk_tags": [s.labels for s in sents],
        }
    ).to_json(str(tmp / "train.jsonl"))
    return {"dir": tmp, "sents": sents, "txt": path, "ds": ds}


def _same(a, b):
    assert len(a) == len(b)
    for x, y in zip(a, b):
        assert x.columns == y.columns and x.labels == y.labels


@pytest.mark.parametrize("source", ["parquet", "jsonl", "hf:conll", "dataset", "datasetdict"])
def test_every_source_gives_the_conll_sentences(conll, source):
    d = conll["dir"]
    src = {
        "parquet": str(d / "train.parquet"),
        "jsonl": str(d / "train.jsonl"),
        "hf:conll": f"hf:conll:{d / 'train.txt'}",
        "dataset": conll["ds"],
        "datasetdict": datasets.DatasetDict({"train": conll["ds"]}),
    }[source]
    _same(list(hf.read_dataset(src)), conll["sents"])


def test_class_label_ids_become_names_and_fields_choose_columns(conll):
    pos = list(hf.read_dataset(str(conll["dir"] / "train.parquet"), "tokens,pos_tags"))
    assert [s.labels for s in pos] == [s.columns[1] for s in conll["sents"]]
    assert [s.columns for s in pos] == [[s.tokens] for s in conll["sents"]]
    with pytest.raises(hf.DatasetSourceError, match="no column 'ner_tags'.*tokens, pos_tags"):
        list(hf.read_dataset(conll["ds"], "tokens,ner_tags"))
    with pytest.raises(hf.DatasetSourceError, match="unknown option"):
        hf.parse_source("hf:eriktks/conll2000?splt=test")
    src = hf.parse_source("hf:eriktks/conll2000?split=test&revision=refs/convert/parquet")
    assert (src.path, src.split, src.revision, src.builder) == (
        "eriktks/conll2000",
        "test",
        "refs/convert/parquet",
        None,
    )


def test_train_from_parquet_and_jsonl_equals_the_conll_file(conll):
    d = conll["dir"]
    run = CliRunner().invoke
    outs = {}
    for name, src in [
        ("txt", d / "train.txt"),
        ("parquet", d / "train.parquet"),
        ("jsonl", d / "train.jsonl"),
    ]:
        r = run(cli, ["train", str(src), "-o", str(d / f"{name}.tgm"), "--set", "epochs=2", "-q"])
        assert r.exit_code == 0, r.output
        outs[name] = d / f"{name}.tgm"
    # the same model; only the training configuration kept in it names another file
    assert same_model(outs["parquet"], outs["txt"]) and same_model(outs["jsonl"], outs["txt"])
    # and the Python API with an in-memory Dataset
    tg = Tagger(features="chunk", params={"epochs": 2}, select=True).fit(conll["ds"])
    tg.save(d / "api.tgm")
    assert same_model(d / "api.tgm", outs["txt"])
    r = run(cli, ["eval", str(d / "txt.tgm"), str(d / "train.parquet"), "--json"])
    assert r.exit_code == 0, r.output


def test_hub_name_offline_fails_fast_with_the_way_out(conll, monkeypatch):
    import huggingface_hub.constants

    monkeypatch.setattr(huggingface_hub.constants, "ENDPOINT", "http://127.0.0.1:9")
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.delenv("HF_DATASETS_OFFLINE", raising=False)
    with pytest.raises(hf.DatasetSourceError) as err:
        list(hf.read_dataset("hf:eriktks/conll2000"))
    assert "cannot reach the Hugging Face hub" in str(err.value)
    assert "local files" in str(err.value)
    r = CliRunner().invoke(
        cli, ["train", "hf:eriktks/conll2000", "-o", str(conll["dir"] / "hub.tgm")]
    )
    assert r.exit_code == 1
    assert r.output.count("\n") == 1 and r.output.startswith("error: hf:eriktks/conll2000")


@pytest.mark.parametrize("num_proc", [None, 2])
def test_tag_dataset_with_map_equals_predict(conll, num_proc):
    tg = Tagger(features="chunk", params={"epochs": 2}, select=False).fit(conll["sents"])
    out = tg.tag_dataset(conll["ds"], num_proc=num_proc, batch_size=64)
    want = tg.predict([Sentence(s.columns) for s in conll["sents"]])
    assert out["predicted"] == want
    with pytest.raises(hf.DatasetSourceError, match="reads 2 column"):
        tg.tag_dataset(conll["ds"], fields="tokens")
