"""The ``tagger`` command line, through click's CliRunner (and once as the installed script).

A chunker is trained once per module on the shipped sample corpus with a few epochs; the
other tests tag, evaluate and inspect it, and check that mistakes give the promised exit
statuses: 2 for usage errors, 1 with one ``error:`` line and no traceback for data errors.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from _helpers import ROOT, SAMPLE, SAMPLE_DEV, run_cli

EPOCHS = ["--set", "epochs=3"]


def _assert_data_error(result, *fragments):
    """Exit status 1, exactly one line ``error: ...`` on stderr, no traceback."""
    assert result.exit_code == 1, (result.exit_code, result.output)
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("error: ")
    assert "Traceback" not in result.output
    for fragment in fragments:
        assert fragment in lines[0], lines[0]


@pytest.fixture(scope="module")
def sample() -> Path:
    if not SAMPLE.is_file() or not SAMPLE_DEV.is_file():
        pytest.skip(f"the sample corpora {SAMPLE.name} / {SAMPLE_DEV.name} are not in corpora/")
    return SAMPLE


@pytest.fixture(scope="module")
def labels(model) -> set[str]:
    result = run_cli("inspect", model, "--json")
    assert result.exit_code == 0, result.output
    return set(json.loads(result.stdout)["labels"])


# ------------------------------------------------------------------------------ train


def test_train_reports_progress_and_summary(sample, tmp_path):
    out = tmp_path / "m.tgm"
    result = run_cli("train", sample, "-o", out, "--dev", SAMPLE_DEV, "--no-select", *EPOCHS)
    assert result.exit_code == 0, result.output
    err = result.stderr
    epoch_lines = [ln for ln in err.splitlines() if "epoch=" in ln]
    assert all(
        "objective=" in ln and "nonzero=" in ln and "dev_" in ln and "epoch_s=" in ln
        for ln in epoch_lines
    )
    # off a terminal: the first and the last iteration, and between them one line every few
    # seconds at most (tests/cli/test_progress.py)
    shown = [ln.split("epoch=")[1].split()[0] for ln in epoch_lines]
    assert shown[0] == "1/3" and shown[-1] == "3/3" and len(shown) in (2, 3), shown
    assert "sentences" in err and "tokens" in err and "non-zero weights" in err
    assert "saved" in err and result.stdout == ""


def test_train_quiet_prints_nothing(sample, tmp_path):
    result = run_cli("train", sample, "-o", tmp_path / "m.tgm", "--quiet", *EPOCHS)
    assert result.exit_code == 0, result.output
    assert result.output == ""


def test_same_seed_gives_identical_model_files(sample, tmp_path):
    paths = [tmp_path / "a.tgm", tmp_path / "b.tgm"]
    for p in paths:
        result = run_cli("train", sample, "-o", p, "--seed", 3, "--quiet", *EPOCHS)
        assert result.exit_code == 0, result.output
    assert paths[0].read_bytes() == paths[1].read_bytes()


def test_several_training_files_are_concatenated(sample, tmp_path):
    out = tmp_path / "m.tgm"
    result = run_cli("train", sample, SAMPLE_DEV, "-o", out, "--set", "epochs=1")
    assert result.exit_code == 0, result.output
    n_sent = sum(
        1
        for f in (sample, SAMPLE_DEV)
        for block in f.read_text("utf-8").split("\n\n")
        if block.strip()
    )
    assert f"{n_sent} sentences" in result.stderr


def test_malformed_training_file_names_file_and_line(tmp_path):
    bad = tmp_path / "bad.txt"
    bad.write_text("Confidence NN B-NP\nin IN B-PP\n\nthe DT\npound NN I-NP\n", "utf-8")
    result = run_cli("train", bad, "-o", tmp_path / "m.tgm", *EPOCHS)
    _assert_data_error(result, f"{bad}:4")
    assert not (tmp_path / "m.tgm").exists()


def test_missing_training_file_is_a_data_error(tmp_path):
    missing = tmp_path / "nope.txt"
    _assert_data_error(run_cli("train", missing, "-o", tmp_path / "m.tgm"), str(missing))


def test_unknown_feature_preset_is_a_usage_error_like_an_unknown_learner(sample, tmp_path):
    result = run_cli("train", sample, "-o", tmp_path / "m.tgm", "--features", "nope", *EPOCHS)
    assert result.exit_code == 2
    assert "nope" in result.stderr and "chunk" in result.stderr and "Traceback" not in result.output


def test_unknown_learner_is_a_usage_error(sample, tmp_path):
    result = run_cli("train", sample, "-o", tmp_path / "m.tgm", "--learner", "nope")
    assert result.exit_code == 2
    assert "nope" in result.stderr and "m3n-subgradient" in result.stderr


@pytest.mark.parametrize(
    "setting, fragment",
    [
        ("nope=1", "nope"),  # unknown key
        ("epochs=abc", "epochs"),  # not an integer
        ("epochs=0", "epochs"),  # out of range
        ("radius=-1", "radius"),  # out of range
        ("decay=fast", "decay"),  # not one of the choices
        ("epochs", "key=value"),  # no '='
    ],
)
def test_bad_set_is_a_usage_error_listing_the_parameters(sample, tmp_path, setting, fragment):
    result = run_cli(
        "train", sample, "-o", tmp_path / "m.tgm", "--learner", "m3n-subgradient", "--set", setting
    )
    assert result.exit_code == 2, result.output
    assert fragment in result.stderr
    for name in ("radius", "epochs", "batch_size", "eta0"):
        assert name in result.stderr
    assert "Traceback" not in result.output
    assert not (tmp_path / "m.tgm").exists()


def test_set_uses_the_chosen_learners_table(sample, tmp_path):
    # 'lambda' belongs to the L2 learner, not to the default L1 one
    result = run_cli("train", sample, "-o", tmp_path / "m.tgm", "--set", "lambda=0.01")
    assert result.exit_code == 2
    result = run_cli(
        "train",
        sample,
        "-o",
        tmp_path / "m.tgm",
        "--learner",
        "m3n-l2-subgradient",
        "--set",
        "lambda=0.01",
        "--quiet",
        *EPOCHS,
    )
    assert result.exit_code == 0, result.output


# ------------------------------------------------------------------------------ learners


@pytest.mark.parametrize("args", [["learners"], ["train", "--list-learners"]])
def test_learners_lists_every_learner_with_its_parameters(args):
    from tagger.learners import LEARNERS

    result = run_cli(*args)
    assert result.exit_code == 0, result.output
    assert "m3n-subgradient" in result.stdout and "m3n-l2-subgradient" in result.stdout
    for cls in LEARNERS.values():
        assert cls.name in result.stdout
        for p in cls.params:
            assert p.name in result.stdout
            assert p.describe_range() in result.stdout
            assert p.help in result.stdout


# ------------------------------------------------------------------------------ tag


def test_tag_reproduces_the_layout_with_known_labels(model, labels, tmp_path):
    out = tmp_path / "tagged.txt"
    result = run_cli("tag", model, SAMPLE_DEV, "-o", out)
    assert result.exit_code == 0, result.output
    src = SAMPLE_DEV.read_text("utf-8").rstrip("\n").split("\n")
    got = out.read_text("utf-8").rstrip("\n").split("\n")
    assert len(got) == len(src)
    for a, b in zip(src, got):
        if not a.strip():
            assert not b.strip()
            continue
        fa, fb = a.split(), b.split()
        assert len(fb) == len(fa)  # the gold label column is replaced, not added
        assert fb[:-1] == fa[:-1]
        assert fb[-1] in labels


def test_tag_to_stdout_equals_tag_to_file(model, tmp_path):
    out = tmp_path / "tagged.txt"
    assert run_cli("tag", model, SAMPLE_DEV, "-o", out).exit_code == 0
    result = run_cli("tag", model, SAMPLE_DEV)
    assert result.exit_code == 0
    assert result.stdout == out.read_text("utf-8")


def test_tag_from_stdin_without_label_column_appends_the_prediction(model, labels):
    lines = SAMPLE_DEV.read_text("utf-8").splitlines()
    unlabeled = "\n".join(" ".join(ln.split()[:-1]) for ln in lines) + "\n"
    result = run_cli("tag", model, input=unlabeled)
    assert result.exit_code == 0, result.output
    got = result.stdout.rstrip("\n").split("\n")
    src = unlabeled.rstrip("\n").split("\n")
    assert len(got) == len(src)
    for a, b in zip(src, got):
        if a.strip():
            assert b.split()[:-1] == a.split()
            assert b.split()[-1] in labels


def test_tag_agrees_with_eval(model):
    """Tagging the dev file and scoring the output by hand gives eval's token accuracy."""
    tagged = run_cli("tag", model, SAMPLE_DEV).stdout.split("\n")
    gold = SAMPLE_DEV.read_text("utf-8").split("\n")
    pairs = [(g.split()[-1], t.split()[-1]) for g, t in zip(gold, tagged) if g.strip()]
    acc = sum(g == t for g, t in pairs) / len(pairs)
    metrics = json.loads(run_cli("eval", model, SAMPLE_DEV, "--json").stdout)
    assert metrics["accuracy"] == pytest.approx(acc)


