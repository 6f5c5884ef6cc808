"""Model files: round trips, and every way a file can be wrong ends in a ModelFileError."""

from __future__ import annotations

import errno
import hashlib
import io
import json
import os
import sys
import types
import zipfile
from pathlib import Path

import numpy as np
import pytest

import tagger
from tagger.errors import ModelFileError
from tagger.model import files as serialize
from tagger.model.files import (
    FORMAT_VERSION,
    HEADER_NAME,
    HEADER_SHA256_NAME,
    load_model_file,
    pack_strings,
    save_model_file,
    unpack_strings,
)

UNICODE_STRINGS = [
    "",
    "a",
    "",
    "Grüße",
    "naïve café",
    "日本語のテキスト",
    "emoji 🙂👍🏽",
    "combining e\u0301",
    "nul\x00inside",
    "tab\tand\nnewline",
    "lone surrogate \ud800",
    "x" * 1000,
    "",
]


def sample_meta() -> dict:
    return {
        "labels": ["B-NP", "I-NP", "O"],
        "learner": {"name": "m3n_subgradient", "C": 0.5, "epochs": 10, "averaged": True},
        "features": {"templates": [["w", -1], ["w", 0]], "min_count": None},
        "dev": {"f1": 93.25, "history": [[1, 90.0], [2, 92.5]]},
        "note": "unicode ✓ €",
    }


def sample_arrays() -> dict[str, np.ndarray]:
    rng = np.random.default_rng(0)
    data, offsets = pack_strings(UNICODE_STRINGS)
    base = rng.standard_normal((6, 8))
    return {
        "weights": rng.standard_normal((50, 7)),
        "weights32": rng.standard_normal(33).astype(np.float32),
        "indptr": np.arange(0, 120, 3, dtype=np.int64),
        "labels": rng.integers(-5, 5, size=17).astype(np.int32),
        "bytes": rng.integers(0, 256, size=11).astype(np.uint8),
        "int8": np.array([-128, 0, 127], dtype=np.int8),
        "mask": rng.random(10) < 0.5,
        "complex": np.array([1 + 2j, -3.5j]),
        "big_endian": np.arange(5, dtype=">i4"),
        "fortran": np.asfortranarray(base),
        "strided": base[::2, 1::3],
        "scalar": np.array(3.25),
        "fixed_unicode": np.array(["B-NP", "I-VP", "Ö"]),
        "fixed_bytes": np.array([b"ab", b"", b"xyz"]),
        "record": np.array([(1, 2.5), (3, -1.0)], dtype=[("id", "<i4"), ("score", "<f8")]),
        "empty": np.zeros(0),
        "empty_2d": np.zeros((3, 0), dtype=np.int32),
        "empty_rows": np.zeros((0, 4), dtype=np.int64),
        "vocab/data": data,
        "vocab/offsets": offsets,
    }


def assert_same_arrays(got: dict, expected: dict) -> None:
    assert list(got) == list(expected)
    for name, exp in expected.items():
        exp = np.asarray(exp)
        assert got[name].dtype == exp.dtype, name
        assert got[name].shape == exp.shape, name
        assert got[name].tobytes() == exp.tobytes(), name


def one_line_message(excinfo: pytest.ExceptionInfo) -> str:
    message = str(excinfo.value)
    assert "\n" not in message and message.strip() == message and message
    return message


@pytest.fixture
def model(tmp_path: Path) -> Path:
    path = tmp_path / "model.tagger"
    save_model_file(path, sample_meta(), sample_arrays())
    return path


def rewrite(
    src: Path, dst: Path, *, replace=None, drop=(), header=None, extra=None, resum=True
) -> None:
    """Copy the zip ``src`` to ``dst`` member by member, replacing, dropping or adding members
    (``header`` edits the parsed tagger.json). The result is a valid zip with correct CRCs, and
    (unless ``resum`` is false) a header checksum that matches the header it holds, so that
    the edit reaches the checks after it."""
    replace = dict(replace or {})
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dst, "w", zipfile.ZIP_DEFLATED) as zout:
        header_bytes = b""
        for info in zin.infolist():
            if info.filename in drop:
                continue
            payload = replace.pop(info.filename, None)
            if payload is None:
                payload = zin.read(info.filename)
                if info.filename == HEADER_NAME and header is not None:
                    parsed = json.loads(payload)
                    header(parsed)
                    payload = json.dumps(parsed).encode()
            if info.filename == HEADER_NAME:
                header_bytes = payload
            if info.filename == HEADER_SHA256_NAME and resum:
                payload = hashlib.sha256(header_bytes).hexdigest().encode()
            zout.writestr(info.filename, payload)
        for name, payload in {**replace, **(extra or {})}.items():
            zout.writestr(name, payload)


