"""The ``tagger`` command line: thin shells over :class:`tagger.api.Tagger`.

Each command parses its options, makes one API call and prints the result. Usage errors
(unknown options, an unknown learner, a bad ``--set`` key or value) exit 2 through click's own
handling; data errors (any :class:`tagger.errors.TaggerError`, a missing or unreadable file, text
that is not UTF-8) exit 1 with one line ``error: <message>`` on stderr and no traceback.

Heavy modules (numpy, numba, the API) are imported inside the commands so that
``tagger --help`` answers at once.
"""

from __future__ import annotations

import os

import click

from tagger.cli.console import (TaggerGroup, check_features, check_output, check_plot,
                            learner_settings, load_constraints, path_param, path_values,
                            resolved_config, tag_shards_command, to_json)
from tagger.cli.progress import TrainProgress

FORMAT_CHOICES = ("auto", "conll", "conllu", "inline", "tab", "text", "raw")
OUTPUT_FORMATS = ("jsonl", "conll", "tab", "text")   # tagger.io.formats.OUTPUT_FORMATS
#: shown in --help without importing the learners (tests check it is DEFAULT_LEARNER)
DEFAULT_LEARNER_NAME = "m3n-owlqn"


@click.group(cls=TaggerGroup, context_settings={"help_option_names": ["-h", "--help"]})
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


format_option = click.option(
    "--format", "fmt", type=click.Choice(FORMAT_CHOICES), default="auto", show_default=True,
    help="Corpus format; 'auto' guesses it from the file's first lines.")

label_column_option = click.option(
    "--label-column", type=int, default=None,
    help="Label column of CoNLL files (negative counts from the end)  [default: -1]")
conllu_label_option = click.option(
    "--conllu-label", type=click.Choice(["upos", "xpos"]), default=None,
    help="CoNLL-U field holding the labels: upos (universal tags) or xpos (the treebank's own)  "
         "[default: upos for training; tag and eval use the model's]")
seed_option = click.option("--seed", type=int, default=0, show_default=True, help="Random seed.")
fields_option = click.option(
    "--fields", default=None, metavar="F1,F2,...,LABEL",
    help="For datasets (hf:NAME, *.parquet, *.jsonl, hf:conll:FILE) and spaCy DocBin (.spacy) "
         "input: the columns the features read, then the label column, e.g. "
         "tokens,pos_tags,chunk_tags or words,tag,spans:chunks  [default: tokens and every "
         "other list column; the label last]")


def _print_learners() -> None:
    from tagger.learners import DEFAULT_LEARNER, LEARNERS
    from tagger.cli.reports import learners_text

    click.echo(learners_text(LEARNERS, DEFAULT_LEARNER))


def _list_learners_callback(ctx: click.Context, param, value) -> None:
    if not value or ctx.resilient_parsing:
        return
    _print_learners()
    ctx.exit(0)


@cli.command("learners")
def learners_cmd() -> None:
    """List every learner with its parameter table (name, default, range, help)."""
    _print_learners()


@cli.command("train")
@click.argument("train_files", metavar="[TRAIN]...", nargs=-1, type=click.Path(dir_okay=False))
@click.option("-o", "--output", "model_path", default=None, type=click.Path(dir_okay=False),
              help="Model file to write (atomically); needed unless the --config file names it.")
@click.option("--config", "config_file", default=None, type=click.Path(dir_okay=False),
              help="Training configuration (TOML, see 'tagger init-config'); the other options "
                   "given override it.")
@click.option("--config-from", "config_model", default=None, type=click.Path(dir_okay=False),
              metavar="MODEL", help="Train again with the configuration stored in MODEL (its "
                                    "data, features, learner, parameters and seed); the other "
                                    "options given override it.")
@format_option
@label_column_option
@conllu_label_option
@click.option("--features", default=None, metavar="PRESET|FILE",
              help="Feature preset (chunk, pos, citation) or TOML file  [default: chunk for "
                   "CoNLL files with two input columns, citation for inline/tab, pos otherwise]")
@click.option("--learner", default=None, metavar="NAME",
              help="Learner (see 'tagger learners'), or auto: train m3n-owlqn and crf-l1, "
                   "each with its chosen strength, and keep the better on dev  "
                   f"[default: {DEFAULT_LEARNER_NAME}]")
