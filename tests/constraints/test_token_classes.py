"""The token classes as constraints/README.md defines them: its tables are read and every
example word is checked against the class matcher the rules use, so the docs cannot say a
placeholder such as ``*NUMBER*2*1`` is a ``<number>`` while the code says otherwise. A rule
naming a class that does not exist is one line of the file check."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tagger.constraints import PROPERTIES, ConstraintSet
from tagger.constraints.rules import has_property
from tagger.errors import ConstraintError

from _helpers import run_cli

README = Path(__file__).resolve().parents[2] / "constraints" / "README.md"
CODE = re.compile(r"`([^`]+)`")


def _section(title: str) -> str:
    text = README.read_text(encoding="utf-8")
    start = text.index(f"\n### {title}\n")
    return text[start : text.index("\n## ", start)]


def _table(text: str, header: str) -> list[list[str]]:
    """The rows of the Markdown table whose header row starts with ``header``, as cells."""
    lines = text.splitlines()
    first = next(i for i, line in enumerate(lines) if line.startswith(f"| {header} |"))
    rows = []
    for line in lines[first + 2 :]:
        if not line.startswith("|"):
            break
        rows.append([cell.strip() for cell in line.strip().strip("|").split("|")])
    return rows


def test_the_class_table_lists_every_class_and_its_examples_are_right():
    rows = _table(_section("Token classes"), "class")
    classes = [CODE.fullmatch(row[0]).group(1) for row in rows]
    assert sorted(classes) == sorted(PROPERTIES)
    for cls, row in zip(classes, rows):
        matches, misses = CODE.findall(row[2]), CODE.findall(row[3])
        assert len(matches) >= 3 and len(misses) >= 2, cls
        for word in matches:
            assert has_property(word, cls), f"the docs say {word!r} is <{cls}>"
        for word in misses:
            assert not has_property(word, cls), f"the docs say {word!r} is not <{cls}>"


def test_the_placeholder_table_names_exactly_the_classes_of_each_placeholder():
    rows = _table(_section("Token classes"), "word")
    words = [CODE.fullmatch(row[0]).group(1) for row in rows]
    assert {"*NUMBER*2*1", "*NUMBER*", "*DATE*"} <= set(words)
    for word, row in zip(words, rows):
        listed = set(CODE.findall(row[1]))
        assert listed == {cls for cls in PROPERTIES if has_property(word, cls)}, word


def test_a_digit_sequence_matches_number_placeholders_and_a_number_sequence_does_not():
    # what the docs tell the writer of an ads file, on the words the docs use
    tokens = [["*NUMBER*2*1", "br"], ["2", "bedrooms"], ["*NUMBER*", "br"]]
    for cls, expected in (("digit", [1, 0, 1, 0, 0, 0]), ("number", [0, 0, 1, 0, 0, 0])):
        cset = ConstraintSet.from_text(
            f'labels = ["size"]\n[[instance]]\nrule = "tokens"\n'
            f'sequence = ["<{cls}>", "br|bedrooms"]\nmark = [0]\ntake = ["size"]\n'
        )
        compiled = cset.compile(["size"])
        assert compiled.indicators(tokens).ind[compiled.row[0]].tolist() == expected, cls


@pytest.mark.parametrize(
    "body, fragment",
    [
        (
            'sequence = ["<numbers>", "br"]',
            "instance[0].sequence[0]: unknown property '<numbers>'; did you mean '<number>'?",
        ),
        (
            'sequence = ["<number", "br"]',
            "instance[0].sequence[0]: expected a token class in angle brackets such as "
            "'<digit>', got '<number' with one bracket",
        ),
        (
            'sequence = ["digit>", "br"]',
            "instance[0].sequence[0]: expected a token class in angle brackets",
        ),
    ],
)
def test_a_class_that_does_not_exist_is_one_line_naming_its_place(tmp_path, body, fragment):
    f = tmp_path / "ads.toml"
    f.write_text(f'labels = ["size"]\n[[instance]]\nrule = "tokens"\n{body}\ntake = ["size"]\n')
    with pytest.raises(ConstraintError, match=re.escape(fragment)):
        ConstraintSet.load(f)
    r = run_cli("constraints", "check", f)
    assert r.exit_code == 1
    lines = r.stderr.splitlines()
    assert (
        len(lines) == 1 and lines[0].startswith(f"error: {f}: 1 mistake") and fragment in lines[0]
    )


def test_an_unknown_property_key_is_one_line_too(tmp_path):
    f = tmp_path / "ads.toml"
    f.write_text(
        'labels = ["a"]\n[[instance]]\nrule = "only-inside"\nproperty = "num"\nlabels = ["a"]\n'
    )
    r = run_cli("constraints", "check", f)
    lines = r.stderr.splitlines()
    assert r.exit_code == 1 and len(lines) == 1
    assert "instance[0].property: unknown property 'num'" in lines[0]
    assert "known: " + ", ".join(PROPERTIES) in lines[0]
