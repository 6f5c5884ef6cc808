"""Input and output plumbing shared by every format: sources (a path, ``-`` or an open file)
read in large chunks and decoded as strict UTF-8 with ``file:line:`` errors, text outputs,
and pausing the garbage collector while many small objects are built.
"""

from __future__ import annotations

import gc
import os
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

from tagger.errors import CorpusFormatError
from tagger.sentence import Sentence

#: bytes read per system call; chunks are cut at line ends before decoding
CHUNK_SIZE = 1 << 20
#: writers flush their buffer once it holds this many pieces
WRITE_BATCH = 2048


# --------------------------------------------------------------------------------------------
# input plumbing


def source_name(source) -> str:
    if isinstance(source, (str, os.PathLike)):
        s = os.fspath(source)
        return "<stdin>" if s == "-" else str(s)
    name = getattr(source, "name", None)
    return name if isinstance(name, str) else "<stream>"


@contextmanager
def open_binary(source):
    """Yield a file object for ``source``; opened files are closed afterwards, others not."""
    if isinstance(source, (str, os.PathLike)):
        if os.fspath(source) == "-":
            yield getattr(sys.stdin, "buffer", sys.stdin)
            return
        try:
            fh = open(source, "rb", buffering=max(CHUNK_SIZE, 1 << 16))
        except FileNotFoundError:
            raise CorpusFormatError("no such file", source_name(source)) from None
        except IsADirectoryError:
            raise CorpusFormatError(
                "is a directory, expected a corpus file", source_name(source)
            ) from None
        with fh:
            yield fh
    elif hasattr(source, "read"):
        yield source
    else:
        raise TypeError(f"expected a path, '-' or a file object, got {type(source).__name__}")


def decode_utf8(data: bytes, name: str, lineno: int) -> str:
    nul = data.find(b"\x00")
    if nul >= 0:  # valid UTF-8, but no text corpus holds it: a binary file or a damaged one
        raise CorpusFormatError(
            "expected text, found a NUL byte (is this a binary file?); give a text corpus",
            name,
            lineno + data.count(b"\n", 0, nul),
        )
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        line = lineno + data.count(b"\n", 0, e.start)
        col = e.start - (data.rfind(b"\n", 0, e.start) + 1) + 1
        raise CorpusFormatError(
            f"expected UTF-8 text, found the byte 0x{data[e.start]:02x} (column {col}) that is not "
            "valid UTF-8; convert the file to UTF-8 (for instance iconv -f latin1 -t utf-8)",
            name,
            line,
        ) from None


def lf_lines(text: str, name: str, lineno: int) -> str:
    """``text`` with CRLF line ends made LF; a carriage return left alone (old Mac line ends,
    which would make a whole file one line) is an error naming its line."""
    text = text.replace("\r\n", "\n")
    pos = text.find("\r")
    if pos >= 0:
        raise CorpusFormatError(
            "expected lines ending in LF or CRLF, found a carriage return (CR) alone (old Mac "
            "line ends); convert the file, e.g. tr '\\r' '\\n' < IN > OUT",
            name,
            lineno + text.count("\n", 0, pos),
        )
    return text


def iter_text_chunks(source) -> Iterator[tuple[str, int]]:
    """Yield ``(text, first_line_number)`` pieces of ``source`` made of whole lines.

    Each piece ends with ``"\\n"`` except possibly the last one; CRLF line ends become LF and a
    leading byte-order mark is dropped. Decoding is strict UTF-8, per chunk, so an invalid byte
    is reported with its line number at the cost of one ``bytes.count`` per megabyte.
    """
    name = source_name(source)
    with open_binary(source) as fh:
        carry = b""
        lineno = 1
        first = True
        while True:
            data = fh.read(CHUNK_SIZE)
            if isinstance(data, str):  # a text-mode file object: already decoded
                yield from iter_str_chunks(data, fh)
                return
            if not data:
                if carry:
                    text = decode_utf8(carry, name, lineno)
                    if first and text.startswith("\ufeff"):
                        text = text[1:]
                    if "\r" in text:
                        text = lf_lines(text, name, lineno)
                    yield text, lineno
                return
            if carry:
                data = carry + data
            cut = data.rfind(b"\n") + 1
            if cut == 0:
                carry = data
                continue
            if cut < len(data):
                carry = data[cut:]
                data = data[:cut]
            else:
                carry = b""
            text = decode_utf8(data, name, lineno)
            if first:
                first = False
                if text.startswith("\ufeff"):
                    text = text[1:]
            if "\r" in text:
                text = lf_lines(text, name, lineno)
            yield text, lineno
            lineno += data.count(b"\n")


