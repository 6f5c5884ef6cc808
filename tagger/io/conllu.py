"""Universal Dependencies CoNLL-U: the label is the UPOS or the XPOS field; multiword-token
ranges and empty nodes are kept for writing back but are not tokens.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from tagger.errors import CorpusFormatError
from tagger.io.streams import (
    WRITE_BATCH,
    is_number,
    iter_lines,
    no_sentences,
    open_text_out,
    paired,
    show_line,
    source_name,
)
from tagger.sentence import Sentence

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
    name = source_name(source)
    n_sent = 0
    lines: list[str] = []
    token_lines: list[int] = []
    forms: list[str] = []
    labels: list[str] = []

    def make():
        return Sentence(
            [forms],
            labels,
            {"format": "conllu", "label": label, "lines": lines, "token_lines": token_lines},
        )

    for lineno, line in iter_lines(source):
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
                f"expected 10 tab-separated CoNLL-U fields, found {len(fields)}: {show_line(line)}",
                name,
                lineno,
            )
        tid = fields[0]
        if is_number(tid):
            token_lines.append(len(lines) - 1)
            forms.append(fields[1])
            labels.append(fields[pos])
        elif not is_range_or_empty(tid):
            raise CorpusFormatError(
                f"expected a token ID (1, 2-3 or 4.1) in the first field, found {tid!r}",
                name,
                lineno,
            )
    if forms:
        n_sent += 1
        yield make()
    if n_sent == 0:
        raise no_sentences(source)


def is_range_or_empty(tid: str) -> bool:
    for sep in "-.":
        a, found, b = tid.partition(sep)
        if found and is_number(a) and is_number(b):
            return True
    return False


def write_conllu(
    fh, sentences: Iterable[Sentence], labels_seq=None, label: str | None = None
) -> None:
    """Write CoNLL-U with the labels in the UPOS (or XPOS) field.

    Sentences read by :func:`read_conllu` are written back line for line with only that field
    replaced; others get minimal lines (``ID FORM _ UPOS _ _ _ _ _ _``).
    """
    if label is not None and label not in _CONLLU_FIELDS:
        raise ValueError(f"label must be 'upos' or 'xpos', got {label!r}")
    with open_text_out(fh) as out:
        buf: list[str] = []
        for s, labs in paired(sentences, labels_seq):
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
            if len(buf) >= WRITE_BATCH:
                out.write("".join(buf))
                buf.clear()
        out.write("".join(buf))
