"""Column files: CoNLL-style ``token ... label`` lines with a blank line between sentences,
and the tab-separated CPF citation files.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator

from tagger.errors import CorpusFormatError
from tagger.io.streams import (
    CHUNK_SIZE,
    WRITE_BATCH,
    iter_text_chunks,
    no_sentences,
    open_text_out,
    paired,
    show_line,
    source_name,
)
from tagger.sentence import Sentence

# Characters that ``str.split()`` treats as whitespace besides space, tab and newline. Column
# files separate fields by spaces or tabs only, so a token containing one of these (a
# no-break space, say) must not be split: chunks that contain one take the slow path, which
# splits on spaces and tabs only. Searched once per chunk, never per line.
_OTHER_WS = re.compile(
    "[\x0b\x0c\x1c-\x1f\x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]"
)
_SPACE_TAB = re.compile("[ \t]+")
# a whitespace-only line (used only when a chunk has no plain blank line at all)
_WS_LINE = re.compile(r"(?m)^[ \t\r\f\v]+$")

_MARK = "\x00"  # end-of-line marker inserted by the fast CoNLL path
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
    name = source_name(source)
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
    for text, lineno in iter_text_chunks(source):
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
        raise no_sentences(source)


class _ColumnState:
    __slots__ = (
        "name",
        "label_column",
        "sep",
        "fmt",
        "drop_labels",
        "nf",
        "lc",
        "inputs",
        "step",
        "first_line",
        "marks",
        "joiner",
    )

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
                    f"expected at least 2 fields (token and label), found {nf}: {show_line(line)}; "
                    "read unlabeled input with labeled=False",
                    self.name,
                    lineno,
                )
            if nf < 2:  # tab file without a label column: tokens only
                lc = None
            elif not -nf <= lc < nf:
                raise CorpusFormatError(
                    f"label column {lc} does not exist: the first token line has {nf} fields "
                    f"{show_line(line)}",
                    self.name,
                    lineno,
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
                    f"(line {self.first_line}), found {len(fields)}: {show_line(line)}",
                    self.name,
                    i,
                )
            rows.append(fields)
        if rows:
            yield self._rows_to_sentence(rows)

    def _rows_to_sentence(self, rows) -> Sentence:
        cols = [list(c) for c in zip(*rows)]
        labels = cols[self.lc] if self.lc is not None else None
        return self._sentence([cols[c] for c in self.inputs], labels)


def write_conll(fh, sentences: Iterable[Sentence], labels_seq=None, sep: str = " ") -> None:
    """Write one token per line, a blank line after each sentence.

    Each line holds the sentence's input columns with the label inserted at
    ``meta["label_column"]`` (so reading a labeled file and writing predictions reproduces its
    layout with the gold labels replaced) or appended as the last column. ``labels_seq=None``
    writes the sentences' own labels; a sentence without labels is written with its input
    columns only.
    """
    with open_text_out(fh) as out:
        buf: list[str] = []
        nl = "\n"
        for s, labels in paired(sentences, labels_seq):
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
            if len(buf) >= WRITE_BATCH:
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
