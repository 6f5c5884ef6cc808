"""Bad input, case by case, through the command line as a user meets it.

Every case runs one ``tagger`` command in a directory of its own and asserts the promised end:
exactly one line ``error: ...`` on stderr, exit status 1 for bad data (anything wrong in a
file, a missing or unreadable file, an unusable output path) and 2 for a bad command line (its
line then points at the command's ``--help``), no traceback, the fragments the message must
contain, and that no file that existed before the command was changed or left behind
half-written (no ``.part`` / ``.tmp`` files).
"""

from __future__ import annotations

import hashlib
import json
import shutil
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from tagger.cli import cli
from tagger.constraints import ConstraintSet
from tagger.constraints.rule_checks import COMMON_KEYS, CORPUS_RULES, INSTANCE_RULES, RULE_KEYS
from tagger.errors import ConstraintError
from tagger.model.files import HEADER_NAME, HEADER_SHA256_NAME, load_model_file, save_model_file

GOOD = "The DT B-NP\ncat NN I-NP\nsat VBD B-VP\n\nA DT B-NP\ndog NN I-NP\n"


@dataclass
class Case:
    id: str
    args: list  # "{m}": the trained model; other names: files of the case
    code: int  # 1 data error, 2 usage error
    says: tuple = ()  # fragments of the message
    files: dict = field(default_factory=dict)  # name -> str | bytes | callable(model) -> bytes


def _header_edit(edit):
    """A model file whose JSON header was changed by ``edit(meta)``."""

    def make(model: Path) -> bytes:
        out = model.parent / ".edited.tgm"
        with zipfile.ZipFile(model) as zin, zipfile.ZipFile(out, "w") as zout:
            for info in zin.infolist():
                payload = zin.read(info.filename)
                if info.filename == HEADER_NAME:
                    header = json.loads(payload)
                    edit(header["meta"])
                    payload = json.dumps(header).encode()
                    edited = payload
                if info.filename == HEADER_SHA256_NAME:  # so the edit reaches the field checks
                    payload = hashlib.sha256(edited).hexdigest().encode()
                zout.writestr(info.filename, payload)
        data = out.read_bytes()
        out.unlink()
        return data

    return make


def _setter(*path_and_value):
    *keys, value = path_and_value

    def edit(meta):
        d = meta
        for k in keys[:-1]:
            d = d[k]
        d[keys[-1]] = value

    return edit


# ------------------------------------------------------------------------------ corpora

