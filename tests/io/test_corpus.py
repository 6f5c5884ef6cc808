"""Corpus readers and writers: small inline examples, malformed input, round trips, the real
corpora (skipped when absent) and the project's sample corpora."""

from __future__ import annotations

import io
import subprocess
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tagger.io.streams as streams
from tagger.errors import CorpusFormatError
from tagger.evaluation.labels import is_bio
from tagger.io import (
    FORMATS,
    detect_format,
    load_corpus,
    read_conll,
    read_conllu,
    read_corpus,
    read_inline,
    read_raw,
    read_split,
    read_tab,
    read_text,
    write_conll,
    write_conllu,
    write_corpus,
    write_inline,
    write_tab,
    write_text,
)

from _helpers import SAMPLES

CONLL = """Confidence NN B-NP
in IN B-PP
the DT B-NP
pound NN I-NP
. . O

He PRP B-NP
left VBD B-VP
. . O

"""


def write(tmp_path, name, text, encoding="utf-8"):
    p = tmp_path / name
    p.write_bytes(text.encode(encoding) if isinstance(text, str) else text)
    return p


def dump(writer, sentences, labels_seq=None, **kw) -> str:
    buf = io.StringIO()
    writer(buf, sentences, labels_seq, **kw)
    return buf.getvalue()


def reference_conll(text: str, labeled: bool = True):
    """A deliberately naive parser used as the oracle for the fast one (label: last column)."""
    groups, rows = [], []
    for line in text.split("\n"):
        fields = line.split()
        if not fields or fields[0] == "-DOCSTART-":
            if rows:
                groups.append(rows)
            rows = []
            continue
        rows.append(fields)
    if rows:
        groups.append(rows)
    result = []
    for rows in groups:
        cols = [list(c) for c in zip(*rows)]
        result.append((cols[:-1], cols[-1]) if labeled else (cols, None))
    return result


# ---------------------------------------------------------------------------------------------
# CoNLL


def test_read_conll_basic(tmp_path):
    p = write(tmp_path, "a.txt", CONLL)
    sents = list(read_conll(p))
    assert len(sents) == 2
    s = sents[0]
    assert s.tokens == ["Confidence", "in", "the", "pound", "."]
    assert s.columns[1] == ["NN", "IN", "DT", "NN", "."]
    assert s.labels == ["B-NP", "B-PP", "B-NP", "I-NP", "O"]
    assert s.meta["label_column"] == 2
    assert len(s) == 5


def test_read_conll_label_column_and_unlabeled(tmp_path):
    p = write(tmp_path, "a.txt", CONLL)
    s = next(read_conll(p, label_column=1))
    assert s.labels[:2] == ["NN", "IN"]
    assert s.columns == [
        ["Confidence", "in", "the", "pound", "."],
        ["B-NP", "B-PP", "B-NP", "I-NP", "O"],
    ]
    assert s.meta["label_column"] == 1
    s = next(read_conll(p, label_column=-3))
    assert s.labels[0] == "Confidence" and s.meta["label_column"] == 0
    s = next(read_conll(p, labeled=False))
    assert s.labels is None and len(s.columns) == 3 and "label_column" not in s.meta


def test_write_conll_puts_labels_back_in_place(tmp_path):
    p = write(tmp_path, "a.txt", CONLL)
    for lc in (0, 1, 2, -1):
        sents = list(read_conll(p, label_column=lc))
        assert dump(write_conll, sents) == CONLL
    sents = list(read_conll(p, label_column=1))
    pred = [["X"] * len(s) for s in sents]
    out = dump(write_conll, sents, pred)
    assert out.split("\n")[0] == "Confidence X B-NP"
    # unlabeled input: predictions are appended as the last column
    sents = list(read_conll(p, labeled=False))
    out = dump(write_conll, sents, pred, sep="\t")
    assert out.split("\n")[0] == "Confidence\tNN\tB-NP\tX"


def test_read_conll_layout_variants(tmp_path):
    text = (
        "\ufeff-DOCSTART- -X- O\r\n\r\n"  # BOM, DOCSTART, CRLF
        "a\tDT  B-NP\r\n"  # tab and double space as separators
        "b NN I-NP\r\n"
        "  \r\n"  # whitespace-only separator line
        "\r\n\r\n"
        "c VB B-VP"  # no final newline
    )
    p = write(tmp_path, "a.txt", text)
    sents = list(read_conll(p))
    assert [s.tokens for s in sents] == [["a", "b"], ["c"]]
    assert [s.labels for s in sents] == [["B-NP", "I-NP"], ["B-VP"]]


