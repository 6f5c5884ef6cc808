"""Streaming corpus readers and writers.

Every reader is a generator of :class:`~tagger.sentence.Sentence` records. A reader accepts a
path (``str`` or ``pathlib.Path``), ``"-"`` for standard input, or an open file object, and
reads it in large chunks, so that a corpus never has to fit in memory. Input is decoded as
strict UTF-8; a byte that is not UTF-8 and every malformed line raise
:class:`~tagger.errors.CorpusFormatError` whose message starts with ``file:line:`` and says what
was expected and what was found.

Formats (:data:`FORMATS`):

``conll``   column files such as CoNLL-2000 (``word POS chunk``), blank line between sentences
``conllu``  Universal Dependencies CoNLL-U; the label is the UPOS or the XPOS field
``inline``  one citation per line with ``<field> ... </field>`` tags (Cora ``tagged_references``)
``tab``     ``token<TAB>label<TAB>extra...`` (the CPF citation files)
``text``    pre-tokenized text, one sentence per line
``raw``     raw text, one sentence or paragraph per line, tokenized by spaCy's English tokenizer

Each writer takes a text file object (or a path, or ``"-"`` for standard output), the sentences
and one label sequence per sentence (``None`` writes the sentences' own labels), and reproduces
the layout of what was read from the information the reader left in ``Sentence.meta``.
"""

from __future__ import annotations

import gc
import os
import re
import sys
from contextlib import contextmanager
from itertools import chain
from typing import Callable, Iterable, Iterator, Sequence

from .errors import CorpusFormatError
from .sentence import Sentence

__all__ = [
    "FORMATS",
    "READERS",
    "WRITERS",
    "detect_format",
    "read_corpus",
    "load_corpus",
    "write_corpus",
    "gc_paused",
    "read_conll",
    "write_conll",
    "read_conllu",
    "write_conllu",
    "read_inline",
    "write_inline",
    "read_tab",
    "write_tab",
    "read_text",
    "write_text",
    "read_raw",
    "write_raw",
    "read_split",
]


#: bytes read per system call; chunks are cut at line ends before decoding
CHUNK_SIZE = 1 << 20
#: writers flush their buffer once it holds this many pieces
_WRITE_BATCH = 2048

# Characters that ``str.split()`` treats as whitespace besides space, tab and newline. Column
# files separate fields by spaces or tabs only, so a token containing one of these (a
# no-break space, say) must not be split: chunks that contain one take the slow path, which
# splits on spaces and tabs only. Searched once per chunk, never per line.
_OTHER_WS = re.compile("[\x0b\x0c\x1c-\x1f\x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]")
_SPACE_TAB = re.compile("[ \t]+")
# a whitespace-only line (used only when a chunk has no plain blank line at all)
_WS_LINE = re.compile(r"(?m)^[ \t\r\f\v]+$")
_TAG_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_.-]*")
_WS_RUN = re.compile(r"(\s+)")

_MARK = "\x00"  # end-of-line marker inserted by the fast CoNLL path


# --------------------------------------------------------------------------------------------
# input plumbing


def _source_name(source) -> str:
    if isinstance(source, (str, os.PathLike)):
        s = os.fspath(source)
        return "<stdin>" if s == "-" else str(s)
    name = getattr(source, "name", None)
    return name if isinstance(name, str) else "<stream>"


@contextmanager
def _open_binary(source):
    """Yield a file object for ``source``; opened files are closed afterwards, others not."""
    if isinstance(source, (str, os.PathLike)):
        if os.fspath(source) == "-":
            yield getattr(sys.stdin, "buffer", sys.stdin)
            return
        try:
            fh = open(source, "rb", buffering=max(CHUNK_SIZE, 1 << 16))
        except FileNotFoundError:
            raise CorpusFormatError("no such file", _source_name(source)) from None
        except IsADirectoryError:
            raise CorpusFormatError("is a directory, expected a corpus file", _source_name(source)) from None
        with fh:
            yield fh
    elif hasattr(source, "read"):
        yield source
    else:
        raise TypeError(f"expected a path, '-' or a file object, got {type(source).__name__}")


def _decode(data: bytes, name: str, lineno: int) -> str:
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


