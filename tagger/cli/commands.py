"""The ``tagger`` command line: thin shells over :mod:`tagger.api`.

Each command parses its options, makes one API call and prints the result; the training
commands are in :mod:`tagger.cli.training_commands`, those that use a model or check a file in
:mod:`tagger.cli.model_commands`. Every error is one line ``error: <message>`` on stderr and no
traceback (:class:`tagger.cli.console.TaggerGroup`): usage errors (unknown options, an unknown
learner, a bad ``--set`` key or value, options that conflict) exit 2; data errors (any
:class:`tagger.errors.TaggerError`, a missing or unreadable file, text that is not UTF-8, an
output that cannot be written) exit 1; Ctrl-C exits 130 and SIGTERM 143.

Heavy modules (numpy, numba, the API) are imported inside the commands so that
``tagger --help`` answers at once.
"""

from __future__ import annotations

import click

from tagger.cli import cluster_commands, model_commands, training_commands
from tagger.cli.console import TaggerGroup
from tagger.cli.options import DEFAULT_LEARNER_NAME, FORMAT_CHOICES, OUTPUT_FORMATS, print_learners

__all__ = ["cli", "main", "DEFAULT_LEARNER_NAME", "FORMAT_CHOICES", "OUTPUT_FORMATS"]


EXIT_STATUSES = """\b
Exit status: 0 done; 1 a data error (a file, model, corpus or configuration value is wrong,
missing or unreadable, or an output cannot be written there); 2 a usage error (an unknown
option, a malformed value, options that conflict); 130 interrupted (Ctrl-C); 143 terminated
(SIGTERM). Every error is one line on standard error, "error: ..."; warnings are "warning: ..."
lines."""


@click.group(
    cls=TaggerGroup,
    context_settings={"help_option_names": ["-h", "--help"]},
    epilog=EXIT_STATUSES,
)
@click.version_option(package_name="tagger", prog_name="tagger")
def cli() -> None:
    """Sparse sequence tagging: L1-regularized max-margin Markov networks.

    \b
    tagger train corpora/sample_chunk.txt -o chunker.tgm --set epochs=10
    tagger tag chunker.tgm input.txt > tagged.txt
    tagger eval chunker.tgm test.txt
    tagger inspect chunker.tgm --top 5
    tagger learners
    tagger path train.txt --dev dev.txt --values 1,3,10,30 --plot path.png
    tagger path chunker.tgm --plot chosen.png
    """


def main() -> None:
    """Entry point of the ``tagger`` console script."""
    from tagger.cli.console import run

    run(cli)


@cli.command("learners")
def learners_cmd() -> None:
    """List every learner with its parameter table (name, default, range, help)."""
    print_learners()


for command in (
    training_commands.train_cmd,
    training_commands.init_config_cmd,
    training_commands.path_cmd,
    model_commands.constraints_group,
    model_commands.tag_cmd,
    model_commands.eval_cmd,
    model_commands.inspect_cmd,
    model_commands.trace_cmd,
    cluster_commands.clusters_cmd,
):
    cli.add_command(command)


if __name__ == "__main__":
    main()
