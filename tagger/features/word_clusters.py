"""Word clusters learned from raw text, as bit strings: the hierarchical clusters of Brown et
al. (1992) that Turian, Ratinov & Bengio (ACL 2010) and Koo, Carreras & Collins (ACL 2008) add
to taggers as prefixes of each word's path in the cluster tree.

How they are computed here (:func:`cluster_words`), in one pass over the text:

1. The vocabulary: the words seen at least ``min_count`` times (at most ``max_words``, the most
   frequent), lowercased unless asked otherwise (on the few hundred thousand words of a
   treebank, case splits the counts of the words that matter most).
2. Each word's contexts: the word just before and the word just after it, among the
   ``n_contexts`` most frequent words and the sentence boundaries, left and right kept apart,
   weighted by positive pointwise mutual information with the context distribution smoothed
   to the power 0.75 (Levy, Goldberg & Dagan, TACL 2015).
3. scipy's sparse truncated SVD of that matrix (``dim`` components, each word's row scaled by
   the square root of the singular values, then to unit length): the words' distributional
   vectors.
4. The tree: the words are split in two again and again (principal direction divisive
   partitioning, Boley 1998, refined by a few 2-means steps), until a part has at most
   ``leaf_size`` words or ``max_depth`` splits; a word's bit string is its path from the root
   (0 left, 1 right).

Every step is deterministic (ARPACK starts from a fixed vector; each singular vector's sign is
fixed by its largest entry; ties of a split go left), so the same text gives the same file.
scikit-learn's bisecting k-means would do step 4 but keeps no tree to read paths from, and
numpy does it in a few lines.

The file (:func:`write_clusters`, :func:`read_clusters`) has Percy Liang's ``wcluster`` layout,
one word per line: ``BITS<TAB>WORD<TAB>COUNT``, so clusters made by that tool can be used too.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from tagger.errors import CorpusFormatError, FeatureSpecError

#: the value of a cluster view for a word the clusters do not know
UNKNOWN_CLUSTER = "-"
#: the context matrices at most this big (words x contexts) are decomposed densely
DENSE_SVD_CELLS = 4_000_000
#: the context ids of the sentence boundaries
_BOS, _EOS = 0, 1


@dataclass(frozen=True)
class WordClusters:
    """Words and their bit strings; :meth:`path` looks a token up as it is, then lowercased."""

    words: tuple[str, ...]
    bits: tuple[str, ...]
    source: str = field(default="<clusters>", compare=False)

    def __post_init__(self):
        object.__setattr__(self, "_index", dict(zip(self.words, self.bits)))

    def path(self, token: str) -> str:
        index = self._index  # type: ignore[attr-defined]
        bits = index.get(token)
        if bits is None:
            bits = index.get(token.lower(), UNKNOWN_CLUSTER)
        return bits

    def __len__(self) -> int:
        return len(self.words)

    def __reduce__(self):
        return (WordClusters, (self.words, self.bits, self.source))


#: below this share of the training tokens with a cluster, training warns that the clusters
#: look made from other text
LOW_COVERAGE = 0.5


def coverage(clusters: WordClusters, tokens: Iterable[str]) -> float:
    """The share of ``tokens`` the clusters know (as written or lowercased)."""
    n = known = 0
    for tok in tokens:
        n += 1
        known += clusters.path(tok) != UNKNOWN_CLUSTER
    return known / n if n else 1.0


def read_clusters(path: str | Path) -> WordClusters:
    """A clusters file: ``BITS<TAB>WORD[<TAB>COUNT]`` per line, BITS made of 0 and 1. A bad
    line is a :class:`FeatureSpecError` naming the file and line."""
    path = Path(path)
    try:
        text = path.read_text("utf-8")
    except FileNotFoundError:
        raise FeatureSpecError(
            f"{path}: no such clusters file; make one with 'tagger clusters TEXT -o {path}'"
        ) from None
    except UnicodeDecodeError as exc:
        raise FeatureSpecError(
            f"{path}: a clusters file must be UTF-8 text (byte {exc.start} is not); "
            f"make one with 'tagger clusters TEXT -o FILE'"
        ) from None
    except OSError as exc:
        raise FeatureSpecError(f"{path}: cannot read the clusters file ({exc.strerror})") from None
    words, bits, seen = [], [], set()
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        parts = line.split("\t")
        where = f"{path}:{n}"
        if len(parts) not in (2, 3):
            raise FeatureSpecError(
                f"{where}: expected BITS<TAB>WORD or BITS<TAB>WORD<TAB>COUNT, found "
                f"{len(parts)} tab-separated field(s): {line[:60]!r}"
            )
        b, word = parts[0], parts[1]
        if not b or b.strip("01"):
            raise FeatureSpecError(
                f"{where}: a cluster's bit string is made of 0 and 1, found {b[:40]!r}"
            )
        if not word:
            raise FeatureSpecError(f"{where}: the word (second field) is empty")
        if word in seen:
            raise FeatureSpecError(f"{where}: the word {word!r} has a cluster already")
        seen.add(word)
        words.append(word)
        bits.append(b)
    if not words:
        raise FeatureSpecError(f"{path}: the clusters file has no words")
    return WordClusters(tuple(words), tuple(bits), str(path))


def write_clusters(
    path: str | Path, clusters: WordClusters, counts: dict[str, int] | None = None
) -> None:
    """Write ``clusters`` in the wcluster layout, atomically (a temporary file renamed)."""
    from tagger.io.atomic import atomic_text_output

    counts = counts or {}
    with atomic_text_output(str(path)) as out:
        for w, b in zip(clusters.words, clusters.bits):
            out.write(f"{b}\t{w}\t{counts.get(w, 0)}\n")


# ------------------------------------------------------------------------------ computing


def cluster_words(
    sentences: Iterable[list[str]],
    *,
    min_count: int = 2,
    max_words: int = 50_000,
    n_contexts: int = 2_000,
    dim: int = 50,
    leaf_size: int = 4,
    max_depth: int = 20,
    lowercase: bool = True,
    source: str = "<text>",
) -> tuple[WordClusters, dict[str, int]]:
    """Hierarchical clusters of the words of ``sentences`` (lists of tokens), and the words'
    counts (module docstring). Raises ``ValueError`` when fewer than two words are frequent
    enough to cluster."""
    counts: Counter[str] = Counter()
    pairs: Counter[tuple[str, str]] = Counter()  # (left word, word): every bigram, once
    firsts: Counter[str] = Counter()
    lasts: Counter[str] = Counter()
    for tokens in sentences:
        if not tokens:
            continue
        toks = [t.lower() for t in tokens] if lowercase else list(tokens)
        counts.update(toks)
        firsts[toks[0]] += 1
        lasts[toks[-1]] += 1
        pairs.update(zip(toks, toks[1:]))
    frequent = sorted(
        (w for w, c in counts.items() if c >= min_count), key=lambda w: (-counts[w], w)
    )
    vocab = frequent[:max_words]
    if len(vocab) < 2:
        raise CorpusFormatError(
            f"fewer than two words occur {min_count} times or more ({len(counts)} distinct "
            f"words in all); give more text or a lower --min-count",
            path=source,
        )
    vectors = _context_vectors(vocab, counts, pairs, firsts, lasts, n_contexts, dim)
    bits = _tree_paths(vectors, leaf_size, max_depth)
    order = sorted(range(len(vocab)), key=lambda i: (bits[i], -counts[vocab[i]], vocab[i]))
    clusters = WordClusters(tuple(vocab[i] for i in order), tuple(bits[i] for i in order), source)
    return clusters, {w: counts[w] for w in vocab}


def _context_vectors(vocab, counts, pairs, firsts, lasts, n_contexts, dim) -> np.ndarray:
    """Unit-length distributional vectors of the vocabulary's words (steps 2-3)."""
    import scipy.sparse as sp
    from scipy.sparse.linalg import svds

    word_id = {w: i for i, w in enumerate(vocab)}
    ctx_words = vocab[:n_contexts]
    ctx_id = {w: i for i, w in enumerate(ctx_words)}
    k = len(ctx_words) + 2  # + the sentence boundaries
    rows, cols, vals = [], [], []
    for (left, right), c in pairs.items():
        r = word_id.get(right)
        if r is not None and left in ctx_id:  # left context of `right`
            rows.append(r)
            cols.append(2 + ctx_id[left])
            vals.append(c)
        r = word_id.get(left)
        if r is not None and right in ctx_id:  # right context of `left`
            rows.append(r)
            cols.append(k + 2 + ctx_id[right])
            vals.append(c)
    for w, c in firsts.items():
        if w in word_id:
            rows.append(word_id[w])
            cols.append(_BOS)
            vals.append(c)
    for w, c in lasts.items():
        if w in word_id:
            rows.append(word_id[w])
            cols.append(k + _EOS)
            vals.append(c)
    m = sp.csr_matrix((np.asarray(vals, dtype=np.float64), (rows, cols)), shape=(len(vocab), 2 * k))
    m.sum_duplicates()
    # positive PMI, the context distribution smoothed by the power 0.75
    total = m.sum()
    row = np.asarray(m.sum(axis=1)).ravel()
    col = np.asarray(m.sum(axis=0)).ravel() ** 0.75
    col_p = col / max(col.sum(), 1e-300)
    coo = m.tocoo()
    pmi = np.log(coo.data * 1.0 / (np.maximum(row[coo.row], 1e-300) / total) / total)
    pmi -= np.log(np.maximum(col_p[coo.col], 1e-300))
    keep = pmi > 0
    ppmi = sp.csr_matrix(
        (pmi[keep], (coo.row[keep], coo.col[keep])), shape=m.shape, dtype=np.float64
    )
    rank = min(dim, min(ppmi.shape) - 1)
    if rank < 1 or ppmi.nnz == 0:
        return np.eye(len(vocab), 1)
    if ppmi.shape[0] * ppmi.shape[1] <= DENSE_SVD_CELLS:
        # a small matrix: LAPACK's dense SVD, whose result does not depend on rounding in an
        # iteration (ARPACK's vectors in a near-degenerate subspace of a small matrix moved
        # from run to run)
        u, s, _ = np.linalg.svd(ppmi.toarray(), full_matrices=False)
        u, s = u[:, :rank], s[:rank]
    else:
        u, s, _ = svds(ppmi, k=rank, v0=np.full(min(ppmi.shape), 1.0 / np.sqrt(min(ppmi.shape))))
        order = np.argsort(-s, kind="stable")
        u, s = u[:, order], s[order]
    # a singular vector's sign is arbitrary: fix it by its largest entry
    top = np.abs(u).argmax(axis=0)
    u *= np.where(u[top, np.arange(u.shape[1])] < 0, -1.0, 1.0)
    vec = u * np.sqrt(s)
    norm = np.linalg.norm(vec, axis=1, keepdims=True)
    return vec / np.where(norm > 0, norm, 1.0)


