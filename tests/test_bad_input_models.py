"""Bad input, case by case, through the command line: crafted and edited model files,
patterns that would backtrack, constraint files, JSON lines and parquet records, ``--fields``,
TOML files with a byte-order mark. Each case runs one ``tagger`` command in a directory of its
own and asserts exit status 1 with exactly one ``error: ...`` line on stderr (nothing else:
no progress bar or log line of a library), or a success where that is promised (a BOM), the
fragments the message must contain, and that no input was changed or left half-written.
"""

from __future__ import annotations

import hashlib
import io
import json
import shutil
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from tagger.cli import cli
from tagger.model.files import HEADER_NAME, HEADER_SHA256_NAME

GOOD = "The DT B-NP\ncat NN I-NP\nsat VBD B-VP\n\nA DT B-NP\ndog NN I-NP\n"
ROWS = [
    {"tokens": ["The", "cat", "sat"], "tags": ["B-NP", "I-NP", "B-VP"]},
    {"tokens": ["A", "dog"], "tags": ["B-NP", "I-NP"]},
]
#: 35 characters on which a backtracking matcher spends hours with ^(a+)+$
EVIL_TOKEN = "a" * 34 + "b"
EVIL = "^(a+)+$"


@dataclass
class Case:
    id: str
    args: list  # "{m}": the trained model; other names: files of the case
    code: int  # 0 success, 1 data error
    says: tuple = ()  # fragments of the message
    files: dict = field(default_factory=dict)  # name -> str | bytes | callable(model) -> bytes


def jsonl(*rows) -> str:
    return "".join(json.dumps(r) + "\n" for r in rows)


def _edited_model(edit, resum: bool = True):
    """The trained model with its header edited by ``edit(header, members)`` (which may add
    members); the header's checksum recomputed (so that the edit reaches what reads the
    header) unless ``resum`` is false."""

    def make(model: Path) -> bytes:
        with zipfile.ZipFile(model) as zin:
            members = {name: zin.read(name) for name in zin.namelist()}
        header = json.loads(members[HEADER_NAME])
        edit(header, members)
        members[HEADER_NAME] = json.dumps(header).encode()
        if resum:
            members[HEADER_SHA256_NAME] = hashlib.sha256(members[HEADER_NAME]).hexdigest().encode()
        out = model.parent / ".crafted.tgm"
        with zipfile.ZipFile(out, "w") as zout:
            for name, payload in members.items():
                zout.writestr(name, payload)
        data = out.read_bytes()
        out.unlink()
        return data

    return make


def _npy(arr: np.ndarray) -> bytes:
    buf = io.BytesIO()
    np.save(buf, arr, allow_pickle=False)
    return buf.getvalue()


def _evil_view(header, members):
    """A regex view of the backtracking pattern in the model's feature specification, with
    the (empty) vocabulary arrays a view has, and a template that reads it."""
    features = header["meta"]["features"]
    spec = features["spec"]
    n = len(features["vocab_sizes"])
    spec.setdefault("views", {})["evil"] = {
        "column": spec["featurizer"]["columns"][0],
        "function": "regex",
        "pattern": EVIL,
    }
    spec["featurizer"]["templates"].append("evil[0]")
    features["vocab_sizes"].append(0)
    for part, arr in (("data", np.zeros(0, np.uint8)), ("offsets", np.zeros(1, np.int64))):
        member = f"arrays/feat.vocab{n}.{part}.npy"
        members[member] = _npy(arr)
        header["arrays"][f"feat.vocab{n}.{part}"] = {
            "member": member,
            "dtype": arr.dtype.str,
            "shape": list(arr.shape),
            "sha256": hashlib.sha256(arr.tobytes()).hexdigest(),
        }


def _put_array(header, members, name: str, arr: np.ndarray) -> None:
    member = f"arrays/{name}.npy"
    members[member] = _npy(arr)
    header["arrays"][name] = {
        "member": member,
        "dtype": arr.dtype.str,
        "shape": list(arr.shape),
        "sha256": hashlib.sha256(arr.tobytes()).hexdigest(),
    }