def npy_bytes(arr: np.ndarray, allow_pickle: bool = False) -> bytes:
    buf = io.BytesIO()
    np.lib.format.write_array(buf, arr, allow_pickle=allow_pickle)
    return buf.getvalue()


def member_data_span(path: Path, member: str) -> tuple[int, int]:
    """Byte range of ``member``'s compressed data inside the zip file."""
    with zipfile.ZipFile(path) as zf:
        info = zf.getinfo(member)
    with open(path, "rb") as fh:
        fh.seek(info.header_offset)
        local = fh.read(30)
    name_len = int.from_bytes(local[26:28], "little")
    extra_len = int.from_bytes(local[28:30], "little")
    start = info.header_offset + 30 + name_len + extra_len
    return start, start + info.compress_size


# ---------------------------------------------------------------------------------------------
# round trips


def test_round_trip(tmp_path: Path) -> None:
    path = tmp_path / "model.tagger"
    meta, arrays = sample_meta(), sample_arrays()
    written = save_model_file(path, meta, arrays)
    assert written == path.stat().st_size > 0

    got_meta, got_arrays = load_model_file(path)
    assert got_meta == meta
    assert_same_arrays(got_arrays, arrays)
    assert unpack_strings(got_arrays["vocab/data"], got_arrays["vocab/offsets"]) == UNICODE_STRINGS


def test_header_layout(model: Path) -> None:
    with zipfile.ZipFile(model) as zf:
        names = zf.namelist()
        header = json.loads(zf.read(HEADER_NAME))
        assert all(info.compress_type == zipfile.ZIP_DEFLATED for info in zf.infolist())
    assert names[0] == HEADER_NAME
    assert header["format"] == "tagger-model"
    assert header["format_version"] == FORMAT_VERSION == 1
    assert header["tagger_version"] == tagger.__version__
    assert header["meta"] == sample_meta()
    entry = header["arrays"]["weights"]
    assert entry["member"] == "arrays/weights.npy" and entry["member"] in names
    assert entry["dtype"] == "<f8" and entry["shape"] == [50, 7]
    import hashlib

    assert entry["sha256"] == hashlib.sha256(sample_arrays()["weights"].tobytes()).hexdigest()
    # F-ordered and strided arrays are hashed in C order, like tobytes()
    strided = sample_arrays()["strided"]
    assert header["arrays"]["strided"]["sha256"] == hashlib.sha256(strided.tobytes()).hexdigest()


def test_meta_numpy_float64_is_a_float(tmp_path: Path) -> None:
    path = tmp_path / "m.tagger"
    save_model_file(path, {"C": np.float64(0.5)}, {})
    meta, _ = load_model_file(path)
    assert meta == {"C": 0.5} and type(meta["C"]) is float


def test_meta_tuples_come_back_as_lists(tmp_path: Path) -> None:
    path = tmp_path / "m.tagger"
    save_model_file(path, {"shape": (2, 3), "nested": {"t": ((1,), [])}}, {})
    meta, arrays = load_model_file(path)
    assert meta == {"shape": [2, 3], "nested": {"t": [[1], []]}}
    assert arrays == {}


def test_same_input_gives_same_bytes(tmp_path: Path) -> None:
    a, b = tmp_path / "a.tagger", tmp_path / "b.tagger"
    save_model_file(a, sample_meta(), sample_arrays())
    save_model_file(b, sample_meta(), sample_arrays())
    assert a.read_bytes() == b.read_bytes()