@click.option("--set", "settings", multiple=True, metavar="KEY=VALUE",
              help="A learner parameter, e.g. --set radius=500 --set epochs=10 (repeatable).")
@click.option("--dev", "dev_file", default=None, type=click.Path(dir_okay=False),
              help="Labeled dev file scored after every epoch.")
@seed_option
@fields_option
@click.option("--unlabeled", "unlabeled_file", default=None, type=click.Path(dir_okay=False),
              help="Unlabeled sentences for a semi-supervised learner (read in batches; "
                   "implies --learner ssvm-annealing unless another is given).")
@click.option("--constraints", "constraints_file", default=None,
              type=click.Path(dir_okay=False),
              help="Constraint file (TOML, see constraints/README.md) the imputed labels of "
                   "the unlabeled sentences should meet.")
@click.option("--test", "test_file", default=None, type=click.Path(dir_okay=False),
              help="Labeled file scored along training for the trace only (never used to "
                   "choose anything).")
@click.option("--no-select", is_flag=True,
              help="Train at the learner's default regularization strength instead of "
                   "choosing it (by default a path over the strength is scored on --dev, or "
                   "without --dev on a held-out tenth of TRAIN, and the best is kept; --set "
                   "of the strength also fixes it).")
@click.option("--max-seconds", type=click.FloatRange(min=0), default=0, show_default=True,
              help="Time budget of the choice: no new point of the path starts after this many "
                   "seconds of training, and the best so far is kept (0: no limit).")
@click.option("-q", "--quiet", is_flag=True, help="No progress lines and no summary.")
@click.option("--json", "as_json", is_flag=True,
              help="Print the summary as one JSON object on standard output.")
@click.option("--list-learners", is_flag=True, is_eager=True, expose_value=False,
              callback=_list_learners_callback, help="List the learners and their parameters.")
def train_cmd(config_file, config_model, settings, quiet, as_json, **options) -> None:
    """Train a tagger on the TRAIN files (concatenated) and save it to MODEL.

    TRAIN may also be a Hugging Face dataset (hf:eriktks/conll2000, with ?split=...&revision=
    ...&config=...), local files read by datasets' loaders (*.parquet, *.jsonl, *.arrow,
    hf:conll:FILE) or a spaCy DocBin (*.spacy); see --fields.

    \b
    Semi-supervised, with domain constraints:
    tagger train LABELED... --unlabeled FILE --constraints FILE --dev FILE -o MODEL
    \b
    From a configuration file (every setting; 'tagger init-config' writes one):
    tagger train --config train.toml [--seed 3 ...]
    """
    cfg, source = resolved_config(config_file, config_model, options)
    data, run = cfg["data"], cfg["model"]
    if config_model and not options["model_path"]:
        raise click.UsageError("--config-from trains a new model: give it -o NEW")
    if not data["train"]:
        raise click.UsageError("no training data: give TRAIN files or [data] train in --config")
    if not run["output"]:
        raise click.UsageError("no model file: give -o MODEL or [model] output in --config")
    from tagger.training import config as training_config
    from tagger.learners import DEFAULT_LEARNER

    optional = {k: v or None for k, v in data.items() if k != "train"}
    learner = run["learner"] or ("ssvm-annealing" if optional["unlabeled"] else DEFAULT_LEARNER)
    learner_settings(learner, ())   # an unknown learner is a usage error
    params = learner_settings(learner, settings) if source is None else \
        training_config.learner_params(cfg, learner, source)
    model_path = run["output"]
    check_output(model_path, [*data["train"], optional["dev"], optional["test"],
                              optional["unlabeled"], optional["constraints"]])
    cset = load_constraints(optional["constraints"])
    if cset is not None and optional["unlabeled"] is None:
        raise click.UsageError("--constraints in training needs --unlabeled FILE (the "
                               "constraints guide the labels imputed to unlabeled text)")
    from tagger.api import Tagger
    from tagger.io import gc_paused
    from tagger.io.sources import default_preset, open_labeled, open_many_labeled, open_unlabeled
    from tagger.cli.reports import train_record, train_summary

    read = dict(format=data["format"], label_column=data["label_column"],
                fields=optional["fields"], conllu_label=data["conllu_label"])
    with gc_paused():
        train = open_many_labeled(data["train"], **read)
        dev = open_labeled(optional["dev"], **read) if optional["dev"] else None
        test = open_labeled(optional["test"], **read) if optional["test"] else None
    features = check_features(run["features"] or None) or default_preset(train)
    tagger = Tagger(features=features, learner=learner, params=params, seed=run["seed"],
                    select=run["select"], max_seconds=run["max_seconds"])
    with TrainProgress(quiet):
        unlabeled = (open_unlabeled(optional["unlabeled"], data["format"])
                     if optional["unlabeled"] else None)
        tagger.fit(train, dev=dev, unlabeled=unlabeled, constraints=cset, test=test,
                   progress=None if quiet else _unlabeled_progress)
    stored = dict(cfg, model=dict(run, features=features))
    tagger.info_["config"] = training_config.for_model(stored, learner, params, run["select"])
    size = tagger.save(model_path)
    if as_json:
        click.echo(to_json(train_record(tagger, model_path, size)))
    elif not quiet:
        click.echo(train_summary(tagger, model_path, size), err=True)


