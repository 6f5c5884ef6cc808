"""Unlabeled text: pre-tokenized (one sentence per line) or raw (tokenized by spaCy's English
tokenizer, loaded on first use).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator

from tagger.io.streams import (
    WRITE_BATCH,
    iter_lines,
    iter_text_chunks,
    no_sentences,
    open_text_out,
    paired,
)
from tagger.sentence import Sentence

# --------------------------------------------------------------------------------------------
# plain and raw text


def read_text(source) -> Iterator[Sentence]:
    """Pre-tokenized text: one sentence per line, tokens separated by whitespace."""
    n_sent = 0
    for text, _ in iter_text_chunks(source):
        for line in text.split("\n"):
            tokens = line.split()
            if tokens:
                n_sent += 1
                yield Sentence([tokens], None, {"format": "text"})
    if n_sent == 0:
        raise no_sentences(source)


# Signs of text that nobody tokenized: punctuation attached to the word before it
# ("Thursday," "years." at the line's end, 'response,"'), an opening quote or bracket attached
# to the word after it, or a contraction kept whole ("hasn't", "superintendent's"). Tokenized
# text (the Penn Treebank's, CoNLL's) has each of them as a token of its own ("years .",
# "has n't"). A number's own punctuation (1,000, 10:30, 12.5) is no sign: it is followed by a
# digit, not by a space or the line's end.
_ATTACHED = re.compile(
    r"\w[,;:!?]+[\"'’”)\]]*(?:\s|$)"  # a comma, colon... after a word
    r"|\w\.[\"'’”)\]]*$"  # the final full stop after a word
    r"|(?:^|\s)[\"“(\[]\w"  # an opening quote or bracket before one
    r"|[^\W\d_](?:n['’]t|['’](?:s|re|ve|ll|d|m))\b",  # a contraction kept whole
    re.IGNORECASE,
)


def looks_untokenized(lines: list[str]) -> bool:
    """Whether one-sentence-per-line ``lines`` are prose to tokenize (raw text) rather than
    tokens separated by spaces: at least half of them show punctuation attached to words."""
    if not lines:
        return False
    attached = sum(1 for line in lines if _ATTACHED.search(line.strip()))
    return 2 * attached >= len(lines)


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
    for _, line in iter_lines(source):
        if not line.strip():
            continue
        doc = tokenizer(line)
        toks = [t for t in doc if not t.is_space]
        n_sent += 1
        yield Sentence(
            [[t.text for t in toks]],
            None,
            {"format": "raw", "text": line, "idx": [t.idx for t in toks]},
        )
    if n_sent == 0:
        raise no_sentences(source)


def write_text(fh, sentences: Iterable[Sentence], labels_seq=None) -> None:
    """Write one sentence per line, as it was read: its tokens separated by spaces, each as
    ``token/LABEL`` when there are labels (the tagged-text layout of the Penn Treebank; the
    label follows the last slash)."""
    with open_text_out(fh) as out:
        buf: list[str] = []
        for s, labs in paired(sentences, labels_seq):
            if labs is None:
                buf.append(" ".join(s.tokens))
            else:
                buf.append(" ".join(f"{tok}/{lab}" for tok, lab in zip(s.tokens, labs)))
            buf.append("\n")
            if len(buf) >= WRITE_BATCH:
                out.write("".join(buf))
                buf.clear()
        out.write("".join(buf))


write_raw = write_text