def _iter_text_chunks(source) -> Iterator[tuple[str, int]]:
    """Yield ``(text, first_line_number)`` pieces of ``source`` made of whole lines.

    Each piece ends with ``"\\n"`` except possibly the last one; CRLF line ends become LF and a
    leading byte-order mark is dropped. Decoding is strict UTF-8, per chunk, so an invalid byte
    is reported with its line number at the cost of one ``bytes.count`` per megabyte.
    """
    name = _source_name(source)
    with _open_binary(source) as fh:
        carry = b""
        lineno = 1
        first = True
        while True:
            data = fh.read(CHUNK_SIZE)
            if isinstance(data, str):  # a text-mode file object: already decoded
                yield from _iter_str_chunks(data, fh)
                return
            if not data:
                if carry:
                    text = _decode(carry, name, lineno)
                    if first and text.startswith("\ufeff"):
                        text = text[1:]
                    if "\r" in text:
                        text = text.replace("\r\n", "\n")
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
            text = _decode(data, name, lineno)
            if first:
                first = False
                if text.startswith("\ufeff"):
                    text = text[1:]
            if "\r" in text:
                text = text.replace("\r\n", "\n")
            yield text, lineno
            lineno += data.count(b"\n")


def _iter_str_chunks(data: str, fh) -> Iterator[tuple[str, int]]:
    """``_iter_text_chunks`` for a text-mode file object (``data`` is its first read)."""
    pending = data
    lineno = 1
    eof = False
    while True:
        cut = len(pending) if eof else pending.rfind("\n") + 1
        if cut:
            text, pending = pending[:cut], pending[cut:]
            if "\r" in text:
                text = text.replace("\r\n", "\n")
            yield text, lineno
            lineno += text.count("\n")
        if eof:
            return
        more = fh.read(CHUNK_SIZE)
        if more:
            pending += more
        else:
            eof = True


class _Prefixed:
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


def _iter_lines(source) -> Iterator[tuple[int, str]]:
    """Yield ``(line_number, line)`` without line ends (for the formats parsed line by line)."""
    for text, lineno in _iter_text_chunks(source):
        if text.endswith("\n"):
            text = text[:-1]
        yield from enumerate(text.split("\n"), lineno)


def _no_sentences(source):
    return CorpusFormatError("contains no sentences", _source_name(source))


def _show(line: str, width: int = 60) -> str:
    return repr(line if len(line) <= width else line[:width] + "...")


# --------------------------------------------------------------------------------------------
# CoNLL column files


def read_conll(
    source,
    label_column: int | None = -1,
    sep: str | None = None,
    labeled: bool = True,
) -> Iterator[Sentence]:
    """Read a CoNLL-style column file: one token per line, a blank line between sentences.

    ``label_column`` is the index of the label column (negative counts from the end). It goes
    to ``Sentence.labels`` and the other columns, in order, to ``Sentence.columns``; with
    ``labeled=False`` every column is an input column and ``labels`` is ``None``. ``sep`` is
    the field separator (``None``: runs of spaces or tabs). ``-DOCSTART-`` lines are skipped.
    All token lines of a file must have the same number of fields. When labels are read,
    ``meta["label_column"]`` holds their non-negative column index, which :func:`write_conll`
    uses to put predictions back in the same place.
    """
    if labeled and label_column is None:
        raise ValueError("label_column must be an integer when labeled=True")
    return _read_columns(source, label_column if labeled else None, sep, "conll", False)


def _read_columns(source, label_column, sep, fmt, drop_labels) -> Iterator[Sentence]:
    """Shared by ``read_conll`` and ``read_tab``.

    Fast path: a sentence is the text between two ``"\\n\\n"``; its line ends are replaced by a
    marker field and the whole sentence is split at once, so that the per-line work is done by
    ``str.replace``/``str.split`` in C. The markers must then sit exactly every ``nf + 1``
    fields, which checks that every line has ``nf`` fields, and the columns are slices. Any
    sentence failing the check (a wrong line, a whitespace-only separator line, ``-DOCSTART-``)
    goes through the line-by-line slow path, which either parses it or reports the exact line.
    """
    name = _source_name(source)
    st = _ColumnState(name, label_column, sep, fmt, drop_labels)
    # locals for the fast path, set once the first token line fixed the number of fields
    nf = step = lc = 0
    inputs = ()
    proto: dict = {}
    joiner = st.joiner
    marks = st.marks
    drop = drop_labels
    n_sent = 0
    pending = ""
    pending_line = 1
    for text, lineno in _iter_text_chunks(source):
        if pending:
            text = pending + text
            lineno = pending_line
        slow = _MARK in text or (sep is None and _OTHER_WS.search(text) is not None)
        blocks = text.split("\n\n")
        pending = blocks.pop()
        if not blocks and len(pending) > 8 * CHUNK_SIZE:
            # no plain blank line for a long stretch: the file separates sentences by
            # whitespace-only lines. Blank them (line count unchanged) and split again.
            blocks = _WS_LINE.sub("", pending).split("\n\n")
            pending = blocks.pop()
        for block in blocks:
            if not block or block[0] == "\n":
                stripped = block.lstrip("\n")
                if not stripped:  # only blank lines
                    lineno += len(block) + 2
                    continue
                lineno += len(block) - len(stripped)
                block = stripped
            if nf and not slow:
                flat = block.replace("\n", joiner)
                flat = flat.split() if sep is None else flat.split(sep)
                nl = (len(flat) + 1) // step
                if nl * step == len(flat) + 1 and flat[0] != "-DOCSTART-":
                    if nl > len(marks):
                        marks = st.marks = [_MARK] * (2 * nl)
                    if nl == 1 or flat[nf::step] == marks[: nl - 1]:
                        n_sent += 1
                        yield Sentence(
                            [flat[c::step] for c in inputs],
                            None if lc is None or drop else flat[lc::step],
                            proto.copy(),
                        )
                        lineno += nl + 1
                        continue
            # first sentence, or anything the fast path did not accept
            for s in st.slow_block(block, lineno):
                n_sent += 1
                yield s
            if not nf and st.nf:
                nf, step, inputs, lc = st.nf, st.step, st.inputs, st.lc
                proto = {"format": fmt} if lc is None else {"format": fmt, "label_column": lc}
            lineno += block.count("\n") + 2
        pending_line = lineno
    if pending.strip():
        for s in st.slow_block(pending.rstrip("\n"), pending_line):
            n_sent += 1
            yield s
    if n_sent == 0:
        raise _no_sentences(source)


