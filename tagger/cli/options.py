"""The options several commands share, and the listing of the learners (``tagger learners``,
``tagger train --list-learners``).

The choices are written out here rather than read from the package so that ``tagger --help``
imports neither the learners nor the readers (a test checks they agree).
"""

from __future__ import annotations

import click

FORMAT_CHOICES = ("auto", "conll", "conllu", "inline", "tab", "text", "raw")
OUTPUT_FORMATS = ("jsonl", "conll", "tab", "text")  # tagger.io.formats.OUTPUT_FORMATS
#: shown in --help without importing the learners (tests check it is DEFAULT_LEARNER)
DEFAULT_LEARNER_NAME = "m3n-owlqn"
#: the --set example of `tagger train --help`: parameters of the default learner (a test
#: checks that it accepts them)
SET_EXAMPLE = ("c1=0.5", "stages=3")

format_option = click.option(
    "--format",
    "fmt",
    type=click.Choice(FORMAT_CHOICES),
    default="auto",
    show_default=True,
    help="Corpus format; 'auto' guesses it from the file's first lines.",
)

label_column_option = click.option(
    "--label-column",
    type=int,
    default=None,
    metavar="N",
    help="Label column of CoNLL files (negative counts from the end)  [default: -1]",
)
conllu_label_option = click.option(
    "--conllu-label",
    type=click.Choice(["upos", "xpos"]),
    default=None,
    help="CoNLL-U field holding the labels: upos (universal tags) or xpos (the treebank's own)  "
    "[default: upos for training; tag and eval use the model's]",
)
#: the largest seed (tagger.training.schema.SEED_MAX: the learners' generators take 32 bits)
SEED_MAX = 2**32 - 1
seed_option = click.option(
    "--seed",
    type=click.IntRange(0, SEED_MAX),
    default=0,
    show_default=True,
    metavar="N",
    help="Random seed.",
)
threads_option = click.option(
    "--threads",
    type=click.IntRange(min=1),
    default=None,
    metavar="N",
    help="Threads of the numba kernels (more than the usable cores are cut to them; the "
    "model is the same whatever the count)  [default: NUMBA_NUM_THREADS, else "
    "OMP_NUM_THREADS, else every core this process may use]",
)
fields_option = click.option(
    "--fields",
    default=None,
    metavar="F1,F2,...,LABEL",
    help="For datasets (hf:NAME, *.parquet, *.jsonl, hf:conll:FILE) and spaCy DocBin (.spacy) "
    "input: the columns the features read, then the label column, e.g. "
    "tokens,pos_tags,chunk_tags or words,tag,spans:chunks  [default: tokens and every "
    "other list column; the label last]",
)


def print_learners() -> None:
    """Every learner with its parameter table, on standard output."""
    from tagger.cli.reports import learners_text
    from tagger.learners import DEFAULT_LEARNER, LEARNERS

    click.echo(learners_text(LEARNERS, DEFAULT_LEARNER))


def list_learners_callback(ctx: click.Context, param, value) -> None:
    """``--list-learners``: print the learners and stop."""
    if not value or ctx.resilient_parsing:
        return
    print_learners()
    ctx.exit(0)
