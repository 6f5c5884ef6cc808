"""Patterns of constraint files and feature views: RE2, linear time, one line for what RE2
refuses, the same matches as before for the syntax both accept."""

from __future__ import annotations

import pickle

import pytest

from tagger import Sentence
from tagger.constraints import ConstraintSet
from tagger.errors import ConstraintError, FeatureSpecError
from tagger.features import FeatureSpec, Featurizer
from tagger.io.patterns import PatternError, compile_pattern

#: 35 characters on which Python's backtracking re spends hours with ^(a+)+$
EVIL = "a" * 34 + "b"


@pytest.mark.parametrize(
    "pattern, text, found",
    [
        ("^(a+)+$", EVIL, False),
        ("^(a+)+$", "aaaa", True),
        ("(x+x+)+y", "x" * 5000, False),
        ("^[0-9]{5}$", "12345", True),
        ("\\bpp\\b", "see pp. 3", True),
        ("\\p{Lu}", "éÉ", True),
        ("(?i)ABC", "xabc", True),
        ("é", "café", True),
        ("x", "\ud800x", True),  # a lone surrogate in a token does not stop matching
    ],
)
def test_matches_in_linear_time(pattern, text, found):
    assert compile_pattern(pattern).search(text) is found


@pytest.mark.parametrize(
    "pattern, says",
    [
        ("(a)\\1", "backreferences are not supported"),
        ("(?P<n>a)(?P=n)", "named backreferences"),
        ("(?=a)", "lookahead and lookbehind"),
        ("(?<!a)b", "lookahead and lookbehind"),
        ("(?>a)", "atomic groups"),
        ("(", "missing )"),
        ("(a{1000}){1000}", "invalid repetition size"),
        ("\ud800", "not a pattern RE2 can read"),
    ],
)
def test_refused_patterns_are_one_line(pattern, says):
    with pytest.raises(PatternError, match=says.replace("(", r"\(").replace(")", r"\)")) as exc:
        compile_pattern(pattern)
    assert "\n" not in str(exc.value)


def test_compiled_patterns_pickle():
    p = pickle.loads(pickle.dumps(compile_pattern("AB", ignore_case=True)))
    assert p.search("xab")


def test_constraint_file_pattern_refused_names_file_and_key(capfd):
    text = (
        'labels = ["A", "O"]\n[[instance]]\nrule = "tokens"\npattern = \'(?=x)\'\navoid = ["O"]\n'
    )
    with pytest.raises(ConstraintError, match=r"(?s)c.toml.*instance\[0\].pattern.*lookahead"):
        ConstraintSet.from_text(text, "c.toml")
    assert capfd.readouterr().err == ""  # RE2's own log line is off


def test_constraint_pattern_on_a_backtracking_token_ends():
    text = (
        'labels = ["A", "O"]\n[[instance]]\nrule = "tokens"\npattern = \'^(a+)+$\'\navoid = ["O"]\n'
    )
    compiled = ConstraintSet.from_text(text, "c.toml").compile(["A", "O"])
    compiled.indicators([Sentence([[EVIL, "aaa"]])])


def test_feature_view_regex_on_a_backtracking_token_ends():
    spec = FeatureSpec.from_dict(
        {
            "featurizer": {"columns": ["word"], "templates": ["v[0]"]},
            "views": {"v": {"function": "regex", "pattern": "^(a+)+$"}},
        }
    )
    rows = [Sentence([[EVIL, "aaa"]])]
    Featurizer(spec).fit(rows).transform(rows)


def test_feature_view_regex_refused():
    with pytest.raises(FeatureSpecError, match=r"views.v.pattern.*backreferences"):
        FeatureSpec.from_dict(
            {
                "featurizer": {"columns": ["word"], "templates": ["v[0]"]},
                "views": {"v": {"function": "regex", "pattern": "(a)\\1"}},
            }
        )


@pytest.mark.parametrize("offset", ["99999999999999999999", "1001", "-1001"])
def test_template_offset_out_of_range(offset):
    with pytest.raises(FeatureSpecError, match=r"templates\[0\].*offsets go from -1000 to 1000"):
        FeatureSpec.from_dict(
            {"featurizer": {"columns": ["word"], "templates": [f"word[{offset}]"]}}
        )


@pytest.mark.parametrize(
    "item, says",
    [
        ('words = []\navoid = ["O"]', r"instance\[0\].words: expected at least one word"),
        ('sequence = ["no pets"]\navoid = ["O"]', r"instance\[0\].sequence\[0\].*with a space"),
        ('sequence = ["a", "b\\tc"]\navoid = ["O"]', r"instance\[0\].sequence\[1\]"),
    ],
)
def test_word_lists_and_sequences(item, says):
    text = f'labels = ["A", "O"]\n[[instance]]\nrule = "tokens"\n{item}\n'
    with pytest.raises(ConstraintError, match=says):
        ConstraintSet.from_text(text, "c.toml")


def test_toml_files_take_a_byte_order_mark(tmp_path):
    path = tmp_path / "c.toml"
    path.write_bytes(
        b'\xef\xbb\xbflabels = ["A", "O"]\n[[instance]]\nrule = "start"\nlabels = ["A"]\n'
    )
    assert ConstraintSet.load(path).labels == ["A", "O"]
    spec = tmp_path / "f.toml"
    spec.write_bytes(b'\xef\xbb\xbf[featurizer]\ncolumns = ["word"]\ntemplates = ["word[0]"]\n')
    assert FeatureSpec.load(spec).columns == ["word"]