class _ColumnState:
    __slots__ = ("name", "label_column", "sep", "fmt", "drop_labels", "nf", "lc", "inputs",
                 "step", "first_line", "marks", "joiner")

    def __init__(self, name, label_column, sep, fmt, drop_labels):
        self.name = name
        self.label_column = label_column
        self.sep = sep
        self.fmt = fmt
        self.drop_labels = drop_labels
        self.nf = None  # number of fields, fixed by the first token line
        self.lc = None  # non-negative label column, or None
        self.inputs = ()
        self.step = 0
        self.first_line = 0
        self.marks = [_MARK] * 256
        self.joiner = " " + _MARK + " " if sep is None else sep + _MARK + sep

    def _set_fields(self, nf: int, line: str, lineno: int) -> None:
        lc = self.label_column
        if lc is not None:
            if nf < 2 and not self.drop_labels:
                raise CorpusFormatError(
                    f"expected at least 2 fields (token and label), found {nf}: {_show(line)}; "
                    "read unlabeled input with labeled=False",
                    self.name, lineno,
                )
            if nf < 2:  # tab file without a label column: tokens only
                lc = None
            elif not -nf <= lc < nf:
                raise CorpusFormatError(
                    f"label column {lc} does not exist: the first token line has {nf} fields "
                    f"{_show(line)}",
                    self.name, lineno,
                )
            else:
                lc %= nf
        self.nf = nf
        self.lc = lc
        self.inputs = tuple(c for c in range(nf) if c != lc)
        self.step = nf + 1
        self.first_line = lineno

    def _sentence(self, cols, labels) -> Sentence:
        meta = {"format": self.fmt}
        if self.lc is not None:
            meta["label_column"] = self.lc
        if self.drop_labels:
            labels = None
        return Sentence(cols, labels, meta)

    def _split(self, line: str) -> list[str]:
        if self.sep is None:
            if _OTHER_WS.search(line) is None:
                return line.split()
            return [f for f in _SPACE_TAB.split(line.strip(" \t")) if f]
        if not line.strip():
            return []
        return line.split(self.sep)

    def slow_block(self, block: str, lineno: int) -> Iterator[Sentence]:
        rows: list[list[str]] = []
        for i, line in enumerate(block.split("\n"), lineno):
            fields = self._split(line)
            if not fields:
                if rows:
                    yield self._rows_to_sentence(rows)
                    rows = []
                continue
            if fields[0] == "-DOCSTART-":
                if rows:
                    yield self._rows_to_sentence(rows)
                    rows = []
                continue
            if self.nf is None:
                self._set_fields(len(fields), line, i)
            elif len(fields) != self.nf:
                how = "space or tab" if self.sep is None else repr(self.sep)
                raise CorpusFormatError(
                    f"expected {self.nf} {how}-separated fields like the first token line "
                    f"(line {self.first_line}), found {len(fields)}: {_show(line)}",
                    self.name, i,
                )
            rows.append(fields)
        if rows:
            yield self._rows_to_sentence(rows)

    def _rows_to_sentence(self, rows) -> Sentence:
        cols = [list(c) for c in zip(*rows)]
        labels = cols[self.lc] if self.lc is not None else None
        return self._sentence([cols[c] for c in self.inputs], labels)


@contextmanager
def _open_text_out(fh):
    if isinstance(fh, (str, os.PathLike)):
        if os.fspath(fh) == "-":
            yield sys.stdout
            sys.stdout.flush()
            return
        with open(fh, "w", encoding="utf-8", newline="\n", buffering=CHUNK_SIZE) as out:
            yield out
    else:
        yield fh


