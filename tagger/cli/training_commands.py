"""The training commands: ``tagger train`` (a shell over :func:`tagger.api.train`, which
applies every rule of a training run), ``tagger init-config`` (a training configuration with
every setting) and ``tagger path`` (a regularization path, or the one a model keeps)."""

from __future__ import annotations

import os

import click

from tagger.cli.console import (
    check_features,
    check_output,
    check_plot,
    learner_settings,
    path_param,
    path_values,
    resolved_config,
    setting_error,
    to_json,
    typed_options,
)
from tagger.cli.options import (
    DEFAULT_LEARNER_NAME,
    SET_EXAMPLE,
    conllu_label_option,
    fields_option,
    format_option,
    label_column_option,
    list_learners_callback,
    seed_option,
    threads_option,
)
from tagger.signals import raise_if_arrived
from tagger.training.progress import TrainProgress


@click.command("train")
@click.argument("train_files", metavar="[TRAIN]...", nargs=-1, type=click.Path())
@click.option(
    "-o",
    "--output",
    "model_path",
    default=None,
    type=click.Path(),
    metavar="FILE",
    help="Model file to write (atomically); needed unless the --config file names it.",
)
@click.option(
    "--config",
    "config_file",
    default=None,
    type=click.Path(),
    metavar="FILE",
    help="Training configuration (TOML, see 'tagger init-config'); the other options "
    "given override it.",
)
@click.option(
    "--config-from",
    "config_model",
    default=None,
    type=click.Path(),
    metavar="MODEL",
    help="Train again with the configuration stored in MODEL (its "
    "data, features, learner, parameters and seed); the other "
    "options given override it.",
)
@format_option
@label_column_option
@conllu_label_option
@click.option(
    "--features",
    default=None,
    metavar="PRESET|FILE",
    help="Feature preset (chunk, pos, citation) or TOML file  [default: chunk for "
    "CoNLL files with two input columns, citation for inline/tab, pos otherwise]",
)
@click.option(
    "--order",
    type=click.IntRange(1, 2),
    default=None,
    help="The chain's order: 2 for labels that depend on the two previous labels (a "
    "second-order chain)  [default: the feature file's; 1 for the presets]",
)
@click.option(
    "--learner",
    default=None,
    metavar="NAME",
    help="Learner (see 'tagger learners'), or auto: train m3n-owlqn and crf-l1, "
    "each with its chosen strength, and keep the better on dev  "
    f"[default: {DEFAULT_LEARNER_NAME}]",
)
@click.option(
    "--set",
    "settings",
    multiple=True,
    metavar="KEY=VALUE",
    help="A learner parameter (repeatable; 'tagger learners' lists each learner's), e.g. "
    f"--set {SET_EXAMPLE[0]} --set {SET_EXAMPLE[1]} for {DEFAULT_LEARNER_NAME}.",
)
@click.option(
    "--scheduler",
    default=None,
    metavar="ADDRESS",
    help="A Dask scheduler (tcp://HOST:8786, the [dask] extra): its workers compute the "
    "objective of m3n-owlqn, crf-l1 or crf-l2 (or decode ssvm-annealing's unlabeled "
    "sentences), and the weights are those trained here, to the bit. The same as --set "
    "scheduler=ADDRESS.",
)
@click.option(
    "--dev",
    "dev_file",
    default=None,
    type=click.Path(),
    metavar="FILE",
    help="Labeled dev file scored after every epoch.",
)
@seed_option
@threads_option
@fields_option
@click.option(
    "--unlabeled",
    "unlabeled_file",
    default=None,
    type=click.Path(),
    metavar="FILE",
    help="Unlabeled sentences for a semi-supervised learner (read in batches; "
    "implies --learner ssvm-annealing unless another is given).",
)
@click.option(
    "--constraints",
    "constraints_file",
    default=None,
    type=click.Path(),
    metavar="FILE",
    help="Constraint file (TOML, see constraints/README.md) the imputed labels of "
    "the unlabeled sentences should meet.",
)
@click.option(
    "--test",
    "test_file",
    default=None,
    type=click.Path(),
    metavar="FILE",
    help="Labeled file scored along training for the trace only (never used to choose anything).",
)
@click.option(
    "--no-select",
    is_flag=True,
    help="Train at the learner's default regularization strength instead of "
    "choosing it (by default a path over the strength is scored on --dev, or "
    "without --dev on a held-out tenth of TRAIN, and the best is kept; --set "
    "of the strength also fixes it).",
)
@click.option(
    "--choose",
    type=click.Choice(["sparsest", "best"]),
    default=None,
    help="Which point of that path is kept: sparsest, the fewest non-zero weights among the "
    "points whose dev score is within one standard error of the best  [default: sparsest]; "
    "best, the best dev score.",
)
@click.option(
    "--max-seconds",
    type=click.FloatRange(min=0),
    default=0,
    show_default=True,
    metavar="SECONDS",
    help="Time budget of the choice: no new point of the path starts after this many "
    "seconds of training, and the best so far is kept (0: no limit).",
)
@click.option("-q", "--quiet", is_flag=True, help="No progress lines and no summary.")
@click.option(
    "--json",
    "as_json",
    is_flag=True,
    help="Print the summary as one JSON object on standard output.",
)
@click.option(
    "--list-learners",
    is_flag=True,
    is_eager=True,
    expose_value=False,
    callback=list_learners_callback,
    help="List the learners and their parameters.",
)
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
    settings = _with_scheduler(options.pop("scheduler"), settings, options)
    cfg, source = resolved_config(config_file, config_model, options)
    data, run = cfg["data"], cfg["model"]
    if config_model and not options["model_path"]:
        raise click.UsageError("--config-from trains a new model: give it -o NEW")
    if not data["train"]:
        raise click.UsageError("no training data: give TRAIN files or [data] train in --config")
    if not run["output"]:
        raise click.UsageError("no model file: give -o MODEL or [model] output in --config")
    from tagger.api import train
    from tagger.cli.reports import train_record, train_summary
    from tagger.training.config import ParameterSettingError, SettingError, TrainingConfig
    from tagger.training.run import default_learner

    learner = default_learner(run["learner"], bool(data["unlabeled"]))
    if source is None or "learner" in typed_options():
        learner_settings(learner, ())  # an unknown learner typed is a usage error
    if source is None:  # --set carries the parameters
        cfg["params"] = learner_settings(learner, settings)
    config = TrainingConfig(**cfg, source=source or "the command line")
    _precompile(learner, config.data, quiet)
    raise_if_arrived()
    shown = None if quiet else _unlabeled_progress

    def progress(row: dict) -> None:
        raise_if_arrived()  # a Ctrl-C lost inside a compilation stops training here
        if shown is not None:
            shown(row)

    try:
        with TrainProgress(quiet):
            tagger = train(config, progress=progress)
    except ParameterSettingError as exc:
        if exc.key != "model.learner":
            raise  # a parameter's value in the file: a data error (exit status 1)
        raise setting_error(exc, source) from None
    except SettingError as exc:
        raise setting_error(exc, source) from None
    model_path = run["output"]
    size = os.path.getsize(model_path)
    if as_json:
        click.echo(to_json(train_record(tagger, model_path, size)))
    elif not quiet:
        click.echo(train_summary(tagger, model_path, size), err=True)


