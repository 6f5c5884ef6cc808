"""A constraint file compiled for a model that lacks labels it names: the rules are narrowed to
the model's labels, those left with none are dropped with one warning naming them, and only a
file with nothing left to decode with is refused."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from tagger.constraints import ConstraintSet
from tagger.errors import ConstraintError, TaggerWarning

#: fields of an ad; the model below never saw "photos"
FILE = """
labels = ["size", "rent", "contact", "photos"]

[[instance]]
name = "an ad starts with the size or the photos"
rule = "start"
labels = ["size", "photos"]

[[instance]]
rule = "one-segment"
labels = "all"
hard = true
name = "one stretch each"

[[instance]]
name = "photos come last"
rule = "end"
labels = ["photos"]

[[instance]]
name = "jpg is a photo"
rule = "tokens"
words = ["jpg"]
take = ["photos"]

[[instance]]
name = "a phone number is contact or photos"
rule = "tokens"
pattern = '^[0-9]{3}-[0-9]{4}$'
take = ["contact", "photos"]

[[instance]]
name = "never a photo before the rent"
rule = "order"
before = ["rent"]
after = ["photos", "contact"]

[[instance]]
name = "photos hold a link"
rule = "contains"
labels = ["photos"]
words = ["http"]

[[corpus]]
rule = "label-fraction"
labels = ["photos"]
fraction = 0.1
"""

#: what FILE says about a model with size, rent and contact, written by hand
NARROWED = """
labels = ["size", "rent", "contact"]

[[instance]]
name = "an ad starts with the size or the photos"
rule = "start"
labels = ["size"]

[[instance]]
rule = "one-segment"
labels = ["size", "rent", "contact"]
hard = true
name = "one stretch each"

[[instance]]
name = "a phone number is contact or photos"
rule = "tokens"
pattern = '^[0-9]{3}-[0-9]{4}$'
take = ["contact"]

[[instance]]
name = "never a photo before the rent"
rule = "order"
before = ["rent"]
after = ["contact"]
"""

MODEL = ["contact", "rent", "size"]
ADS = [
    ["2", "br", "$900", "call", "555-1234", "jpg"],
    ["$700", "studio", "555-9876"],
]


def _compiled_with_warnings(text: str, labels: list[str]):
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        compiled = ConstraintSet.from_text(text, "ads.toml").compile(labels)
    return compiled, [str(w.message) for w in seen if issubclass(w.category, TaggerWarning)]


def test_rules_are_narrowed_to_the_model_labels_and_the_empty_ones_dropped():
    compiled, seen = _compiled_with_warnings(FILE, MODEL)
    expected, none = _compiled_with_warnings(NARROWED, MODEL)
    assert none == []
    # the arrays the decoder reads are those of the file written for the model's labels
    for name in ("kind", "mask", "other", "row", "lo", "hi", "weight", "hard"):
        assert np.array_equal(getattr(compiled, name), getattr(expected, name)), name
    assert [r.name for r in compiled.instance_rules] == [r.name for r in expected.instance_rules]
    assert np.array_equal(compiled.indicators(ADS).ind, expected.indicators(ADS).ind)
    assert compiled.n_corpus == 0  # the photos fraction is dropped too, unmentioned
    assert len(seen) == 1 and "\n" not in seen[0]
    line = seen[0]
    assert line.startswith("ads.toml: the model has no label photos (the model's labels: ")
    dropped = line.split("decoding without the 3 rules that name only labels it lacks: ")[1]
    dropped, narrowed = dropped.split("; these rules apply to their other labels: ")
    assert dropped == (
        "instance[2] 'photos come last' (line 15), instance[3] 'jpg is a photo' (line 20), "
        "instance[6] 'photos hold a link' (line 38)"
    )
    for path in ("instance[0]", "instance[1]", "instance[4]", "instance[5]"):
        assert path in narrowed
    assert "corpus[0]" not in line


def test_a_model_with_every_label_compiles_the_file_as_written():
    compiled, seen = _compiled_with_warnings(FILE, MODEL + ["photos"])
    assert seen == [] and compiled.n_instance == 7 and compiled.n_corpus == 1


def test_a_file_with_nothing_left_to_decode_with_is_refused():
    only_photos = (
        'labels = ["size", "photos"]\n[[instance]]\nrule = "end"\nlabels = ["photos"]\n'
        '[[instance]]\nrule = "contains"\nlabels = ["photos"]\nwords = ["http"]\n'
    )
    with pytest.raises(ConstraintError) as info:
        ConstraintSet.from_text(only_photos, "ads.toml").compile(MODEL)
    message = str(info.value)
    assert "\n" not in message
    assert message.startswith("ads.toml: the model has no label photos")
    assert "every [[instance]] rule of the constraint file names only those labels" in message
    with pytest.raises(ConstraintError, match="none of the labels of the constraint file"):
        ConstraintSet.from_text(FILE, "ads.toml").compile(["B-NP", "I-NP", "O"])


def test_the_constraint_docs_show_the_warning_this_file_gets():
    from pathlib import Path

    readme = Path(__file__).resolve().parents[2] / "constraints" / "README.md"
    _, seen = _compiled_with_warnings(FILE, MODEL)
    assert f"warning: {seen[0]}\n" in readme.read_text(encoding="utf-8")