def test_read_conll_keeps_non_ascii_whitespace_inside_tokens(tmp_path):
    text = "10\u00a0000 CD B-NP\nfoo\u2009bar NN I-NP\n\nx NN B-NP\n"
    sents = list(read_conll(write(tmp_path, "a.txt", text)))
    assert sents[0].tokens == ["10\u00a0000", "foo\u2009bar"]
    assert sents[1].tokens == ["x"]


def test_read_conll_explicit_separator(tmp_path):
    text = "New York\tNNP\tB-NP\nis\tVBZ\tB-VP\n\n"
    s = next(read_conll(write(tmp_path, "a.txt", text), sep="\t"))
    assert s.tokens == ["New York", "is"]
    assert dump(write_conll, [s], sep="\t") == text


@pytest.mark.parametrize(
    "text, line, found",
    [
        ("a DT B-NP\nb NN\n", 2, "found 2"),  # in the first sentence (slow path)
        ("a DT B-NP\n\nb NN I-NP\nc NN\nd NN I-NP\n", 4, "found 2"),  # later sentence (fast path)
        ("a DT B-NP\n\nb NN\nc NN I-NP X\n", 3, "found 2"),  # counts that add up to 3 + 3
        ("a DT B-NP\n\n\n\nb NN I-NP\n\nc\n", 7, "found 1"),  # after several blank lines
    ],
)
def test_read_conll_field_count_errors(tmp_path, text, line, found):
    p = write(tmp_path, "bad.txt", text)
    with pytest.raises(CorpusFormatError) as e:
        list(read_conll(p))
    assert str(e.value).startswith(f"{p}:{line}: ")
    assert "expected 3" in str(e.value) and found in str(e.value)
    assert e.value.line == line and e.value.path == str(p)


def test_read_conll_label_column_errors(tmp_path):
    p = write(tmp_path, "a.txt", "a DT B-NP\n")
    with pytest.raises(CorpusFormatError, match=r":1: label column 5 does not exist"):
        list(read_conll(p, label_column=5))
    p = write(tmp_path, "b.txt", "just\ntokens\n")
    with pytest.raises(CorpusFormatError, match=r":1: expected at least 2 fields .* labeled=False"):
        list(read_conll(p))
    assert [s.tokens for s in read_conll(p, labeled=False)] == [["just", "tokens"]]


def test_non_utf8_byte_names_file_and_line(tmp_path):
    p = write(tmp_path, "latin1.txt", "a DT B-NP\n\ncaf\xe9 NN B-NP\n", encoding="latin-1")
    with pytest.raises(CorpusFormatError) as e:
        list(read_conll(p))
    assert str(e.value).startswith(f"{p}:3: expected UTF-8")
    assert "0xe9" in str(e.value)
    for reader in (read_text, read_inline, read_tab):
        with pytest.raises(CorpusFormatError, match=r"latin1.txt:3: expected UTF-8"):
            list(reader(p))


def test_non_utf8_byte_in_a_later_chunk(tmp_path, monkeypatch):
    monkeypatch.setattr(streams, "CHUNK_SIZE", 16)
    text = b"".join(b"w%d NN B-NP\n\n" % i for i in range(20)) + b"bad\xff NN O\n"
    p = write(tmp_path, "a.txt", text)
    with pytest.raises(CorpusFormatError, match=r"a.txt:41: expected UTF-8"):
        list(read_conll(p))


def test_empty_and_missing_files(tmp_path):
    for name, text in (("empty.txt", ""), ("blank.txt", "\n\n  \n")):
        p = write(tmp_path, name, text)
        for reader in (read_conll, read_text, read_inline, read_tab, read_conllu):
            with pytest.raises(CorpusFormatError, match="contains no sentences"):
                list(reader(p))
    with pytest.raises(CorpusFormatError, match="no such file"):
        list(read_conll(tmp_path / "missing.txt"))


conll_token = st.text(alphabet="abcXYZ.,-'`$é", min_size=1, max_size=4)