def _paired(sentences, labels_seq) -> Iterator[tuple[Sentence, Sequence[str] | None]]:
    """Pair each sentence with its labels; ``labels_seq=None`` takes the sentences' own."""
    if labels_seq is None:
        for i, s in enumerate(sentences):
            yield s, s.labels
        return
    it = iter(labels_seq)
    for i, s in enumerate(sentences):
        try:
            labels = next(it)
        except StopIteration:
            raise ValueError(f"labels_seq has {i} label sequences but there are more sentences") from None
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


def write_conll(fh, sentences: Iterable[Sentence], labels_seq=None, sep: str = " ") -> None:
    """Write one token per line, a blank line after each sentence.

    Each line holds the sentence's input columns with the label inserted at
    ``meta["label_column"]`` (so reading a labeled file and writing predictions reproduces its
    layout with the gold labels replaced) or appended as the last column. ``labels_seq=None``
    writes the sentences' own labels; a sentence without labels is written with its input
    columns only.
    """
    with _open_text_out(fh) as out:
        buf: list[str] = []
        nl = "\n"
        for s, labels in _paired(sentences, labels_seq):
            if not s.columns:
                continue
            cols = s.columns
            if labels is not None:
                cols = list(cols)
                lc = s.meta.get("label_column")
                if lc is None or lc > len(cols):
                    cols.append(labels)
                else:
                    cols.insert(lc, labels)
            buf.append(nl.join(map(sep.join, zip(*cols))))
            buf.append("\n\n")
            if len(buf) >= _WRITE_BATCH:
                out.write("".join(buf))
                buf.clear()
        if buf:
            out.write("".join(buf))


# --------------------------------------------------------------------------------------------
# tab format (CPF citation files)


def read_tab(source, labeled: bool = True) -> Iterator[Sentence]:
    """Read ``token<TAB>label<TAB>extra...`` lines, a blank line between sequences.

    ``columns`` is ``[tokens, extra columns...]`` and ``labels`` the second field. With
    ``labeled=False`` the second field is still expected (in the CPF unlabeled file it holds a
    dummy label) but ``labels`` is ``None``; a file of tokens alone is accepted too.
    :func:`write_tab` puts predicted labels back in the second field.
    """
    return _read_columns(source, 1, "\t", "tab", not labeled)


def write_tab(fh, sentences: Iterable[Sentence], labels_seq=None) -> None:
    """Write ``token<TAB>label<TAB>extra...`` lines (the layout :func:`read_tab` read)."""
    write_conll(fh, sentences, labels_seq, sep="\t")


# --------------------------------------------------------------------------------------------
# CoNLL-U

_CONLLU_FIELDS = {"upos": 3, "xpos": 4}


def read_conllu(source, label: str = "upos") -> Iterator[Sentence]:
    """Read CoNLL-U: ``columns = [FORM]`` and ``labels`` the UPOS (or XPOS) field.

    Comment lines, multi-word token ranges (``3-4``) and empty nodes (``8.1``) are skipped as
    tokens but kept, with every original line, in ``meta["lines"]`` so that
    :func:`write_conllu` can write the file back with only the label field replaced.
    """
    if label not in _CONLLU_FIELDS:
        raise ValueError(f"label must be 'upos' or 'xpos', got {label!r}")
    return _read_conllu(source, label)


def _read_conllu(source, label: str) -> Iterator[Sentence]:
    pos = _CONLLU_FIELDS[label]
    name = _source_name(source)
    n_sent = 0
    lines: list[str] = []
    token_lines: list[int] = []
    forms: list[str] = []
    labels: list[str] = []

    def make():
        return Sentence([forms], labels, {"format": "conllu", "label": label, "lines": lines,
                                          "token_lines": token_lines})

    for lineno, line in _iter_lines(source):
        if not line.strip():
            if forms:
                n_sent += 1
                yield make()
            elif lines:
                pass  # comments without tokens: dropped
            lines, token_lines, forms, labels = [], [], [], []
            continue
        lines.append(line)
        if line[0] == "#":
            continue
        fields = line.split("\t")
        if len(fields) != 10:
            raise CorpusFormatError(
                f"expected 10 tab-separated CoNLL-U fields, found {len(fields)}: {_show(line)}",
                name, lineno,
            )
        tid = fields[0]
        if tid.isdigit():
            token_lines.append(len(lines) - 1)
            forms.append(fields[1])
            labels.append(fields[pos])
        elif not _is_range_or_empty(tid):
            raise CorpusFormatError(
                f"expected a token ID (1, 2-3 or 4.1) in the first field, found {tid!r}",
                name, lineno,
            )
    if forms:
        n_sent += 1
        yield make()
    if n_sent == 0:
        raise _no_sentences(source)


