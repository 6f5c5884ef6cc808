"""Records of datasets, JSON lines files and DocBins: the ``fields`` list and the check of one
record's per-token column, with every JSON type where a list of tokens belongs."""

from __future__ import annotations

import json

import pytest

from tagger.errors import CorpusFormatError, DatasetSourceError, FieldError
from tagger.io.jsonl_input import read_jsonl
from tagger.io.records import split_fields, token_values


@pytest.mark.parametrize(
    "value, expected",
    [(None, None), ("tokens,tags", ["tokens", "tags"]), (" a , b ", ["a", "b"]), (["x"], ["x"])],
)
def test_split_fields(value, expected):
    assert split_fields(value, DatasetSourceError) == expected


@pytest.mark.parametrize("value", [",,,", "", "a,,b", "a,", " ", [], ["a", ""], ["a", 3]])
def test_split_fields_refuses_empty_names(value):
    with pytest.raises(FieldError) as exc:
        split_fields(value, FieldError)
    assert "\n" not in str(exc.value)


@pytest.mark.parametrize(
    "value, says",
    [
        (None, "found null"),
        ("a b", "found the text"),
        ({"x": 1}, "found a table"),
        (3, "found int"),
        ([None], "item 0 is null"),
        (["a", ["b"]], "item 1 is a list"),
        ([{"x": 1}], "item 0 is a table"),
        ([True], "item 0 is true (a boolean)"),
        ([1.5], "item 0 is float"),
    ],
)
def test_token_values_refuses_what_is_not_a_list_of_texts(value, says):
    with pytest.raises(
        ValueError, match=f"field 'tags'.*{says}".replace("(", r"\(").replace(")", r"\)")
    ):
        token_values(value, "tags")


def test_token_values_takes_texts_numbers_and_class_ids():
    assert token_values(["a", 3], "tokens") == ["a", "3"]
    assert token_values([1, 0], "tags", ["O", "B"]) == ["B", "O"]
    with pytest.raises(ValueError, match="not the id of one of its 2 class names"):
        token_values([2], "tags", ["O", "B"])


def test_jsonl_rows(tmp_path):
    path = tmp_path / "d.jsonl"
    rows = [
        {"tokens": ["a", "b"], "pos": ["X", "Y"], "tags": ["B", "I"]},
        {"tokens": [], "pos": [], "tags": []},
    ]
    path.write_text("\ufeff" + "\n".join(json.dumps(r) for r in rows) + "\n\n", "utf-8")
    (s,) = read_jsonl(path)
    assert s.columns == [["a", "b"], ["X", "Y"]] and s.labels == ["B", "I"]
    (u,) = read_jsonl(path, ["tokens"], labeled=False)
    assert u.columns == [["a", "b"]] and u.labels is None


def test_jsonl_first_object_without_lists(tmp_path):
    path = tmp_path / "d.jsonl"
    path.write_text('{"text": "a b"}\n', "utf-8")
    with pytest.raises(CorpusFormatError, match=r"d.jsonl:1: the first object has no list"):
        list(read_jsonl(path))
