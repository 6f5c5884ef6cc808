"""The commands that use a model or check a file: ``tagger tag``, ``tagger eval``, ``tagger
inspect``, ``tagger trace`` and ``tagger constraints check``; each parses its options, makes
one API call and prints the result."""

from __future__ import annotations

import click

from tagger.cli.console import (
    TaggerGroup,
    check_output,
    check_plot,
    load_constraints,
    tag_shards_command,
    to_json,
)
from tagger.cli.options import (
    OUTPUT_FORMATS,
    conllu_label_option,
    fields_option,
    format_option,
    label_column_option,
    threads_option,
)


@click.group("constraints", cls=TaggerGroup)
def constraints_group() -> None:
    """Constraint files (TOML; see constraints/README.md)."""


@constraints_group.command("check")
@click.argument("constraints_file", metavar="FILE", type=click.Path())
@click.argument("data_files", metavar="[DATA]...", nargs=-1, type=click.Path())
@format_option
@label_column_option
@conllu_label_option
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
def constraints_check_cmd(
    constraints_file, data_files, fmt, label_column, conllu_label, as_json
) -> None:
    """Check FILE without a model: every mistake in it, then, on labeled DATA, the labels it
    names that the data never use (with suggestions), the data's labels it never names, and per
    rule what it matched (words, stretches, sentences or label changes) and how often the gold
    labels break it. A rule that matched nothing gets a warning line with a hint: its 0.0%
    breaks mean it never applied."""
    import warnings

    from tagger.constraints.check import check, check_text
    from tagger.errors import TaggerWarning
    from tagger.io import gc_paused
    from tagger.io.sources import open_many_labeled

    cset = load_constraints(constraints_file)
    if not data_files:
        click.echo(
            f"{constraints_file}: valid; {len(cset.rules)} rules over the labels "
            f"{', '.join(cset.labels)} (give labeled DATA to check them against it)"
        )
        return
    with gc_paused():
        sentences = open_many_labeled(
            data_files, format=fmt, label_column=label_column, conllu_label=conllu_label
        )
    report = check(cset, sentences)
    click.echo(to_json(report) if as_json else check_text(report))
    for line in report["never_matched"]:
        warnings.warn(line, TaggerWarning, stacklevel=1)


