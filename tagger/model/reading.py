"""Reading a model file (:func:`load_model_file`) and every check it makes on the way, in the
order :mod:`.files` lists them: a zip archive, its JSON header naming this format and version,
and each array's ``.npy`` header against the manifest before any data is read, its CRC, no
trailing bytes and its sha256. Any failure is a :class:`~tagger.errors.ModelFileError` with a
one-line message; an object array is refused without being unpickled.
"""

from __future__ import annotations

import json
import os
import re
import zipfile
from typing import Any

import numpy as np
from numpy.lib import format as npy_format

from tagger import __version__
from tagger.errors import ModelFileError
from tagger.model.manifest import (
    FORMAT_NAME,
    FORMAT_VERSION,
    HEADER_NAME,
    descr,
    error_text,
    oserror_text,
    sha256,
)

_SHA256_HEX = re.compile(r"[0-9a-f]{64}")

#: the first bytes of every model file (a zip archive's local file header)
ZIP_SIGNATURE = b"PK\x03\x04"


def is_model_file(path: str | os.PathLike) -> bool:
    """Whether ``path`` starts as a model file does: they are zip archives, and no corpus
    starts with a zip signature (a file that cannot be read is not one: reading it as a
    corpus reports the problem)."""
    try:
        with open(path, "rb") as fh:
            return fh.read(4) == ZIP_SIGNATURE
    except OSError:
        return False


def load_model_file(path: str | os.PathLike) -> tuple[dict, dict[str, np.ndarray]]:
    """Read a model file written by :func:`~tagger.model.files.save_model_file`; return
    ``(meta, arrays)``.

    Raises :class:`ModelFileError` with a one-line message if the file is missing, is not a
    tagger model, was written with another format version, or is damaged.
    """
    path = os.fspath(path)
    try:
        with open(path, "rb") as fh:
            magic = fh.read(4)
            if not magic:
                raise ModelFileError(
                    f"model file {path} is empty (0 bytes); it was probably not written "
                    f"completely. Copy it again from its source or retrain the model."
                )
            try:
                zf = zipfile.ZipFile(fh)
            except Exception as e:  # BadZipFile, or anything a corrupt central directory causes
                if magic == ZIP_SIGNATURE:
                    raise _damaged(
                        path, f"truncated or corrupt zip archive: {error_text(e)}"
                    ) from e
                raise _not_a_model(path, "it is not a zip archive") from e
            with zf:
                header = _read_header(zf, path)
                return header["meta"], _read_arrays(zf, path, header["arrays"])
    except FileNotFoundError as e:
        raise ModelFileError(
            f"model file {path} does not exist. Check the path, or train and save a model first."
        ) from e
    except IsADirectoryError as e:
        raise ModelFileError(f"{path} is a directory, not a model file.") from e
    except OSError as e:
        raise ModelFileError(f"cannot read model file {path}: {oserror_text(e)}") from e


def _read_header(zf: zipfile.ZipFile, path: str) -> dict:
    try:
        zf.getinfo(HEADER_NAME)
    except KeyError:
        raise _not_a_model(path, f"the zip archive has no {HEADER_NAME}") from None
    try:
        raw = zf.read(HEADER_NAME)
        header = json.loads(raw.decode("utf-8"))
    except Exception as e:  # bad CRC, bad deflate stream, bad UTF-8, invalid JSON, ...
        raise _damaged(path, f"cannot read {HEADER_NAME}: {error_text(e)}") from e
    if not isinstance(header, dict) or "format" not in header:
        raise _not_a_model(path, f'its {HEADER_NAME} has no "format" key')
    if header["format"] != FORMAT_NAME:
        raise _not_a_model(
            path, f"its {HEADER_NAME} says format {header['format']!r}, not {FORMAT_NAME!r}"
        )
    version = header.get("format_version")
    if not _is_int(version):
        raise _damaged(path, f'{HEADER_NAME} has no integer "format_version" (got {version!r})')
    if version != FORMAT_VERSION:
        writer = header.get("tagger_version")
        by = f" (by tagger {writer})" if isinstance(writer, str) else ""
        raise ModelFileError(
            f"{path} was written with model format version {version}{by}; this tagger "
            f"({__version__}) reads version {FORMAT_VERSION}. Retrain the model or use a matching "
            f"tagger version."
        )
    if not isinstance(header.get("meta"), dict):
        raise _damaged(path, f'{HEADER_NAME} has no "meta" object')
    manifest = header.get("arrays")
    if not isinstance(manifest, dict):
        raise _damaged(path, f'{HEADER_NAME} has no "arrays" manifest')
    for name, entry in manifest.items():
        if not (
            isinstance(entry, dict)
            and isinstance(entry.get("member"), str)
            and "dtype" in entry
            and isinstance(entry.get("shape"), list)
            and all(_is_int(n) and n >= 0 for n in entry["shape"])
            and isinstance(entry.get("sha256"), str)
            and _SHA256_HEX.fullmatch(entry["sha256"])
        ):
            raise _damaged(path, f"{HEADER_NAME} has an invalid manifest entry for array {name!r}")
    return header