def test_path_may_be_str(tmp_path: Path) -> None:
    path = str(tmp_path / "m.tagger")
    save_model_file(path, {}, {"x": np.arange(3)})
    assert load_model_file(path)[1]["x"].tolist() == [0, 1, 2]


@pytest.mark.parametrize(
    "strings",
    [[], [""], ["", "", ""], ["a"], UNICODE_STRINGS, [chr(c) for c in range(0, 0x3000, 7)]],
    ids=["none", "one-empty", "all-empty", "one", "unicode", "many-code-points"],
)
def test_pack_unpack_strings(strings: list[str]) -> None:
    data, offsets = pack_strings(strings)
    assert data.dtype == np.uint8 and data.ndim == 1
    assert offsets.dtype == np.int64 and offsets.shape == (len(strings) + 1,)
    assert offsets[0] == 0 and offsets[-1] == data.size
    assert data.nbytes == sum(len(s.encode("utf-8", "surrogatepass")) for s in strings)
    assert unpack_strings(data, offsets) == strings


def test_pack_strings_accepts_any_iterable_and_rejects_non_strings() -> None:
    data, offsets = pack_strings(s for s in ["x", "yz"])
    assert unpack_strings(data, offsets) == ["x", "yz"]
    with pytest.raises(TypeError, match="item 1 is bytes"):
        pack_strings(["a", b"b"])


@pytest.mark.parametrize(
    "data, offsets",
    [
        (np.frombuffer(b"abc", np.uint8), np.array([0, 2])),  # does not reach the end
        (np.frombuffer(b"abc", np.uint8), np.array([1, 3])),  # does not start at 0
        (np.frombuffer(b"abc", np.uint8), np.array([0, 2, 1, 3])),  # decreasing
        (np.frombuffer(b"abc", np.uint8), np.array([], dtype=np.int64)),
        (np.frombuffer(b"abc", np.uint8), np.array([0.0, 3.0])),
        (np.zeros(3, np.int32), np.array([0, 3])),
    ],
)
def test_unpack_strings_rejects_inconsistent_arrays(data, offsets) -> None:
    with pytest.raises(ValueError):
        unpack_strings(data, offsets)


# ---------------------------------------------------------------------------------------------
# refusing to save what cannot be loaded


@pytest.mark.parametrize(
    "arrays",
    [
        {"obj": np.array(["a", None], dtype=object)},
        {"ok": np.arange(3), "obj": np.array([{"a": 1}], dtype=object)},
        {"rec": np.zeros(2, dtype=[("a", "<i4"), ("b", object)])},
        {"ragged": np.array([[1, 2], "x"], dtype=object)},
    ],
    ids=["strings-and-none", "second-of-two", "record-with-object-field", "ragged"],
)
def test_save_refuses_object_arrays(tmp_path: Path, arrays) -> None:
    with pytest.raises(ValueError, match="pickle"):
        save_model_file(tmp_path / "m.tagger", {}, arrays)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    "meta, where",
    [
        ({"C": np.float32(0.5)}, "meta['C']"),
        ({"epochs": [np.int64(3)]}, "meta['epochs'][0]"),
        ({"labels": {1: "B-NP"}}, "meta['labels']"),
        ({"tags": {"a", "b"}}, "meta['tags']"),
        ({"deep": [{"x": Path("p")}]}, "meta['deep'][0]['x']"),
        (["not", "a", "dict"], "dict"),
    ],
)
def test_save_refuses_meta_that_is_not_json(tmp_path: Path, meta, where: str) -> None:
    with pytest.raises(ValueError) as excinfo:
        save_model_file(tmp_path / "m.tagger", meta, {})
    assert where in str(excinfo.value)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("name", ["", "../escape", "/abs", "a//b", ".hidden", "sp ace", "a\\b", 3])
def test_save_refuses_bad_array_names(tmp_path: Path, name) -> None:
    with pytest.raises(ValueError, match="array name"):
        save_model_file(tmp_path / "m.tagger", {}, {name: np.arange(2)})
    assert list(tmp_path.iterdir()) == []


def test_save_into_missing_directory_is_a_model_file_error(tmp_path: Path) -> None:
    with pytest.raises(ModelFileError, match="cannot write model file") as excinfo:
        save_model_file(tmp_path / "no" / "such" / "m.tagger", {}, {})
    one_line_message(excinfo)