@click.command("tag")
@click.argument("model_path", metavar="MODEL", type=click.Path())
@click.argument("inputs", metavar="[INPUT]...", nargs=-1)
@click.option(
    "-o",
    "--output",
    "output_path",
    default="-",
    metavar="FILE",
    help="Output file  [default: standard output]",
)
@format_option
@click.option(
    "--label-column",
    type=int,
    default=None,
    metavar="N",
    help="CoNLL column holding (gold) labels to replace by the predictions  "
    "[default: the last field when a line has one field more than the model "
    "reads]",
)
@conllu_label_option
@click.option(
    "-j",
    "--jobs",
    type=click.IntRange(min=1),
    default=1,
    show_default=True,
    metavar="N",
    help="Cores to use. 1 tags in this process on one thread; N > 1 streams the "
    "input through N worker processes in blocks (constant memory, output in the "
    "input's order), or, where the input cannot be cut into blocks (--marginals, "
    "--constraints, inline format), decodes on N threads.",
)
@click.option(
    "--marginals",
    is_flag=True,
    help="CRF models: after each token's predicted label, print P(label | sentence) "
    "for every label as LABEL:PROB fields (one token per line, CoNLL-style, "
    "whatever the input format). Max-margin models are refused: their scores "
    "are not probabilities.",
)
@click.option(
    "--nbest",
    type=click.IntRange(1, 1000),
    default=None,
    metavar="N",
    help="Write each sentence's N best labelings, best first, each after a line '# nbest "
    "RANK/N score S' (CRF models: and its probability); as JSON lines, an 'nbest' list.",
)
@click.option(
    "--constraints",
    "constraints_file",
    default=None,
    type=click.Path(),
    metavar="FILE",
    help="Decode under this constraint file: hard rules enforced (exactly where "
    "an expanded-state Viterbi can), soft ones weighed in by label switching. Labels "
    "of the file the model lacks are taken out of its rules; a warning names the rules "
    "left with none, which are dropped.",
)
@fields_option
@click.option(
    "--output-format",
    type=click.Choice(("auto", *OUTPUT_FORMATS)),
    default="auto",
    show_default=True,
    help="auto: the input's format (JSON lines for datasets and DocBins); jsonl: one "
    "JSON object per sentence, its columns and 'predicted' (and 'marginals').",
)
@click.option(
    "--output-dir",
    default=None,
    type=click.Path(file_okay=False),
    help="Tag a sharded corpus: every INPUT (files, directories or quoted globs such "
    "as 'shards/*.txt') into a file of the same name here, one Dask task per "
    "shard on --jobs local worker processes or on --scheduler; shards whose "
    "output exists are skipped, so a rerun finishes an interrupted run.",
)
@click.option(
    "--scheduler",
    default=None,
    metavar="ADDRESS",
    help="With --output-dir: the Dask scheduler to run on (e.g. tcp://host:8786) "
    "instead of a local cluster.",
)
def tag_cmd(
    model_path,
    inputs,
    output_path,
    fmt,
    label_column,
    conllu_label,
    jobs,
    marginals,
    nbest,
    constraints_file,
    fields,
    output_format,
    output_dir,
    scheduler,
) -> None:
    """Tag INPUT (default: standard input) with MODEL, in the input's own format.

    CoNLL input may carry a label column (one field more than the model reads, or the one
    --label-column names): it is replaced by the prediction; otherwise the prediction is
    appended as the last field. Text (one sentence per line) comes back as one sentence per
    line of token/LABEL. INPUT may be any source train reads: hf:NAME, *.parquet, *.jsonl,
    *.arrow, a spaCy DocBin (*.spacy); see --fields.
    """
    if nbest is not None and output_dir is not None:
        raise click.UsageError("--nbest writes one output: leave out --output-dir")
    if nbest is not None and (marginals or constraints_file):
        other = "--marginals" if marginals else "--constraints"
        raise click.UsageError(f"--nbest lists whole labelings; it does not take {other}")
    if output_dir is not None:
        tag_shards_command(
            model_path,
            inputs,
            output_dir,
            scheduler,
            jobs,
            output_path,
            constraints_file,
            marginals,
            fields,
            format=fmt,
            label_column=label_column,
            conllu_label=conllu_label,
            output_format=output_format,
        )
        return
    if scheduler is not None:
        raise click.UsageError("--scheduler runs sharded tagging: give --output-dir DIR")
    if len(inputs) > 1:
        raise click.UsageError(
            f"tag reads one INPUT (got {len(inputs)}); for many files give "
            f"--output-dir DIR (one output file per input)"
        )
    input_path = inputs[0] if inputs else "-"
    check_output(output_path, [model_path, input_path])
    cset = load_constraints(constraints_file)
    from tagger.tagging.files import tag_file

    tag_file(
        model_path,
        input_path,
        output_path,
        fmt,
        label_column,
        jobs,
        marginals,
        cset,
        conllu_label,
        fields,
        output_format,
        nbest or 0,
    )


