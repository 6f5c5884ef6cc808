"""Hypothesis strategies for hostile input: random lines built from the tokens our formats care
about, byte-level mutations of real files, TOML documents with values of every type, and
structure-aware edits of model files (header fields and array contents, with the checksums
recomputed so that the edit reaches the loader's semantic checks instead of the sha256 check).
"""

from __future__ import annotations

import hashlib
import io
import json
import zipfile
from pathlib import Path

import numpy as np
from hypothesis import strategies as st

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = ROOT / "corpora"

#: fragments every reader treats specially somewhere: separators, line ends of every kind
#: (str.splitlines splits on more than \n), markers of the formats, broken UTF-8, a BOM
FRAGMENTS = [
    b" ",
    b"  ",
    b"\t",
    b"\n",
    b"\n\n",
    b"\r",
    b"\r\n",
    b"\x00",
    b"\x0b",
    b"\x0c",
    b"\x1c",
    b"\x1e",
    b"\xc2\x85",
    "\u2028".encode(),
    "\u00a0".encode(),
    b"\xef\xbb\xbf",
    b"\xff",
    b"\xc3",
    b"\xed\xa0\x80",
    b"-DOCSTART- -X- O",
    b"B-NP",
    b"I-NP",
    b"B-",
    b"I-",
    b"O",
    b"#",
    b"# text = a b",
    b"# sent_id = 1",
    b"1-2",
    b"1.1",
    b"_",
    b"0",
    b"-1",
    b"99999999999999999999",
    b"<author>",
    b"</author>",
    b"<title>",
    b"</title>",
    b"<>",
    b"</>",
    b"<NEWREFERENCE>",
    b"NN",
    b"PUNCT",
    b"'",
    b'"',
    b"\\",
    b"=",
    b"[",
    b"]",
    "é".encode(),
    "日本".encode(),
    b"x" * 300,
]

#: label-like and word-like strings for generated documents
WORDS = [
    "the",
    "The",
    "cat",
    ".",
    ",",
    "(",
    ")",
    "1999",
    "pp",
    "Vol.",
    "B-NP",
    "I-NP",
    "O",
    "B-VP",
    "NN",
    "DT",
    "_",
    "#",
    "-",
    "é",
    "<author>",
    "</author>",
    "x" * 50,
]

#: the format-specific seed files, cut to their first lines so that mutations stay small
SEED_FILES = ["sample_chunk.txt", "sample_pos.conllu", "sample_citations.txt", "sample_text.txt"]


def seed_bytes(max_lines: int = 40) -> list[bytes]:
    seeds = []
    for name in SEED_FILES:
        lines = (SAMPLES / name).read_bytes().splitlines(keepends=True)
        seeds.append(b"".join(lines[:max_lines]))
    # a tab-separated and a split-file seed, derived from the chunk sample
    chunk = seeds[0].decode()
    seeds.append(chunk.replace(" ", "\t").encode())
    seeds.append(
        b"# split\nref_index_0based\tline_in_tagged_references_1based\tsplit\n"
        b"0\t1\ttrain\n1\t2\tdev\n2\t3\ttest\n"
    )
    return seeds


@st.composite
def generated_text(draw) -> bytes:
    """A document of lines, each of tokens from WORDS, FRAGMENTS or arbitrary text, joined by
    one of the separators the column formats accept (or do not)."""
    lines = []
    for _ in range(draw(st.integers(0, 12))):
        n = draw(st.integers(0, 5))
        sep = draw(st.sampled_from([" ", "\t", "  ", " \t"]))
        tokens = draw(
            st.lists(
                st.one_of(
                    st.sampled_from(WORDS),
                    st.sampled_from(FRAGMENTS).map(lambda b: b.decode("utf-8", "replace")),
                    st.text(max_size=6),
                ),
                min_size=n,
                max_size=n,
            )
        )
        lines.append(sep.join(tokens))
    end = draw(st.sampled_from(["\n", "\n", "\r\n", ""]))
    return "\n".join(lines).encode("utf-8", "surrogatepass") + end.encode()