@st.composite
def conll_documents(draw):
    nf = draw(st.integers(1, 4))
    sents = draw(
        st.lists(
            st.lists(st.lists(conll_token, min_size=nf, max_size=nf), min_size=1, max_size=6),
            min_size=1,
            max_size=8,
        )
    )
    parts = []
    for rows in sents:
        for row in rows:
            parts.append(draw(st.sampled_from([" ", "\t", "  "])).join(row) + "\n")
        parts.append(draw(st.sampled_from(["\n", "\n\n", " \n", "\n\n\n"])))
    return nf, "".join(parts)


@settings(max_examples=150, deadline=None)
@given(doc=conll_documents(), chunk=st.integers(1, 64))
def test_read_conll_matches_naive_parser_at_any_chunk_size(tmp_path_factory, doc, chunk):
    nf, text = doc
    path = tmp_path_factory.mktemp("h") / "doc.txt"
    path.write_text(text, encoding="utf-8")
    old = streams.CHUNK_SIZE
    streams.CHUNK_SIZE = chunk
    try:
        got = list(read_conll(path, labeled=nf > 1))
    finally:
        streams.CHUNK_SIZE = old
    assert [(s.columns, s.labels) for s in got] == reference_conll(text, nf > 1)


def test_stdin(monkeypatch):
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(CONLL.encode())))
    assert [len(s) for s in read_conll("-")] == [5, 3]
    # format detection on a stream that cannot be peeked reads a prefix and hands it back
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(CONLL.encode())))
    sents = list(read_corpus("-"))
    assert [len(s) for s in sents] == [5, 3] and sents[0].meta["format"] == "conll"
    monkeypatch.setattr(
        sys, "stdin", io.TextIOWrapper(io.BufferedReader(io.BytesIO(CONLL.encode())))
    )
    assert [len(s) for s in read_corpus("-")] == [5, 3]


def test_file_objects_and_stdout(capsys):
    assert [len(s) for s in read_conll(io.BytesIO(CONLL.encode()))] == [5, 3]
    assert [len(s) for s in read_conll(io.StringIO(CONLL))] == [5, 3]
    sents = list(read_conll(io.StringIO(CONLL)))
    write_conll("-", sents)
    assert capsys.readouterr().out == CONLL


def test_write_conll_checks_label_counts(tmp_path):
    sents = list(read_conll(write(tmp_path, "a.txt", CONLL)))
    with pytest.raises(ValueError, match="sentence 1 has 3 tokens but 2 labels"):
        dump(write_conll, sents, [["O"] * 5, ["O"] * 2])
    with pytest.raises(ValueError, match="more sentences"):
        dump(write_conll, sents, [["O"] * 5])
    with pytest.raises(ValueError, match="more label sequences"):
        dump(write_conll, sents, [["O"] * 5, ["O"] * 3, ["O"]])


# ---------------------------------------------------------------------------------------------
# CoNLL-U

CONLLU = """# sent_id = 1
# text = Don't stop.
1-2\tDon't\t_\t_\t_\t_\t_\t_\t_\t_
1\tDo\tdo\tAUX\tVBP\t_\t3\taux\t_\t_
2\tn't\tnot\tPART\tRB\t_\t3\tadvmod\t_\t_
3\tstop\tstop\tVERB\tVB\t_\t0\troot\t_\tSpaceAfter=No
3.1\tgo\tgo\tVERB\tVB\t_\t_\t_\t3:conj\t_
4\t.\t.\tPUNCT\t.\t_\t3\tpunct\t_\t_

# sent_id = 2
1\tYes\tyes\tINTJ\tUH\t_\t0\troot\t_\t_

"""


def test_read_conllu(tmp_path):
    p = write(tmp_path, "a.conllu", CONLLU)
    sents = list(read_conllu(p))
    assert [s.tokens for s in sents] == [["Do", "n't", "stop", "."], ["Yes"]]
    assert sents[0].labels == ["AUX", "PART", "VERB", "PUNCT"]
    assert next(read_conllu(p, label="xpos")).labels == ["VBP", "RB", "VB", "."]
    assert dump(write_conllu, sents) == CONLLU
    out = dump(write_conllu, sents, [["A", "B", "C", "D"], ["E"]])
    assert "1\tDo\tdo\tA\tVBP" in out and "3.1\tgo\tgo\tVERB" in out
    sents_x = list(read_conllu(p, label="xpos"))
    out = dump(write_conllu, sents_x, [["A", "B", "C", "D"], ["E"]])
    assert "1\tDo\tdo\tAUX\tA" in out
    # sentences from elsewhere get minimal lines
    out = dump(write_conllu, list(read_text(io.StringIO("a b\n"))), [["X", "Y"]])
    assert out == "1\ta\t_\tX\t_\t_\t_\t_\t_\t_\n2\tb\t_\tY\t_\t_\t_\t_\t_\t_\n\n"


