"""What many tests share: the paths of the samples shipped in ``corpora/`` and the command line
run in this process (click's ``CliRunner``, exceptions not caught, so a traceback fails the
test with its own stack)."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner, Result

from tagger.cli import cli

ROOT = Path(__file__).resolve().parents[1]
SAMPLES = ROOT / "corpora"
SAMPLE = SAMPLES / "sample_chunk.txt"
SAMPLE_DEV = SAMPLES / "sample_chunk_dev.txt"


def run_cli(*args, input: str | bytes | None = None) -> Result:
    """``tagger ARGS...`` (each argument passed through ``str``)."""
    return CliRunner().invoke(cli, [str(a) for a in args], input=input, catch_exceptions=False)


#: a feature file over the samples' two columns with two views of the clusters in
#: ``clusters.tsv`` beside it: 2-bit prefixes at offsets 0 and -1, and whole paths
CLUSTER_FEATURES = """
[featurizer]
columns = ["word", "pos"]
templates = ["bias", "word[0]", "pos[0]", "c2[0]", "c2[-1]", "call[0]"]
[views.c2]
function = "cluster"
clusters = "clusters.tsv"
prefix = 2
[views.call]
function = "cluster"
clusters = "clusters.tsv"
"""


def cluster_spec(folder: Path, clusters):
    """:data:`CLUSTER_FEATURES` and ``clusters`` written into ``folder``, the file loaded."""
    from tagger.features import FeatureSpec
    from tagger.features.word_clusters import write_clusters

    write_clusters(folder / "clusters.tsv", clusters)
    (folder / "f.toml").write_text(CLUSTER_FEATURES, encoding="utf-8")
    return FeatureSpec.load(folder / "f.toml")


def sample_clusters():
    """Word clusters of the chunking sample's words, every word kept."""
    from tagger.features.word_clusters import cluster_words
    from tagger.io import read_corpus

    return cluster_words([list(s.columns[0]) for s in read_corpus(SAMPLE)], min_count=1)[0]
