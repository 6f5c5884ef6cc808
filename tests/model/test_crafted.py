"""Crafted model files: sizes that lie, headers padded or edited, arrays that declare far more
than the file holds. Each is refused with one line, and loading never allocates more than a
small multiple of the file's size before it refuses (measured with tracemalloc, which sees
numpy's buffers, zlib's and every Python object)."""

from __future__ import annotations

import hashlib
import io
import json
import os
import tracemalloc
import zipfile
from pathlib import Path

import numpy as np
import pytest

from tagger import Sentence, Tagger
from tagger.errors import ModelFileError
from tagger.model.files import (
    HEADER_NAME,
    HEADER_SHA256_NAME,
    load_model_file,
    save_model_file,
)

#: what loading may allocate beyond a small multiple of the file's size: buffers of 1 MiB,
#: the parsed header of a small model, numpy's and zipfile's own objects
SLACK = 8 << 20

TRAIN = [
    Sentence([["The", "cat", "sat", "."]], ["B-NP", "I-NP", "B-VP", "O"]),
    Sentence([["A", "dog", "ran", "."]], ["B-NP", "I-NP", "B-VP", "O"]),
]


@pytest.fixture(scope="module")
def small_model(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("crafted") / "small.tgm"
    Tagger(features="pos", learner="perceptron", params={"epochs": 2}).fit(TRAIN).save(path)
    return path


def members_of(path: Path) -> dict[str, bytes]:
    with zipfile.ZipFile(path) as zf:
        return {name: zf.read(name) for name in zf.namelist()}


def write_zip(path: Path, members: dict[str, bytes], resum: bool = True) -> Path:
    """The members as a DEFLATE zip; the header checksum recomputed unless ``resum`` is
    false (so that a crafted header reaches the checks after it)."""
    if resum and HEADER_SHA256_NAME in members:
        members[HEADER_SHA256_NAME] = hashlib.sha256(members[HEADER_NAME]).hexdigest().encode()
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in members.items():
            zf.writestr(name, data)
    return path


def npy_of_zeros(dtype: str, n: int) -> bytes:
    """A .npy member holding ``n`` zeros, written without building the array."""
    buf = io.BytesIO()
    np.lib.format.write_array_header_1_0(
        buf, {"descr": dtype, "fortran_order": False, "shape": (n,)}
    )
    return buf.getvalue() + bytes(n * np.dtype(dtype).itemsize)


def zeros_sha256(dtype: str, n: int) -> str:
    h = hashlib.sha256()
    block = bytes(1 << 20)
    left = n * np.dtype(dtype).itemsize
    while left:
        step = min(left, len(block))
        h.update(block[:step])
        left -= step
    return h.hexdigest()


def peak_while_loading(load, path: Path) -> tuple[int, BaseException | None]:
    """The peak of traced allocations while ``load(path)`` runs, and what it raised."""
    tracemalloc.start()
    tracemalloc.reset_peak()
    error = None
    try:
        load(path)
    except BaseException as exc:  # noqa: BLE001 - what it raised is returned and checked
        error = exc
    finally:
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
    return peak, error


def assert_refused_within_memory(load, path: Path, match: str) -> None:
    peak, error = peak_while_loading(load, path)
    assert isinstance(error, ModelFileError), repr(error)
    message = str(error)
    assert "\n" not in message and match in message, message
    size = os.path.getsize(path)
    assert peak <= 4 * size + SLACK, f"peak {peak:,} bytes for a {size:,}-byte file"


def test_padded_header_is_refused_before_it_is_inflated(tmp_path, small_model):
    """A header padded with 40 MB of spaces (DEFLATE makes that a few kilobytes)."""
    members = members_of(small_model)
    members[HEADER_NAME] = members[HEADER_NAME][:-1] + b" " * (40 << 20) + b"}"
    bad = write_zip(tmp_path / "padded.tgm", members)
    assert os.path.getsize(bad) < 1 << 20
    assert_refused_within_memory(Tagger.load, bad, "more than the 16777216 a model file has")


def test_weights_declaring_far_more_entries_than_the_model_has(tmp_path, small_model):
    """20M zero weights with a correct checksum: the manifest's shapes disagree with the
    other arrays and the labels, so the weights are never allocated."""
    n = 20_000_000
    members = members_of(small_model)
    header = json.loads(members[HEADER_NAME])
    entry = header["arrays"]["weights"]
    entry.update(shape=[n], sha256=zeros_sha256(entry["dtype"], n))
    members[entry["member"]] = npy_of_zeros(entry["dtype"], n)
    members[HEADER_NAME] = json.dumps(header).encode()
    bad = write_zip(tmp_path / "big-weights.tgm", members)
    assert_refused_within_memory(Tagger.load, bad, "weights has 20000000 entries but")


def test_large_array_with_a_wrong_checksum_is_refused_before_it_is_allocated(tmp_path):
    """Without a consistency check to stop it (load_model_file alone), a 160 MB array whose
    sha256 does not match is refused while it streams, never allocated."""
    path = tmp_path / "plain.tgm"
    save_model_file(path, {"note": "x"}, {"small": np.arange(3)})
    n = 20_000_000
    members = members_of(path)
    header = json.loads(members[HEADER_NAME])
    header["arrays"]["big"] = {
        "member": "arrays/big.npy",
        "dtype": "<f8",
        "shape": [n],
        "sha256": "0" * 64,
    }
    members["arrays/big.npy"] = npy_of_zeros("<f8", n)
    members[HEADER_NAME] = json.dumps(header).encode()
    bad = write_zip(tmp_path / "wrong-sum.tgm", members)
    assert_refused_within_memory(load_model_file, bad, "'big' does not match its sha256")


def test_member_sizes_that_lie_are_refused_from_the_zip_directory(tmp_path, small_model):
    """A member whose directory entry claims 1000 times more than DEFLATE can give."""
    data = bytearray(small_model.read_bytes())
    with zipfile.ZipFile(small_model) as zf:
        info = zf.getinfo("arrays/weights.npy")
    # the central directory (after every member) holds the 46-byte entry, then the name; the
    # uncompressed size is at offset 24 of the entry
    central = data.rindex(b"arrays/weights.npy") - 46
    assert data[central : central + 4] == b"PK\x01\x02"
    claimed = info.compress_size * 2000
    data[central + 24 : central + 28] = claimed.to_bytes(4, "little")
    bad = tmp_path / "lying.tgm"
    bad.write_bytes(bytes(data))
    assert_refused_within_memory(Tagger.load, bad, "more than compression can give")


def test_edited_header_is_refused_by_its_checksum(tmp_path, small_model):
    """The header names the labels and the feature patterns; editing it without recomputing
    its checksum is refused with one line."""
    members = members_of(small_model)
    members[HEADER_NAME] = members[HEADER_NAME].replace(b'"B-NP"', b'"B-XX"')
    bad = write_zip(tmp_path / "edited.tgm", members, resum=False)
    with pytest.raises(ModelFileError, match="tagger.json does not match its sha256") as exc:
        Tagger.load(bad)
    assert "\n" not in str(exc.value)


def test_model_without_a_header_checksum_still_loads(tmp_path, small_model):
    """Files written before the header had a checksum load as they did."""
    members = members_of(small_model)
    del members[HEADER_SHA256_NAME]
    old = write_zip(tmp_path / "old.tgm", members)
    tagger = Tagger.load(old)
    assert tagger.predict(TRAIN[:1]) == Tagger.load(small_model).predict(TRAIN[:1])


def test_loading_a_real_model_costs_about_its_arrays(small_model):
    """The two passes over large arrays do not double what a good file costs."""
    peak, error = peak_while_loading(Tagger.load, small_model)
    assert error is None
    _, arrays = load_model_file(small_model)
    assert peak <= 2 * sum(a.nbytes for a in arrays.values()) + SLACK