def _with_scheduler(scheduler: str | None, settings: tuple, options: dict) -> tuple:
    """``settings`` with ``scheduler=ADDRESS`` added for ``--scheduler ADDRESS``: a usage error
    when the address is not one or the learner typed trains in this process only."""
    if scheduler is None:
        return settings
    from tagger.integrations.shard_checks import (
        SchedulerAddressError,
        check_scheduler_address,
        probe_scheduler,
    )
    from tagger.learners import AUTO, LEARNERS

    try:
        check_scheduler_address(scheduler)
    except SchedulerAddressError as exc:
        raise click.BadParameter(str(exc), param_hint="'--scheduler'") from None
    learner = options.get("learner")
    if learner and learner != AUTO:
        learner_settings(learner, ())  # an unknown learner: its own usage error
    on_cluster = [n for n, cls in LEARNERS.items() if _takes_scheduler(cls)]
    if learner == AUTO or (learner and learner not in on_cluster):
        raise click.BadParameter(
            f"learner {learner!r} trains in this process only; the learners that train on a "
            f"Dask cluster are {', '.join(on_cluster)}",
            param_hint="'--scheduler'",
        )
    # before any data is read: Dask's own connection would wait 10 s after featurizing
    probe_scheduler(scheduler, instead="train in this process (no --scheduler)")
    pairs = (*settings, f"scheduler={scheduler}")
    click.get_current_context().params["settings"] = pairs  # read by resolved_config
    return pairs