@cli.command("init-config")
@click.argument("output", metavar="FILE", default="-", required=False)
@click.option("--task", type=click.Choice(sorted(("chunk", "pos", "citation"))), default=None,
              help="Fill in the sample corpus shipped in corpora/ for this task and its "
                   "feature preset (without it the data paths are left empty).")
@click.option("--learner", default=None, metavar="NAME",
              help="The learner whose parameter table [params] lists  "
                   f"[default: {DEFAULT_LEARNER_NAME}]")
def init_config_cmd(output, task, learner) -> None:
    """Write a training configuration (TOML) with every setting and its default to FILE
    (default: standard output); train with 'tagger train --config FILE'."""
    from pathlib import Path

    from tagger.training import config as training_config
    from tagger.io.atomic import atomic_text_output

    if learner:
        learner_settings(learner, ())
    directory = Path(output).resolve().parent if output != "-" else Path.cwd()
    cfg = training_config.for_task(task, learner, directory)
    check_output(output, [])
    with atomic_text_output(output) as out:
        out.write(training_config.to_toml(cfg, learner or ""))
    if output != "-":
        click.echo(f"wrote {output}; train with: tagger train --config {output}", err=True)


def _unlabeled_progress(row: dict) -> None:
    if "unlabeled_read" in row:
        click.echo(f"read {row['unlabeled_read']} unlabeled sentences", err=True)


@cli.command("path")
@click.argument("train_file", metavar="TRAIN|MODEL", type=click.Path(dir_okay=False))
@click.option("--dev", "dev_file", default=None, type=click.Path(dir_okay=False),
              help="Labeled dev file scored at every value (required with TRAIN).")
@click.option("--values", "values_text", default=None, metavar="V1,V2,...",
              help="Values of the regularization parameter, in the order trained "
                   "(e.g. from dense to sparse: --values 1,3,10,30; required with TRAIN).")
@click.option("--param", default=None, metavar="NAME",
              help="The parameter varied  [default: the learner's strength: radius for "
                   "m3n-subgradient, c1 for crf-l1, lambda for m3n-em, C for m3n-l2, ...]")
@format_option
@label_column_option
@conllu_label_option
@click.option("--features", default=None, metavar="PRESET|FILE",
              help="Feature preset or TOML file  [default: as for train]")
@click.option("--learner", default=None, metavar="NAME",
              help="Learner (see 'tagger learners')  [default: the default learner]")
@click.option("--set", "settings", multiple=True, metavar="KEY=VALUE",
              help="Other learner parameters (repeatable).")
@seed_option
@click.option("--json", "as_json", is_flag=True, help="Print the rows as one JSON list.")
@click.option("--plot", "plot_path", default=None, type=click.Path(dir_okay=False),
              help="Write a picture of dev score and non-zero weights against the parameter "
                   "(PNG/SVG/PDF; needs matplotlib).")
@click.option("-o", "--output", "model_path", default=None, type=click.Path(dir_okay=False),
              help="Also save the model of the last value.")