def test_read_conllu_errors(tmp_path):
    p = write(tmp_path, "a.conllu", "# c\n1\tDo\tdo\tAUX\n")
    with pytest.raises(
        CorpusFormatError, match=r"a.conllu:2: expected 10 tab-separated CoNLL-U fields, found 4"
    ):
        list(read_conllu(p))
    p = write(tmp_path, "b.conllu", "x\tDo\tdo\tAUX\tVBP\t_\t3\taux\t_\t_\n")
    with pytest.raises(CorpusFormatError, match=r"b.conllu:1: expected a token ID"):
        list(read_conllu(p))
    # str.isdigit takes superscripts and other scripts' digits for numbers
    p = write(tmp_path, "c.conllu", "\u00b9\tDo\tdo\tAUX\tVBP\t_\t3\taux\t_\t_\n")
    with pytest.raises(CorpusFormatError, match=r"c.conllu:1: expected a token ID"):
        list(read_conllu(p))
    with pytest.raises(ValueError):
        read_conllu(p, label="lemma")


# ---------------------------------------------------------------------------------------------
# inline citations

INLINE = (
    "<NEWREFERENCE>\n"
    "<author> A. Cau, and W.-P. de Roever. </author> <title> Formalising strategies. </title> "
    "<date> 1989. </date>\n"
    "<NEWREFERENCE>\n"
    "<author> M. Kitsuregawa. </author>  <journal> New Generation Computing, </journal> "
    "<volume> 1(1), </volume> \n"
)


def test_read_inline(tmp_path):
    p = write(tmp_path, "refs.txt", INLINE)
    sents = list(read_inline(p))
    assert len(sents) == 2
    assert sents[0].tokens[:3] == ["A.", "Cau,", "and"]
    assert sents[0].labels == ["author"] * 6 + ["title"] * 2 + ["date"]
    assert sents[1].labels == ["author", "author", "journal", "journal", "journal", "volume"]
    # byte-for-byte round trip, odd whitespace included
    assert dump(write_inline, sents) == INLINE


def test_write_inline_from_predictions(tmp_path):
    sents = list(read_inline(write(tmp_path, "refs.txt", INLINE)))
    pred = [
        ["author"] * 6 + ["date"] * 3,
        ["B-author", "I-author", "B-journal", "I-journal", "B-journal", "I-volume"],
    ]
    out = dump(write_inline, sents, pred).split("\n")
    assert (
        out[1] == "<author> A. Cau, and W.-P. de Roever. </author> "
        "<date> Formalising strategies. 1989. </date>"
    )
    assert out[3] == (
        "<author> M. Kitsuregawa. </author> <journal> New Generation </journal> "
        "<journal> Computing, </journal> <volume> 1(1), </volume> "
    )
    again = list(read_inline(io.StringIO("\n".join(out))))
    assert again[1].labels == ["author", "author", "journal", "journal", "journal", "volume"]


@pytest.mark.parametrize(
    "line, message",
    [
        (
            "<author> A. B. </author> <title> T",
            r"unclosed field <title> \(token 5\): expected </title>",
        ),
        ("<author> A. B. </title>", r"mismatched close tag: expected </author> .* found </title>"),
        ("<author> A. </author> and <title> T </title>", r"text outside any field: 'and'"),
        (
            "<author> A. <title> T </title> </author>",
            r"nested field: <title> .* inside the still open <author>",
        ),
        ("<author> </author>", r"empty field <author>"),
        ("</author> x", r"closing tag </author> \(token 1\) without an open field"),
    ],
)
def test_read_inline_errors(tmp_path, line, message):
    p = write(
        tmp_path, "refs.txt", f"<NEWREFERENCE>\n<date> 1999. </date>\n<NEWREFERENCE>\n{line}\n"
    )
    with pytest.raises(CorpusFormatError, match=message) as e:
        list(read_inline(p))
    assert str(e.value).startswith(f"{p}:4: ")


def test_inline_without_separator_lines():
    text = "<date> 1999. </date>\n<title> T </title>\n"
    sents = list(read_inline(io.StringIO(text)))
    assert len(sents) == 2 and not sents[0].meta["newreference"]
    assert dump(write_inline, sents) == text


