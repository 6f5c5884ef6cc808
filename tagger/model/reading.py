"""Reading a model file (:func:`load_model_file`) and every check it makes on the way, in the
order :mod:`.files` lists them: a zip archive whose members' sizes are possible, its JSON header
(capped in size, matching its checksum) naming this format and version, the caller's check of
the header, and each array's ``.npy`` header and member size against the manifest before
anything is allocated; then its sha256 and CRC, computed while streaming the member, before the
array is allocated and read. Any failure is a :class:`~tagger.errors.ModelFileError` with a
one-line message; an object array is refused without being unpickled.

Memory: a file that is refused has cost at most its header (capped) and 1 MiB buffers, whatever
sizes it declares; a file that is accepted costs its arrays, whose sizes the manifest, the
``.npy`` headers, the zip's member sizes, the checksums and the caller's consistency check all
agree on.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import zipfile
from collections.abc import Callable
from math import prod
from typing import Any

import numpy as np
from numpy.lib import format as npy_format

from tagger import __version__
from tagger.errors import ModelFileError
from tagger.model.manifest import (
    FORMAT_NAME,
    FORMAT_VERSION,
    HEADER_NAME,
    HEADER_SHA256_NAME,
    MAX_DEFLATE_RATIO,
    MAX_HEADER_BYTES,
    descr,
    error_text,
    oserror_text,
    sha256,
    sha256_bytes,
)

_SHA256_HEX = re.compile(r"[0-9a-f]{64}")

#: the first bytes of every model file (a zip archive's local file header)
ZIP_SIGNATURE = b"PK\x03\x04"
#: bytes decompressed at a time while checking a member, and read at a time into an array
_CHUNK = 1 << 20
#: a ``.npy`` header is at most this long (numpy's own limit for reading one)
_MAX_NPY_HEADER = 10000

#: what :func:`load_model_file` calls with the header's ``meta`` and the manifest's array
#: shapes (name -> tuple) before reading any array; it raises ModelFileError to refuse
HeaderCheck = Callable[[dict, dict[str, tuple[int, ...]]], None]


def is_model_file(path: str | os.PathLike) -> bool:
    """Whether ``path`` starts as a model file does: they are zip archives, and no corpus
    starts with a zip signature (a file that cannot be read is not one: reading it as a
    corpus reports the problem)."""
    try:
        with open(path, "rb") as fh:
            return fh.read(4) == ZIP_SIGNATURE
    except OSError:
        return False


def load_model_file(
    path: str | os.PathLike, check: HeaderCheck | None = None
) -> tuple[dict, dict[str, np.ndarray]]:
    """Read a model file written by :func:`~tagger.model.files.save_model_file`; return
    ``(meta, arrays)``.

    ``check(meta, shapes)``, when given, sees the header's ``meta`` and the shape of every
    array the manifest lists before any array is read, and refuses a file whose arrays would
    not fit together by raising :class:`ModelFileError`.

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
                _check_members(zf, path, os.fstat(fh.fileno()).st_size)
                header = _read_header(zf, path)
                if check is not None:
                    shapes = {n: tuple(e["shape"]) for n, e in header["arrays"].items()}
                    check(header["meta"], shapes)
                return header["meta"], _read_arrays(zf, path, header["arrays"])
    except FileNotFoundError as e:
        raise ModelFileError(
            f"model file {path} does not exist. Check the path, or train and save a model first."
        ) from e
    except IsADirectoryError as e:
        raise ModelFileError(f"{path} is a directory, not a model file.") from e
    except OSError as e:
        raise ModelFileError(f"cannot read model file {path}: {oserror_text(e)}") from e


def _check_members(zf: zipfile.ZipFile, path: str, file_size: int) -> None:
    """Every member lies inside the file and claims an uncompressed size its compressed bytes
    can hold: sizes are taken from the zip's directory before anything is decompressed, so
    they must not be able to lie."""
    for info in zf.infolist():
        if info.header_offset + info.compress_size > file_size:
            raise _damaged(
                path,
                f"member {info.filename} claims {info.compress_size} bytes at offset "
                f"{info.header_offset} of a {file_size}-byte file",
            )
        stored = info.compress_type == zipfile.ZIP_STORED
        most = info.compress_size if stored else info.compress_size * MAX_DEFLATE_RATIO + 64
        if info.file_size > most:
            raise _damaged(
                path,
                f"member {info.filename} claims {info.file_size} bytes from "
                f"{info.compress_size} compressed bytes, more than compression can give",
            )


