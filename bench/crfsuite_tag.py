"""Tag a CoNLL-2000 file with a python-crfsuite chunking model: the script a python-crfsuite
user would write.

    python bench/crfsuite_tag.py MODEL INPUT OUTPUT [--features handwritten|featurizer]

INPUT has ``word POS [chunk]`` lines and a blank line after each sentence; OUTPUT gets
``word POS predicted`` lines with the same blank lines, so it has exactly as many lines as
INPUT. The attributes are those of the project's ``chunk`` preset, as strings:
``handwritten`` builds them with :func:`chunk_attributes` below (no project import),
``featurizer`` with ``tagger.features.Featurizer.string_attributes``; both give identical
lists (``bench/chunking.py`` checks this and times both, and uses the faster one).
"""

from __future__ import annotations

import sys

import pycrfsuite

BOS, EOS = "__BOS__", "__EOS__"


def chunk_attributes(words: list[str], tags: list[str]) -> list[list[str]]:
    """The ``chunk`` preset's 19 templates, in its order and with its attribute names."""
    n = len(words)
    W = [BOS, BOS, *words, EOS, EOS]
    P = [BOS, BOS, *tags, EOS, EOS]
    out = []
    for i in range(n):
        w_2, w_1, w0, w1, w2 = W[i : i + 5]
        p_2, p_1, p0, p1, p2 = P[i : i + 5]
        out.append(
            [
                "word[-2]=" + w_2,
                "word[-1]=" + w_1,
                "word[0]=" + w0,
                "word[1]=" + w1,
                "word[2]=" + w2,
                "word[-1]|word[0]=" + w_1 + "|" + w0,
                "word[0]|word[1]=" + w0 + "|" + w1,
                "pos[-2]=" + p_2,
                "pos[-1]=" + p_1,
                "pos[0]=" + p0,
                "pos[1]=" + p1,
                "pos[2]=" + p2,
                "pos[-2]|pos[-1]=" + p_2 + "|" + p_1,
                "pos[-1]|pos[0]=" + p_1 + "|" + p0,
                "pos[0]|pos[1]=" + p0 + "|" + p1,
                "pos[1]|pos[2]=" + p1 + "|" + p2,
                "pos[-2]|pos[-1]|pos[0]=" + p_2 + "|" + p_1 + "|" + p0,
                "pos[-1]|pos[0]|pos[1]=" + p_1 + "|" + p0 + "|" + p1,
                "pos[0]|pos[1]|pos[2]=" + p0 + "|" + p1 + "|" + p2,
            ]
        )
    return out


def featurizer_attributes():
    """``Featurizer.string_attributes`` of the ``chunk`` preset, as a (words, tags) function."""
    from tagger.features import FeatureSpec, Featurizer
    from tagger.sentence import Sentence

    fz = Featurizer(FeatureSpec.load("chunk"))
    return lambda words, tags: fz.string_attributes(Sentence([words, tags]))


def tag_file(model: str, inp: str, outp: str, attributes=chunk_attributes) -> int:
    """Tag ``inp`` into ``outp``; returns the number of tokens."""
    tagger = pycrfsuite.Tagger()
    tagger.open(model)
    n_tokens = 0
    with open(inp, encoding="utf-8") as fin, open(outp, "w", encoding="utf-8") as fout:
        words: list[str] = []
        tags: list[str] = []

        def flush():
            labels = tagger.tag(attributes(words, tags))
            fout.write("".join(f"{w} {p} {y}\n" for w, p, y in zip(words, tags, labels)))

        for line in fin:
            fields = line.split()
            if fields:
                words.append(fields[0])
                tags.append(fields[1])
                continue
            if words:
                flush()
                n_tokens += len(words)
                words, tags = [], []
            fout.write("\n")
        if words:
            flush()
            n_tokens += len(words)
    tagger.close()
    return n_tokens


def main(argv: list[str]) -> int:
    args = [a for a in argv if not a.startswith("--")]
    kind = "handwritten"
    if "--features" in argv:
        kind = argv[argv.index("--features") + 1]
        args.remove(kind)
    if len(args) != 3 or kind not in ("handwritten", "featurizer"):
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 2
    attributes = chunk_attributes if kind == "handwritten" else featurizer_attributes()
    tag_file(*args, attributes=attributes)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