def _takes_scheduler(learner_cls) -> bool:
    return any(p.name == "scheduler" for p in learner_cls.params)


def _precompile(learner: str, data: dict, quiet: bool) -> None:
    """On a first run like the README's (a fresh numba cache), compile the kernels it needs in
    two processes at once (:mod:`tagger.precompile`), and say so."""
    from tagger.precompile import compile_for_training

    train, dev = data.get("train") or [], data.get("dev")
    files = [*([train] if isinstance(train, str) else train), *([dev] if dev else [])]
    seconds = compile_for_training(learner, files)
    if seconds is not None and not quiet:
        click.echo(
            f"compiled the numba kernels in {seconds:.1f} s, in two processes (once: later "
            "runs load them from the cache)",
            err=True,
        )


@click.command("init-config")
@click.argument("output", metavar="[FILE]", default="-", required=False)
@click.option(
    "--task",
    type=click.Choice(sorted(("chunk", "pos", "citation"))),
    default=None,
    help="Fill in the sample corpus shipped in corpora/ for this task and its "
    "feature preset (without it the data paths are left empty).",
)
@click.option(
    "--learner",
    default=None,
    metavar="NAME",
    help=f"The learner whose parameter table [params] lists  [default: {DEFAULT_LEARNER_NAME}]",
)
@click.option("--force", is_flag=True, help="Replace FILE if it exists.")
def init_config_cmd(output, task, learner, force) -> None:
    """Write a training configuration (TOML) with every setting and its default to FILE
    (default: standard output); train with 'tagger train --config FILE'. An existing FILE is
    kept unless --force is given."""
    from pathlib import Path

    from tagger.errors import TaggerError
    from tagger.io.atomic import atomic_text_output
    from tagger.training import config as training_config

    if learner:
        learner_settings(learner, ())
    directory = Path(output).resolve().parent if output != "-" else Path.cwd()
    cfg = training_config.for_task(task, learner, directory)
    check_output(output, [])
    if output != "-" and os.path.lexists(output) and not force:
        raise TaggerError(
            f"{output} exists; init-config writes a new file: choose another name, or give "
            f"--force to replace it"
        )
    with atomic_text_output(output) as out:
        out.write(training_config.to_toml(cfg, learner or ""))
    if output != "-":
        click.echo(f"wrote {output}; train with: tagger train --config {output}", err=True)


def _unlabeled_progress(row: dict) -> None:
    if "unlabeled_read" in row:
        click.echo(f"read {row['unlabeled_read']} unlabeled sentences", err=True)