@click.option("-q", "--quiet", is_flag=True, help="No progress lines.")
def path_cmd(train_file, dev_file, values_text, param, fmt, label_column, conllu_label,
             features, learner, settings, seed, as_json, plot_path, model_path, quiet) -> None:
    """Regularization path: train on TRAIN once per value (warm starts), score on --dev.

    Given a MODEL instead, print (and with --plot draw) the path its training chose on."""
    from tagger.learners import DEFAULT_LEARNER

    if _is_model_file(train_file):
        return _stored_path(train_file, dev_file, values_text, plot_path, as_json)
    for value, name in ((dev_file, "--dev"), (values_text, "--values")):
        if value is None:
            raise click.UsageError(f"Missing option '{name}' (needed to train a path on "
                                   f"TRAIN; a saved MODEL shows the path it was chosen on)")

    learner = learner or DEFAULT_LEARNER
    params = learner_settings(learner, settings)
    values = path_values(values_text)
    param = path_param(learner, params, param, values)
    check_output(model_path, [train_file, dev_file])
    check_plot(plot_path, [train_file, dev_file, model_path])
    from tagger.api import Tagger
    from tagger.io import gc_paused
    from tagger.io.sources import default_preset, open_labeled
    from tagger.cli.reports import path_table

    with gc_paused():
        train = open_labeled(train_file, fmt, label_column, conllu_label=conllu_label)
        dev = open_labeled(dev_file, fmt, label_column, conllu_label=conllu_label)
    tagger = Tagger(features=check_features(features) or default_preset(train), learner=learner,
                    params=params, seed=seed)
    with TrainProgress(quiet or as_json):
        rows = tagger.path(train, dev, values, param=param)
    click.echo(to_json(rows) if as_json else path_table(rows, param))
    if plot_path:
        from tagger.cli.plots import plot_path as draw

        draw(rows, plot_path, title=f"{learner} on {os.path.basename(train_file)}")
        if not as_json:
            click.echo(f"picture: {plot_path}", err=True)
    if model_path:
        tagger.save(model_path)


def _is_model_file(path: str) -> bool:
    """Model files are zip archives; no corpus starts with a zip signature."""
    try:
        with open(path, "rb") as fh:
            return fh.read(4) == b"PK\x03\x04"
    except OSError:
        return False   # reading it as a corpus reports the problem


def _stored_path(model_path, dev_file, values_text, plot_path, as_json) -> None:
    """``tagger path MODEL``: the path stored in a model by ``tagger train`` or ``tagger path``."""
    from tagger.api import Tagger
    from tagger.errors import TaggerError
    from tagger.cli.reports import path_table

    if dev_file is not None or values_text is not None:
        raise click.UsageError("--dev and --values train a path on a TRAIN file; a MODEL "
                               "only shows the path stored in it")
    check_plot(plot_path, [model_path])
    info = Tagger.load(model_path).info_
    stored = info.get("selection") or ({"rows": info["path"]} if info.get("path") else None)
    if not stored or not stored.get("rows"):
        raise TaggerError(f"{model_path} holds no regularization path: it was trained at a set "
                          f"strength (--set or --no-select); train without them, or run "
                          f"tagger path TRAIN --dev DEV --values ...")
    rows = stored["rows"]
    click.echo(to_json(stored) if as_json else path_table(rows, rows[0]["param"]))
    if plot_path:
        from tagger.cli.plots import plot_path as draw

        draw(rows, plot_path, title=f"{info.get('learner', '')}: {os.path.basename(model_path)}")
        if not as_json:
            click.echo(f"picture: {plot_path}", err=True)


@cli.group("constraints", cls=TaggerGroup)
def constraints_group() -> None:
    """Constraint files (TOML; see constraints/README.md)."""


