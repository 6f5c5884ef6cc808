"""Fuzzing every entry point that reads what a user gives it: each corpus reader, the split file,
spaCy DocBin files, feature specifications, the constraint parser and compiler (and decoding
under the result), the model loader (and tagging with what it loaded), ``tagger tag``, model
headers, constraint patterns, JSON lines records, training configurations, sharded tagging's
checks and per-shard work, and the scikit-learn estimator's inputs.

Each test runs for its time budget (tests/fuzz/_harness.py; ``--fuzz-minutes N`` gives every
entry point N minutes) and fails on any exception that is not one of the project's errors, or,
for the command line, on a traceback, an exit status other than 0/1/2 or an error that is not
one line.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import tempfile
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from hypothesis import strategies as st

from tagger import Sentence, Tagger
from tagger.cli import cli
from tagger.constraints import CORPUS_RULES, INSTANCE_RULES, ConstraintSet
from tagger.constraints.decoding import constrained_decode
from tagger.constraints.language import PROPERTIES
from tagger.errors import TaggerError
from tagger.features import FeatureSpec, Featurizer
from tagger.io.docbin import read_docbin
from tagger.io.formats import FORMATS, read_corpus
from tagger.io.hf import read_dataset
from tagger.io.splits import read_split
from tagger.training.config import TrainingConfig
from tagger.training.schema import SCHEMA

from _harness import DEFAULT_TOTAL_SECONDS, fuzz
from _inputs import (
    ROOT,
    SAMPLES,
    crafted_header,
    edited_model,
    hostile_bytes,
    json_values,
    mutated,
    regexes,
    seed_bytes,
    toml_document,
    toml_scalars,
    toml_value,
    toml_values,
)

#: one sentence per kind of token the constraint rules and features look at
PROBE = [
    Sentence([["Smith", ",", "J.", "(", "1999", ")", ".", "Learning", "pp.", "1-9", "."]]),
    Sentence([["the", "cat"]]),
    Sentence([["x"]]),
]


#: entry points fuzzed below; without --fuzz-minutes they share DEFAULT_TOTAL_SECONDS
N_ENTRY_POINTS = 13


@pytest.fixture
def budget(request) -> float:
    minutes = request.config.getoption("fuzz_minutes")
    return minutes * 60.0 if minutes is not None else DEFAULT_TOTAL_SECONDS / N_ENTRY_POINTS


@pytest.fixture(scope="module")
def scratch():
    with tempfile.TemporaryDirectory(prefix="tagger-fuzz-") as d:
        yield Path(d)


def _write(directory: Path, name: str, data: bytes) -> Path:
    path = directory / name
    path.write_bytes(data)
    return path


# --------------------------------------------------------------------------------------------
# corpus readers


READER_CASES = [(fmt, {}) for fmt in FORMATS] + [
    ("auto", {}),
    ("conll", {"label_column": 0}),
    ("conll", {"labeled": False}),
    ("conll", {"sep": "\t"}),
    ("conllu", {"label": "xpos"}),
    ("tab", {"labeled": False}),
]


def test_corpus_readers(scratch, budget):
    """Every format with every option, from a file or from a stream (standard input takes the
    readers' chunked path)."""
    cases = st.tuples(st.sampled_from(READER_CASES), st.booleans(), hostile_bytes(seed_bytes()))

    def body(case):
        (fmt, options), stream, data = case
        source = io.BytesIO(data) if stream else _write(scratch, "corpus.txt", data)
        for sentence in read_corpus(source, fmt, **options):
            assert all(len(column) == len(sentence.tokens) for column in sentence.columns)
            assert sentence.labels is None or len(sentence.labels) == len(sentence.tokens)

    fuzz("corpus readers", cases, body, budget)


def test_split_file(scratch, budget):
    def body(data: bytes):
        read_split(_write(scratch, "split.tsv", data))

    fuzz("split file", hostile_bytes(seed_bytes()[-1:]), body, budget)


def test_docbin(scratch, budget):
    spacy = pytest.importorskip("spacy")
    from spacy.tokens import DocBin

    nlp = spacy.blank("en")
    db = DocBin(attrs=["ORTH", "TAG", "POS", "ENT_IOB", "ENT_TYPE"])
    for text in ["Smith wrote this .", "The cat sat on the mat ."]:
        doc = nlp(text)
        for tok in doc:
            tok.tag_ = "NN"
        db.add(doc)
    seed = db.to_bytes()

    def body(data: bytes):
        list(read_docbin(_write(scratch, "c.spacy", data), fields=["words", "tag"]))

    fuzz("docbin", st.one_of(mutated(seed), st.binary(max_size=100)), body, budget, batch=20)


# --------------------------------------------------------------------------------------------
# feature specifications


VIEW_KEYS = ["function", "pattern", "length", "column", "words", "a"]
FUNCTIONS = ["lower", "prefix", "suffix", "shape", "short_shape", "regex", "is_punct", "nosuch"]


@st.composite
def feature_specs(draw) -> str:
    columns = draw(
        st.one_of(
            st.just(["word", "pos"]),
            st.lists(
                st.one_of(st.sampled_from(["word", "pos", "lower"]), toml_scalars), max_size=3
            ),
        )
    )
    names = [c for c in columns if isinstance(c, str)] + ["lower", "v", "bias"]
    template = st.builds(
        lambda parts: "|".join(parts),
        st.lists(
            st.one_of(
                st.builds(lambda n, o: f"{n}[{o}]", st.sampled_from(names), st.integers(-3, 3)),
                st.sampled_from(["bias", "word[", "word[x]", "[0]", "", "word[0]|"]),
            ),
            min_size=1,
            max_size=3,
        ),
    )
    featurizer = {
        "name": "fuzz",
        "columns": columns,
        "templates": draw(st.one_of(st.lists(template, max_size=5), toml_values)),
    }
    views = {}
    for name in draw(st.lists(st.sampled_from(["lower", "v", "word"]), max_size=3)):
        views[name] = draw(
            st.dictionaries(
                st.sampled_from(VIEW_KEYS),
                st.one_of(
                    st.sampled_from(FUNCTIONS),
                    st.sampled_from(["^[0-9]+$", "(", "a{99999}"]),
                    st.integers(-2, 5),
                    toml_values,
                ),
                max_size=3,
            )
        )
    text = "[featurizer]\n" + "\n".join(f"{k} = {toml_value(v)}" for k, v in featurizer.items())
    for name, table in views.items():
        text += f"\n[views.{name}]\n" + "\n".join(
            f"{k} = {toml_value(v)}" for k, v in table.items()
        )
    if draw(st.integers(0, 3)) == 0:
        labels = draw(
            st.dictionaries(
                st.sampled_from(["map", "keep", "other", "x"]),
                st.one_of(st.just({"B-NP": "NP"}), st.just(["B-NP", "O"]), toml_values),
                max_size=3,
            )
        )
        text += "\n[labels]\n" + "\n".join(f"{k} = {toml_value(v)}" for k, v in labels.items())
    return text + "\n"


def test_feature_specs(scratch, budget):
    presets = [
        (ROOT / "tagger" / "presets" / f"{p}.toml").read_bytes()
        for p in ("chunk", "pos", "citation")
    ]
    strategy = st.one_of(feature_specs().map(str.encode), st.sampled_from(presets).flatmap(mutated))

    def body(data: bytes):
        spec = FeatureSpec.load(_write(scratch, "features.toml", data))
        rows = [Sentence([s.tokens] * spec.n_columns) for s in PROBE]
        featurizer = Featurizer(spec).fit(rows)
        featurizer.transform(rows)

    # a template offset of 10**20 once ended in an OverflowError from the featurizer
    offset = b'[featurizer]\ncolumns = ["word"]\ntemplates = ["word[99999999999999999999]"]\n'
    fuzz("feature spec", strategy, body, budget, examples=(offset,))


# --------------------------------------------------------------------------------------------
# constraints


CHUNK_LABELS = ["B-NP", "I-NP", "B-VP", "I-VP", "B-PP", "O"]
ALL_KEYS = [
    "labels",
    "words",
    "pattern",
    "take",
    "avoid",
    "case_sensitive",
    "property",
    "min",
    "max",
    "unit",
    "fraction",
    "tolerance",
    "name",
    "hard",
    "weight",
    "shape",
    "before",
    "after",
    "nosuch",
]


@st.composite
def constraint_files(draw, labels: list[str]) -> str:
    """Constraint files mostly right (so the compiler and decoder see them) with wrong keys,
    types and values mixed in."""
    label = st.sampled_from(labels + ["nosuch"])
    plausible = {
        "labels": st.one_of(st.lists(label, min_size=1, max_size=3), st.just("all")),
        "take": st.lists(label, min_size=1, max_size=2),
        "before": st.lists(label, min_size=1, max_size=2),
        "after": st.lists(label, min_size=1, max_size=2),
        "avoid": st.lists(label, min_size=1, max_size=2),
        "words": st.lists(st.sampled_from(["pp", "the", "(", "", "Vol.", "日本"]), max_size=3),
        "pattern": st.sampled_from(["^[0-9]+$", ".", "^$", "(", "a{1,2", "(?i)x", "\\b"]),
        "property": st.sampled_from(sorted(PROPERTIES) + ["nosuch"]),
        "case_sensitive": st.booleans(),
        "hard": st.booleans(),
        "min": st.integers(-1, 4),
        "max": st.integers(-1, 4),
        "unit": st.sampled_from(["tokens", "segments", "x"]),
        "fraction": st.floats(-0.5, 1.5),
        "tolerance": st.floats(-0.1, 1.0),
        "weight": st.floats(-1, 1e6),
        "shape": st.sampled_from(["linear", "squared", "cubic"]),
        "name": st.text(max_size=10).filter(lambda s: "\x00" not in s),
    }

    def item(rules):
        rule = draw(st.sampled_from(sorted(rules) + ["nosuch"]))
        keys = draw(st.lists(st.sampled_from(ALL_KEYS), max_size=5, unique=True))
        out = {"rule": rule}
        for key in keys:
            wrong = draw(st.integers(0, 5)) == 0 or key not in plausible
            out[key] = draw(toml_values if wrong else plausible[key])
        return out

    top = {"labels": draw(st.one_of(st.just(labels), st.lists(label, max_size=4), toml_values))}
    if draw(st.booleans()):
        top["defaults"] = {"hard": draw(st.booleans()), "weight": draw(st.floats(0, 10))}
    tables = {
        "instance": [item(INSTANCE_RULES) for _ in range(draw(st.integers(0, 3)))],
        "corpus": [item(CORPUS_RULES) for _ in range(draw(st.integers(0, 1)))],
    }
    return toml_document(top, tables)


def test_constraint_parser_and_compiler(budget):
    citations = (ROOT / "constraints" / "citations.toml").read_bytes()
    labels = ["author", "title", "date", "pages"]
    strategy = st.one_of(
        constraint_files(labels), mutated(citations).map(lambda b: b.decode("utf-8", "replace"))
    )

    rng = np.random.default_rng(0)

    def body(text: str):
        cset = ConstraintSet.from_text(text, "fuzz.toml")
        compiled = cset.compile(sorted(set(cset.labels) | set(labels)))
        ti = compiled.indicators(PROBE)
        # a file that checks out is decoded under: whatever its rules, a labeling comes back
        offsets = ti.offsets
        L = compiled.n_labels
        state = rng.normal(size=(int(offsets[-1]), L))
        y, _ = constrained_decode(state, offsets, rng.normal(size=(L, L)), compiled, ti)
        assert y.shape == (int(offsets[-1]),) and ((y >= 0) & (y < L)).all()

    fuzz("constraints", strategy, body, budget)


# --------------------------------------------------------------------------------------------
# models and tagging


@pytest.fixture(scope="module")
def chunk_model(tmp_path_factory) -> Path:
    """A small CRF (so --marginals is allowed) trained on the shipped chunking sample."""
    path = tmp_path_factory.mktemp("fuzz-model") / "chunk.tgm"
    result = CliRunner().invoke(
        cli,
        [
            "train",
            str(SAMPLES / "sample_chunk.txt"),
            "-o",
            str(path),
            "--learner",
            "crf-l2",
            "--set",
            "epochs=5",
            "-q",
        ],
    )
    assert result.exit_code == 0, result.output
    return path


def test_model_loader(chunk_model, scratch, budget):
    model = chunk_model.read_bytes()
    strategy = st.one_of(edited_model(model), mutated(model), st.binary(max_size=64))

    def body(data: bytes):
        tagger = Tagger.load(_write(scratch, "m.tgm", data))
        # a model that loads must tag: what it loaded was checked, not only parsed
        words = ["The", "cat", "sat", "."]
        sentences = [Sentence([words, ["DT", "NN", "VBD", "."]])]
        tagger.predict_batch(sentences)

    fuzz("model loader", strategy, body, budget, batch=20)


@st.composite
def tag_invocations(draw, seeds: list[bytes]):
    # a file the model can read, slightly damaged, half of the time: decoding, writing and
    # constrained decoding see input only when reading succeeds
    chunk = seeds[0]
    data = draw(st.one_of(hostile_bytes(seeds), st.just(chunk), mutated(chunk, max_edits=1)))
    options = []
    if draw(st.booleans()):
        options += ["--format", draw(st.sampled_from(("auto",) + FORMATS))]
    if draw(st.integers(0, 3)) == 0:
        options += ["--label-column", str(draw(st.integers(-1, 4)))]
    if draw(st.integers(0, 3)) == 0:
        options.append("--marginals")
    if draw(st.integers(0, 5)) == 0:
        options += ["-j", "2"]
    constraints = draw(constraint_files(CHUNK_LABELS)) if draw(st.integers(0, 3)) == 0 else None
    return data, options, constraints


def test_tag_command(chunk_model, scratch, budget):
    seeds = seed_bytes()

    def body(invocation):
        data, options, constraints = invocation
        args = ["tag", str(chunk_model), str(_write(scratch, "in.txt", data)), *options]
        if constraints is not None:
            args += ["--constraints", str(_write(scratch, "c.toml", constraints.encode()))]
        result = CliRunner().invoke(cli, args, catch_exceptions=True)
        if result.exception is not None and not isinstance(result.exception, SystemExit):
            raise result.exception
        assert result.exit_code in (0, 1, 2), (result.exit_code, result.stderr)
        assert "Traceback" not in result.stderr
        if result.exit_code == 1:
            lines = result.stderr.splitlines()
            assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
        assert not [p for p in os.listdir(scratch) if p.endswith(".part")]
        return result.exit_code != 0

    fuzz("tagger tag", tag_invocations(seeds), body, budget, batch=20)


# --------------------------------------------------------------------------------------------
# model headers, constraint patterns, JSON lines records, training configurations


#: a token on which a backtracking matcher spends hours with ^(a+)+$ and its kin
EVIL = Sentence([["a" * 34 + "b", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaa!", "x"]])


def test_model_headers(chunk_model, scratch, budget):
    """Header fields, declared sizes and dtypes, and regex views, each edit with the header's
    checksum recomputed so that it reaches the loader's checks and the featurizer."""
    model = chunk_model.read_bytes()

    def body(data: bytes):
        tagger = Tagger.load(_write(scratch, "h.tgm", data))
        words = ["The", "cat", "sat", "."]
        tagger.predict_batch([Sentence([words, ["DT", "NN", "VBD", "."]])])
        tagger.predict_batch([Sentence([EVIL.tokens, ["NN"] * 3])])

    fuzz("model headers", crafted_header(model), body, budget, batch=20)


def test_constraint_patterns(budget):
    """Constraint files whose rules carry generated patterns, matched against tokens that make
    a backtracking matcher explode."""
    labels = ["B-NP", "I-NP", "O"]

    @st.composite
    def files(draw) -> str:
        rule = draw(st.sampled_from(["tokens", "only-inside", "contains"]))
        item = {"rule": rule, "pattern": draw(regexes())}
        if draw(st.booleans()):
            item["case_sensitive"] = draw(st.booleans())
        if rule == "tokens":
            item["avoid"] = ["O"]
        else:
            item["labels"] = ["B-NP"]
        return toml_document({"labels": labels}, {"instance": [item]})

    def body(text: str):
        compiled = ConstraintSet.from_text(text, "fuzz.toml").compile(labels)
        compiled.indicators(PROBE + [EVIL])

    fuzz("constraint patterns", files(), body, budget)


@st.composite
def jsonl_files(draw) -> bytes:
    """JSON lines whose fields hold values of every JSON type, with now and then a line that
    is not JSON, not an object or not UTF-8."""
    lines = []
    for _ in range(draw(st.integers(0, 4))):
        kind = draw(st.integers(0, 9))
        if kind == 0:
            lines.append(draw(st.sampled_from([b"{", b"[1]", b"null", b"\x00", b"\xff{}", b""])))
            continue
        n = draw(st.integers(0, 3))
        row = {}
        for name in draw(st.lists(st.sampled_from(["tokens", "tags", "pos", "x"]), max_size=4)):
            row[name] = draw(
                st.one_of(
                    st.lists(st.sampled_from(["a", "B-NP", "O", ""]), min_size=n, max_size=n),
                    st.lists(json_values, max_size=3),
                    json_values,
                )
            )
        lines.append(json.dumps(row).encode())
    return b"\n".join(lines) + draw(st.sampled_from([b"\n", b""]))


def test_jsonl_records(scratch, budget):
    fields = st.one_of(st.none(), st.sampled_from(["tokens,tags", "tokens", ",,", "x,tags"]))

    def body(case):
        data, fields, labeled = case
        path = _write(scratch, "rows.jsonl", data)
        for sentence in read_dataset(path, fields, labeled=labeled):
            assert all(isinstance(t, str) for column in sentence.columns for t in column)
            assert sentence.labels is None or all(isinstance(t, str) for t in sentence.labels)

    fuzz("JSON lines records", st.tuples(jsonl_files(), fields, st.booleans()), body, budget)


@st.composite
def config_files(draw) -> str:
    """Training configurations: every key of every table, now and then an unknown one, each
    with a value of some TOML type (or one it takes)."""
    plausible = st.sampled_from(["", "chunk", "auto", "conll", "upos", "crf-l2", "x.txt", 0, 1])
    tables = {}
    for section, keys in SCHEMA.items():
        names = draw(st.lists(st.sampled_from(sorted(keys) + ["nosuch"]), max_size=4, unique=True))
        tables[section] = {k: draw(st.one_of(plausible, toml_values)) for k in names}
    if draw(st.booleans()):
        tables["params"] = draw(st.dictionaries(st.sampled_from(["epochs", "c", "x"]), toml_values))
    if draw(st.integers(0, 5)) == 0:
        tables[draw(st.sampled_from(["extra", "model"]))] = draw(toml_values)
    out = []
    for name, table in tables.items():
        if isinstance(table, dict):
            out.append(f"[{name}]")
            out += [f"{json.dumps(k)} = {toml_value(v)}" for k, v in table.items()]
        else:
            out.insert(0, f"{json.dumps(name)} = {toml_value(table)}")
    return "\n".join(out) + "\n"


def test_config_loader(scratch, budget):
    def body(text: str):
        TrainingConfig.from_file(_write(scratch, "train.toml", text.encode()))

    fuzz("training configuration", config_files(), body, budget)


# --------------------------------------------------------------------------------------------
# sharded tagging and the scikit-learn estimator


@st.composite
def shard_cases(draw):
    """Shard files (hostile bytes, empty, a folder, a dangling link), the patterns that name
    them, an output folder (fresh, existing, a file, the inputs' own), the tag options, and a
    scheduler address typed by hand."""
    seeds = seed_bytes()
    files = draw(st.lists(st.one_of(hostile_bytes(seeds), st.just(b"")), min_size=1, max_size=3))
    extra = draw(st.lists(st.sampled_from(["folder", "dangling", "none"]), max_size=2))
    odd = st.sampled_from(["s0.txt", "nothing*.txt", "d*", "[", "*", "s?.txt", ""])
    # half the cases name the shards plainly, so that their contents reach the tagging
    patterns = draw(
        st.one_of(st.just(["s*.txt"]), st.lists(st.one_of(st.just("s*.txt"), odd), max_size=3))
    )
    out = draw(st.sampled_from(["out", "out", "out/deeper", "s0.txt", ".", "existing"]))
    options = draw(
        st.fixed_dictionaries(
            {},
            optional={
                "fmt": st.sampled_from(["auto", "conll", "conllu", "inline", "text", "raw", "tab"]),
                "label_column": st.one_of(st.none(), st.integers(-3, 5)),
            },
        )
    )
    address = draw(
        st.one_of(
            st.sampled_from(["", "tcp://", "tcp://h", "tcp://h:0", "h:99999", "http://h:8787"]),
            st.text(max_size=20),
        )
    )
    return files, extra, patterns, out, options, address


def test_sharded_tagging(chunk_model, scratch, budget):
    """What ``tagger tag MODEL 'shards/*' --output-dir DIR [--scheduler ADDRESS]`` checks and
    does before and without a cluster: the address, the patterns, the output folder, and each
    shard tagged by the function a Dask worker runs (its bad input returned as one line)."""
    import hashlib
    import shutil

    from tagger.integrations import distributed
    from tagger.integrations.shard_checks import (
        check_output_dir,
        check_scheduler_address,
        expand_inputs,
    )

    tagger = Tagger.load(chunk_model)
    digest = hashlib.sha256(chunk_model.read_bytes()).hexdigest()
    distributed._MODELS[digest] = tagger

    def body(case):
        files, extra, patterns, out, options, address = case
        with contextlib.suppress(TaggerError):
            check_scheduler_address(address)
        root = scratch / "shards"
        shutil.rmtree(root, ignore_errors=True)
        root.mkdir()
        for k, data in enumerate(files):
            _write(root, f"s{k}.txt", data)
        if "folder" in extra:
            (root / "d_folder").mkdir()
        if "dangling" in extra:
            (root / "d_link").symlink_to(root / "missing")
        if out == "existing":
            (root / "existing").mkdir()
        cwd = os.getcwd()
        os.chdir(root)
        try:
            shards = expand_inputs(patterns)
            check_output_dir(out, shards)
            Path(out).mkdir(parents=True, exist_ok=True)
            refused = False
            for shard in shards:
                kwargs = {"format": options.get("fmt", "auto")}
                if "label_column" in options:
                    kwargs["label_column"] = options["label_column"]
                target = str(Path(out) / os.path.basename(shard))
                status, text = distributed._tag_shard(None, digest, shard, target, kwargs)
                assert status in ("ok", "error"), status
                if status == "error":
                    assert "\n" not in text and text.strip(), text
                    refused = True
            return refused
        finally:
            os.chdir(cwd)

    fuzz("sharded tagging", shard_cases(), body, budget, batch=20)


#: a token as the estimator may be given one, well or badly
estimator_tokens = st.one_of(
    st.sampled_from(["The", "cat", "", " ", "B-NP"]),
    st.tuples(st.sampled_from(["The", "cat"]), st.sampled_from(["DT", "NN"])),
    st.lists(st.sampled_from(["The", "NN"]), max_size=3),
    st.dictionaries(st.sampled_from(["word", "pos", "x"]), st.sampled_from(["The", "DT"])),
    st.none(),
    st.integers(-2, 2),
    st.floats(allow_nan=True),
    st.binary(max_size=3),
)
estimator_labels = st.one_of(
    st.sampled_from(["B-NP", "I-NP", "O", ""]), st.integers(-1, 3), st.none(), st.floats()
)


@st.composite
def estimator_cases(draw):
    """X and y as a scikit-learn user may pass them (lists, tuples, numpy arrays, strings, a
    generator's worth of odd values), lengths that agree or not, and the estimator's own
    parameters."""
    n = draw(st.integers(0, 4))
    lengths = [draw(st.integers(0, 4)) for _ in range(n)]
    # half the cases are well formed but for the odd token, so that they reach the training
    # and the tagging
    clean = draw(st.booleans())
    token = st.sampled_from(["The", "cat", "sat"]) if clean else estimator_tokens
    label = st.sampled_from(["B-NP", "I-NP", "O"]) if clean else estimator_labels
    X = [[draw(token) for _ in range(k)] for k in lengths]
    longer = st.sampled_from([0] * 7 + [1])  # now and then a label more than tokens
    y = [[draw(label) for _ in range(k + draw(longer))] for k in lengths]
    if clean and any(X) and draw(st.booleans()):
        row = draw(st.sampled_from([x for x in X if x]))
        row[draw(st.integers(0, len(row) - 1))] = draw(estimator_tokens)
    shapes = ["list", "list", "list", "tuple", "array", "string", "none", "scalar"]
    shape = draw(st.sampled_from(shapes))
    if shape == "tuple":
        X, y = tuple(map(tuple, X)), tuple(map(tuple, y))
    elif shape == "array":
        X = np.array(X, dtype=object) if X else np.zeros((0, 2))
    elif shape == "string":
        X = "The cat sat"
    elif shape == "none":
        y = None
    elif shape == "scalar":
        X = 3
    own = (
        {}
        if draw(st.integers(0, 2))
        else draw(
            st.fixed_dictionaries(
                {},
                optional={
                    "seed": st.one_of(st.integers(-2, 2**33), st.floats(), st.text(max_size=3)),
                    "select": st.one_of(st.booleans(), st.integers(0, 2), st.none()),
                    "max_seconds": st.one_of(st.floats(), st.integers(-1, 2)),
                    "features": st.sampled_from([None, "chunk", "pos", "nosuch", ""]),
                    "learner": st.sampled_from([None, "perceptron", "nosuch", ""]),
                    "epochs": st.one_of(st.integers(-1, 2), st.floats(), st.text(max_size=2)),
                },
            )
        )
    )
    X_new = [
        [draw(estimator_tokens) for _ in range(draw(st.integers(0, 3)))]
        for _ in range(draw(st.integers(0, 2)))
    ]
    return X, y, own, X_new


def test_estimator_inputs(budget):
    """SparseTaggerEstimator.fit, predict and score on what a scikit-learn user may pass: a
    fit either trains or refuses with one of the project's errors (whose message is one line),
    and a fitted estimator tags and scores new input the same way."""
    pytest.importorskip("sklearn")
    from tagger.sklearn import SparseTaggerEstimator

    def body(case):
        X, y, own, X_new = case
        params = {"learner": "perceptron", "epochs": 1, "select": False, **own}
        est = SparseTaggerEstimator(**params)
        try:
            est.fit(X, y)
        except TaggerError as exc:
            assert "\n" not in str(exc), str(exc)
            return True
        for call in (lambda: est.predict(X_new), lambda: est.score(X, y)):
            try:
                call()
            except TaggerError as exc:
                assert "\n" not in str(exc), str(exc)
        return False

    fuzz("estimator inputs", estimator_cases(), body, budget, batch=20)