BAD_CORPORA = {
    "ragged-columns": ("The DT B-NP\ncat NN\nsat VBD B-VP\n", ("bad.txt:2",)),
    "bad-utf8": (b"The DT B-NP\ncaf\xe9 NN I-NP\n", ("bad.txt:2", "UTF-8")),
    "binary": (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00", ()),
    "nul-bytes": (b"The DT B-NP\x00\x00\ncat NN I-NP\n", ()),
    "empty": ("", ()),
    "blank-lines-only": ("\n\n\n", ()),
    "lone-cr": ("The DT B-NP\rcat NN I-NP\r", ("bad.txt:1", "carriage return")),
    "one-field-per-line": ("The\ncat\nsat\n", ()),
}

CASES: list[Case] = []
for name, (text, says) in BAD_CORPORA.items():
    CASES.append(
        Case(
            f"train-{name}",
            ["train", "bad.txt", "-o", "out.tgm", "--format", "conll"],
            1,
            says,
            {"bad.txt": text},
        )
    )
    CASES.append(
        Case(
            f"eval-{name}",
            ["eval", "{m}", "bad.txt", "--format", "conll"],
            1,
            says,
            {"bad.txt": text},
        )
    )
for name in ("ragged-columns", "bad-utf8", "binary", "lone-cr", "nul-bytes"):
    text, says = BAD_CORPORA[name]
    CASES.append(
        Case(f"tag-{name}", ["tag", "{m}", "bad.txt", "-o", "out.txt"], 1, says, {"bad.txt": text})
    )
CASES += [
    Case(
        "train-text-has-no-labels",
        ["train", "t.txt", "-o", "out.tgm", "--format", "text"],
        1,
        ("no labels",),
        {"t.txt": "The cat sat .\n"},
    ),
    Case(
        "train-label-column-out-of-range",
        ["train", "g.txt", "-o", "out.tgm", "--label-column", "7"],
        1,
        (),
        {"g.txt": GOOD},
    ),
    Case(
        "conllu-too-few-fields",
        ["train", "c.conllu", "-o", "out.tgm"],
        1,
        ("c.conllu",),
        {"c.conllu": "1\tThe\tthe\tDET\n"},
    ),
    Case(
        "conllu-bad-id",
        ["train", "c.conllu", "-o", "out.tgm", "--format", "conllu"],
        1,
        ("c.conllu",),
        {"c.conllu": "x\tThe\tthe\tDET\tDT\t_\t0\troot\t_\t_\n"},
    ),
    Case(
        "inline-unclosed-tag",
        ["train", "i.txt", "-o", "out.tgm", "--format", "inline"],
        1,
        ("i.txt",),
        {"i.txt": "<author> A. Smith . <title> Things </title>\n"},
    ),
    Case(
        "inline-mismatched-tag",
        ["train", "i.txt", "-o", "out.tgm", "--format", "inline"],
        1,
        ("i.txt",),
        {"i.txt": "<author> A. Smith . </title>\n"},
    ),
    Case("missing-input", ["train", "nowhere.txt", "-o", "out.tgm"], 1, ("nowhere.txt",)),
    Case("eval-missing-input", ["eval", "{m}", "nowhere.txt"], 1, ("nowhere.txt",)),
    Case("tag-missing-input", ["tag", "{m}", "nowhere.txt"], 1, ("nowhere.txt",)),
    Case(
        "eval-labels-unknown-to-model",
        ["eval", "{m}", "p.txt"],
        1,
        ("none of",),
        {"p.txt": "The DT X\ncat NN Y\n"},
    ),
]

# ------------------------------------------------------------------------------ models

HEADER_EDITS = {
    "meta-info-text": _setter("info", "hello"),
    "meta-info-list": _setter("info", [1, 2]),
    "info-learner-number": _setter("info", "learner", 3),
    "info-params-text": _setter("info", "params", "radius=3"),
    "info-seed-text": _setter("info", "seed", "zero"),
    "info-conllu-label-unknown": _setter("info", "conllu_label", "lemma"),
    "info-conllu-label-number": _setter("info", "conllu_label", 4),
    "info-n-params-text": _setter("info", "n_params", "many"),
    "info-final-list": _setter("info", "final", [1]),
    "info-path-text": _setter("info", "path", "x"),
    "info-constraints-number": _setter("info", "constraints", 5),
    "trace-text": _setter("trace", "hello"),
    "trace-row-number": _setter("trace", [1, 2]),
    "labels-text": _setter("labels", "B-NP"),
    "labels-empty": _setter("labels", []),
    "labels-number": _setter("labels", [1, 2]),
    "labels-duplicate": _setter("labels", ["O", "O"]),
    "features-list": _setter("features", []),
}
for name, edit in HEADER_EDITS.items():
    for command in (
        ["inspect", "bad.tgm"],
        ["trace", "bad.tgm"],
        ["tag", "bad.tgm", "g.txt", "-o", "out.txt"],
        ["eval", "bad.tgm", "g.txt"],
    ):
        CASES.append(
            Case(
                f"{command[0]}-{name}",
                command,
                1,
                ("bad.tgm",),
                {"bad.tgm": _header_edit(edit), "g.txt": GOOD},
            )
        )
DAMAGED = {
    "truncated": lambda m: m.read_bytes()[: len(m.read_bytes()) // 2],
    "empty": lambda m: b"",
    "text": lambda m: b"not a model\n",
    "foreign-zip": lambda m: _foreign_zip(m),
    "flipped-byte": lambda m: _flip(m.read_bytes()),
}


def _foreign_zip(model: Path) -> bytes:
    out = model.parent / ".foreign.zip"
    with zipfile.ZipFile(out, "w") as z:
        z.writestr("readme.txt", "hello")
    data = out.read_bytes()
    out.unlink()
    return data


def _flip(data: bytes) -> bytes:
    b = bytearray(data)
    b[len(b) - 200] ^= 0xFF
    return bytes(b)


def _array_edit(name, edit):
    """A model file whose array ``name`` was changed by ``edit(array)`` and saved again with its
    checksum: only the loader's checks of what the arrays mean can refuse it."""

    def make(model: Path) -> bytes:
        meta, arrays = load_model_file(model)
        arrays[name] = edit(arrays[name].copy())
        out = model.parent / ".arrays.tgm"
        save_model_file(out, meta, arrays)
        data = out.read_bytes()
        out.unlink()
        return data

    return make


def _put(index, value):
    def edit(arr):
        arr[index] = value
        return arr

    return edit


ARRAY_EDITS = {
    # each of these crashed tagging with a segmentation fault, or decoded with garbage
    "label-index-out-of-range": ("model.param_label", _put(0, 99)),
    "negative-label-index": ("model.param_label", _put(-1, -1)),
    "attr-ptr-decreasing": ("model.attr_ptr", _put(1, 10**6)),
    "attr-ptr-short": ("model.attr_ptr", lambda a: a[:-1]),
    "attr-keys-unsorted": ("feat.attr_keys", lambda a: a[::-1].copy()),
    "attr-keys-negative": ("feat.attr_keys", _put(0, -1)),
    "weights-nan": ("weights", _put(0, np.nan)),
    "weights-short": ("weights", lambda a: a[:-3]),
}
for name, (array, edit) in ARRAY_EDITS.items():
    CASES.append(
        Case(
            f"tag-array-{name}",
            ["tag", "bad.tgm", "g.txt", "-o", "out.txt"],
            1,
            ("bad.tgm",),
            {"bad.tgm": _array_edit(array, edit), "g.txt": GOOD},
        )
    )

for name, make in DAMAGED.items():
    for command in (
        ["inspect", "bad.tgm"],
        ["tag", "bad.tgm", "g.txt", "-o", "out.txt"],
        ["trace", "bad.tgm"],
        ["eval", "bad.tgm", "g.txt"],
    ):
        CASES.append(
            Case(
                f"{command[0]}-model-{name}",
                command,
                1,
                ("bad.tgm",),
                {"bad.tgm": make, "g.txt": GOOD},
            )
        )

# ------------------------------------------------------------------------------ constraint files

BAD_CONSTRAINTS = {
    "rule-list": 'labels = ["NP"]\n[[instance]]\nrule = ["start"]\nlabels = ["NP"]\n',
    "rule-table": 'labels = ["NP"]\n[[instance]]\nrule = {a = 1}\n',
    "property-list": (
        'labels = ["NP"]\n[[instance]]\nrule = "only-inside"\nproperty = ["quote"]\n'
        'labels = ["NP"]\n'
    ),
    "labels-number": 'labels = ["NP"]\n[[instance]]\nrule = "start"\nlabels = 3\n',
    "weight-text": 'labels = ["NP"]\n[[instance]]\nrule = "start"\nlabels = ["NP"]\nweight = "x"\n',
    "unknown-rule": 'labels = ["NP"]\n[[instance]]\nrule = "strat"\nlabels = ["NP"]\n',
    "not-toml": "labels = [\n",
    "unknown-label": 'labels = ["NX"]\n',
}
for name, text in BAD_CONSTRAINTS.items():
    CASES.append(
        Case(
            f"train-constraints-{name}",
            ["train", "g.txt", "--unlabeled", "u.txt", "--constraints", "c.toml", "-o", "out.tgm"],
            1,
            ("c.toml",),
            {"g.txt": GOOD, "u.txt": "a b\n", "c.toml": text},
        )
    )
    CASES.append(
        Case(
            f"eval-constraints-{name}",
            ["eval", "{m}", "g.txt", "--constraints", "c.toml"],
            1,
            ("c.toml",),
            {"g.txt": GOOD, "c.toml": text},
        )
    )

# ------------------------------------------------------------------------------ usage and paths

CASES += [
    Case(
        "unknown-learner",
        ["train", "g.txt", "-o", "out.tgm", "--learner", "nosuch"],
        2,
        ("nosuch",),
        {"g.txt": GOOD},
    ),
    Case(
        "unknown-preset",
        ["train", "g.txt", "-o", "out.tgm", "--features", "nosuch"],
        2,
        ("nosuch",),
        {"g.txt": GOOD},
    ),
    Case(
        "set-unknown-key",
        ["train", "g.txt", "-o", "out.tgm", "--set", "radus=3"],
        2,
        ("radus",),
        {"g.txt": GOOD},
    ),
    Case(
        "set-bad-value",
        ["train", "g.txt", "-o", "out.tgm", "--set", "radius=-1"],
        2,
        ("radius",),
        {"g.txt": GOOD},
    ),
    Case(
        "set-no-equals",
        ["train", "g.txt", "-o", "out.tgm", "--set", "radius"],
        2,
        (),
        {"g.txt": GOOD},
    ),
    Case("jobs-zero", ["tag", "{m}", "g.txt", "--jobs", "0"], 2, (), {"g.txt": GOOD}),
    Case(
        "unknown-format",
        ["train", "g.txt", "-o", "out.tgm", "--format", "xml"],
        2,
        (),
        {"g.txt": GOOD},
    ),
    Case("train-without-output", ["train", "g.txt"], 2, (), {"g.txt": GOOD}),
    Case(
        "decode-constraints-alone",
        ["eval", "{m}", "g.txt", "--decode-constraints"],
        2,
        (),
        {"g.txt": GOOD},
    ),
    Case(
        "constraints-without-unlabeled",
        ["train", "g.txt", "-o", "out.tgm", "--constraints", "c.toml"],
        2,
        ("--unlabeled",),
        {
            "g.txt": GOOD,
            "c.toml": 'labels = ["B-NP"]\n[[instance]]\nrule = "start"\nlabels = ["B-NP"]\n',
        },
    ),
    Case(
        "path-values-not-numbers",
        ["path", "g.txt", "--dev", "g.txt", "--values", "a,b"],
        2,
        (),
        {"g.txt": GOOD},
    ),
    Case(
        "train-output-is-input",
        ["train", "g.txt", "-o", "g.txt"],
        1,
        ("also an input",),
        {"g.txt": GOOD},
    ),
    Case(
        "train-output-is-dev",
        ["train", "g.txt", "--dev", "d.txt", "-o", "d.txt"],
        1,
        ("also an input",),
        {"g.txt": GOOD, "d.txt": GOOD},
    ),
    Case(
        "tag-output-is-model",
        ["tag", "{m}", "g.txt", "-o", "m.tgm"],
        1,
        ("also an input",),
        {"g.txt": GOOD},
    ),
    Case(
        "tag-output-is-input",
        ["tag", "{m}", "g.txt", "-o", "g.txt"],
        1,
        ("also an input",),
        {"g.txt": GOOD},
    ),
    Case(
        "train-output-dir-missing",
        ["train", "g.txt", "-o", "no/such/dir/out.tgm"],
        1,
        ("does not exist",),
        {"g.txt": GOOD},
    ),
    Case(
        "tag-output-dir-missing",
        ["tag", "{m}", "g.txt", "-o", "no/such/out.txt"],
        1,
        ("no/such/out.txt", "does not exist"),
        {"g.txt": GOOD},
    ),
    Case(
        "path-output-dir-missing",
        [
            "path",
            "g.txt",
            "--dev",
            "g.txt",
            "--values",
            "1",
            "--learner",
            "m3n-l2",
            "-o",
            "no/m.tgm",
        ],
        1,
        ("does not exist",),
        {"g.txt": GOOD},
    ),
    Case("trace-plot-dir-missing", ["trace", "{m}", "--plot", "no/p.png"], 1, ("does not exist",)),
    Case(
        "train-output-is-directory",
        ["train", "g.txt", "-o", "sub"],
        1,
        (),
        {"g.txt": GOOD, "sub/keep.txt": "x"},
    ),
    Case(
        "tag-output-is-directory",
        ["tag", "{m}", "g.txt", "-o", "sub"],
        1,
        (),
        {"g.txt": GOOD, "sub/keep.txt": "x"},
    ),
    Case(
        "train-input-is-directory", ["train", "sub", "-o", "out.tgm"], 1, (), {"sub/keep.txt": "x"}
    ),
    Case(
        "marginals-of-max-margin-model",
        ["tag", "{m}", "g.txt", "--marginals"],
        1,
        ("CRF",),
        {"g.txt": GOOD},
    ),
]


# ------------------------------------------------------------------------------ configuration files

# a setting that a configuration file gives wrongly is a data error naming the file and its key,
# whichever option would have set it on the command line
RUN_TOML = '[data]\ntrain = ["g.txt"]\n[model]\n'
CONFIG_CASES = {
    "unknown-learner": ('learner = "nosuch"\noutput = "m2.tgm"', ("model.learner", "nosuch")),
    "unknown-preset": ('features = "nosuch"\noutput = "m2.tgm"', ("model.features", "nosuch")),
    "features-file-missing": (
        'features = "feats.toml"\noutput = "m2.tgm"',
        ("model.features", "feats.toml"),
    ),
    "output-dir-missing": ('output = "no/m2.tgm"', ("model.output", "does not exist")),
    "output-is-input": ('output = "g.txt"', ("model.output", "also an input")),
    "output-is-directory": ('output = "sub"', ("model.output", "directory")),
    "seed-negative": ('seed = -5\noutput = "m2.tgm"', ("model.seed", "-5")),
    "seed-too-large": ('seed = 4294967296\noutput = "m2.tgm"', ("model.seed",)),
    "threads-zero": ('output = "m2.tgm"', ("threads", "expected an integer >= 1")),
}
for name, (model_lines, says) in CONFIG_CASES.items():
    text = RUN_TOML + model_lines + "\n"
    if name == "threads-zero":
        text = "threads = 0\n" + text
    CASES.append(
        Case(
            f"train-config-{name}",
            ["train", "--config", "conf/run.toml"],
            1,
            ("conf/run.toml", *says),
            {"conf/run.toml": text, "conf/g.txt": GOOD, "conf/sub/keep.txt": "x"},
        )
    )
CASES += [
    Case(
        "train-config-constraints-without-unlabeled",
        ["train", "--config", "run.toml"],
        1,
        ("run.toml", "data.unlabeled"),
        {
            "run.toml": '[data]\ntrain = ["g.txt"]\nconstraints = "c.toml"\n'
            '[model]\noutput = "m2.tgm"\n',
            "g.txt": GOOD,
            "c.toml": 'labels = ["B-NP"]\n[[instance]]\nrule = "start"\nlabels = ["B-NP"]\n',
        },
    ),
    Case("seed-negative", ["train", "g.txt", "-o", "o.tgm", "--seed", "-5"], 2, ("--seed",)),
    Case("path-seed-negative", ["path", "g.txt", "--seed", "-1"], 2, ("--seed",)),
    Case("threads-zero", ["train", "g.txt", "-o", "o.tgm", "--threads", "0"], 2, ("--threads",)),
    Case("threads-text", ["eval", "{m}", "g.txt", "--threads", "x"], 2, ("--threads",)),
    Case(
        "init-config-replaces-a-model",
        ["init-config", "m.tgm"],
        1,
        ("m.tgm", "--force"),
    ),
    Case(
        "init-config-replaces-a-corpus",
        ["init-config", "g.txt", "--task", "chunk"],
        1,
        ("g.txt", "--force"),
        {"g.txt": GOOD},
    ),
    Case("init-config-dir-missing", ["init-config", "nodir/x.toml"], 1, ("does not exist",)),
    Case("init-config-unknown-learner", ["init-config", "--learner", "nosuch"], 2, ("nosuch",)),
]


def _snapshot(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in root.rglob("*") if p.is_file()}


def test_the_suite_is_as_large_as_promised():
    assert len(CASES) >= 150
    assert len({c.id for c in CASES}) == len(CASES)


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_bad_input(case, model, tmp_path, monkeypatch):
    shutil.copy(model, tmp_path / "m.tgm")
    for name, content in case.files.items():
        target = tmp_path / name
        target.parent.mkdir(parents=True, exist_ok=True)
        if callable(content):
            content = content(model)
        if isinstance(content, str):
            content = content.encode()
        target.write_bytes(content)
    before = _snapshot(tmp_path)
    monkeypatch.chdir(tmp_path)
    args = [str(tmp_path / "m.tgm") if a == "{m}" else a for a in case.args]
    result = CliRunner().invoke(cli, args, catch_exceptions=True)
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(
        result.exception
    )
    assert result.exit_code == case.code, (result.exit_code, result.output)
    assert "Traceback" not in result.output
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    if case.code == 2:  # a usage error points at the command's help, in the same line
        assert "--help')" in lines[0], lines[0]
    for fragment in case.says:
        assert fragment in result.stderr, (fragment, result.stderr)
    after = _snapshot(tmp_path)
    for name, data in before.items():
        assert after.get(name) == data, f"{name} was changed"
    left = [n for n in after if n not in before and n.endswith((".part", ".tmp"))]
    assert not left, left


# ------------------------------------------------------------------------- every key, every type

VALUES = [
    "1",
    "1.5",
    "true",
    '"x"',
    "[]",
    '["A"]',
    "{a = 1}",
    "[1]",
    "[[1]]",
    '"all"',
    "-1",
    "nan",
    "{}",
    '["A", 2]',
]
BASE = {
    "start": 'labels = ["A"]',
    "end": 'labels = ["A"]',
    "one-segment": 'labels = ["A"]',
    "tokens": 'words = ["a"]\ntake = ["A"]',
    "only-inside": 'property = "quote"\nlabels = ["A"]',
    "change-on-punctuation": "",
    "count": 'labels = ["A"]\nmax = 1',
    "contains": 'labels = ["A"]\npattern = "[0-9]"',
    "order": 'before = ["A"]\nafter = ["B"]',
    "label-fraction": 'labels = ["A"]\nfraction = 0.5',
    "change-off-punctuation": "fraction = 0.1",
}


def _typed_constraint_files():
    for rule, keys in RULE_KEYS.items():
        level = "instance" if rule in INSTANCE_RULES else "corpus"
        for key in sorted(keys | COMMON_KEYS):
            for v in VALUES:
                lines = [ln for ln in BASE[rule].split("\n") if ln and not ln.startswith(key)]
                body = lines if key == "rule" else [f'rule = "{rule}"'] + lines
                yield f'labels = ["A", "B"]\n[[{level}]]\n' + "\n".join(body) + f"\n{key} = {v}\n"
    for top in ("labels", "defaults", "description", "instance", "corpus"):
        for v in VALUES:
            yield f"{top} = {v}\n" + ('labels = ["A"]\n' if top != "labels" else "")
    for key in ("hard", "weight", "shape", "other"):
        for v in VALUES:
            yield f'labels = ["A"]\n[defaults]\n{key} = {v}\n'


def test_every_constraint_key_with_every_value_type_ends_in_a_constraint_error():
    assert CORPUS_RULES  # both levels are covered
    n = 0
    for text in _typed_constraint_files():
        n += 1
        try:
            ConstraintSet.from_text(text)
        except ConstraintError:
            pass
    assert n > 900