@click.command("path")
@click.argument("train_file", metavar="TRAIN|MODEL", type=click.Path())
@click.option(
    "--dev",
    "dev_file",
    default=None,
    type=click.Path(),
    metavar="FILE",
    help="Labeled dev file scored at every value (required with TRAIN).",
)
@click.option(
    "--values",
    "values_text",
    default=None,
    metavar="V1,V2,...",
    help="Values of the regularization parameter, in the order trained "
    "(e.g. from dense to sparse: --values 1,3,10,30; required with TRAIN).",
)
@click.option(
    "--param",
    default=None,
    metavar="NAME",
    help="The parameter varied  [default: the learner's strength: radius for "
    "m3n-subgradient, c1 for crf-l1, lambda for m3n-em, C for m3n-l2, ...]",
)
@format_option
@label_column_option
@conllu_label_option
@click.option(
    "--features",
    default=None,
    metavar="PRESET|FILE",
    help="Feature preset or TOML file  [default: as for train]",
)
@click.option(
    "--learner",
    default=None,
    metavar="NAME",
    help="Learner (see 'tagger learners')  [default: the default learner]",
)
@click.option(
    "--set",
    "settings",
    multiple=True,
    metavar="KEY=VALUE",
    help="Other learner parameters (repeatable).",
)
@seed_option
@threads_option
@click.option("--json", "as_json", is_flag=True, help="Print the rows as one JSON list.")
@click.option(
    "--plot",
    "plot_path",
    default=None,
    type=click.Path(),
    metavar="FILE",
    help="Write a picture of dev score and non-zero weights against the parameter "
    "(PNG/SVG/PDF by the extension; needs matplotlib).",
)
@click.option(
    "-o",
    "--output",
    "model_path",
    default=None,
    type=click.Path(),
    metavar="FILE",
    help="Also save the model of the last value.",
)
@click.option("-q", "--quiet", is_flag=True, help="No progress lines.")
def path_cmd(
    train_file,
    dev_file,
    values_text,
    param,
    fmt,
    label_column,
    conllu_label,
    features,
    learner,
    settings,
    seed,
    threads,
    as_json,
    plot_path,
    model_path,
    quiet,
) -> None:
    """Regularization path: train on TRAIN once per value (warm starts), score on --dev.

    Given a MODEL instead, print (and with --plot draw) the path its training chose on."""
    from tagger.learners import DEFAULT_LEARNER
    from tagger.model.files import is_model_file

    if is_model_file(train_file):
        return _stored_path(train_file, dev_file, values_text, plot_path, as_json)
    for value, name in ((dev_file, "--dev"), (values_text, "--values")):
        if value is None:
            raise click.UsageError(
                f"Missing option '{name}' (needed to train a path on "
                f"TRAIN; a saved MODEL shows the path it was chosen on)"
            )

    learner = learner or DEFAULT_LEARNER
    params = learner_settings(learner, settings)
    values = path_values(values_text)
    param = path_param(learner, params, param, values)
    check_output(model_path, [train_file, dev_file])
    check_plot(plot_path, [train_file, dev_file, model_path])
    from tagger.api import Tagger
    from tagger.cli.reports import path_table
    from tagger.io import gc_paused
    from tagger.io.sources import default_preset, open_labeled
    from tagger.training.run import use_threads

    use_threads(threads)
    with gc_paused():
        train = open_labeled(train_file, fmt, label_column, conllu_label=conllu_label)
        dev = open_labeled(dev_file, fmt, label_column, conllu_label=conllu_label)
    tagger = Tagger(
        features=check_features(features) or default_preset(train),
        learner=learner,
        params=params,
        seed=seed,
    )
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


def _stored_path(model_path, dev_file, values_text, plot_path, as_json) -> None:
    """``tagger path MODEL``: the path stored in a model by ``tagger train`` or ``tagger path``."""
    from tagger.api import Tagger
    from tagger.cli.reports import path_table
    from tagger.errors import TaggerError

    if dev_file is not None or values_text is not None:
        raise click.UsageError(
            "--dev and --values train a path on a TRAIN file; a MODEL "
            "only shows the path stored in it"
        )
    check_plot(plot_path, [model_path])
    tagger = Tagger.load(model_path)
    stored = tagger.stored_path()
    if stored is None:
        raise TaggerError(
            f"{model_path} holds no regularization path: it was trained at a set "
            f"strength (--set or --no-select); train without them, or run "
            f"tagger path TRAIN --dev DEV --values ..."
        )
    rows = stored["rows"]
    click.echo(to_json(stored) if as_json else path_table(rows, rows[0]["param"]))
    if plot_path:
        from tagger.cli.plots import plot_path as draw

        draw(
            rows,
            plot_path,
            title=f"{tagger.info_.get('learner', '')}: {os.path.basename(model_path)}",
        )
        if not as_json:
            click.echo(f"picture: {plot_path}", err=True)