@st.composite
def mutated(draw, seed: bytes, max_edits: int = 8) -> bytes:
    """``seed`` after up to ``max_edits`` edits: delete, insert a fragment or random bytes,
    duplicate, overwrite a byte, truncate."""
    data = bytearray(seed)
    for _ in range(draw(st.integers(1, max_edits))):
        kind = draw(
            st.sampled_from(["delete", "insert", "random", "duplicate", "byte", "truncate"])
        )
        pos = draw(st.integers(0, max(len(data), 1) - 1)) if data else 0
        if kind == "delete":
            del data[pos : pos + draw(st.integers(1, 40))]
        elif kind == "insert":
            data[pos:pos] = draw(st.sampled_from(FRAGMENTS))
        elif kind == "random":
            data[pos:pos] = draw(st.binary(max_size=8))
        elif kind == "duplicate":
            data[pos:pos] = data[pos : pos + draw(st.integers(1, 80))]
        elif kind == "byte" and data:
            data[pos] = draw(st.integers(0, 255))
        elif kind == "truncate":
            del data[pos:]
    return bytes(data)


def hostile_bytes(seeds: list[bytes]) -> st.SearchStrategy[bytes]:
    """Generated documents, mutated seeds and plain random bytes."""
    return st.one_of(
        generated_text(), st.sampled_from(seeds).flatmap(mutated), st.binary(max_size=200)
    )


# --------------------------------------------------------------------------------------------
# TOML


def toml_value(value) -> str:
    """TOML text of a value (a small writer: tomllib reads only)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        if isinstance(value, float) and value != value:
            return "nan"
        if value in (float("inf"), float("-inf")):
            return "inf" if value > 0 else "-inf"
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value)  # a JSON string is a TOML basic string, but for escapes
    if isinstance(value, list):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{json.dumps(k)} = {toml_value(v)}" for k, v in value.items()) + "}"
    raise TypeError(value)


def toml_document(top: dict, tables: dict[str, list[dict]]) -> str:
    out = [f"{json.dumps(k)} = {toml_value(v)}" for k, v in top.items()]
    for name, items in tables.items():
        for item in items:
            out.append(f"[[{name}]]")
            out += [f"{json.dumps(k)} = {toml_value(v)}" for k, v in item.items()]
    return "\n".join(out) + "\n"


def _json_safe(text: str) -> bool:
    # TOML basic strings cannot hold lone surrogates; json.dumps would escape them as \udxxx
    return not any(0xD800 <= ord(c) <= 0xDFFF for c in text)


#: scalar and nested values of every TOML type
toml_scalars = st.one_of(
    st.booleans(),
    st.integers(-(10**20), 10**20),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=12).filter(_json_safe),
)
toml_values = st.recursive(
    toml_scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.dictionaries(st.sampled_from(["a", "labels", "rule"]), inner, max_size=3),
    ),
    max_leaves=8,
)


# --------------------------------------------------------------------------------------------
# model files


def _rezip(members: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in members.items():
            zf.writestr(name, data)
    return buf.getvalue()


def _npy(arr: np.ndarray) -> bytes:
    buf = io.BytesIO()
    np.save(buf, arr, allow_pickle=False)
    return buf.getvalue()


def _json_paths(value, path=()):
    yield path
    if isinstance(value, dict):
        for k, v in value.items():
            yield from _json_paths(v, path + (k,))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from _json_paths(v, path + (i,))


json_values = st.recursive(
    st.one_of(
        st.none(),
        st.booleans(),
        st.integers(-(2**70), 2**70),
        st.floats(allow_nan=False),
        st.text(max_size=8),
    ),
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=6,
)


@st.composite
def edited_model(draw, model: bytes) -> bytes:
    """A model file with header fields replaced by values of other types, or arrays whose
    values, dtype or shape were changed (sha256 recomputed), or members removed."""
    with zipfile.ZipFile(io.BytesIO(model)) as zf:
        members = {name: zf.read(name) for name in zf.namelist()}
    header = json.loads(members["tagger.json"])
    for _ in range(draw(st.integers(1, 3))):
        kind = draw(st.sampled_from(["field", "field", "array", "array", "drop"]))
        if kind == "field":
            paths = [p for p in _json_paths(header) if p]
            path = draw(st.sampled_from(paths))
            parent = header
            for key in path[:-1]:
                parent = parent[key]
            if draw(st.booleans()) or not isinstance(parent, dict):
                parent[path[-1]] = draw(json_values)
            else:
                del parent[path[-1]]
        elif kind == "array":
            names = sorted(header["arrays"]) if isinstance(header.get("arrays"), dict) else []
            entries = [
                n
                for n in names
                if isinstance(header["arrays"][n], dict)
                and isinstance(header["arrays"][n].get("member"), str)
                and header["arrays"][n]["member"] in members
            ]
            if not entries:
                continue
            name = draw(st.sampled_from(entries))
            entry = header["arrays"][name]
            arr = np.load(io.BytesIO(members[entry["member"]]), allow_pickle=False)
            arr = _edit_array(draw, arr)
            members[entry["member"]] = _npy(arr)
            entry.update(
                dtype=arr.dtype.str,
                shape=list(arr.shape),
                sha256=hashlib.sha256(np.ascontiguousarray(arr).tobytes()).hexdigest(),
            )
        else:
            victim = draw(st.sampled_from(sorted(members)))
            if victim != "tagger.json":
                del members[victim]
    return _with_header(members, header)


def _with_header(members: dict[str, bytes], header) -> bytes:
    """The members with ``header`` as tagger.json and its checksum recomputed, so that an
    edit reaches the checks after the checksum's."""
    members["tagger.json"] = json.dumps(header).encode()
    if "tagger.json.sha256" in members:
        members["tagger.json.sha256"] = hashlib.sha256(members["tagger.json"]).hexdigest().encode()
    return _rezip(members)