@constraints_group.command("check")
@click.argument("constraints_file", metavar="FILE", type=click.Path(dir_okay=False))
@click.argument("data_files", metavar="[DATA]...", nargs=-1, type=click.Path(dir_okay=False))
@format_option
@label_column_option
@conllu_label_option
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
def constraints_check_cmd(constraints_file, data_files, fmt, label_column, conllu_label,
                          as_json) -> None:
    """Check FILE without a model: every mistake in it, then, on labeled DATA, the labels it
    names that the data never use (with suggestions), the data's labels it never names, and how
    often the gold labels break each rule."""
    from tagger.constraints.check import check, check_text
    from tagger.io import gc_paused
    from tagger.io.sources import open_many_labeled

    cset = load_constraints(constraints_file)
    if not data_files:
        click.echo(f"{constraints_file}: valid; {len(cset.rules)} rules over the labels "
                   f"{', '.join(cset.labels)} (give labeled DATA to check them against it)")
        return
    with gc_paused():
        sentences = open_many_labeled(data_files, format=fmt, label_column=label_column,
                                      conllu_label=conllu_label)
    report = check(cset, sentences)
    click.echo(to_json(report) if as_json else check_text(report))


@cli.command("tag")
@click.argument("model_path", metavar="MODEL", type=click.Path(dir_okay=False))
@click.argument("inputs", metavar="[INPUT]...", nargs=-1)
@click.option("-o", "--output", "output_path", default="-", metavar="OUTPUT",
              help="Output file  [default: standard output]")
@format_option
@click.option("--label-column", type=int, default=None, metavar="N",
              help="CoNLL column holding (gold) labels to replace by the predictions  "
                   "[default: the last field when a line has one field more than the model "
                   "reads]")
@conllu_label_option
@click.option("-j", "--jobs", type=click.IntRange(min=1), default=1, show_default=True,
              help="Cores to use. 1 tags in this process on one thread; N > 1 streams the "
                   "input through N worker processes in blocks (constant memory, output in the "
                   "input's order), or, where the input cannot be cut into blocks (--marginals, "
                   "--constraints, inline format), decodes on N threads.")
@click.option("--marginals", is_flag=True,
              help="CRF models: after each token's predicted label, print P(label | sentence) "
                   "for every label as LABEL:PROB fields (one token per line, CoNLL-style, "
                   "whatever the input format). Max-margin models are refused: their scores "
                   "are not probabilities.")
@click.option("--constraints", "constraints_file", default=None, type=click.Path(dir_okay=False),
              help="Decode under this constraint file: hard rules enforced (exactly where "
                   "an expanded-state Viterbi can), soft ones weighed in by label switching.")
@fields_option
@click.option("--output-format", type=click.Choice(("auto", *OUTPUT_FORMATS)), default="auto",
              show_default=True,
              help="auto: the input's format (JSON lines for datasets and DocBins); jsonl: one "
                   "JSON object per sentence, its columns and 'predicted' (and 'marginals').")
@click.option("--output-dir", default=None, type=click.Path(file_okay=False),
              help="Tag a sharded corpus: every INPUT (files, directories or quoted globs such "
                   "as 'shards/*.txt') into a file of the same name here, one Dask task per "
                   "shard on --jobs local worker processes or on --scheduler; shards whose "
                   "output exists are skipped, so a rerun finishes an interrupted run.")
@click.option("--scheduler", default=None, metavar="ADDRESS",
              help="With --output-dir: the Dask scheduler to run on (e.g. tcp://host:8786) "
                   "instead of a local cluster.")
def tag_cmd(model_path, inputs, output_path, fmt, label_column, conllu_label, jobs,
            marginals, constraints_file, fields, output_format, output_dir, scheduler) -> None:
    """Tag INPUT (default: standard input) with MODEL, in the input's own format.

    CoNLL input may carry a label column (one field more than the model reads, or the one
    --label-column names): it is replaced by the prediction; otherwise the prediction is
    appended as the last field. Text (one sentence per line) comes back as one sentence per
    line of token/LABEL. INPUT may be any source train reads: hf:NAME, *.parquet, *.jsonl,
    *.arrow, a spaCy DocBin (*.spacy); see --fields.
    """
    if output_dir is not None:
        tag_shards_command(model_path, inputs, output_dir, scheduler, jobs, output_path,
                           constraints_file, marginals, fields, format=fmt,
                           label_column=label_column, conllu_label=conllu_label,
                           output_format=output_format)
        return
    if scheduler is not None:
        raise click.UsageError("--scheduler runs sharded tagging: give --output-dir DIR")
    if len(inputs) > 1:
        raise click.UsageError(f"tag reads one INPUT (got {len(inputs)}); for many files give "
                               f"--output-dir DIR (one output file per input)")
    input_path = inputs[0] if inputs else "-"
    check_output(output_path, [model_path, input_path])
    cset = load_constraints(constraints_file)
    from tagger.tagging.files import tag_file

    tag_file(model_path, input_path, output_path, fmt, label_column, jobs, marginals, cset,
             conllu_label, fields, output_format)