def _is_range_or_empty(tid: str) -> bool:
    for sep in "-.":
        a, found, b = tid.partition(sep)
        if found and a.isdigit() and b.isdigit():
            return True
    return False


def write_conllu(fh, sentences: Iterable[Sentence], labels_seq=None, label: str | None = None) -> None:
    """Write CoNLL-U with the labels in the UPOS (or XPOS) field.

    Sentences read by :func:`read_conllu` are written back line for line with only that field
    replaced; others get minimal lines (``ID FORM _ UPOS _ _ _ _ _ _``).
    """
    if label is not None and label not in _CONLLU_FIELDS:
        raise ValueError(f"label must be 'upos' or 'xpos', got {label!r}")
    with _open_text_out(fh) as out:
        buf: list[str] = []
        for s, labs in _paired(sentences, labels_seq):
            which = label or s.meta.get("label", "upos")
            pos = _CONLLU_FIELDS[which]
            orig = s.meta.get("lines") if s.meta.get("format") == "conllu" else None
            if orig is not None:
                lines = list(orig)
                if labs is not None:
                    for k, i in enumerate(s.meta["token_lines"]):
                        f = lines[i].split("\t")
                        f[pos] = labs[k]
                        lines[i] = "\t".join(f)
            else:
                lines = []
                for t, form in enumerate(s.tokens):
                    f = [str(t + 1), form, "_", "_", "_", "_", "_", "_", "_", "_"]
                    if labs is not None:
                        f[pos] = labs[t]
                    lines.append("\t".join(f))
            buf.append("\n".join(lines))
            buf.append("\n\n")
            if len(buf) >= _WRITE_BATCH:
                out.write("".join(buf))
                buf.clear()
        out.write("".join(buf))


# --------------------------------------------------------------------------------------------
# inline-tagged citations


def _tag(item: str):
    """``("open"|"close", name)`` when ``item`` is ``<name>`` or ``</name>``, else ``None``."""
    if len(item) > 2 and item[0] == "<" and item[-1] == ">":
        if item[1] == "/":
            name = item[2:-1]
            if _TAG_NAME.fullmatch(name):
                return "close", name
        elif _TAG_NAME.fullmatch(item[1:-1]):
            return "open", item[1:-1]
    return None


def read_inline(source) -> Iterator[Sentence]:
    """Read inline-tagged citations: one per line, ``<NEWREFERENCE>`` separator lines.

    Every field is wrapped as ``<name> ... </name>``, each tag its own whitespace-separated
    token. ``columns = [tokens]`` and ``labels`` the field name of each token (no B-/I-
    prefix). Unclosed, mismatched, nested or empty fields and text outside a field are errors.
    ``meta`` keeps the original whitespace, so that :func:`write_inline` reproduces the file
    byte for byte when given the gold labels.
    """
    name = _source_name(source)
    n_sent = 0
    after_separator = False
    for lineno, line in _iter_lines(source):
        stripped = line.strip()
        if not stripped:
            continue
        if stripped == "<NEWREFERENCE>":
            after_separator = True
            continue
        pieces = _WS_RUN.split(line)
        # pieces alternate item, whitespace, item, ...; the first and last may be ""
        leading = trailing = ""
        if pieces[0] == "":
            leading = pieces[1]
            pieces = pieces[2:]
        if pieces[-1] == "":
            trailing = pieces[-2]
            pieces = pieces[:-2]
        items = pieces[0::2]
        seps = pieces[1::2]
        tokens: list[str] = []
        labels: list[str] = []
        current = None
        opened_at = 0
        for k, item in enumerate(items):
            tag = _tag(item)
            if tag is None:
                if current is None:
                    raise CorpusFormatError(
                        f"expected a field tag such as <title>, found text outside any field: "
                        f"{item!r} (token {k + 1} of the line)",
                        name, lineno,
                    )
                tokens.append(item)
                labels.append(current)
            elif tag[0] == "open":
                if current is not None:
                    raise CorpusFormatError(
                        f"nested field: <{tag[1]}> (token {k + 1}) opened inside the still open "
                        f"<{current}> (token {opened_at + 1}); expected </{current}> first",
                        name, lineno,
                    )
                current = tag[1]
                opened_at = k
            else:
                if current is None:
                    raise CorpusFormatError(
                        f"closing tag </{tag[1]}> (token {k + 1}) without an open field",
                        name, lineno,
                    )
                if tag[1] != current:
                    raise CorpusFormatError(
                        f"mismatched close tag: expected </{current}> to close <{current}> "
                        f"(token {opened_at + 1}), found </{tag[1]}> (token {k + 1})",
                        name, lineno,
                    )
                if k == opened_at + 1:
                    raise CorpusFormatError(
                        f"empty field <{current}> </{current}> (token {k}); a field needs at "
                        "least one token",
                        name, lineno,
                    )
                current = None
        if current is not None:
            raise CorpusFormatError(
                f"unclosed field <{current}> (token {opened_at + 1}): expected </{current}> "
                "before the end of the line",
                name, lineno,
            )
        n_sent += 1
        yield Sentence(
            [tokens], labels,
            {"format": "inline", "newreference": after_separator,
             "ws": (leading, seps, trailing)},
        )
        after_separator = False
    if n_sent == 0:
        raise _no_sentences(source)