#: pieces of regular expressions: what RE2 refuses (backreferences, lookaround), what makes a
#: backtracking matcher explode, classes, repetition at RE2's limits, broken syntax
REGEX_PIECES = [
    "(a+)+",
    "(a|a)*",
    "(.*)*",
    "^",
    "$",
    "\\1",
    "(?=a)",
    "(?!a)",
    "(?<=a)",
    "(?P<n>a)",
    "(?P=n)",
    "[a-z]",
    "[^0-9]",
    "\\d",
    "\\w+",
    "\\b",
    "\\p{L}",
    "\\pN",
    "{1000}",
    "{1001}",
    "{2,1}",
    "a{0,1000}",
    "(",
    ")",
    "[",
    "*",
    "?",
    "+",
    "|",
    "(?i)",
    "(?s)",
    "\\",
    "\\x{10FFFF}",
    "é",
    "日本",
    ".",
    "a",
]


@st.composite
def regexes(draw) -> str:
    """A pattern made of :data:`REGEX_PIECES` and random text."""
    parts = draw(
        st.lists(
            st.one_of(st.sampled_from(REGEX_PIECES), st.text(max_size=3).filter(_json_safe)),
            min_size=1,
            max_size=6,
        )
    )
    return "".join(parts)


def _has_spec(meta) -> bool:
    """Whether the header still has a feature specification to add a view to."""
    try:
        return isinstance(meta["features"]["spec"]["featurizer"], dict)
    except (KeyError, TypeError):
        return False