def _pair_code_out_of_range(header, members):
    """Label-pair arrays whose one parameter names a label pair past the last one, with the
    weight it needs appended, so that the sizes agree and the codes are what is wrong."""
    n_labels = len(header["meta"]["labels"])
    n_attrs = header["arrays"]["feat.attr_keys"]["shape"][0]
    weights = np.load(io.BytesIO(members[header["arrays"]["weights"]["member"]]))
    _put_array(header, members, "weights", np.append(weights, 1.0))
    ptr = np.zeros(n_attrs + 1, dtype=np.int64)
    ptr[1:] = 1
    _put_array(header, members, "model.pair_ptr", ptr)
    _put_array(header, members, "model.pair_code", np.array([n_labels**2], dtype=np.int32))


def _pad_header(header, members):
    header["meta"]["info"]["padding"] = " " * (17 << 20)


CASES: list[Case] = [
    # ------------------------------------------------------------------ model files
    Case(
        "tag-model-header-edited-without-its-checksum",
        ["tag", "bad.tgm", "g.txt", "-o", "out.txt"],
        1,
        ("bad.tgm", "tagger.json does not match its sha256"),
        {"bad.tgm": _edited_model(_evil_view, resum=False), "g.txt": GOOD},
    ),
    Case(
        # with the checksum recomputed, the pattern reaches the featurizer: RE2 matches it in
        # linear time, so tagging ends (and tags)
        "tag-model-with-a-backtracking-regex-view",
        ["tag", "bad.tgm", "evil.txt", "-o", "out.txt"],
        0,
        (),
        {"bad.tgm": _edited_model(_evil_view), "evil.txt": f"{EVIL_TOKEN} DT\n"},
    ),
    Case(
        "tag-model-header-padded-past-the-cap",
        ["tag", "bad.tgm", "g.txt", "-o", "out.txt"],
        1,
        ("bad.tgm", "more than the 16777216 a model file has"),
        {"bad.tgm": _edited_model(_pad_header), "g.txt": GOOD},
    ),
    Case(
        "inspect-model-weights-shape-edited",
        ["inspect", "bad.tgm"],
        1,
        ("bad.tgm", "weights"),
        {
            "bad.tgm": _edited_model(
                lambda h, m: h["arrays"]["weights"].__setitem__("shape", [150_000_000])
            )
        },
    ),
    Case(
        "tag-model-with-a-label-pair-code-past-the-last-pair",
        ["tag", "bad.tgm", "g.txt", "-o", "out.txt"],
        1,
        ("bad.tgm", "model.pair_code holds a value outside"),
        {"bad.tgm": _edited_model(_pair_code_out_of_range), "g.txt": GOOD},
    ),
    # ------------------------------------------------------------------ patterns
    Case(
        "constraints-check-backtracking-pattern-is-linear",
        ["constraints", "check", "c.toml", "evil.txt"],
        0,
        (),
        {
            "c.toml": 'labels = ["B-NP", "I-NP", "O"]\n[[instance]]\nrule = "tokens"\n'
            f"pattern = '{EVIL}'\navoid = [\"O\"]\n",
            "evil.txt": f"{EVIL_TOKEN} DT O\n",
        },
    ),
    Case(
        "constraints-backreference-refused",
        ["constraints", "check", "c.toml"],
        1,
        ("c.toml", "instance[0].pattern", "backreferences are not supported"),
        {
            "c.toml": 'labels = ["B-NP", "O"]\n[[instance]]\nrule = "tokens"\n'
            "pattern = '(a)\\1'\navoid = [\"O\"]\n"
        },
    ),
    Case(
        "constraints-lookahead-refused",
        ["constraints", "check", "c.toml"],
        1,
        ("c.toml", "instance[0].pattern", "lookahead and lookbehind are not supported"),
        {
            "c.toml": 'labels = ["B-NP", "O"]\n[[instance]]\nrule = "tokens"\n'
            "pattern = '^(?!x)'\navoid = [\"O\"]\n"
        },
    ),
    Case(
        "train-feature-view-backreference-refused",
        ["train", "g.txt", "-o", "out.tgm", "--features", "f.toml"],
        1,
        ("f.toml", "views.v.pattern", "backreferences"),
        {
            "g.txt": GOOD,
            "f.toml": '[featurizer]\ncolumns = ["word", "pos"]\ntemplates = ["v[0]"]\n'
            "[views.v]\nfunction = \"regex\"\npattern = '(a)\\1'\n",
        },
    ),
    Case(
        "train-template-offset-out-of-range",
        ["train", "g.txt", "-o", "out.tgm", "--features", "f.toml"],
        1,
        ("f.toml", "word[99999999999999999999]", "offsets go from -1000 to 1000"),
        {
            "g.txt": GOOD,
            "f.toml": '[featurizer]\ncolumns = ["word", "pos"]\n'
            'templates = ["word[99999999999999999999]"]\n',
        },
    ),
    # ------------------------------------------------------------------ constraint files
    Case(
        "constraints-empty-word-list",
        ["constraints", "check", "c.toml"],
        1,
        ("c.toml", "instance[0].words", "empty list"),
        {
            "c.toml": 'labels = ["B-NP", "O"]\n[[instance]]\nrule = "tokens"\nwords = []\n'
            'avoid = ["O"]\n'
        },
    ),
    Case(
        "constraints-sequence-word-with-a-space",
        ["constraints", "check", "c.toml"],
        1,
        ("c.toml", "instance[0].sequence[0]", "with a space"),
        {
            "c.toml": 'labels = ["B-NP", "O"]\n[[instance]]\nrule = "tokens"\n'
            'sequence = ["no pets", "x"]\navoid = ["O"]\n'
        },
    ),
    # ------------------------------------------------------------------ TOML files
    Case(
        "constraints-file-with-a-byte-order-mark",
        ["constraints", "check", "c.toml"],
        0,
        (),
        {
            "c.toml": b"\xef\xbb\xbf"
            + b'labels = ["B-NP", "O"]\n[[instance]]\nrule = "start"\nlabels = ["B-NP", "O"]\n'
        },
    ),
    Case(
        "train-feature-file-with-a-byte-order-mark",
        ["train", "g.txt", "-o", "out.tgm", "--features", "f.toml", "--learner", "perceptron"],
        0,
        (),
        {
            "g.txt": GOOD,
            "f.toml": b"\xef\xbb\xbf"
            + b'[featurizer]\ncolumns = ["word", "pos"]\ntemplates = ["word[0]"]\n',
        },
    ),
    # ------------------------------------------------------------------ --fields
    Case(
        "train-fields-only-commas",
        ["train", "d.jsonl", "-o", "out.tgm", "--fields", ",,,"],
        1,
        ("fields ',,,'", "name 1 is empty"),
        {"d.jsonl": jsonl(*ROWS)},
    ),
    Case(
        "train-fields-empty-name-inside",
        ["train", "d.jsonl", "-o", "out.tgm", "--fields", "tokens,,tags"],
        1,
        ("name 2 is empty",),
        {"d.jsonl": jsonl(*ROWS)},
    ),
]