# ---------------------------------------------------------------------------------------------
# tab

TAB = (
    "A\tauthor\ta|_start_|.|true|NN\n.\tauthor\t.|a|x|false|.\n\n"
    "1988\tdate\t1988|_start_|_end_|false|CD\n"
)


def test_read_tab(tmp_path):
    p = write(tmp_path, "c.txt", TAB)
    sents = list(read_tab(p))
    assert sents[0].tokens == ["A", "."]
    assert sents[0].labels == ["author", "author"]
    assert sents[0].columns[1] == ["a|_start_|.|true|NN", ".|a|x|false|."]
    assert dump(write_tab, sents) == TAB + "\n"
    unl = list(read_tab(p, labeled=False))
    assert unl[0].labels is None and unl[0].columns == sents[0].columns
    out = dump(write_tab, unl, [["title", "title"], ["pages"]])
    assert out.split("\n")[0] == "A\ttitle\ta|_start_|.|true|NN"
    # tokens only
    only = list(read_tab(io.StringIO("A\nB\n\nC\n"), labeled=False))
    assert [s.tokens for s in only] == [["A", "B"], ["C"]]
    assert dump(write_tab, only, [["x", "y"], ["z"]]) == "A\tx\nB\ty\n\nC\tz\n\n"


def test_read_tab_errors(tmp_path):
    p = write(tmp_path, "c.txt", "A\tauthor\tx\nB\tauthor\n")
    with pytest.raises(
        CorpusFormatError, match=r"c.txt:2: expected 3 '\\t'-separated fields .* found 2"
    ):
        list(read_tab(p))


# ---------------------------------------------------------------------------------------------
# text and raw


def test_read_text_and_write_text(tmp_path):
    p = write(tmp_path, "t.txt", "The cat sat .\n\n  \nIt left .\n")
    sents = list(read_text(p))
    assert [s.tokens for s in sents] == [["The", "cat", "sat", "."], ["It", "left", "."]]
    assert all(s.labels is None for s in sents)
    out = dump(write_text, sents, [["DT", "NN", "VBD", "."], ["PRP", "VBD", "."]])
    assert out == "The/DT cat/NN sat/VBD ./.\nIt/PRP left/VBD ./.\n"
    assert dump(write_text, sents, None) == "The cat sat .\nIt left .\n"  # as it was read


def test_read_raw_uses_spacy_tokenizer(tmp_path):
    p = write(tmp_path, "raw.txt", "Mr. Smith didn't pay $5.20 (yet).\n\nHe left.\n")
    sents = list(read_raw(p))
    assert sents[0].tokens == [
        "Mr.",
        "Smith",
        "did",
        "n't",
        "pay",
        "$",
        "5.20",
        "(",
        "yet",
        ")",
        ".",
    ]
    assert sents[1].tokens == ["He", "left", "."]
    assert sents[0].meta["idx"][:2] == [0, 4]