@click.command("eval")
@click.argument("model_path", metavar="MODEL", type=click.Path())
@click.argument("test_path", metavar="TEST", type=click.Path())
@format_option
@click.option(
    "--label-column",
    type=int,
    default=None,
    metavar="N",
    help="Label column of CoNLL files (negative counts from the end)  [default: -1]",
)
@conllu_label_option
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
@fields_option
@click.option(
    "--constraints",
    "constraints_file",
    default=None,
    type=click.Path(),
    metavar="FILE",
    help="Also report how often each constraint of this file is violated by the "
    "gold labels and by the predictions (with --decode-constraints: only with "
    "--rule-report).",
)
@click.option(
    "--decode-constraints",
    is_flag=True,
    help="Score predictions made under --constraints (constrained decoding); the "
    "report of how often TEST's gold labels break each rule is left out unless "
    "--rule-report asks for it, so that scoring on test data does not show the "
    "rule writer test statistics.",
)
@click.option(
    "--rule-report",
    is_flag=True,
    help="With --decode-constraints: also print how often the gold labels and the "
    "predictions break each rule of --constraints (--constraints alone always does).",
)
@click.option(
    "--vocabulary",
    "vocabulary_path",
    default=None,
    type=click.Path(),
    metavar="FILE",
    help="The training file: also report accuracy on the tokens whose word it holds "
    "and on the others (read in the format of TEST).",
)
@threads_option
def eval_cmd(
    model_path,
    test_path,
    fmt,
    label_column,
    conllu_label,
    as_json,
    fields,
    constraints_file,
    decode_constraints,
    rule_report,
    vocabulary_path,
    threads,
) -> None:
    """Score MODEL on the labeled TEST file: accuracy, precision, recall, F1.

    Chunk-level scores (conlleval) when the labels are B-/I- tags, per-label scores otherwise.
    """
    from tagger.api import Tagger
    from tagger.cli.reports import constraint_table
    from tagger.evaluation.metrics import format_report, format_vocabulary
    from tagger.io.sources import open_labeled
    from tagger.training.run import use_threads

    cset = load_constraints(constraints_file)
    if cset is None and decode_constraints:
        raise click.UsageError("--decode-constraints needs --constraints FILE")
    if cset is None and rule_report:
        raise click.UsageError("--rule-report needs --constraints FILE")
    use_threads(threads)
    tagger = Tagger.load(model_path)
    test = open_labeled(test_path, fmt, label_column, fields, conllu_label or tagger.conllu_label_)
    decode_under = cset if decode_constraints else None
    # --constraints alone asks for the rule report; decoding under the rules does not
    report_on = cset if rule_report or not decode_constraints else None
    vocabulary = None
    if vocabulary_path is not None:
        vocabulary = {
            w
            for s in open_labeled(
                vocabulary_path, fmt, label_column, fields, conllu_label or tagger.conllu_label_
            )
            for w in s.tokens
        }
    # one decoding scores the predictions and counts their violations
    metrics = tagger.evaluate(
        test, constraints=decode_under, vocabulary=vocabulary, violations=report_on
    )
    if as_json:
        click.echo(to_json(metrics))
        return
    click.echo(format_report(metrics))
    if "by_vocabulary" in metrics:
        click.echo(format_vocabulary(metrics["by_vocabulary"]))
    if metrics.get("unknown_labels"):
        click.echo(
            "labels the model never saw in training (always wrong): "
            + ", ".join(metrics["unknown_labels"])
        )
    if report_on is not None:
        click.echo(constraint_table(metrics["constraints"]))


@click.command("inspect")
@click.argument("model_path", metavar="MODEL", type=click.Path())
@click.option(
    "--top",
    type=click.IntRange(min=0),
    default=10,
    show_default=True,
    metavar="N",
    help="Features shown per label.",
)
@click.option("--json", "as_json", is_flag=True, help="Print Tagger.inspect() as JSON.")
def inspect_cmd(model_path, top, as_json) -> None:
    """Show MODEL's sizes, labels, strongest features per label and transition weights."""
    from tagger.api import Tagger
    from tagger.cli.reports import inspect_text

    report = Tagger.load(model_path).inspect(top)
    click.echo(to_json(report) if as_json else inspect_text(report, top))


@click.command("trace")
@click.argument("model_path", metavar="MODEL", type=click.Path())
@click.option(
    "--plot",
    "plot_path",
    default=None,
    type=click.Path(),
    metavar="FILE",
    help="Also draw dev (and test) scores along training (PNG/SVG/PDF by the extension; "
    "needs matplotlib).",
)
@click.option("--json", "as_json", is_flag=True, help="Print the trace rows as JSON.")
def trace_cmd(model_path, plot_path, as_json) -> None:
    """Print the training trace saved in MODEL (per epoch or annealing step: objective, dev
    and test scores; the row the model was chosen from is marked)."""
    from tagger.api import Tagger
    from tagger.cli.plots import plot_trace
    from tagger.cli.trace import format_trace

    check_plot(plot_path, [model_path])
    rows = Tagger.load(model_path).trace_
    click.echo(to_json(rows) if as_json else format_trace(rows))
    if plot_path is not None:
        plot_trace(rows, plot_path)
        click.echo(f"drew {plot_path}", err=True)
