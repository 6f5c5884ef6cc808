"""Inline-tagged text: one citation per line with ``<field> ... </field>`` tags (Cora's
``tagged_references``), read to tokens with one label each and written back as tags.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Sequence

from tagger.errors import CorpusFormatError
from tagger.io.streams import (
    WRITE_BATCH,
    iter_lines,
    no_sentences,
    open_text_out,
    paired,
    source_name,
)
from tagger.sentence import Sentence

_TAG_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_.-]*")
_WS_RUN = re.compile(r"(\s+)")
# --------------------------------------------------------------------------------------------
# inline-tagged citations


def inline_tag(item: str):
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
    name = source_name(source)
    n_sent = 0
    after_separator = False
    for lineno, line in iter_lines(source):
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
            tag = inline_tag(item)
            if tag is None:
                if current is None:
                    raise CorpusFormatError(
                        f"expected a field tag such as <title>, found text outside any field: "
                        f"{item!r} (token {k + 1} of the line)",
                        name,
                        lineno,
                    )
                tokens.append(item)
                labels.append(current)
            elif tag[0] == "open":
                if current is not None:
                    raise CorpusFormatError(
                        f"nested field: <{tag[1]}> (token {k + 1}) opened inside the still open "
                        f"<{current}> (token {opened_at + 1}); expected </{current}> first",
                        name,
                        lineno,
                    )
                current = tag[1]
                opened_at = k
            else:
                if current is None:
                    raise CorpusFormatError(
                        f"closing tag </{tag[1]}> (token {k + 1}) without an open field",
                        name,
                        lineno,
                    )
                if tag[1] != current:
                    raise CorpusFormatError(
                        f"mismatched close tag: expected </{current}> to close <{current}> "
                        f"(token {opened_at + 1}), found </{tag[1]}> (token {k + 1})",
                        name,
                        lineno,
                    )
                if k == opened_at + 1:
                    raise CorpusFormatError(
                        f"empty field <{current}> </{current}> (token {k}); a field needs at "
                        "least one token",
                        name,
                        lineno,
                    )
                current = None
        if current is not None:
            raise CorpusFormatError(
                f"unclosed field <{current}> (token {opened_at + 1}): expected </{current}> "
                "before the end of the line",
                name,
                lineno,
            )
        n_sent += 1
        yield Sentence(
            [tokens],
            labels,
            {"format": "inline", "newreference": after_separator, "ws": (leading, seps, trailing)},
        )
        after_separator = False
    if n_sent == 0:
        raise no_sentences(source)


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
    with open_text_out(fh) as out:
        buf: list[str] = []
        for s, labs in paired(sentences, labels_seq):
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
            if len(buf) >= WRITE_BATCH:
                out.write("".join(buf))
                buf.clear()
        out.write("".join(buf))