def _tree_paths(vectors: np.ndarray, leaf_size: int, max_depth: int) -> list[str]:
    """Each row's bit string in the tree of step 4."""
    paths = [""] * len(vectors)
    stack = [(np.arange(len(vectors)), "")]
    while stack:
        members, prefix = stack.pop()
        if len(members) <= leaf_size or len(prefix) >= max_depth:
            for i in members:
                paths[i] = prefix
            continue
        left = _split(vectors[members])
        if left.all() or not left.any():  # identical vectors: nothing to split
            for i in members:
                paths[i] = prefix
            continue
        stack.append((members[~left], prefix + "1"))
        stack.append((members[left], prefix + "0"))
    return paths


def _split(x: np.ndarray, steps: int = 10) -> np.ndarray:
    """A two-way split of the rows of ``x``: the sign of each row's projection on the first
    principal direction, then up to ``steps`` 2-means updates. True: left."""
    centred = x - x.mean(axis=0)
    _, _, vt = np.linalg.svd(centred, full_matrices=False)
    d = vt[0]
    j = int(np.abs(d).argmax())
    if d[j] < 0:
        d = -d
    left = centred @ d <= 0.0
    for _ in range(steps):
        if left.all() or not left.any():
            break
        a, b = x[left].mean(axis=0), x[~left].mean(axis=0)
        new = ((x - a) ** 2).sum(axis=1) <= ((x - b) ** 2).sum(axis=1)
        if np.array_equal(new, left):
            break
        left = new
    return left
