"""Warnings about data that would make training or its scores mislead: training labels that
differ only in case, dev or test data that are the training data. And the scores along
training keep one metric: chunk F1 when the training labels are BIO, whatever labels the
dev data hold."""

from __future__ import annotations

import warnings

import tagger
from tagger.errors import TaggerWarning
from tagger.io import load_corpus

from _helpers import SAMPLE, SAMPLE_DEV

BIO = "The DT B-NP\ncat NN I-NP\nsat VBD B-VP\n\nA DT B-NP\ndog NN I-NP\nran VBD B-VP\n\n"


def _notes(**settings) -> tuple[list[str], tagger.Tagger]:
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        tg = tagger.train(learner="perceptron", params={"epochs": 2}, **settings)
    return [str(w.message) for w in seen if issubclass(w.category, TaggerWarning)], tg


def test_labels_differing_only_in_case_are_named_once(tmp_path):
    path = tmp_path / "mixed.txt"
    path.write_text(BIO * 6 + BIO.replace("B-NP", "b-np") * 6)
    notes, _ = _notes(train=str(path), dev=str(SAMPLE_DEV))  # the path chooses: trains twice
    case = [n for n in notes if "differ only in case" in n]
    assert len(case) == 1, notes
    assert "B-NP and b-np" in case[0] and "token accuracy" in case[0]
    notes, _ = _notes(train=str(SAMPLE), dev=str(SAMPLE_DEV), select=False)
    assert not [n for n in notes if "differ only in case" in n]


def test_dev_or_test_data_that_are_the_training_data_get_a_warning(tmp_path):
    notes, _ = _notes(train=str(SAMPLE), dev=str(SAMPLE), select=False)
    assert len([n for n in notes if "dev data are the training data" in n]) == 1, notes
    copy_by_another_name = tmp_path / "link.txt"
    copy_by_another_name.symlink_to(SAMPLE)
    notes, _ = _notes(train=str(SAMPLE), test=str(copy_by_another_name), select=False)
    assert [n for n in notes if "test data are the training data" in n], notes
    sentences = load_corpus(SAMPLE)
    notes, _ = _notes(train=sentences, dev=sentences, select=False)
    assert [n for n in notes if "the same sentences" in n], notes
    notes, _ = _notes(train=str(SAMPLE), dev=str(SAMPLE_DEV), select=False)
    assert not [n for n in notes if "are the training data" in n], notes


def test_the_dev_metric_follows_the_training_labels_not_the_dev_files(tmp_path):
    # a dev file with a label that is not BIO used to switch every dev score to accuracy
    odd = tmp_path / "dev.txt"
    odd.write_text(SAMPLE_DEV.read_text().replace("B-NP", "NP", 1))
    _, tg = _notes(train=str(SAMPLE), dev=str(odd), select=False)
    assert all("dev_f1" in row for row in tg.trace_ if "dev_acc" in row), tg.trace_
