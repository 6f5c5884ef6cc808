"""Format names, detection and dispatch: one reader and one writer per format, chosen by name
or sniffed from a file's first lines.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterable, Iterator
from itertools import chain

from tagger.io.columns import read_conll, read_tab, write_conll, write_tab
from tagger.io.conllu import is_range_or_empty, read_conllu, write_conllu
from tagger.io.inline import inline_tag, read_inline, write_inline
from tagger.io.jsonl import write_jsonl
from tagger.io.streams import Prefixed, gc_paused, is_number, open_binary, source_name
from tagger.io.text import looks_untokenized, read_raw, read_text, write_raw, write_text
from tagger.sentence import Sentence

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
    "jsonl": write_jsonl,  # output only: JSON lines input is read by datasets (tagger.io.hf)
}
#: the format names, in the order shown to users
FORMATS: tuple[str, ...] = tuple(READERS)
#: what ``tagger tag --output-format`` can write besides ``auto`` (the input's format)
OUTPUT_FORMATS: tuple[str, ...] = ("jsonl", "conll", "tab", "text")

_READER_OPTIONS = {
    "conll": ("label_column", "sep", "labeled"),
    "conllu": ("label",),
    "inline": (),
    "tab": ("labeled",),
    "text": (),
    "raw": (),
}
_WRITER_OPTIONS = {"conll": ("sep",), "conllu": ("label",), "jsonl": ("names",)}


def sniff_format(head: str, name: str = "") -> str:
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
    if (
        inline_tag(items[0]) is not None
        and inline_tag(items[0])[0] == "open"
        and f"</{items[0][1:]}" in first
    ):
        return "inline"
    body = [ln for ln in sniffed if not ln.startswith("#")]
    if (
        body
        and all(len(ln.split("\t")) == 10 for ln in body)
        and (is_number(body[0].split("\t")[0]) or is_range_or_empty(body[0].split("\t")[0]))
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
    # one sentence per line: tokens separated by spaces, or prose for the tokenizer
    return "raw" if looks_untokenized(body) else "text"


def detect_format(path) -> str:
    """Guess the format of a corpus file: ``.conllu`` by extension, otherwise by its first
    non-blank lines (``<NEWREFERENCE>`` or ``<field>`` tags: inline; 10 tab fields: conllu;
    tabs: tab; equal numbers of space-separated fields: conll; anything else is one sentence
    per line: raw when punctuation is attached to the words, as in untokenized prose
    (:func:`~tagger.io.text.looks_untokenized`), else text)."""
    name = source_name(path)
    if name.endswith(".conllu"):
        return "conllu"
    with open_binary(path) as fh:
        if hasattr(fh, "peek"):
            head = fh.peek(65536)[:65536]
        else:
            raise ValueError(
                "cannot detect the format of a stream that cannot be peeked; pass format="
            )
    if isinstance(head, bytes):
        head = head.decode("utf-8", errors="replace")
    return sniff_format(head, name)


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
            name = source_name(source)
            if hasattr(stream, "peek"):
                head = stream.peek(65536)[:65536]
            else:  # read a prefix and hand it back to the reader
                head = stream.read(65536)
                source = Prefixed(head, stream, name)
            if isinstance(head, bytes):
                head = head.decode("utf-8", errors="replace")
            format = sniff_format(head, name)
    if format not in READERS:
        raise ValueError(
            f"unknown format {format!r}; expected one of {', '.join(FORMATS)} or 'auto'"
        )
    kw = {k: v for k, v in options.items() if k in _READER_OPTIONS[format]}
    return READERS[format](source, **kw)


def write_corpus(
    fh, sentences: Iterable[Sentence], labels_seq=None, format: str | None = None, **options
) -> None:
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


def load_corpus(source, format: str = "auto", **options) -> list[Sentence]:
    """:func:`read_corpus` into a list, with the garbage collector paused
    (:func:`gc_paused`)."""
    with gc_paused():
        return list(read_corpus(source, format, **options))