#: JSON lines files and what the message must say (file:line and the field)
BAD_JSONL = {
    "null-token": (jsonl(ROWS[0], {"tokens": [None], "tags": ["O"]}), ("d.jsonl:2", "'tokens'")),
    "null-label": (
        jsonl({"tokens": ["a"], "tags": [None]}),
        ("d.jsonl:1", "'tags' item 0 is null"),
    ),
    "null-column": (jsonl(ROWS[0], {"tokens": ["a"], "tags": None}), ("d.jsonl:2", "found null")),
    "nested-list": (jsonl({"tokens": ["a"], "tags": [["x"]]}), ("d.jsonl:1", "a list")),
    "struct-label": (jsonl({"tokens": ["a"], "tags": [{"x": 1}]}), ("d.jsonl:1", "a table")),
    "tokens-as-text": (jsonl({"tokens": "a b", "tags": ["O", "O"]}), ("d.jsonl:1", "the text")),
    "boolean-label": (jsonl({"tokens": ["a"], "tags": [True]}), ("d.jsonl:1", "boolean")),
    "float-label": (jsonl({"tokens": ["a"], "tags": [1.5]}), ("d.jsonl:1", "float")),
    "missing-field": (jsonl(ROWS[0], {"tokens": ["a"]}), ("d.jsonl:2", "no field 'tags'")),
    "lengths-differ": (jsonl({"tokens": ["a", "b"], "tags": ["O"]}), ("d.jsonl:1", "1 values")),
    "malformed-json": (jsonl(ROWS[0]) + '{"tokens": [\n', ("d.jsonl:2", "not valid JSON")),
    "nul-byte": (jsonl(ROWS[0]) + "\x00\n", ("d.jsonl:2", "not valid JSON")),
    "not-an-object": (jsonl(ROWS[0]) + "[1, 2]\n", ("d.jsonl:2", "expected a JSON object")),
    "bad-utf8": (jsonl(ROWS[0]).encode() + b'{"tokens": ["\xff"]}\n', ("d.jsonl:2", "UTF-8")),
    "empty": ("", ("d.jsonl", "no JSON objects")),
}
for name, (content, says) in BAD_JSONL.items():
    CASES.append(
        Case(
            f"train-jsonl-{name}",
            ["train", "d.jsonl", "-o", "out.tgm", "-q"],
            1,
            says,
            {"d.jsonl": content},
        )
    )