def _field_runs(labels: Sequence[str]) -> list[tuple[str, int, int]]:
    """Maximal runs of equal field names; a ``B-`` label always starts a new run."""
    runs = []
    prev = None
    for t, lab in enumerate(labels):
        new = lab[:2] == "B-"
        if lab[:2] in ("B-", "I-"):
            lab = lab[2:]
        if new or lab != prev:
            runs.append([lab, t, t + 1])
        else:
            runs[-1][2] = t + 1
        prev = lab
    return [tuple(r) for r in runs]


def write_inline(fh, sentences: Iterable[Sentence], labels_seq=None) -> None:
    """Write citations as ``<field> ... </field>`` runs, each after a ``<NEWREFERENCE>`` line.

    A field is a maximal run of equal labels (with ``B-``/``I-`` labels, ``B-`` starts a new
    field; the prefix is dropped). Tokens labeled ``O`` are written outside any field.
    Sentences read by :func:`read_inline` keep their original whitespace when the field
    structure is unchanged and their separator lines as they were.
    """
    with _open_text_out(fh) as out:
        buf: list[str] = []
        for s, labs in _paired(sentences, labels_seq):
            tokens = s.tokens
            if labs is None:
                raise ValueError("write_inline needs labels: the sentence has none")
            items: list[str] = []
            for lab, a, b in _field_runs(labs):
                if lab == "O":
                    items.extend(tokens[a:b])
                else:
                    items.append(f"<{lab}>")
                    items.extend(tokens[a:b])
                    items.append(f"</{lab}>")
            meta = s.meta if s.meta.get("format") == "inline" else {}
            leading, seps, trailing = meta.get("ws", ("", None, ""))
            if seps is not None and len(seps) == len(items) - 1:
                parts = [leading]
                for item, sp in zip(items, seps):
                    parts.append(item)
                    parts.append(sp)
                parts.append(items[-1])
                parts.append(trailing)
                line = "".join(parts)
            else:
                line = leading + " ".join(items) + trailing
            if meta.get("newreference", True):
                buf.append("<NEWREFERENCE>\n")
            buf.append(line)
            buf.append("\n")
            if len(buf) >= _WRITE_BATCH:
                out.write("".join(buf))
                buf.clear()
        out.write("".join(buf))


# --------------------------------------------------------------------------------------------
# plain and raw text


def read_text(source) -> Iterator[Sentence]:
    """Pre-tokenized text: one sentence per line, tokens separated by whitespace."""
    n_sent = 0
    for text, _ in _iter_text_chunks(source):
        for line in text.split("\n"):
            tokens = line.split()
            if tokens:
                n_sent += 1
                yield Sentence([tokens], None, {"format": "text"})
    if n_sent == 0:
        raise _no_sentences(source)


_TOKENIZER = None


def _spacy_tokenizer():
    """spaCy's blank English tokenizer, created on first use (importing spaCy takes a second)."""
    global _TOKENIZER
    if _TOKENIZER is None:
        import spacy

        _TOKENIZER = spacy.blank("en").tokenizer
    return _TOKENIZER


def read_raw(source) -> Iterator[Sentence]:
    """Raw text: every non-blank line is one sentence (or paragraph), tokenized by spaCy.

    ``meta`` keeps the line (``"text"``) and each token's character offset (``"idx"``).
    """
    tokenizer = _spacy_tokenizer()
    n_sent = 0
    for _, line in _iter_lines(source):
        if not line.strip():
            continue
        doc = tokenizer(line)
        toks = [t for t in doc if not t.is_space]
        n_sent += 1
        yield Sentence([[t.text for t in toks]], None,
                       {"format": "raw", "text": line, "idx": [t.idx for t in toks]})
    if n_sent == 0:
        raise _no_sentences(source)


def write_text(fh, sentences: Iterable[Sentence], labels_seq=None) -> None:
    """Write ``token<TAB>label`` lines (just the token when there is no label), a blank line
    after each sentence."""
    with _open_text_out(fh) as out:
        buf: list[str] = []
        for s, labs in _paired(sentences, labels_seq):
            if labs is None:
                buf.append("\n".join(s.tokens))
            else:
                buf.append("\n".join(map("\t".join, zip(s.tokens, labs))))
            buf.append("\n\n")
            if len(buf) >= _WRITE_BATCH:
                out.write("".join(buf))
                buf.clear()
        out.write("".join(buf))


