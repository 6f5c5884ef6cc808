"""``tagger clusters``: word clusters learned from raw text, for the ``cluster`` views of a
feature file (:mod:`tagger.features.word_clusters`)."""

from __future__ import annotations

import click

from tagger.cli.console import check_output
from tagger.cli.options import format_option


@click.command("clusters")
@click.argument("texts", nargs=-1, required=True, metavar="TEXT...")
@click.option("-o", "--output", "output", required=True, metavar="FILE", help="Clusters file.")
@format_option
@click.option(
    "--min-count",
    type=click.IntRange(min=1),
    default=2,
    show_default=True,
    help="Cluster the words seen at least this many times.",
)
@click.option(
    "--max-words",
    type=click.IntRange(min=2),
    default=50_000,
    show_default=True,
    help="At most this many words, the most frequent.",
)
@click.option(
    "--dim",
    type=click.IntRange(min=1),
    default=50,
    show_default=True,
    help="Dimensions of the words' context vectors (truncated SVD).",
)
@click.option(
    "--leaf-size",
    type=click.IntRange(min=1),
    default=4,
    show_default=True,
    help="A cluster of at most this many words is not split further.",
)
@click.option(
    "--max-depth",
    type=click.IntRange(min=1, max=64),
    default=20,
    show_default=True,
    help="Longest bit string (splits from the root).",
)
@click.option("--keep-case", is_flag=True, help="Cluster words as written (default: lowercased).")
def clusters_cmd(texts, output, fmt, min_count, max_words, dim, leaf_size, max_depth, keep_case):
    """Learn hierarchical word clusters from TEXT... and write them to FILE, one word per
    line as BITS<TAB>WORD<TAB>COUNT (Percy Liang's wcluster layout).

    TEXT is raw text (one sentence per line) or any corpus train reads (the words are its first
    column; labels are ignored). A feature file then reads them with a view such as
    [views.c6] function = "cluster", clusters = "FILE", prefix = 6; the model keeps them.
    """
    from tagger.features.word_clusters import cluster_words, write_clusters
    from tagger.io.sources import open_unlabeled

    check_output(output, texts)

    def words():
        for path in texts:
            for sentence in open_unlabeled(path, fmt):
                yield list(sentence.columns[0])

    clusters, counts = cluster_words(
        words(),
        min_count=min_count,
        max_words=max_words,
        dim=dim,
        leaf_size=leaf_size,
        max_depth=max_depth,
        lowercase=not keep_case,
        source=", ".join(texts),
    )
    write_clusters(output, clusters, counts)
    n_clusters = len(set(clusters.bits))
    click.echo(
        f"wrote {output}: {len(clusters):,} words in {n_clusters:,} clusters "
        f"(paths of up to {max(map(len, clusters.bits))} bits)",
        err=True,
    )