def _parquet(rows) -> callable:
    def make(model: Path) -> bytes:
        datasets = pytest.importorskip("datasets")
        out = model.parent / ".rows.parquet"
        datasets.Dataset.from_list(rows).to_parquet(str(out))
        data = out.read_bytes()
        out.unlink()
        return data

    return make


CASES += [
    Case(
        "train-parquet-null-label",
        ["train", "d.parquet", "-o", "out.tgm", "-q"],
        1,
        ("d.parquet", "row 1", "'tags' item 0 is null"),
        {"d.parquet": _parquet([ROWS[0], {"tokens": ["a"], "tags": [None]}])},
    ),
    Case(
        "train-parquet-struct-label",
        ["train", "d.parquet", "-o", "out.tgm", "-q"],
        1,
        ("d.parquet", "row 0", "'tags' item 0 is a table"),
        {"d.parquet": _parquet([{"tokens": ["a"], "tags": [{"x": 1}]}])},
    ),
    Case(
        "train-parquet-truncated",
        ["train", "d.parquet", "-o", "out.tgm", "-q"],
        1,
        ("d.parquet", "parquet"),
        {"d.parquet": lambda m: _parquet(ROWS)(m)[:-40]},
    ),
    Case(
        "train-hf-conll-on-a-binary-file",
        ["train", "hf:conll:bin.dat", "-o", "out.tgm", "-q"],
        1,
        ("bin.dat",),
        {"bin.dat": bytes(range(256)) * 4},
    ),
]


def _snapshot(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in root.rglob("*") if p.is_file()}


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_bad_input(case, model, tmp_path, monkeypatch):
    shutil.copy(model, tmp_path / "m.tgm")
    for name, content in case.files.items():
        if callable(content):
            content = content(model)
        if isinstance(content, str):
            content = content.encode()
        (tmp_path / name).write_bytes(content)
    before = _snapshot(tmp_path)
    monkeypatch.chdir(tmp_path)
    args = [str(tmp_path / "m.tgm") if a == "{m}" else a for a in case.args]
    result = CliRunner().invoke(cli, args, catch_exceptions=True)
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(
        result.exception
    )
    assert result.exit_code == case.code, (result.exit_code, result.output)
    assert "Traceback" not in result.output
    if case.code == 1:
        lines = result.stderr.splitlines()
        assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    for fragment in case.says:
        assert fragment in result.stderr, (fragment, result.stderr)
    after = _snapshot(tmp_path)
    for name, data in before.items():
        assert after.get(name) == data, f"{name} was changed"
    left = [n for n in after if n not in before and n.endswith((".part", ".tmp"))]
    assert not left, left
