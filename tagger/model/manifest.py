"""What a model file says about itself, computed alike by its writer (:mod:`.files`) and its
reader (:mod:`.reading`): the format's name, version and header member, each array's dtype
description and sha256 as the manifest records them, and the one-line text of an error that
either side puts in a :class:`~tagger.errors.ModelFileError`. The layout is described in
:mod:`.files`."""

from __future__ import annotations

import hashlib
import json
from typing import Any

import numpy as np
from numpy.lib import format as npy_format

#: Value of the header's ``"format"`` key.
FORMAT_NAME = "tagger-model"
#: Version of the layout described in :mod:`tagger.model.files`. Bump it whenever a reader of
#: the previous version could misread a new file; readers accept only their own version.
FORMAT_VERSION = 1
#: Name of the JSON header member.
HEADER_NAME = "tagger.json"
#: Name of the member holding the sha256 (hex) of the header member's bytes: the arrays have
#: their own checksums in the header, and this one covers the header itself (the labels, the
#: feature specification with its patterns, the manifest). Files written before it was added
#: have no such member and load as they did.
HEADER_SHA256_NAME = "tagger.json.sha256"

#: Largest header member a reader accepts (bytes, uncompressed). Headers of real models are
#: tens of kilobytes (a long training trace adds a few hundred bytes a row); the cap keeps a
#: header padded with whitespace from being inflated and parsed.
MAX_HEADER_BYTES = 16 << 20
#: DEFLATE cannot expand data by more than about 1032 to 1: a member that claims to, lies
#: about its size, and is refused before it is decompressed.
MAX_DEFLATE_RATIO = 1040

_HASH_CHUNK = 1 << 24  # bytes hashed per step for arrays that are not C-contiguous


def descr(dtype: np.dtype) -> Any:
    """JSON form of ``dtype`` (tuples become lists), as stored in and compared with the manifest."""
    return json.loads(json.dumps(npy_format.dtype_to_descr(dtype)))


def sha256(arr: np.ndarray) -> str:
    """sha256 of ``arr.tobytes(order='C')`` without materialising a copy of a large array."""
    h = hashlib.sha256()
    if arr.size == 0 or arr.dtype.itemsize == 0:
        return h.hexdigest()
    if arr.flags.c_contiguous:
        h.update(arr.reshape(-1).view(np.uint8))
        return h.hexdigest()
    buffersize = max(_HASH_CHUNK // arr.dtype.itemsize, 1)
    for chunk in np.nditer(
        arr, flags=["external_loop", "buffered", "zerosize_ok"], buffersize=buffersize, order="C"
    ):
        h.update(chunk.tobytes("C"))
    return h.hexdigest()


def sha256_bytes(data: bytes) -> str:
    """sha256 (hex) of ``data``: what :data:`HEADER_SHA256_NAME` holds for the header."""
    return hashlib.sha256(data).hexdigest()


def error_text(e: BaseException) -> str:
    """An exception's message on one line."""
    text = " ".join(str(e).split())
    return text or type(e).__name__


def oserror_text(e: OSError) -> str:
    return e.strerror or error_text(e)