def iter_str_chunks(data: str, fh) -> Iterator[tuple[str, int]]:
    """``iter_text_chunks`` for a text-mode file object (``data`` is its first read)."""
    pending = data
    lineno = 1
    eof = False
    while True:
        cut = len(pending) if eof else pending.rfind("\n") + 1
        if cut:
            text, pending = pending[:cut], pending[cut:]
            if "\r" in text:
                text = lf_lines(text, source_name(fh), lineno)
            yield text, lineno
            lineno += text.count("\n")
        if eof:
            return
        more = fh.read(CHUNK_SIZE)
        if more:
            pending += more
        else:
            eof = True


class Prefixed:
    """A stream whose first bytes were already read (to detect its format) and are given back."""

    def __init__(self, prefix, stream, name: str):
        self._prefix = prefix
        self._stream = stream
        self.name = name

    def read(self, n: int = -1):
        if self._prefix:
            out, self._prefix = self._prefix, self._prefix[:0]
            return out
        return self._stream.read(n)


def iter_lines(source) -> Iterator[tuple[int, str]]:
    """Yield ``(line_number, line)`` without line ends (for the formats parsed line by line)."""
    for text, lineno in iter_text_chunks(source):
        if text.endswith("\n"):
            text = text[:-1]
        yield from enumerate(text.split("\n"), lineno)


def no_sentences(source):
    return CorpusFormatError("contains no sentences", source_name(source))


def is_number(text: str) -> bool:
    """Whether ``text`` is a non-negative whole number in ASCII digits (str.isdigit also
    accepts superscripts and other scripts' digits, which int() refuses)."""
    return text.isascii() and text.isdigit()


def show_line(line: str, width: int = 60) -> str:
    return repr(line if len(line) <= width else line[:width] + "...")


@contextmanager
def open_text_out(fh):
    if isinstance(fh, (str, os.PathLike)):
        if os.fspath(fh) == "-":
            yield sys.stdout
            sys.stdout.flush()
            return
        with open(fh, "w", encoding="utf-8", newline="\n", buffering=CHUNK_SIZE) as out:
            yield out
    else:
        yield fh


def paired(sentences, labels_seq) -> Iterator[tuple[Sentence, Sequence[str] | None]]:
    """Pair each sentence with its labels; ``labels_seq=None`` takes the sentences' own."""
    if labels_seq is None:
        for s in sentences:
            yield s, s.labels
        return
    it = iter(labels_seq)
    for i, s in enumerate(sentences):
        try:
            labels = next(it)
        except StopIteration:
            raise ValueError(
                f"labels_seq has {i} label sequences but there are more sentences"
            ) from None
        if labels is not None:
            if hasattr(labels, "tolist"):
                labels = labels.tolist()
            if len(labels) != len(s):
                raise ValueError(
                    f"sentence {i} has {len(s)} tokens but {len(labels)} labels were given for it"
                )
        yield s, labels
    if next(it, None) is not None:
        raise ValueError("labels_seq has more label sequences than there are sentences")


@contextmanager
def gc_paused():
    """Switch Python's cyclic garbage collector off for the duration of the block.

    Keeping millions of tokens in lists makes the collector's full passes walk every list
    item; for CoNLL-2000 test x 50 (2.4 million tokens) they cost more than the parsing
    itself. The readers create no reference cycles, so nothing is lost by pausing it.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()
