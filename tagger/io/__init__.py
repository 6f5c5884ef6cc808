"""Corpus input and output: streaming readers and writers, one module per format.

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

from tagger.io.columns import read_conll, read_tab, write_conll, write_tab
from tagger.io.conllu import read_conllu, write_conllu
from tagger.io.formats import (
    FORMATS,
    READERS,
    WRITERS,
    detect_format,
    load_corpus,
    read_corpus,
    sniff_format,
    write_corpus,
)
from tagger.io.inline import read_inline, write_inline
from tagger.io.splits import read_split
from tagger.io.streams import gc_paused
from tagger.io.text import read_raw, read_text, write_raw, write_text

__all__ = [
    "FORMATS",
    "READERS",
    "WRITERS",
    "detect_format",
    "sniff_format",
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