write_raw = write_text


# --------------------------------------------------------------------------------------------
# split file


def read_split(path) -> dict[str, list[int]]:
    """Read a split file mapping citation indices to splits.

    The file (``split_cpf_zheng_chang_2016.tsv``) has ``#`` comment lines, a tab-separated
    header (``ref_index_0based``, ``line_in_tagged_references_1based``, ``split``) and one row
    per citation. Returns split name -> sorted 0-based indices (``train``, ``dev``, ``test``
    first). Non-integer or negative indices, repeated indices, rows with the wrong number of
    fields and gaps in the indices are errors.
    """
    name = _source_name(path)
    header = None
    split_col = -1
    n_fields = None
    seen: dict[int, int] = {}
    splits: dict[str, list[int]] = {}
    for lineno, line in _iter_lines(path):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        fields = line.rstrip("\n").split("\t")
        if header is None and n_fields is None and not fields[0].strip().lstrip("-").isdigit():
            header = [f.strip() for f in fields]
            if len(header) < 2:
                raise CorpusFormatError(
                    f"expected a tab-separated header with an index and a split column, found "
                    f"{_show(line)}",
                    name, lineno,
                )
            split_col = header.index("split") if "split" in header else len(header) - 1
            n_fields = len(header)
            continue
        if n_fields is None:
            n_fields = len(fields)
            if n_fields < 2:
                raise CorpusFormatError(
                    f"expected tab-separated fields 'index<TAB>...split', found {_show(line)}",
                    name, lineno,
                )
        if len(fields) != n_fields:
            raise CorpusFormatError(
                f"expected {n_fields} tab-separated fields, found {len(fields)}: {_show(line)}",
                name, lineno,
            )
        idx = fields[0].strip()
        if not idx.isdigit():
            raise CorpusFormatError(
                f"expected a non-negative integer citation index in the first field, found {idx!r}",
                name, lineno,
            )
        for k, f in enumerate(fields[1:], 1):
            if k != split_col % n_fields and header is not None and "line" in header[k] \
                    and not f.strip().isdigit():
                raise CorpusFormatError(
                    f"expected an integer in column {header[k]!r}, found {f!r}", name, lineno
                )
        split = fields[split_col].strip()
        if not split:
            raise CorpusFormatError("expected a split name (train, dev, test), found an empty field",
                                    name, lineno)
        i = int(idx)
        if i in seen:
            raise CorpusFormatError(
                f"citation index {i} is listed twice (first at line {seen[i]})", name, lineno
            )
        seen[i] = lineno
        splits.setdefault(split, []).append(i)
    if not seen:
        raise CorpusFormatError("contains no split rows", name)
    missing = sorted(set(range(max(seen) + 1)) - seen.keys())
    if missing:
        shown = ", ".join(map(str, missing[:10])) + (" ..." if len(missing) > 10 else "")
        raise CorpusFormatError(
            f"citation indices must cover 0..{max(seen)} without gaps; missing {len(missing)}: {shown}",
            name,
        )
    order = [s for s in ("train", "dev", "test") if s in splits]
    order += sorted(s for s in splits if s not in order)
    return {s: sorted(splits[s]) for s in order}


# --------------------------------------------------------------------------------------------
# dispatch

#: reader functions by format name
READERS: dict[str, Callable[..., Iterator[Sentence]]] = {
    "conll": read_conll,
    "conllu": read_conllu,
    "inline": read_inline,
    "tab": read_tab,
    "text": read_text,
    "raw": read_raw,
}
#: writer functions by format name
WRITERS: dict[str, Callable[..., None]] = {
    "conll": write_conll,
    "conllu": write_conllu,
    "inline": write_inline,
    "tab": write_tab,
    "text": write_text,
    "raw": write_raw,
}
#: the format names, in the order shown to users
FORMATS: tuple[str, ...] = tuple(READERS)

_READER_OPTIONS = {
    "conll": ("label_column", "sep", "labeled"),
    "conllu": ("label",),
    "inline": (),
    "tab": ("labeled",),
    "text": (),
    "raw": (),
}
_WRITER_OPTIONS = {"conll": ("sep",), "conllu": ("label",)}