def test_tag_with_too_many_fields_is_a_data_error(model):
    result = run_cli("tag", model, "--format", "conll", input="a b c d\ne f g h\n")
    _assert_data_error(result, "4")


def test_tag_missing_input_is_a_data_error(model, tmp_path):
    _assert_data_error(run_cli("tag", model, tmp_path / "nope.txt"), "nope.txt")


def test_truncated_model_is_a_one_line_data_error(model, tmp_path):
    data = model.read_bytes()
    bad = tmp_path / "truncated.tgm"
    bad.write_bytes(data[: len(data) // 2])
    for args in (["tag", bad, SAMPLE_DEV], ["eval", bad, SAMPLE_DEV], ["inspect", bad]):
        _assert_data_error(run_cli(*args), str(bad))


def test_missing_model_is_a_one_line_data_error(tmp_path):
    _assert_data_error(run_cli("inspect", tmp_path / "nope.tgm"), "nope.tgm")


# ------------------------------------------------------------------------------ eval, inspect


def test_eval_json(model):
    result = run_cli("eval", model, SAMPLE_DEV, "--json")
    assert result.exit_code == 0, result.output
    m = json.loads(result.stdout)
    for key in ("accuracy", "precision", "recall", "f1", "n_tokens", "n_sentences", "per_label"):
        assert key in m
    for key in ("accuracy", "precision", "recall", "f1"):
        assert 0.0 <= m[key] <= 1.0
    assert m["n_tokens"] > m["n_sentences"] > 0
    assert m["per_label"]


def test_eval_vocabulary_splits_accuracy_by_words_seen_in_training(model):
    from tagger.io import read_corpus

    seen = {w for s in read_corpus(SAMPLE) for w in s.tokens}
    dev = list(read_corpus(SAMPLE_DEV))
    result = run_cli("eval", model, SAMPLE_DEV, "--vocabulary", SAMPLE, "--json")
    assert result.exit_code == 0, result.output
    m = json.loads(result.stdout)
    parts = m["by_vocabulary"]
    n_seen = sum(w in seen for s in dev for w in s.tokens)
    assert parts["seen"]["tokens"] == n_seen > 0
    assert parts["unseen"]["tokens"] == m["n_tokens"] - n_seen > 0
    # the two parts make up the whole accuracy
    whole = (
        parts["seen"]["accuracy"] * n_seen + parts["unseen"]["accuracy"] * parts["unseen"]["tokens"]
    ) / m["n_tokens"]
    assert whole == pytest.approx(m["accuracy"])
    text = run_cli("eval", model, SAMPLE_DEV, "--vocabulary", SAMPLE)
    assert f"words seen in training: seen {n_seen} tokens" in text.stdout


def test_eval_text(model):
    result = run_cli("eval", model, SAMPLE_DEV)
    assert result.exit_code == 0, result.output
    assert "accuracy" in result.stdout and "FB1" in result.stdout


def test_inspect_json(model, labels):
    result = run_cli("inspect", model, "--json", "--top", 3)
    assert result.exit_code == 0, result.output
    r = json.loads(result.stdout)
    assert r["n_params"] >= r["n_nonzero"] > 0
    assert set(r["transitions"]) == labels
    assert all(len(v) <= 3 for v in r["top_features"].values())


def test_inspect_text(model, labels):
    result = run_cli("inspect", model, "--top", 2)
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert "non-zero weights" in out and "transitions" in out
    assert all(lab in out for lab in labels)


# ------------------------------------------------------------------------- the installed script


def test_console_script_tags_through_a_pipe(model):
    """The installed ``tagger`` script: tags stdin to stdout, and a reader that stops early
    (``| head``) ends it quietly."""
    exe = shutil.which("tagger", path=str(Path(sys.executable).parent))
    if exe is None:
        pytest.skip("the tagger console script is not installed next to this Python")
    text = SAMPLE_DEV.read_bytes()
    full = subprocess.run([exe, "tag", str(model)], input=text, capture_output=True, timeout=300)
    assert full.returncode == 0, full.stderr.decode()
    assert full.stderr == b""
    assert full.stdout.rstrip(b"\n").count(b"\n") == text.rstrip(b"\n").count(b"\n")

    big = text * 200  # larger than any pipe buffer
    proc = subprocess.Popen(
        [exe, "tag", str(model)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    import threading

    feeder = threading.Thread(target=_feed, args=(proc.stdin, big))
    feeder.start()
    first = proc.stdout.readline()
    proc.stdout.close()  # like `head -1`
    feeder.join()
    err = proc.stderr.read()
    proc.wait(timeout=300)
    assert first.split()[:2] == text.split(b"\n", 1)[0].split()[:2]
    assert proc.returncode == 0
    assert err == b""


def _feed(pipe, data: bytes) -> None:
    try:
        pipe.write(data)
    except BrokenPipeError:
        pass
    finally:
        try:
            pipe.close()
        except BrokenPipeError:
            pass


def test_pos_model_on_three_column_conll_with_label_column(tmp_path):
    """A POS model trained on column 1 of word/POS/chunk files tags and scores such files
    when --label-column names the label column: the prediction replaces that column."""
    sample = SAMPLE
    model = tmp_path / "pos.tgm"
    result = run_cli(
        "train",
        sample,
        "--label-column",
        "1",
        "--features",
        "pos",
        "--set",
        "epochs=3",
        "-o",
        model,
        "-q",
    )
    assert result.exit_code == 0, result.output
    tagged = run_cli("tag", model, sample, "--label-column", "1")
    assert tagged.exit_code == 0, tagged.output
    lines_in = sample.read_text(encoding="utf-8").splitlines()
    lines_out = tagged.output.splitlines()
    assert len(lines_out) == len(lines_in)
    tags = {line.split()[1] for line in lines_in if line.strip()}
    for a, b in zip(lines_in, lines_out):
        if not a.strip():
            assert not b.strip()
            continue
        fa, fb = a.split(), b.split()
        assert (fb[0], fb[2]) == (fa[0], fa[2])  # word and chunk columns untouched
        assert fb[1] in tags  # the POS column holds a prediction
    scored = run_cli("eval", model, sample, "--label-column", "1", "--json")
    assert scored.exit_code == 0, scored.output
    assert json.loads(scored.output)["n_tokens"] == sum(1 for line in lines_in if line.strip())


def test_one_odd_gold_label_does_not_switch_eval_from_chunk_f1(model, tmp_path):
    lines = SAMPLE_DEV.read_text().splitlines()
    first = next(i for i, ln in enumerate(lines) if ln.strip())
    fields = lines[first].split()
    lines[first] = " ".join(fields[:-1] + ["X-WEIRD"])
    odd = tmp_path / "odd.txt"
    odd.write_text("\n".join(lines) + "\n")
    result = run_cli("eval", model, odd, "--json")
    assert result.exit_code == 0, result.output
    metrics = json.loads(result.stdout)
    assert metrics["chunk_level"] is True  # the model's labels decide, as without it
    assert metrics["unknown_labels"] == ["X-WEIRD"]
    plain = json.loads(run_cli("eval", model, SAMPLE_DEV, "--json").stdout)
    assert plain["chunk_level"] is True


def test_set_errors_stay_short(sample, tmp_path):
    result = run_cli("train", sample, "-o", tmp_path / "m.tgm", "--set", "radus=1")
    assert result.exit_code == 2
    error = result.stderr.splitlines()[-1]
    assert "radus" in error and "tagger learners" in error and len(error) < 400


# ------------------------------------------------------------------------------ CoNLL-U fields


def _conllu_field(text: str, index: int) -> list[str]:
    return [
        ln.split("\t")[index]
        for ln in text.splitlines()
        if ln
        and not ln.startswith("#")
        and ln.split("\t")[0].isascii()
        and ln.split("\t")[0].isdigit()
    ]


def test_conllu_label_xpos_trains_tags_and_evaluates_the_xpos_field(tmp_path):
    sample = ROOT / "corpora" / "sample_pos.conllu"
    text = sample.read_text("utf-8")
    model = tmp_path / "xpos.tgm"
    result = run_cli("train", sample, "--conllu-label", "xpos", "-o", model, *EPOCHS, "-q")
    assert result.exit_code == 0, result.output
    labels = json.loads(run_cli("inspect", model, "--json").stdout)["labels"]
    assert set(labels) == set(_conllu_field(text, 4))  # the treebank's tags, not UPOS
    # tag writes the predictions into XPOS (the model's field) and leaves UPOS as it was
    for jobs in ("1", "2"):
        out = run_cli("tag", model, sample, "-j", jobs).stdout
        assert _conllu_field(out, 3) == _conllu_field(text, 3)
        assert set(_conllu_field(out, 4)) <= set(labels)
        assert len(_conllu_field(out, 4)) == len(_conllu_field(text, 4))
    # eval reads the gold labels from the same field: scored against XPOS it agrees with a
    # count made here; UPOS shares no label with the model, which is an error
    tagged = _conllu_field(run_cli("tag", model, sample).stdout, 4)
    gold = _conllu_field(text, 4)
    expected = sum(a == b for a, b in zip(tagged, gold)) / len(gold)
    report = json.loads(run_cli("eval", model, sample, "--json").stdout)
    assert report["accuracy"] == pytest.approx(expected)
    _assert_data_error(
        run_cli("eval", model, sample, "--conllu-label", "upos"),
        "none of the evaluation data's labels",
    )