# ---------------------------------------------------------------------------------------------
# files that are missing, foreign or damaged


def test_missing_file(tmp_path: Path) -> None:
    path = tmp_path / "nope.tagger"
    with pytest.raises(ModelFileError, match="does not exist") as excinfo:
        load_model_file(path)
    assert str(path) in one_line_message(excinfo)


def test_directory_instead_of_file(tmp_path: Path) -> None:
    with pytest.raises(ModelFileError, match="is a directory") as excinfo:
        load_model_file(tmp_path)
    one_line_message(excinfo)


def test_empty_file(tmp_path: Path) -> None:
    path = tmp_path / "empty.tagger"
    path.write_bytes(b"")
    with pytest.raises(ModelFileError, match="empty") as excinfo:
        load_model_file(path)
    one_line_message(excinfo)


@pytest.mark.parametrize(
    "content",
    [b"B-NP\tI-NP\n", b"\x80\x04\x95pickle", b"\x93NUMPY\x01\x00", bytes(range(256)) * 4],
    ids=["text", "pickle", "npy", "binary"],
)
def test_not_a_zip(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "other.tagger"
    path.write_bytes(content)
    with pytest.raises(ModelFileError, match="not a tagger model file .it is not a zip") as excinfo:
        load_model_file(path)
    assert str(path) in one_line_message(excinfo)


def test_zip_without_header(tmp_path: Path) -> None:
    path = tmp_path / "other.zip"
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr("readme.txt", "hello")
        zf.writestr("arrays/weights.npy", npy_bytes(np.arange(3.0)))
    with pytest.raises(ModelFileError, match="not a tagger model file.*no tagger.json") as excinfo:
        load_model_file(path)
    one_line_message(excinfo)


@pytest.mark.parametrize(
    "header",
    [{"format": "spacy-model", "format_version": 1}, {"format_version": 1}, ["tagger-model"]],
    ids=["other-format", "no-format", "not-an-object"],
)
def test_header_of_another_format(tmp_path: Path, model: Path, header) -> None:
    bad = tmp_path / "bad.tagger"
    rewrite(model, bad, replace={HEADER_NAME: json.dumps(header).encode()})
    with pytest.raises(ModelFileError, match="is not a tagger model file") as excinfo:
        load_model_file(bad)
    one_line_message(excinfo)


@pytest.mark.parametrize("version", [7, 0, FORMAT_VERSION + 1])
def test_other_format_version(tmp_path: Path, model: Path, version: int) -> None:
    old = tmp_path / "old.tagger"

    def edit(header):
        header["format_version"] = version
        header["tagger_version"] = "9.9.9"
        # a newer layout may look nothing like this one: the version must be checked first
        header["arrays"] = "something new"

    rewrite(model, old, header=edit)
    with pytest.raises(ModelFileError) as excinfo:
        load_model_file(old)
    message = one_line_message(excinfo)
    assert message == (
        f"{old} was written with model format version {version} (by tagger 9.9.9); this tagger "
        f"({tagger.__version__}) reads version {FORMAT_VERSION}. Retrain the model or use a "
        f"matching tagger version."
    )


@pytest.mark.parametrize("version", ["1", 1.0, None, True])
def test_format_version_that_is_not_an_integer(tmp_path: Path, model: Path, version) -> None:
    bad = tmp_path / "bad.tagger"
    rewrite(model, bad, header=lambda h: h.__setitem__("format_version", version))
    with pytest.raises(ModelFileError, match="damaged.*format_version"):
        load_model_file(bad)


@pytest.mark.parametrize(
    "keep",
    [0.02, 0.25, 0.5, 0.75, 0.98, -1, -21, -22, -23],
    ids=lambda k: f"keep{k}",
)
def test_truncated_file(tmp_path: Path, model: Path, keep: float) -> None:
    content = model.read_bytes()
    n = int(len(content) * keep) if isinstance(keep, float) else len(content) + keep
    assert 0 < n < len(content)
    model.write_bytes(content[:n])
    with pytest.raises(ModelFileError, match="is damaged") as excinfo:
        load_model_file(model)
    assert str(model) in one_line_message(excinfo)


def test_flipped_byte_in_the_middle_of_the_file(tmp_path: Path) -> None:
    path = tmp_path / "m.tagger"
    rng = np.random.default_rng(1)
    save_model_file(path, {"k": 1}, {"w": rng.standard_normal(20_000)})
    content = bytearray(path.read_bytes())
    start, end = member_data_span(path, "arrays/w.npy")
    middle = len(content) // 2
    assert start < middle < end  # the middle of the file is array data
    content[middle] ^= 0x01
    path.write_bytes(bytes(content))
    with pytest.raises(ModelFileError, match="is damaged") as excinfo:
        load_model_file(path)
    one_line_message(excinfo)


@pytest.mark.parametrize("member", ["tagger.json", "arrays/weights.npy", "arrays/vocab/data.npy"])
def test_flipped_byte_in_the_middle_of_a_member(tmp_path: Path, model: Path, member: str) -> None:
    content = bytearray(model.read_bytes())
    start, end = member_data_span(model, member)
    content[(start + end) // 2] ^= 0x10
    model.write_bytes(bytes(content))
    with pytest.raises(ModelFileError, match="is damaged") as excinfo:
        load_model_file(model)
    one_line_message(excinfo)


def test_every_single_byte_corruption_is_caught_or_harmless(tmp_path: Path) -> None:
    """Flip each byte of a small model file in turn: loading must either raise ModelFileError
    or return exactly the original content (some zip fields, such as timestamps, are unchecked)."""
    path = tmp_path / "m.tagger"
    meta = {"labels": ["B", "I", "O"], "C": 1.5}
    arrays = {
        "w": np.arange(12, dtype=np.float64).reshape(3, 4),
        "ids": np.arange(5, dtype=np.int32),
    }
    save_model_file(path, meta, arrays)
    original = path.read_bytes()
    detected = 0
    for i in range(len(original)):
        corrupt = bytearray(original)
        corrupt[i] ^= 0xFF if i % 2 else 0x01  # all bits, or the lowest one
        path.write_bytes(bytes(corrupt))
        try:
            got_meta, got_arrays = load_model_file(path)
        except ModelFileError as e:
            assert "\n" not in str(e)
            detected += 1
            continue
        # Undetected flips may only hit fields zipfile ignores (local header copies, timestamps).
        assert got_meta == meta, i
        assert_same_arrays(got_arrays, arrays)
    assert detected > len(original) // 2  # most flips must be noticed, not merely survived


def test_invalid_json_header(tmp_path: Path, model: Path) -> None:
    bad = tmp_path / "bad.tagger"
    rewrite(model, bad, replace={HEADER_NAME: b'{"format": "tagger-model", "format_version": 1,'})
    with pytest.raises(ModelFileError, match="is damaged.*tagger.json") as excinfo:
        load_model_file(bad)
    one_line_message(excinfo)


def test_invalid_manifest_entry(tmp_path: Path, model: Path) -> None:
    bad = tmp_path / "bad.tagger"
    rewrite(model, bad, header=lambda h: h["arrays"]["weights"].__setitem__("shape", [-1, 7]))
    with pytest.raises(ModelFileError, match="invalid manifest entry for array 'weights'"):
        load_model_file(bad)


def test_missing_array(tmp_path: Path, model: Path) -> None:
    bad = tmp_path / "bad.tagger"
    rewrite(model, bad, drop={"arrays/indptr.npy"})
    with pytest.raises(ModelFileError, match="is damaged.*'indptr'.*missing") as excinfo:
        load_model_file(bad)
    one_line_message(excinfo)


def test_sha256_mismatch(tmp_path: Path, model: Path) -> None:
    """A member whose zip CRC is fine but whose content is not what was saved."""
    bad = tmp_path / "bad.tagger"
    weights = sample_arrays()["weights"].copy()
    weights[10, 3] += 1e-9
    rewrite(model, bad, replace={"arrays/weights.npy": npy_bytes(weights)})
    with pytest.raises(ModelFileError, match="is damaged.*'weights'.*sha256") as excinfo:
        load_model_file(bad)
    one_line_message(excinfo)


@pytest.mark.parametrize(
    "replacement, what",
    [
        (np.zeros((7, 50)), "shape"),
        (np.zeros(350), "shape"),
        (np.zeros((50, 7), dtype=np.float32), "dtype"),
        (np.zeros((50, 7), dtype=">f8"), "dtype"),
    ],
)
def test_array_that_does_not_match_the_manifest(tmp_path: Path, model: Path, replacement, what):
    bad = tmp_path / "bad.tagger"
    rewrite(model, bad, replace={"arrays/weights.npy": npy_bytes(replacement)})
    with pytest.raises(ModelFileError, match=f"is damaged.*'weights' has {what}") as excinfo:
        load_model_file(bad)
    one_line_message(excinfo)


def test_manifest_shape_edited(tmp_path: Path, model: Path) -> None:
    bad = tmp_path / "bad.tagger"
    rewrite(model, bad, header=lambda h: h["arrays"]["weights"].__setitem__("shape", [7, 50]))
    with pytest.raises(ModelFileError, match="'weights' has shape"):
        load_model_file(bad)


def test_npy_header_is_checked_before_allocating(tmp_path: Path, model: Path) -> None:
    """A damaged .npy header claiming an enormous shape is refused from the manifest,
    not by trying to allocate the array."""
    buf = io.BytesIO()
    header = {"descr": "<f8", "fortran_order": False, "shape": (2**50,)}
    np.lib.format.write_array_header_1_0(buf, header)
    bad = tmp_path / "bad.tagger"
    rewrite(model, bad, replace={"arrays/weights.npy": buf.getvalue() + bytes(64)})
    with pytest.raises(ModelFileError, match=r"'weights' has shape \(1125899906842624,\)"):
        load_model_file(bad)


def test_bytes_after_the_array_data(tmp_path: Path, model: Path) -> None:
    bad = tmp_path / "bad.tagger"
    payload = npy_bytes(sample_arrays()["weights"]) + b"\x00" * 8
    rewrite(model, bad, replace={"arrays/weights.npy": payload})
    # the zip's directory gives the member's size away before anything is read
    with pytest.raises(ModelFileError, match="'weights' has 2808 bytes of data but .* need 2800"):
        load_model_file(bad)


def test_truncated_npy_member(tmp_path: Path, model: Path) -> None:
    bad = tmp_path / "bad.tagger"
    payload = npy_bytes(sample_arrays()["weights"])
    rewrite(model, bad, replace={"arrays/weights.npy": payload[:-8]})
    with pytest.raises(ModelFileError, match="is damaged.*'weights'") as excinfo:
        load_model_file(bad)
    one_line_message(excinfo)


# ---------------------------------------------------------------------------------------------
# no pickles

UNPICKLED: list[str] = []


def _record_unpickling(tag: str) -> str:
    UNPICKLED.append(tag)
    return tag


class _Payload:
    """Unpickling this object calls _record_unpickling: proof that a pickle was executed."""

    def __reduce__(self):
        return (_record_unpickling, ("payload ran",))


@pytest.mark.parametrize("manifest_dtype", ["unchanged", "|O"])
def test_pickled_object_array_is_refused_without_unpickling(
    tmp_path: Path, model: Path, manifest_dtype: str
) -> None:
    evil = np.empty((50, 7), dtype=object)
    evil[:] = None
    evil[0, 0] = _Payload()
    payload = npy_bytes(evil, allow_pickle=True)

    # The payload is live: loading it the way pickle-based formats do runs it.
    UNPICKLED.clear()
    np.load(io.BytesIO(payload), allow_pickle=True)
    assert UNPICKLED == ["payload ran"]
    UNPICKLED.clear()

    def edit(header):
        if manifest_dtype != "unchanged":
            header["arrays"]["weights"]["dtype"] = manifest_dtype

    bad = tmp_path / "evil.tagger"
    rewrite(model, bad, replace={"arrays/weights.npy": payload}, header=edit)
    with pytest.raises(ModelFileError, match="pickled object array") as excinfo:
        load_model_file(bad)
    one_line_message(excinfo)
    assert UNPICKLED == []


def test_pickle_is_never_imported_for_loading(model: Path, monkeypatch) -> None:
    import pickle

    def forbidden(*args, **kwargs):
        raise AssertionError("load_model_file must not unpickle anything")

    monkeypatch.setattr(pickle, "load", forbidden)
    monkeypatch.setattr(pickle, "loads", forbidden)
    meta, arrays = load_model_file(model)
    assert meta == sample_meta()


# ---------------------------------------------------------------------------------------------
# atomic writes


class Boom(RuntimeError):
    pass


def _fail_on_second_array(monkeypatch, exc: BaseException) -> None:
    real = np.lib.format.write_array
    calls = []

    def write_array(fp, array, *args, **kwargs):
        calls.append(1)
        if len(calls) == 2:
            fp.write(npy_bytes(array)[: 64 + array.nbytes // 2])  # half an array, then fail
            raise exc
        return real(fp, array, *args, **kwargs)

    fake = types.SimpleNamespace(**{**vars(np.lib.format), "write_array": write_array})
    monkeypatch.setattr(serialize, "npy_format", fake)


def _fail_at(monkeypatch, function: str, exc: BaseException) -> None:
    def failing(*args, **kwargs):
        raise exc

    monkeypatch.setattr(serialize.os, function, failing)


FAILURES = {
    "error-half-way-through-an-array": (
        lambda mp: _fail_on_second_array(mp, Boom("disk on fire")),
        Boom,
    ),
    "interrupt-half-way-through-an-array": (
        lambda mp: _fail_on_second_array(mp, KeyboardInterrupt()),
        KeyboardInterrupt,
    ),
    "fsync-fails": (
        lambda mp: _fail_at(mp, "fsync", OSError(errno.EIO, "Input/output error")),
        ModelFileError,
    ),
    "replace-fails": (
        lambda mp: _fail_at(mp, "replace", OSError(errno.ENOSPC, "No space left on device")),
        ModelFileError,
    ),
}


@pytest.mark.parametrize("failure", list(FAILURES))
def test_failed_save_leaves_previous_file_untouched(tmp_path: Path, monkeypatch, failure) -> None:
    path = tmp_path / "model.tagger"
    save_model_file(path, {"generation": 1}, {"w": np.arange(10.0)})
    before = path.read_bytes()

    inject, expected = FAILURES[failure]
    inject(monkeypatch)
    arrays = {"a": np.arange(1000.0), "b": np.arange(100_000.0), "c": np.ones(10)}
    with pytest.raises(expected):
        save_model_file(path, {"generation": 2}, arrays)
    monkeypatch.undo()

    assert path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model.tagger"]  # no temporary file
    assert load_model_file(path)[0] == {"generation": 1}


@pytest.mark.parametrize("failure", list(FAILURES))
def test_failed_save_creates_no_file(tmp_path: Path, monkeypatch, failure) -> None:
    inject, expected = FAILURES[failure]
    inject(monkeypatch)
    with pytest.raises(expected):
        save_model_file(tmp_path / "model.tagger", {}, {"a": np.arange(10.0), "b": np.ones(5)})
    monkeypatch.undo()
    assert list(tmp_path.iterdir()) == []


def test_save_replaces_existing_file(tmp_path: Path) -> None:
    path = tmp_path / "model.tagger"
    save_model_file(path, {"generation": 1}, {"w": np.arange(3)})
    save_model_file(path, {"generation": 2}, {"w": np.arange(4)})
    meta, arrays = load_model_file(path)
    assert meta == {"generation": 2} and arrays["w"].tolist() == [0, 1, 2, 3]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model.tagger"]


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX file modes")
def test_file_mode_follows_umask_or_the_replaced_file(tmp_path: Path) -> None:
    path = tmp_path / "model.tagger"
    umask = os.umask(0o022)
    try:
        save_model_file(path, {}, {})
    finally:
        os.umask(umask)
    assert path.stat().st_mode & 0o777 == 0o644  # not mkstemp's 0o600
    path.chmod(0o640)
    save_model_file(path, {"again": True}, {})
    assert path.stat().st_mode & 0o777 == 0o640