@cli.command("eval")
@click.argument("model_path", metavar="MODEL", type=click.Path(dir_okay=False))
@click.argument("test_path", metavar="TEST", type=click.Path(dir_okay=False))
@format_option
@click.option("--label-column", type=int, default=None, metavar="N",
              help="Label column of CoNLL files (negative counts from the end)  [default: -1]")
@conllu_label_option
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
@fields_option
@click.option("--constraints", "constraints_file", default=None, type=click.Path(dir_okay=False),
              help="Also report how often each constraint of this file is violated by the "
                   "gold labels and by the predictions.")
@click.option("--decode-constraints", is_flag=True,
              help="Score predictions made under --constraints (constrained decoding).")
@click.option("--vocabulary", "vocabulary_path", default=None, type=click.Path(dir_okay=False),
              help="The training file: also report accuracy on the tokens whose word it holds "
                   "and on the others (read in the format of TEST).")
def eval_cmd(model_path, test_path, fmt, label_column, conllu_label, as_json, fields,
             constraints_file, decode_constraints, vocabulary_path) -> None:
    """Score MODEL on the labeled TEST file: accuracy, precision, recall, F1.

    Chunk-level scores (conlleval) when the labels are B-/I- tags, per-label scores otherwise.
    """
    from tagger.api import Tagger
    from tagger.io.sources import open_labeled
    from tagger.evaluation.metrics import format_report, format_vocabulary
    from tagger.cli.reports import constraint_table

    cset = load_constraints(constraints_file)
    if cset is None and decode_constraints:
        raise click.UsageError("--decode-constraints needs --constraints FILE")
    tagger = Tagger.load(model_path)
    test = open_labeled(test_path, fmt, label_column, fields,
                        conllu_label or tagger.conllu_label_)
    decode_under = cset if decode_constraints else None
    vocabulary = None
    if vocabulary_path is not None:
        vocabulary = {w for s in open_labeled(vocabulary_path, fmt, label_column, fields,
                                              conllu_label or tagger.conllu_label_)
                      for w in s.tokens}
    metrics = tagger.evaluate(test, constraints=decode_under, vocabulary=vocabulary)
    if cset is not None:
        pred = tagger.predict(test, constraints=decode_under)
        metrics["constraints"] = tagger.constraint_report(test, cset, predictions=pred)
    if as_json:
        click.echo(to_json(metrics))
        return
    click.echo(format_report(metrics))
    if "by_vocabulary" in metrics:
        click.echo(format_vocabulary(metrics["by_vocabulary"]))
    if metrics.get("unknown_labels"):
        click.echo("labels the model never saw in training (always wrong): "
                   + ", ".join(metrics["unknown_labels"]))
    if cset is not None:
        click.echo(constraint_table(metrics["constraints"]))


@cli.command("inspect")
@click.argument("model_path", metavar="MODEL", type=click.Path(dir_okay=False))
@click.option("--top", type=click.IntRange(min=0), default=10, show_default=True,
              help="Features shown per label.")
@click.option("--json", "as_json", is_flag=True, help="Print Tagger.inspect() as JSON.")
def inspect_cmd(model_path, top, as_json) -> None:
    """Show MODEL's sizes, labels, strongest features per label and transition weights."""
    from tagger.api import Tagger
    from tagger.cli.reports import inspect_text

    report = Tagger.load(model_path).inspect(top)
    click.echo(to_json(report) if as_json else inspect_text(report, top))


@cli.command("trace")
@click.argument("model_path", metavar="MODEL", type=click.Path(dir_okay=False))
@click.option("--plot", "plot_path", default=None, type=click.Path(dir_okay=False),
              help="Also draw dev (and test) accuracy along training as a PNG (needs "
                   "matplotlib).")
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


if __name__ == "__main__":
    main()