def _read_small_member(zf: zipfile.ZipFile, path: str, name: str, cap: int) -> bytes:
    """A member of at most ``cap`` bytes, read whole (its size is checked before reading,
    and the read is bounded whatever the directory said)."""
    size = zf.getinfo(name).file_size
    if size > cap:
        raise _damaged(path, f"{name} is {size} bytes, more than the {cap} a model file has")
    try:
        with zf.open(name) as f:
            raw = f.read(cap + 1)
            if len(raw) > cap:
                raise _damaged(path, f"{name} is longer than the {cap} bytes a model file has")
            f.read(1)  # at the end: zipfile checks the CRC
        return raw
    except ModelFileError:
        raise
    except Exception as e:  # bad CRC, bad deflate stream, ...
        raise _damaged(path, f"cannot read {name}: {error_text(e)}") from e


def _read_header(zf: zipfile.ZipFile, path: str) -> dict:
    try:
        zf.getinfo(HEADER_NAME)
    except KeyError:
        raise _not_a_model(path, f"the zip archive has no {HEADER_NAME}") from None
    raw = _read_small_member(zf, path, HEADER_NAME, MAX_HEADER_BYTES)
    try:
        header = json.loads(raw.decode("utf-8"))
    except Exception as e:  # bad UTF-8, invalid JSON, nesting too deep, ...
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
    # after the format and version: a file of another version is named as such, whatever its
    # header holds; before everything the tagger reads from the header
    if HEADER_SHA256_NAME in zf.NameToInfo:
        stored = _read_small_member(zf, path, HEADER_SHA256_NAME, 256)
        if stored.strip().decode("ascii", "replace") != sha256_bytes(raw):
            raise _damaged(
                path,
                f"{HEADER_NAME} does not match its sha256 checksum in {HEADER_SHA256_NAME}: "
                f"the header was edited",
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
            and _manifest_dtype(entry["dtype"]) is not None
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
    info = zf.getinfo(entry["member"])
    dtype = _manifest_dtype(entry["dtype"])
    if dtype is None or dtype.hasobject:
        raise _pickled(path, name)
    shape = tuple(entry["shape"])
    nbytes = prod(shape) * dtype.itemsize
    with zf.open(info) as f:
        # The .npy header against the manifest, and the member's size against both, before
        # allocating or reading any data.
        fortran = _check_npy_header(f, path, name, entry)
        data_start = f.tell()
        if info.file_size != data_start + nbytes:
            raise _damaged(
                path,
                f"array {name!r} has {info.file_size - data_start} bytes of data but its shape "
                f"{shape} and dtype {entry['dtype']!r} need {nbytes}",
            )
        in_order = not fortran or len(shape) < 2
        if in_order and nbytes > _CHUNK:
            # A large array is checked (sha256, and the CRC at its end) while streaming it,
            # so that a damaged one is refused without being allocated.
            digest = hashlib.sha256()
            while chunk := f.read(_CHUNK):
                digest.update(chunk)
            if digest.hexdigest() != entry["sha256"]:
                raise _damaged(path, f"array {name!r} does not match its sha256 checksum")
    with zf.open(info) as f:
        f.seek(data_start)
        arr = np.empty(shape, dtype=dtype, order="F" if fortran else "C")
        if nbytes:
            view = memoryview(arr.reshape(-1, order="A").view(np.uint8))
            done = 0
            while done < nbytes:
                got = f.readinto(view[done : done + _CHUNK])
                if not got:
                    raise _damaged(path, f"array {name!r} ends before its data does")
                done += got
        # Reading to the end makes zipfile verify the member's CRC-32.
        if f.read(1):
            raise _damaged(path, f"array {name!r} has bytes after its data")
    if sha256(arr) != entry["sha256"]:
        raise _damaged(path, f"array {name!r} does not match its sha256 checksum")
    return arr


def _check_npy_header(f, path: str, name: str, entry: dict) -> bool:
    """Read the member's ``.npy`` header and check it against the manifest; return whether
    the data are in Fortran order."""
    version = npy_format.read_magic(f)
    if version == (1, 0):
        shape, fortran, dtype = npy_format.read_array_header_1_0(f, _MAX_NPY_HEADER)
    elif version == (2, 0):
        shape, fortran, dtype = npy_format.read_array_header_2_0(f, _MAX_NPY_HEADER)
    else:  # version 3.0 (utf-8 field names): the tagger writes 1.0 or 2.0 only
        raise _damaged(path, f"array {name!r} has a .npy header of version {version}")
    _check_dtype_shape(path, name, entry, dtype, shape)
    return bool(fortran)


def _manifest_dtype(description: Any) -> np.dtype | None:
    """The dtype a manifest entry describes, or None when it describes none."""
    try:
        return npy_format.descr_to_dtype(_as_tuples(description))
    except Exception:  # whatever an edited description makes numpy raise
        return None


def _as_tuples(value: Any) -> Any:
    # JSON turned the (name, dtype) pairs of a structured descr into lists
    if isinstance(value, list):
        return [
            tuple(_as_tuples(v) for v in item) if isinstance(item, list) else item for item in value
        ]
    return value


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