def test_importing_corpus_does_not_import_spacy():
    code = (
        "import sys, tagger.io, tagger.evaluation.labels, tagger.evaluation.metrics; "
        "print('spacy' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


# ---------------------------------------------------------------------------------------------
# split file

SPLIT = (
    "# comment\n# another\nref_index_0based\tline_in_tagged_references_1based\tsplit\n"
    "0\t2\tdev\n1\t4\ttrain\n2\t6\ttest\n3\t8\ttrain\n"
)


def test_read_split(tmp_path):
    assert read_split(write(tmp_path, "s.tsv", SPLIT)) == {"train": [1, 3], "dev": [0], "test": [2]}


@pytest.mark.parametrize(
    "row, line, message",
    [
        ("x\t10\ttrain", 8, "expected a non-negative integer citation index"),
        ("\u00b2\t10\ttrain", 8, "expected a non-negative integer citation index"),
        ("2\t10\ttrain", 8, r"citation index 2 is listed twice \(first at line 6\)"),
        ("4\ttrain", 8, "expected 3 tab-separated fields, found 2"),
        ("4\tten\ttrain", 8, "expected an integer in column 'line_in_tagged_references_1based'"),
        ("4\t10\t", 8, "expected a split name"),
    ],
)
def test_read_split_errors(tmp_path, row, line, message):
    p = write(tmp_path, "s.tsv", SPLIT + row + "\n")
    with pytest.raises(CorpusFormatError, match=message) as e:
        read_split(p)
    assert e.value.line == line


def test_read_split_gap(tmp_path):
    with pytest.raises(CorpusFormatError, match=r"without gaps; missing 2: 4, 5"):
        read_split(write(tmp_path, "s.tsv", SPLIT + "6\t14\ttrain\n"))
    # a huge index is a gap too (10**20 - 5 of 0..10**20 - 1 missing), reported without
    # building the whole range
    with pytest.raises(
        CorpusFormatError,
        match=r"cover 0..99999999999999999999 without gaps; missing "
        r"99999999999999999995: 4, 5, 6, 7, 8, 9, 10, 11, 12, 13 \.\.\.",
    ):
        read_split(write(tmp_path, "s.tsv", SPLIT + "99999999999999999999\t14\ttrain\n"))
    with pytest.raises(CorpusFormatError, match=r"missing 3: 1, 3, 5$"):
        read_split(write(tmp_path, "s.tsv", "0\t1\ttrain\n2\t2\tdev\n4\t3\ttest\n6\t4\ttest\n"))


# ---------------------------------------------------------------------------------------------
# detection and dispatch


def test_detect_format_and_dispatch(tmp_path):
    cases = {
        "a.txt": (CONLL, "conll"),
        "b.conllu": (CONLLU, "conllu"),
        "c.txt": (CONLLU, "conllu"),
        "d.txt": (INLINE, "inline"),
        "e.txt": ("<title> A </title> <date> 1 </date>\n", "inline"),
        "f.txt": (TAB, "tab"),
        "g.txt": ("The cat sat on the mat .\nIt was happy .\n", "text"),
        "h.txt": ("One\nword\nper\nline\n\nsecond\nsentence\n", "conll"),
        "i.txt": ("-DOCSTART- -X- O\n\nEU NNP B-ORG\n", "conll"),
        # one token per line, sentences longer than the 20 lines whose fields are compared
        "j.txt": (
            "\n".join(f"w{i}" for i in range(35))
            + "\n\n"
            + "\n".join(f"v{i}" for i in range(30))
            + "\n",
            "conll",
        ),
    }
    for name, (text, fmt) in cases.items():
        p = write(tmp_path, name, text)
        assert detect_format(p) == fmt, name
        sents = list(read_corpus(p, labeled=False))
        assert sents and sents[0].meta["format"] == fmt
        if name == "j.txt":
            assert [len(s) for s in sents] == [35, 30]
    assert set(FORMATS) == {"conll", "conllu", "inline", "tab", "text", "raw"}
    with pytest.raises(TypeError, match="unknown reader option"):
        read_corpus(tmp_path / "a.txt", labelled=True)
    with pytest.raises(ValueError, match="unknown format"):
        read_corpus(tmp_path / "a.txt", format="xml")


def test_write_corpus_uses_the_format_read(tmp_path):
    for text, name in (
        (CONLL, "a.txt"),
        (CONLLU, "b.conllu"),
        (INLINE, "c.txt"),
        (TAB + "\n", "d.txt"),
    ):
        sents = load_corpus(write(tmp_path, name, text))
        buf = io.StringIO()
        write_corpus(buf, sents)
        assert buf.getvalue() == text
    buf = io.StringIO()
    write_corpus(buf, list(read_corpus(tmp_path / "a.txt")), None, format="text")
    assert buf.getvalue().startswith("Confidence/B-NP in/B-PP ")


# ---------------------------------------------------------------------------------------------
# the real corpora (PROVENANCE.md counts)


def test_conll2000_counts_and_round_trip(corpora):
    for name, n_sent, n_tok in (("train.txt", 8936, 211727), ("test.txt", 2012, 47377)):
        path = corpora / "conll2000" / name
        sents = load_corpus(path)
        assert (len(sents), sum(map(len, sents))) == (n_sent, n_tok)
        assert all(len(s.columns) == 2 and s.meta["label_column"] == 2 for s in sents)
        assert is_bio({lab for s in sents for lab in s.labels})
        assert dump(write_conll, sents) == path.read_text(encoding="ascii")
        assert detect_format(path) == "conll"


def _citations(corpora):
    return corpora / "citations"


FIELDS = {
    "author",
    "title",
    "date",
    "pages",
    "booktitle",
    "volume",
    "journal",
    "location",
    "publisher",
    "tech",
    "institution",
    "editor",
    "note",
}


def test_tagged_references_round_trip(corpora):
    path = _citations(corpora) / "tagged_references.txt"
    sents = list(read_inline(path))
    assert len(sents) == 500
    assert sum(map(len, sents)) == 11609
    assert {lab for s in sents for lab in s.labels} == FIELDS
    assert dump(write_inline, sents).encode() == path.read_bytes()
    assert detect_format(path) == "inline"


def test_cpf_tab_files(corpora):
    root = _citations(corpora) / "cpf_zheng_chang_2016"
    expected = {
        "citation_train.300.1.txt": (300, 10803),
        "citation_dev.txt": (100, 3651),
        "citation_test.txt": (100, 3502),
        "citation_unlabeled.txt": (1000, 34767),
    }
    for name, counts in expected.items():
        path = root / name
        labeled = name != "citation_unlabeled.txt"
        sents = list(read_tab(path, labeled=labeled))
        assert (len(sents), sum(map(len, sents))) == counts
        if labeled:
            assert {lab for s in sents for lab in s.labels} <= FIELDS
            assert dump(write_tab, sents) == path.read_text()
        else:
            assert sents[0].labels is None
            assert dump(write_tab, sents, [["author"] * len(s) for s in sents]) == path.read_text()


def test_split_file(corpora):
    root = _citations(corpora)
    split = read_split(root / "split_cpf_zheng_chang_2016.tsv")
    assert {k: len(v) for k, v in split.items()} == {"train": 300, "dev": 100, "test": 100}
    assert sorted(i for v in split.values() for i in v) == list(range(500))


# ---------------------------------------------------------------------------------------------
# the project's sample corpora

PTB_TAGS = set(
    "# $ '' ( ) , . : CC CD DT EX FW IN JJ JJR JJS LS MD NN NNP NNPS NNS PDT POS PRP PRP$ "
    "RB RBR RBS RP SYM TO UH VB VBD VBG VBN VBP VBZ WDT WP WP$ WRB ``".split()
)
UPOS = set("ADJ ADP ADV AUX CCONJ DET INTJ NOUN NUM PART PRON PROPN PUNCT SCONJ SYM VERB X".split())


@pytest.mark.parametrize(
    "name, lo, hi", [("sample_chunk.txt", 60, 80), ("sample_chunk_dev.txt", 12, 20)]
)
def test_sample_chunk(name, lo, hi):
    path = SAMPLES / name
    assert detect_format(path) == "conll"
    sents = list(read_conll(path))
    assert lo <= len(sents) <= hi
    for s in sents:
        assert set(s.columns[1]) <= PTB_TAGS, s.tokens
        assert is_bio(s.labels)
        # IOB2: every chunk starts with B-
        for prev, lab in zip(["O"] + s.labels, s.labels):
            if lab.startswith("I-"):
                assert prev[2:] == lab[2:], (s.tokens, lab)
    assert dump(write_conll, sents) == path.read_text(encoding="utf-8")


def test_sample_citations():
    path = SAMPLES / "sample_citations.txt"
    sents = list(read_inline(path))
    assert 25 <= len(sents) <= 40
    assert {lab for s in sents for lab in s.labels} == FIELDS
    assert dump(write_inline, sents) == path.read_text(encoding="utf-8")


def test_sample_conllu_and_text():
    sents = list(read_conllu(SAMPLES / "sample_pos.conllu"))
    assert 15 <= len(sents) <= 30
    assert {lab for s in sents for lab in s.labels} <= UPOS
    assert dump(write_conllu, sents) == (SAMPLES / "sample_pos.conllu").read_text(encoding="utf-8")
    xpos = {
        lab for s in read_conllu(SAMPLES / "sample_pos.conllu", label="xpos") for lab in s.labels
    }
    assert xpos <= PTB_TAGS
    text = list(read_corpus(SAMPLES / "sample_text.txt", format="raw"))
    assert len(text) >= 3


def test_one_line_of_text_is_text_not_conll(tmp_path):
    from tagger.io import detect_format

    path = tmp_path / "one.txt"
    path.write_text("the cat sat\n", encoding="utf-8")
    assert detect_format(path) == "text"
    path.write_text("The DT B-NP\ncat NN I-NP\n\n", encoding="utf-8")
    assert detect_format(path) == "conll"