@st.composite
def crafted_header(draw, model: bytes) -> bytes:
    """A model whose header declares other sizes (shapes of every magnitude, dtypes), carries
    regex views, or has fields of another type, its checksum recomputed each time."""
    with zipfile.ZipFile(io.BytesIO(model)) as zf:
        members = {name: zf.read(name) for name in zf.namelist()}
    header = json.loads(members["tagger.json"])
    for _ in range(draw(st.integers(1, 3))):
        kind = draw(st.sampled_from(["shape", "dtype", "regex", "field", "labels"]))
        # an earlier edit of this draw may have replaced what a later one edits: it is skipped
        entries = [e for e in header["arrays"].values() if isinstance(e, dict)]
        meta = header.get("meta")
        if kind == "shape" and entries:
            draw(st.sampled_from(entries))["shape"] = draw(
                st.lists(
                    st.one_of(
                        st.integers(0, 10),
                        st.sampled_from([2**31, 2**40, 150_000_000, 2**63 - 1, 2**64]),
                        st.integers(-1, 10**30),
                    ),
                    max_size=3,
                )
            )
        elif kind == "dtype" and entries:
            draw(st.sampled_from(entries))["dtype"] = draw(
                st.one_of(
                    st.sampled_from(["<f8", "|O", "<U99999999", "|V0", "<i4", "S0", "x", ""]),
                    json_values,
                )
            )
        elif kind == "regex" and _has_spec(meta):
            featurizer = meta["features"]["spec"]["featurizer"]
            views = meta["features"]["spec"].setdefault("views", {})
            columns = featurizer.get("columns")
            view = {"function": "regex", "pattern": draw(regexes())}
            if isinstance(columns, list) and columns:
                view["column"] = columns[0]
            if draw(st.booleans()):
                view["ignore_case"] = draw(json_values)
            if isinstance(views, dict) and isinstance(featurizer.get("templates"), list):
                views[draw(st.sampled_from(["r", "lower", "word"]))] = view
                featurizer["templates"].append(draw(st.sampled_from(["r[0]", "r[-1]"])))
        elif kind == "labels" and isinstance(meta, dict):
            meta["labels"] = draw(st.one_of(st.lists(st.text(max_size=3), max_size=5), json_values))
        elif isinstance(meta, dict):
            paths = [p for p in _json_paths(meta) if p]
            if not paths:
                continue
            path = draw(st.sampled_from(paths))
            parent = meta
            for key in path[:-1]:
                parent = parent[key]
            parent[path[-1]] = draw(json_values)
    return _with_header(members, header)


def _edit_array(draw, arr: np.ndarray) -> np.ndarray:
    kind = draw(st.sampled_from(["values", "values", "shrink", "grow", "dtype"]))
    flat = arr.reshape(-1).copy()
    if kind == "values" and flat.size:
        for _ in range(draw(st.integers(1, 4))):
            i = draw(st.integers(0, flat.size - 1))
            if flat.dtype.kind in "iu":
                info = np.iinfo(flat.dtype)
                flat[i] = draw(
                    st.sampled_from([info.min, info.max, -1, 0, 1, 2**31 - 1])
                    if info.min < 0
                    else st.sampled_from([0, 1, info.max])
                )
            elif flat.dtype.kind == "f":
                flat[i] = draw(st.sampled_from([np.nan, np.inf, -np.inf, 1e308, -0.0]))
            elif flat.dtype.kind in "SUV" or flat.dtype == np.uint8:
                flat[i] = draw(st.integers(0, 255)) if flat.dtype == np.uint8 else flat[i]
        return flat.reshape(arr.shape)
    if kind == "shrink":
        return flat[: draw(st.integers(0, max(flat.size - 1, 0)))]
    if kind == "grow":
        return np.concatenate([flat, flat[: draw(st.integers(1, 5))]])
    target = draw(st.sampled_from(["<i4", "<i8", "<f4", "<f8", "<u1"]))
    try:
        with np.errstate(all="ignore"):
            return flat.astype(target)
    except (TypeError, ValueError):
        return flat
