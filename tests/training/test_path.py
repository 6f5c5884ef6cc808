"""Regularization path: ``Tagger.path`` and ``tagger path`` on the shipped sample corpora."""

from __future__ import annotations

import json

import pytest

from tagger.api import Tagger
from tagger.cli.plots import plot_available
from tagger.errors import TaggerError
from tagger.io import read_corpus

from _helpers import SAMPLES, run_cli

TRAIN, DEV = SAMPLES / "sample_chunk.txt", SAMPLES / "sample_chunk_dev.txt"


@pytest.fixture(scope="module")
def data():
    if not TRAIN.is_file() or not DEV.is_file():
        pytest.skip("sample chunk corpora are missing")
    return list(read_corpus(TRAIN)), list(read_corpus(DEV))


def test_em_path_gets_sparser_and_rows_describe_each_model(data):
    train, dev = data
    tg = Tagger(features="chunk", learner="m3n-em", params={"epochs": 6})
    values = [0.3, 3.0, 30.0, 300.0]
    rows = tg.path(train, dev, values)
    assert [r["value"] for r in rows] == values
    assert all(r["param"] == "lambda" for r in rows)
    nonzero = [r["nonzero"] for r in rows]
    assert nonzero[-1] < nonzero[0], nonzero
    # the tagger keeps the last model, and the last row is its dev score
    result = tg.evaluate(dev)
    assert rows[-1]["dev_f1"] == round(100 * result["f1"], 2)
    assert rows[-1]["nonzero"] == tg.n_nonzero_


def test_l2_path_warm_starts_from_the_previous_duals(data):
    train, dev = data
    params = {"C": 0.5, "epochs": 40, "tol": 1e-3}
    cold = Tagger(features="chunk", learner="m3n-l2", params=params, select=False).fit(train)
    tg = Tagger(features="chunk", learner="m3n-l2", params=params)
    trace = []
    tg.path(train, dev, [0.5, 0.5], progress=trace.append)
    first_epochs = [i for i, r in enumerate(trace) if r["epoch"] == 1]
    assert len(first_epochs) == 2
    second = trace[first_epochs[1] :]
    # the same problem again: it starts where the first fit ended, near its last gap,
    # far below where a cold start begins
    end_of_first = trace[first_epochs[1] - 1]["gap"]
    assert second[0]["gap"] <= 2 * end_of_first
    assert second[0]["gap"] < 0.1 * cold.trace_[0]["gap"]
    assert second[0]["dual"] >= trace[first_epochs[1] - 1]["dual"]  # the dual kept climbing


def test_path_needs_dev_data_and_a_parameter(data):
    train, dev = data
    with pytest.raises(TaggerError, match="dev data"):
        Tagger(features="chunk", learner="m3n-l2").path(train, None, [0.1])
    with pytest.raises(TaggerError, match="path parameter"):
        Tagger(features="chunk", learner="ssvm-annealing").path(train, dev, [10.0])
    with pytest.raises(TaggerError, match="at least one value"):
        Tagger(features="chunk", learner="m3n-l2").path(train, dev, [])


def test_cli_path_json_and_table(data, tmp_path):
    res = run_cli(
        "path",
        TRAIN,
        "--dev",
        DEV,
        "--learner",
        "m3n-l2",
        "--values",
        "0.05,0.5",
        "--set",
        "epochs=5",
        "--json",
        "-o",
        tmp_path / "last.tgm",
    )
    assert res.exit_code == 0, res.output
    rows = json.loads(res.stdout)
    assert [r["value"] for r in rows] == [0.05, 0.5]
    assert all({"dev_f1", "dev_acc", "nonzero", "seconds"} <= set(r) for r in rows)
    last = Tagger.load(tmp_path / "last.tgm")
    assert last.n_nonzero_ == rows[-1]["nonzero"]
    res = run_cli(
        "path",
        TRAIN,
        "--dev",
        DEV,
        "--learner",
        "m3n-subgradient",
        "--param",
        "radius",
        "--values",
        "5,50",
        "--set",
        "epochs=2",
        "-q",
    )
    assert res.exit_code == 0, res.output
    lines = res.stdout.strip().splitlines()
    assert lines[0].split() == ["radius", "dev_f1", "dev_acc", "nonzero", "seconds"]
    assert [float(line.split()[0]) for line in lines[1:]] == [5.0, 50.0]


@pytest.mark.parametrize(
    "args, fragment",
    [
        (["--values", "0.1,x"], "comma-separated numbers"),
        (["--values", "0.1,-1"], "'C' parameter"),
        (["--values", "1", "--param", "colour"], "no parameter 'colour'"),
    ],
)
def test_cli_path_usage_errors(data, args, fragment):
    res = run_cli("path", TRAIN, "--dev", DEV, "--learner", "m3n-l2", *args)
    assert res.exit_code == 2
    assert fragment in res.output


def test_cli_path_picture(data, tmp_path):
    out = tmp_path / "path.png"
    args = [
        "path",
        TRAIN,
        "--dev",
        DEV,
        "--learner",
        "m3n-l2",
        "--values",
        "0.05,0.5",
        "--set",
        "epochs=3",
        "-q",
        "--plot",
        out,
    ]
    res = run_cli(*args)
    if not plot_available():
        assert res.exit_code == 2 and "matplotlib" in res.output
        return
    assert res.exit_code == 0, res.output
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