def _sniff(head: str, name: str = "") -> str:
    if name.endswith(".conllu"):
        return "conllu"
    lines = head.split("\n")
    if len(lines) > 1:
        # after a final newline split() leaves "", which is no blank line; without one, the
        # last line was probably cut in the middle
        lines.pop()
    sniffed: list[str] = []
    blank_between = False
    for line in lines:
        if not line.strip():
            if sniffed:
                blank_between = True
            continue
        if len(sniffed) < 20:
            sniffed.append(line.rstrip("\r"))
        elif blank_between:
            break
        # past 20 lines only a blank line is looked for: one token per line with sentences
        # longer than 20 tokens (citations) is still a column file, not 20 one-word lines
    if not sniffed:
        return "text"
    first = sniffed[0].strip()
    if first == "<NEWREFERENCE>":
        return "inline"
    items = first.split()
    if _tag(items[0]) is not None and _tag(items[0])[0] == "open" and f"</{items[0][1:]}" in first:
        return "inline"
    body = [ln for ln in sniffed if not ln.startswith("#")]
    if body and all(len(ln.split("\t")) == 10 for ln in body) and (
        body[0].split("\t")[0].isdigit() or _is_range_or_empty(body[0].split("\t")[0])
    ):
        return "conllu"
    if body:
        first = body[0]
    if "\t" in first and len(first.split("\t")) >= 2:
        return "tab"
    if first.split()[0] == "-DOCSTART-":
        return "conll"
    counts = {len(ln.split()) for ln in body}
    if len(counts) == 1 and (blank_between or (len(body) >= 2 and counts != {1})):
        return "conll"
    return "text"


def detect_format(path) -> str:
    """Guess the format of a corpus file: ``.conllu`` by extension, otherwise by its first
    non-blank lines (``<NEWREFERENCE>`` or ``<field>`` tags: inline; 10 tab fields: conllu;
    tabs: tab; equal numbers of space-separated fields: conll; anything else: text)."""
    name = _source_name(path)
    if name.endswith(".conllu"):
        return "conllu"
    with _open_binary(path) as fh:
        if hasattr(fh, "peek"):
            head = fh.peek(65536)[:65536]
        else:
            raise ValueError("cannot detect the format of a stream that cannot be peeked; "
                             "pass format=")
    if isinstance(head, bytes):
        head = head.decode("utf-8", errors="replace")
    return _sniff(head, name)


def read_corpus(source, format: str = "auto", **options) -> Iterator[Sentence]:
    """Read ``source`` in ``format`` (one of :data:`FORMATS`, or ``"auto"``).

    ``options`` go to the reader that takes them (``label_column``, ``sep``, ``labeled`` for
    conll; ``labeled`` for tab; ``label`` for conllu); options the chosen reader does not take
    are ignored, so that one call serves every format. Unknown option names are an error.
    """
    known = {o for opts in _READER_OPTIONS.values() for o in opts}
    unknown = set(options) - known
    if unknown:
        raise TypeError(f"unknown reader option(s) {sorted(unknown)}; known: {sorted(known)}")
    if format == "auto" or format is None:
        if isinstance(source, (str, os.PathLike)) and os.fspath(source) != "-":
            format = detect_format(source)
        else:
            stream = source
            if isinstance(source, (str, os.PathLike)):
                stream = getattr(sys.stdin, "buffer", sys.stdin)
            name = _source_name(source)
            if hasattr(stream, "peek"):
                head = stream.peek(65536)[:65536]
            else:  # read a prefix and hand it back to the reader
                head = stream.read(65536)
                source = _Prefixed(head, stream, name)
            if isinstance(head, bytes):
                head = head.decode("utf-8", errors="replace")
            format = _sniff(head, name)
    if format not in READERS:
        raise ValueError(f"unknown format {format!r}; expected one of {', '.join(FORMATS)} or 'auto'")
    kw = {k: v for k, v in options.items() if k in _READER_OPTIONS[format]}
    return READERS[format](source, **kw)


def write_corpus(fh, sentences: Iterable[Sentence], labels_seq=None, format: str | None = None,
                 **options) -> None:
    """Write ``sentences`` with ``labels_seq`` in ``format``; ``None`` or ``"auto"`` uses the
    format the first sentence was read from (``meta["format"]``), else conll. Options a writer
    does not take (see :func:`read_corpus`) are ignored."""
    if format in (None, "auto"):
        it = iter(sentences)
        first = next(it, None)
        if first is None:
            return
        sentences = chain([first], it)
        format = first.meta.get("format", "conll")
    if format not in WRITERS:
        raise ValueError(f"unknown format {format!r}; expected one of {', '.join(FORMATS)}")
    kw = {k: v for k, v in options.items() if k in _WRITER_OPTIONS.get(format, ())}
    WRITERS[format](fh, sentences, labels_seq, **kw)


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


def load_corpus(source, format: str = "auto", **options) -> list[Sentence]:
    """:func:`read_corpus` into a list, with the garbage collector paused (see :func:`gc_paused`)."""
    with gc_paused():
        return list(read_corpus(source, format, **options))
