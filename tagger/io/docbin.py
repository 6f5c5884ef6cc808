"""spaCy ``Doc`` objects as sentences, and ``DocBin`` (``.spacy``) files as a training corpus.

A *field* names what a column is read from on a Doc:

``words``        the token texts (``text`` and ``orth`` are the same)
``tag``, ``pos``, ``lemma``, ``norm``, ``morph``, ``dep``   ``Token.<attr>_``
``ents``         BIO labels of ``doc.ents`` (``B-ORG``, ``I-ORG``, ``O``)
``spans:KEY``    BIO labels of ``doc.spans[KEY]`` (non-overlapping spans)
``_.NAME``       the ``Token._.NAME`` extension, as a string

This module imports spaCy when it is used; ``import tagger`` does not import it.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence

from tagger.errors import CorpusFormatError, FieldError
from tagger.io.records import split_fields
from tagger.sentence import Sentence

TOKEN_ATTRS = ("tag", "pos", "lemma", "norm", "morph", "dep")
WORDS = ("words", "text", "orth")
#: ``Doc.has_annotation`` names of the token attributes
ANNOTATION = {"tag": "TAG", "pos": "POS", "lemma": "LEMMA", "morph": "MORPH", "dep": "DEP"}


def check_field(field: str) -> str:
    if field in WORDS or field in TOKEN_ATTRS or field == "ents":
        return field
    if field.startswith("spans:") and len(field) > 6:
        return field
    if field.startswith("_.") and len(field) > 2:
        return field
    raise FieldError(
        f"unknown Doc field {field!r}; expected one of words, "
        f"{', '.join(TOKEN_ATTRS)}, ents, spans:KEY or _.NAME"
    )


def describe(field: str) -> str:
    """Where a field lives on a Doc, as a user writes it."""
    if field in WORDS:
        return "Token.text"
    if field in TOKEN_ATTRS:
        return f"Token.{field}_"
    if field == "ents":
        return "doc.ents"
    if field.startswith("spans:"):
        return f"doc.spans[{field[6:]!r}]"
    return f"Token._.{field[2:]}"


def spans_to_bio(n: int, spans) -> list[str]:
    """BIO labels of ``n`` tokens from spans with ``start``, ``end`` and ``label_``."""
    labels = ["O"] * n
    for sp in sorted(spans, key=lambda s: (s.start, s.end)):
        if any(lab != "O" for lab in labels[sp.start : sp.end]):
            raise CorpusFormatError(
                f"span {sp.text!r} ({sp.start}-{sp.end}) overlaps another "
                f"span; BIO labels need non-overlapping spans"
            )
        labels[sp.start] = "B-" + sp.label_
        for i in range(sp.start + 1, sp.end):
            labels[i] = "I-" + sp.label_
    return labels


def has_field(doc, field: str) -> bool:
    """Whether ``doc`` carries ``field`` (an empty ``doc.ents`` counts as set when the Doc has
    entity annotation, i.e. some token is marked outside)."""
    if field in WORDS:
        return True
    if field in ANNOTATION:
        return doc.has_annotation(ANNOTATION[field])
    if field == "norm":
        return True
    if field == "ents":
        return doc.has_annotation("ENT_IOB")
    if field.startswith("spans:"):
        return field[6:] in doc.spans
    return doc.has_extension(field[2:]) if hasattr(doc, "has_extension") else True


def doc_field(doc, field: str) -> list[str]:
    """The column ``field`` of ``doc`` (one string per token)."""
    if field in WORDS:
        return [t.text for t in doc]
    if field in TOKEN_ATTRS:
        attr = field + "_"
        if field == "morph":
            return [str(t.morph) for t in doc]
        return [getattr(t, attr) for t in doc]
    if field == "ents":
        return [f"{t.ent_iob_}-{t.ent_type_}" if t.ent_iob_ in ("B", "I") else "O" for t in doc]
    if field.startswith("spans:"):
        return spans_to_bio(len(doc), doc.spans.get(field[6:], []))
    name = field[2:]
    return [str(t._.get(name)) for t in doc]


#: Doc fields read with Doc.to_array (string hashes); the others go through Token objects
ARRAY_ATTR = {
    "words": "ORTH",
    "text": "ORTH",
    "orth": "ORTH",
    "tag": "TAG",
    "pos": "POS",
    "lemma": "LEMMA",
    "norm": "NORM",
    "dep": "DEP",
}


class StringCache(dict):
    """hash -> string of a spaCy StringStore, remembered while a batch is read."""

    def __init__(self, store):
        super().__init__()
        self.store = store

    def __missing__(self, key):
        value = self[key] = self.store[key]
        return value


def doc_columns(doc, fields: Sequence[str], strings: StringCache) -> list[list[str]]:
    """The columns ``fields`` of ``doc``, one string per token each.

    Token attributes come out of the Doc as one array of string hashes (``Doc.to_array``),
    turned into strings through ``strings``: making a Token object per token and attribute
    would cost more than featurizing and decoding together."""
    from spacy import attrs as spacy_attrs

    attrs = [ARRAY_ATTR.get(f) for f in fields]
    ids = [spacy_attrs.IDS[a] for a in attrs if a is not None]
    arr = doc.to_array(ids).reshape(len(doc), len(ids)).T.tolist() if ids else []
    cols, j = [], 0
    for field, attr in zip(fields, attrs):
        if attr is None:
            cols.append(doc_field(doc, field))
        else:
            cols.append([strings[h] for h in arr[j]])
            j += 1
    return cols


def default_docbin_fields(docs) -> list[str]:
    """``words``, ``tag`` when the label is not the tag and the Docs have tags, and the label:
    the one ``doc.spans`` key, else ``ents``, else ``tag``."""
    if not docs:
        return ["words", "tag"]
    d = docs[0]
    keys = list(d.spans)
    if len(keys) == 1:
        label = f"spans:{keys[0]}"
    elif d.has_annotation("ENT_IOB") and any(t.ent_iob_ != "O" for doc in docs[:50] for t in doc):
        label = "ents"
    elif d.has_annotation("TAG"):
        label = "tag"
    else:
        raise CorpusFormatError(
            "the Docs carry no spans, entities or tags to learn; "
            "give the fields, e.g. --fields words,tag,spans:chunks"
        )
    fields = ["words"]
    if label != "tag" and d.has_annotation("TAG"):
        fields.append("tag")
    return fields + [label]


def read_docbin(
    path: str | os.PathLike, fields: Sequence[str] | str | None = None, labeled: bool = True
) -> Iterator[Sentence]:
    """Sentences of a spaCy ``DocBin`` file (``.spacy``): one per Doc, or one per sentence
    when the Docs have sentence boundaries (``doc.sents``)."""
    import spacy
    from spacy.tokens import DocBin

    path = os.fspath(path)
    try:
        with open(path, "rb") as fh:
            data = fh.read()
        docbin = DocBin().from_bytes(data)
    except OSError:
        raise
    except Exception as exc:
        raise CorpusFormatError(
            f"not a spaCy DocBin file ({type(exc).__name__}: {exc})", path
        ) from None
    vocab = spacy.blank("xx").vocab
    strings = StringCache(vocab.strings)
    docs = list(docbin.get_docs(vocab))
    fields = split_fields(fields, FieldError)
    fields = [check_field(f) for f in fields] if fields else default_docbin_fields(docs)
    if labeled and len(fields) < 2:
        raise CorpusFormatError(
            f"fields {','.join(fields)} name no label; give the input "
            f"fields then the label, e.g. words,tag,spans:chunks",
            path,
        )
    for i, doc in enumerate(docs):
        yield from doc_sentences(doc, fields, strings, labeled, f"Doc {i + 1}", path)


def doc_sentences(
    doc,
    fields: Sequence[str],
    strings: StringCache,
    labeled: bool = True,
    where: str = "Doc",
    path: str | None = None,
) -> Iterator[Sentence]:
    """The sentences of one Doc (the whole Doc without sentence boundaries): its columns
    ``fields``, the last one the labels when ``labeled``."""
    for f in fields:
        if not has_field(doc, f):
            raise CorpusFormatError(f"{where} has no {describe(f)} (field {f!r})", path)
    try:
        cols = doc_columns(doc, fields, strings)
    except CorpusFormatError as exc:
        raise CorpusFormatError(f"{where}: {exc}", path) from None
    inputs = list(fields[:-1] if labeled else fields)  # named in JSON output
    sent = Sentence(cols[:-1], cols[-1]) if labeled else Sentence(cols)
    bounds = [0, len(doc)]
    if doc.has_annotation("SENT_START"):
        bounds = [s.start for s in doc.sents] + [len(doc)]
    for a, b in zip(bounds[:-1], bounds[1:]):
        if b > a:
            yield Sentence(
                [c[a:b] for c in sent.columns],
                None if sent.labels is None else sent.labels[a:b],
                {"format": "conll", "fields": inputs},
            )