def _read_arrays(zf: zipfile.ZipFile, path: str, manifest: dict) -> dict[str, np.ndarray]:
    arrays: dict[str, np.ndarray] = {}
    for name, entry in manifest.items():
        member = entry["member"]
        try:
            zf.getinfo(member)
        except KeyError:
            raise _damaged(path, f"array {name!r} ({member}) is missing") from None
        try:
            arrays[name] = _read_member(zf, path, name, entry)
        except ModelFileError:
            raise
        except MemoryError as e:
            raise _damaged(path, f"array {name!r} does not fit in memory") from e
        except Exception as e:  # bad CRC, truncated/invalid deflate stream, bad .npy header, ...
            raise _damaged(path, f"cannot read array {name!r} ({member}): {error_text(e)}") from e
    return arrays


def _read_member(zf: zipfile.ZipFile, path: str, name: str, entry: dict) -> np.ndarray:
    with zf.open(entry["member"]) as f:
        # Check the .npy header against the manifest before allocating or reading any data.
        version = npy_format.read_magic(f)
        if version == (1, 0):
            shape, _, dtype = npy_format.read_array_header_1_0(f)
        elif version == (2, 0):
            shape, _, dtype = npy_format.read_array_header_2_0(f)
        else:  # version 3.0 (utf-8 field names) has no public header reader: read_array checks
            shape, dtype = None, None
        if dtype is not None:
            _check_dtype_shape(path, name, entry, dtype, shape)
        f.seek(0)
        try:
            arr = npy_format.read_array(f, allow_pickle=False)
        except ValueError as e:
            if "allow_pickle" in str(e):
                raise _pickled(path, name) from e
            raise
        _check_dtype_shape(path, name, entry, arr.dtype, arr.shape)
        # Reading to the end makes zipfile verify the member's CRC-32.
        trailing = f.read(1)
        if trailing:
            raise _damaged(path, f"array {name!r} has bytes after its data")
        f.read()
    if sha256(arr) != entry["sha256"]:
        raise _damaged(path, f"array {name!r} does not match its sha256 checksum")
    return arr


def _check_dtype_shape(path: str, name: str, entry: dict, dtype: np.dtype, shape: tuple) -> None:
    if dtype.hasobject:
        raise _pickled(path, name)
    if descr(dtype) != entry["dtype"]:
        raise _damaged(
            path,
            f"array {name!r} has dtype {descr(dtype)!r} but the manifest says {entry['dtype']!r}",
        )
    if tuple(shape) != tuple(entry["shape"]):
        raise _damaged(
            path,
            f"array {name!r} has shape {tuple(shape)} but the manifest says "
            f"{tuple(entry['shape'])}",
        )


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _not_a_model(path: str, why: str) -> ModelFileError:
    return ModelFileError(
        f"{path} is not a tagger model file ({why}). Pass a file written by the tagger's save."
    )


def _damaged(path: str, why: str) -> ModelFileError:
    return ModelFileError(
        f"model file {path} is damaged ({why}). Copy it again from its source or retrain the model."
    )


def _pickled(path: str, name: str) -> ModelFileError:
    return ModelFileError(
        f"model file {path} is not safe to load: array {name!r} is a pickled object array, which "
        f"the tagger never writes; it was refused without unpickling. Use a model file written by "
        f"the tagger's save."
    )
