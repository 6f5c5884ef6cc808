"""The ``tagger`` command line: thin shells over :class:`tagger.api.Tagger`.

Each command parses its options, makes one API call and prints the result. Usage errors
(unknown options, an unknown learner, a bad ``--set`` key or value) exit 2 through click's own
handling; data errors (any :class:`tagger.errors.TaggerError`, a missing or unreadable file, text
that is not UTF-8) exit 1 with one line ``error: <message>`` on stderr and no traceback.

Heavy modules (numpy, numba, the API) are imported inside the commands so that
``tagger --help`` answers at once.
"""

from __future__ import annotations

import contextlib
import os
import sys

import click

FORMAT_CHOICES = ("auto", "conll", "conllu", "inline", "tab", "text", "raw")

#: sentences decoded and written together by ``tagger tag`` (Tagger.tag_stream's batch)
TAG_BATCH = 4096


# ------------------------------------------------------------------------------------------
# error handling


def _one_line(message: str) -> str:
    """Fold a multi-line message (a feature file with several mistakes) into one line."""
    lines = [ln.strip() for ln in str(message).splitlines() if ln.strip()]
    if not lines:
        return "unknown error"
    if len(lines) == 1:
        return lines[0]
    head = lines[0]
    sep = " " if head.endswith(":") else ": "
    return head + sep + "; ".join(lines[1:])


def _describe(exc: BaseException) -> str:
    if isinstance(exc, OSError) and exc.strerror:
        where = exc.filename if exc.filename is not None else ""
        if exc.filename2 is not None:
            where = f"{where} -> {exc.filename2}"
        return f"{where}: {exc.strerror}" if where else exc.strerror
    if isinstance(exc, UnicodeDecodeError):
        return (f"expected UTF-8 text, found the byte 0x{exc.object[exc.start]:02x} at byte "
                f"offset {exc.start} that is not valid UTF-8; convert the file to UTF-8")
    return str(exc)


def _quiet_broken_pipe() -> None:
    """The reader of stdout went away (``tagger tag ... | head``): stop without a word.

    stdout is pointed at /dev/null so that the interpreter's final flush cannot fail again.
    """
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):  # stdout without a descriptor (tests)
        pass


class TaggerGroup(click.Group):
    """A click group that turns data errors into one line on stderr and exit status 1."""

    def invoke(self, ctx: click.Context):
        from tagger.errors import TaggerError

        try:
            return super().invoke(ctx)
        except BrokenPipeError:
            _quiet_broken_pipe()
            ctx.exit(0)
        except (TaggerError, OSError, UnicodeDecodeError) as exc:
            click.echo(f"error: {_one_line(_describe(exc))}", err=True)
            ctx.exit(1)
        except KeyboardInterrupt:
            click.echo("error: interrupted", err=True)
            ctx.exit(130)


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
    """


def main() -> None:
    """Entry point of the ``tagger`` console script."""
    try:
        cli.main(prog_name="tagger")
    except SystemExit as exc:
        code = exc.code
    else:
        code = 0
    try:  # what is still buffered (short outputs such as `tagger learners | head -1`)
        sys.stdout.flush()
    except BrokenPipeError:
        _quiet_broken_pipe()
    except (OSError, ValueError):
        pass
    sys.exit(code)


format_option = click.option(
    "--format", "fmt", type=click.Choice(FORMAT_CHOICES), default="auto", show_default=True,
    help="Corpus format; 'auto' guesses it from the file's first lines.")

fields_option = click.option(
    "--fields", default=None, metavar="F1,F2,...,LABEL",
    help="For datasets (hf:NAME, *.parquet, *.jsonl, hf:conll:FILE) and spaCy DocBin (.spacy) "
         "input: the columns the features read, then the label column, e.g. "
         "tokens,pos_tags,chunk_tags or words,tag,spans:chunks  [default: tokens and every "
         "other list column; the label last]")


# ------------------------------------------------------------------------------------------
# learners


def _learner_table(name: str, cls) -> str:
    rows = [(p.name, repr(p.default), p.describe_range(), p.help) for p in cls.params]
    w0 = max([len("parameter")] + [len(r[0]) for r in rows])
    w1 = max([len("default")] + [len(r[1]) for r in rows])
    w2 = max([len("range")] + [len(r[2]) for r in rows])
    doc = (cls.__doc__ or "").strip().splitlines()
    lines = [f"{name}" + (f": {doc[0].strip()}" if doc else "")]
    lines.append(f"  {'parameter':<{w0}}  {'default':<{w1}}  {'range':<{w2}}  help")
    for r in rows:
        lines.append(f"  {r[0]:<{w0}}  {r[1]:<{w1}}  {r[2]:<{w2}}  {r[3]}")
    return "\n".join(lines)


def _print_learners() -> None:
    from tagger.learners import DEFAULT_LEARNER, LEARNERS

    blocks = []
    for name, cls in LEARNERS.items():
        text = _learner_table(name, cls)
        if name == DEFAULT_LEARNER:
            first, rest = text.split("\n", 1)
            text = f"{first} [default]\n{rest}"
        blocks.append(text)
    click.echo("\n\n".join(blocks))


def _list_learners_callback(ctx: click.Context, param, value) -> None:
    if not value or ctx.resilient_parsing:
        return
    _print_learners()
    ctx.exit(0)


@cli.command("learners")
def learners_cmd() -> None:
    """List every learner with its parameter table (name, default, range, help)."""
    _print_learners()


# ------------------------------------------------------------------------------------------
# train


def _learner_settings(learner: str, pairs: tuple[str, ...]) -> dict:
    """Check the learner name and parse ``--set key=value`` with its parameter table.

    Any mistake is a usage error (exit 2) whose message lists the learner's parameters.
    """
    from tagger.errors import ParameterError
    from tagger.learners import get_learner

    try:
        cls = get_learner(learner)
    except ParameterError as exc:
        raise click.BadParameter(f"{exc}; see 'tagger learners'", param_hint="'--learner'")
    try:
        settings = cls.parse_settings(list(pairs))
        cls(**settings).validated()  # ranges and choices, before any file is read
    except ParameterError as exc:
        table = "; ".join(f"{p.name} ({p.describe_range()}, default {p.default!r})"
                          for p in cls.params)
        message = str(exc).split("; its parameters are")[0].rstrip(".")
        raise click.BadParameter(f"{message}. Parameters of {learner}: {table}.",
                                 param_hint="'--set'")
    return settings


def _default_features(fmt: str, n_input_columns: int) -> str:
    if fmt == "conll":
        return "chunk" if n_input_columns >= 2 else "pos"
    if fmt in ("inline", "tab"):
        return "citation"
    return "pos"


def _labeled_format(path: str, fmt: str) -> str:
    """The format of a labeled file (training, dev, test data).

    Detection calls a file whose lines have unequal numbers of fields ``text``; but plain
    text has no labels, so a labeled file that looks like text is a CoNLL file with a bad
    line, and reading it as CoNLL reports that line (``file:line``) instead of "no labels".
    """
    if fmt != "auto" or path == "-":
        return fmt
    from tagger.io import detect_format

    found = detect_format(path)
    return "conll" if found in ("text", "raw") else found


def _read_labeled(path: str, fmt: str, label_column: int | None, fields: str | None = None
                  ) -> list:
    from tagger.io import load_corpus
    from tagger.io.hf import is_dataset_source

    if path.endswith(".spacy"):  # a spaCy DocBin
        from tagger.io.docbin import read_docbin

        return list(read_docbin(path, fields))
    if is_dataset_source(path):  # hf:NAME, hf:BUILDER:PATH, *.parquet, *.jsonl, ...
        from tagger.io.hf import read_dataset

        return list(read_dataset(path, fields))
    options = {} if label_column is None else {"label_column": label_column}
    return load_corpus(path, _labeled_format(path, fmt), **options)


class _TrainProgress:
    """Shows the learners' per-epoch log lines (logger ``tagger.train``) on stderr."""

    def __init__(self, quiet: bool):
        self.quiet = quiet

    def __enter__(self):
        import logging

        self.logger = logging.getLogger("tagger.train")
        self.handler = None
        if not self.quiet:
            self.handler = logging.StreamHandler(sys.stderr)
            self.handler.setFormatter(logging.Formatter("%(message)s"))
            self.old_level = self.logger.level
            self.logger.addHandler(self.handler)
            self.logger.setLevel(logging.INFO)
        return self

    def __exit__(self, *exc):
        if self.handler is not None:
            self.logger.removeHandler(self.handler)
            self.logger.setLevel(self.old_level)
        return False


def _size(n: int) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1024 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n} B"  # pragma: no cover


#: fields of Tagger.info_ and of the training trace that measure wall-clock time


@cli.command("train")
@click.argument("train_files", metavar="TRAIN...", nargs=-1, required=True,
                type=click.Path(dir_okay=False))
@click.option("-o", "--output", "model_path", required=True, type=click.Path(dir_okay=False),
              help="Model file to write (atomically).")
@format_option
@click.option("--label-column", type=int, default=None,
              help="Label column of CoNLL files (negative counts from the end)  [default: -1]")
@click.option("--features", default=None, metavar="PRESET|FILE",
              help="Feature preset (chunk, pos, citation) or TOML file  [default: chunk for "
                   "CoNLL files with two input columns, citation for inline/tab, pos otherwise]")
@click.option("--learner", default=None, metavar="NAME",
              help="Learner (see 'tagger learners')  [default: m3n-subgradient]")
@click.option("--set", "settings", multiple=True, metavar="KEY=VALUE",
              help="A learner parameter, e.g. --set radius=500 --set epochs=10 (repeatable).")
@click.option("--dev", "dev_file", default=None, type=click.Path(dir_okay=False),
              help="Labeled dev file scored after every epoch.")
@click.option("--seed", type=int, default=0, show_default=True, help="Random seed.")
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
@click.option("-q", "--quiet", is_flag=True, help="No progress lines and no summary.")
@click.option("--list-learners", is_flag=True, is_eager=True, expose_value=False,
              callback=_list_learners_callback, help="List the learners and their parameters.")
def train_cmd(train_files, model_path, fmt, label_column, features, learner, settings,
              dev_file, seed, quiet, fields, unlabeled_file, constraints_file, test_file) -> None:
    """Train a tagger on the TRAIN files (concatenated) and save it to MODEL.

    TRAIN may also be a Hugging Face dataset (hf:eriktks/conll2000, with ?split=...&revision=
    ...&config=...), local files read by datasets' loaders (*.parquet, *.jsonl, *.arrow,
    hf:conll:FILE) or a spaCy DocBin (*.spacy); see --fields.

    \b
    Semi-supervised, with domain constraints:
    tagger train LABELED... --unlabeled FILE --constraints FILE --dev FILE -o MODEL
    """
    from tagger.learners import DEFAULT_LEARNER

    if learner is None and unlabeled_file is not None:
        learner = "ssvm-annealing"
    learner = learner or DEFAULT_LEARNER
    params = _learner_settings(learner, settings)
    cset = None
    if constraints_file is not None:  # every mistake of the file before any data is read
        from tagger.constraints import ConstraintSet

        cset = ConstraintSet.load(constraints_file)
        if unlabeled_file is None:
            raise click.UsageError("--constraints in training needs --unlabeled FILE (the "
                                   "constraints guide the labels imputed to unlabeled text)")

    from tagger.api import Tagger
    from tagger.io import gc_paused

    with gc_paused():
        train = []
        first_format = None
        for path in train_files:
            sents = _read_labeled(path, fmt, label_column, fields)
            if first_format is None and sents:
                first_format = sents[0].meta.get("format", "conll")
            train.extend(sents)
        dev = _read_labeled(dev_file, fmt, label_column, fields) if dev_file else None
        test = _read_labeled(test_file, fmt, label_column, fields) if test_file else None
    if features is None:
        n_cols = len(train[0].columns) if train else 0
        features = _default_features(first_format or "conll", n_cols)

    tagger = Tagger(features=features, learner=learner, params=params, seed=seed)
    with _TrainProgress(quiet):
        unlabeled = None
        if unlabeled_file is not None:
            from tagger.io import read_corpus

            unlabeled = read_corpus(unlabeled_file, fmt, labeled=False)
        tagger.fit(train, dev=dev, unlabeled=unlabeled, constraints=cset, test=test,
                   progress=None if quiet else _unlabeled_progress)
    info = dict(tagger.info_)
    size = tagger.save(model_path)

    if not quiet:
        final = info.get("final", {})
        dev_txt = ", ".join(f"{k} {final[k]}" for k in ("dev_f1", "dev_acc") if k in final)
        seconds = info.get("featurize_seconds", 0) + info.get("train_seconds", 0)
        click.echo(
            f"trained {learner} (features {tagger.featurizer_.spec.name}) on "
            f"{info['n_train_sentences']} sentences, {info['n_train_tokens']} tokens in "
            f"{seconds:.1f} s (featurize {info.get('featurize_seconds', 0):.1f} s)\n"
            f"parameters {info['n_params']}, non-zero weights {info['n_nonzero']}, "
            f"labels {len(tagger.labels_)}\n"
            + (f"dev of the saved weights: {dev_txt}\n" if dev_txt else "")
            + f"saved {model_path} ({_size(size)})",
            err=True,
        )


def _unlabeled_progress(row: dict) -> None:
    if "unlabeled_read" in row:
        click.echo(f"read {row['unlabeled_read']} unlabeled sentences", err=True)


# ------------------------------------------------------------------------------------------
# path


def _path_values(text: str) -> list[float]:
    try:
        values = [float(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise click.BadParameter(f"expected comma-separated numbers, got {text!r}",
                                 param_hint="'--values'")
    if not values:
        raise click.BadParameter("no values given", param_hint="'--values'")
    return values


@cli.command("path")
@click.argument("train_file", metavar="TRAIN", type=click.Path(dir_okay=False))
@click.option("--dev", "dev_file", required=True, type=click.Path(dir_okay=False),
              help="Labeled dev file scored at every value.")
@click.option("--values", "values_text", required=True, metavar="V1,V2,...",
              help="Values of the regularization parameter, in the order trained "
                   "(e.g. from dense to sparse: --values 1,3,10,30).")
@click.option("--param", default=None, metavar="NAME",
              help="The parameter varied  [default: the learner's own: lambda for m3n-em, "
                   "C for m3n-l2]")
@format_option
@click.option("--label-column", type=int, default=None,
              help="Label column of CoNLL files (negative counts from the end)  [default: -1]")
@click.option("--features", default=None, metavar="PRESET|FILE",
              help="Feature preset or TOML file  [default: as for train]")
@click.option("--learner", default=None, metavar="NAME",
              help="Learner (see 'tagger learners')  [default: the default learner]")
@click.option("--set", "settings", multiple=True, metavar="KEY=VALUE",
              help="Other learner parameters (repeatable).")
@click.option("--seed", type=int, default=0, show_default=True, help="Random seed.")
@click.option("--json", "as_json", is_flag=True, help="Print the rows as one JSON list.")
@click.option("--plot", "plot_path", default=None, type=click.Path(dir_okay=False),
              help="Write a picture of dev score and non-zero weights against the parameter "
                   "(PNG/SVG/PDF; needs matplotlib).")
@click.option("-o", "--output", "model_path", default=None, type=click.Path(dir_okay=False),
              help="Also save the model of the last value.")
@click.option("-q", "--quiet", is_flag=True, help="No progress lines.")
def path_cmd(train_file, dev_file, values_text, param, fmt, label_column, features, learner,
             settings, seed, as_json, plot_path, model_path, quiet) -> None:
    """Regularization path: train on TRAIN once per value (warm starts), score on --dev."""
    from tagger.learners import DEFAULT_LEARNER, get_learner

    learner = learner or DEFAULT_LEARNER
    params = _learner_settings(learner, settings)
    values = _path_values(values_text)
    from tagger.errors import ParameterError

    try:
        cls = get_learner(learner)
        param = param or getattr(cls, "path_param", None)
        if param is None:
            raise click.BadParameter(f"learner {learner} needs --param", param_hint="'--param'")
        p = cls.param(param)
        for v in values:
            cls(**dict(params, **{param: p.kind(v) if p.kind is int else v})).validated()
    except ParameterError as exc:
        raise click.BadParameter(str(exc), param_hint="'--values'")
    if plot_path:
        from tagger.api import plot_available

        if not plot_available():
            raise click.UsageError("--plot needs matplotlib (pip install matplotlib)")

    from tagger.api import Tagger, plot_path as draw
    from tagger.io import gc_paused

    with gc_paused():
        train = _read_labeled(train_file, fmt, label_column)
        dev = _read_labeled(dev_file, fmt, label_column)
    if features is None:
        fmt0 = train[0].meta.get("format", "conll") if train else "conll"
        features = _default_features(fmt0, len(train[0].columns) if train else 0)
    tagger = Tagger(features=features, learner=learner, params=params, seed=seed)
    with _TrainProgress(quiet or as_json):
        rows = tagger.path(train, dev, values, param=param)
    if as_json:
        import json

        click.echo(json.dumps(rows))
    else:
        score = "dev_f1" if "dev_f1" in rows[0] else "dev_acc"
        click.echo(f"{param:>12}  {score:>7}  {'dev_acc':>7}  {'nonzero':>9}  {'seconds':>8}")
        for r in rows:
            click.echo(f"{r['value']:>12g}  {r[score]:>7.2f}  {r['dev_acc']:>7.2f}  "
                       f"{r['nonzero']:>9d}  {r['seconds']:>8.1f}")
    if plot_path:
        draw(rows, plot_path, title=f"{learner} on {os.path.basename(train_file)}")
        if not as_json:
            click.echo(f"picture: {plot_path}", err=True)
    if model_path:
        tagger.save(model_path)


# ------------------------------------------------------------------------------------------
# tag


def _conll_sep(head: bytes) -> str:
    """A tab if the first token line separates its fields by tabs only, else a space."""
    for line in head.split(b"\n")[:-1] or head.split(b"\n"):
        line = line.rstrip(b"\r")
        if line.strip():
            return "\t" if b"\t" in line and b" " not in line else " "
    return " "


class _HeadReader:
    """A binary stream whose first block was read (to look at it) and is given back."""

    def __init__(self, stream, name: str, size: int = 65536):
        self._stream = stream
        self.name = name
        self.head = stream.read(size) or b""
        self._prefix = self.head

    def read(self, n: int = -1):
        if self._prefix:
            out, self._prefix = self._prefix, b""
            return out
        return self._stream.read(n)


@cli.command("tag")
@click.argument("model_path", metavar="MODEL", type=click.Path(dir_okay=False))
@click.argument("input_path", metavar="[INPUT]", default="-", required=False)
@click.option("-o", "--output", "output_path", default="-", metavar="OUTPUT",
              help="Output file  [default: standard output]")
@format_option
@click.option("--label-column", type=int, default=None, metavar="N",
              help="CoNLL column holding (gold) labels to replace by the predictions  "
                   "[default: the last field when a line has one field more than the model "
                   "reads]")
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
def tag_cmd(model_path, input_path, output_path, fmt, label_column, jobs, marginals,
            constraints_file) -> None:
    """Tag INPUT (default: standard input) with MODEL, in the input's own format.

    CoNLL input may carry a label column (one field more than the model reads, or the one
    --label-column names): it is replaced by the prediction; otherwise the prediction is
    appended as the last field.
    """
    from tagger.api import Tagger
    from tagger.io import gc_paused, read_corpus, write_corpus
    from tagger.parallel import without_gold

    cset = None
    if constraints_file is not None:
        from tagger.constraints import ConstraintSet

        cset = ConstraintSet.load(constraints_file)
    tagger = Tagger.load(model_path)
    if cset is not None:
        cset.compile(tagger.labels_.labels)  # labels checked before any input is read
    spec = tagger.featurizer_.spec
    if marginals and not tagger.probabilistic_:
        from tagger.errors import TaggerError

        raise TaggerError(f"--marginals needs a CRF model; {model_path} was trained by "
                          f"{tagger.info_.get('learner', 'an unknown learner')}, a max-margin "
                          "learner whose scores are not probabilities")

    if input_path == "-":
        stdin = getattr(sys.stdin, "buffer", sys.stdin)
        source = _HeadReader(stdin, "<stdin>")
        head = source.head if isinstance(source.head, bytes) else source.head.encode()
    else:
        source = input_path
        with open(input_path, "rb") as fh:
            head = fh.read(65536)
    parallel_ok = not marginals and cset is None
    _use_threads(jobs)
    if jobs > 1 and parallel_ok and _tag_in_parallel(tagger, model_path, input_path, source, head,
                                     output_path, fmt, label_column, jobs,
                                     {"sep": _conll_sep(head)}):
        return
    if label_column is None:
        sentences = read_corpus(source, fmt, labeled=False)
        sentences = without_gold(sentences, spec.n_columns, ", ".join(spec.columns),
                                 "<stdin>" if input_path == "-" else input_path)
    else:
        sentences = read_corpus(source, fmt, label_column=label_column)
    write_options = {"sep": _conll_sep(head)}
    if marginals:
        with _output(output_path) as out, gc_paused():
            _write_marginals(out, tagger, sentences, write_options["sep"])
            out.flush()
        return

    with _output(output_path) as out, gc_paused():
        sents: list = []
        labels: list = []
        for s, labs in tagger.tag_stream(sentences, batch_size=TAG_BATCH, constraints=cset):
            sents.append(s)
            labels.append(labs)
            if len(sents) >= TAG_BATCH:
                write_corpus(out, sents, labels, **write_options)
                sents, labels = [], []
        if sents:
            write_corpus(out, sents, labels, **write_options)
        out.flush()


def _use_threads(jobs: int) -> None:
    """Decode on at most ``jobs`` threads, so that ``--jobs 1`` keeps to one core as the option
    promises (the kernels otherwise use every core numba sees)."""
    import numba

    numba.set_num_threads(max(1, min(jobs, numba.config.NUMBA_NUM_THREADS)))


def _tag_in_parallel(tagger, model_path, input_path, source, head, output_path, fmt,
                     label_column, jobs, write_options) -> bool:
    """``tagger tag --jobs N``; False for a format that cannot be cut into blocks (inline)."""
    from tagger.io import sniff_format
    from tagger.parallel import PARALLEL_FORMATS, tag_parallel

    name = "<stdin>" if input_path == "-" else input_path
    if fmt == "auto":
        fmt = sniff_format(head.decode("utf-8", errors="replace"), name)
    if fmt not in PARALLEL_FORMATS:
        return False
    with _output(output_path) as out, contextlib.ExitStack() as stack:
        stream = source if input_path == "-" else stack.enter_context(open(input_path, "rb"))
        tag_parallel(model_path, stream, out, fmt, jobs, name, label_column, write_options,
                     tagger=tagger)
        out.flush()
    return True


def _write_marginals(out, tagger, sentences, sep: str) -> None:
    """Token lines ``columns... predicted LABEL:P ...`` (every label, model order), a blank
    line after each sentence (CRFsuite's ``tag -l`` output, in columns)."""
    import itertools

    names = tagger.labels_.labels
    it = iter(sentences)
    while True:
        batch = list(itertools.islice(it, TAG_BATCH))
        if not batch:
            return
        preds = tagger.predict(batch)
        margs = tagger.predict_marginals(batch)
        lines = []
        for s, pred, m in zip(batch, preds, margs):
            for t in range(len(s)):
                probs = sep.join(f"{lab}:{p:.6f}" for lab, p in zip(names, m[t].tolist()))
                lines.append(sep.join([col[t] for col in s.columns] + [pred[t], probs]))
            lines.append("")
        out.write("\n".join(lines) + "\n")


@contextlib.contextmanager
def _output(path: str):
    """Standard output for ``-``; otherwise a temporary file in the destination's directory
    that replaces ``path`` only once everything was written (no half-tagged files)."""
    if path == "-":
        yield sys.stdout
        return
    import tempfile

    directory = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=".tagger-", suffix=".part", dir=directory)
    try:
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)  # mkstemp's 0600 would outlive the rename
        with open(fd, "w", encoding="utf-8", newline="\n", buffering=1 << 20) as out:
            yield out
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


# ------------------------------------------------------------------------------------------
# eval


def _jsonable(obj):
    import math

    import numpy as np

    if isinstance(obj, dict):
        return {str(k): _jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_jsonable(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return _jsonable(obj.tolist())
    if isinstance(obj, np.bool_):
        return bool(obj)
    if isinstance(obj, np.integer):
        return int(obj)
    if isinstance(obj, (float, np.floating)):
        f = float(obj)
        return f if math.isfinite(f) else None
    return obj


@cli.command("eval")
@click.argument("model_path", metavar="MODEL", type=click.Path(dir_okay=False))
@click.argument("test_path", metavar="TEST", type=click.Path(dir_okay=False))
@format_option
@click.option("--label-column", type=int, default=None, metavar="N",
              help="Label column of CoNLL files (negative counts from the end)  [default: -1]")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
@fields_option
@click.option("--constraints", "constraints_file", default=None, type=click.Path(dir_okay=False),
              help="Also report how often each constraint of this file is violated by the "
                   "gold labels and by the predictions.")
@click.option("--decode-constraints", is_flag=True,
              help="Score predictions made under --constraints (constrained decoding).")
def eval_cmd(model_path, test_path, fmt, label_column, as_json, fields, constraints_file,
             decode_constraints) -> None:
    """Score MODEL on the labeled TEST file: accuracy, precision, recall, F1.

    Chunk-level scores (conlleval) when the labels are B-/I- tags, per-label scores otherwise.
    """
    import json

    from tagger.api import Tagger

    cset = None
    if constraints_file is not None:
        from tagger.constraints import ConstraintSet

        cset = ConstraintSet.load(constraints_file)
    elif decode_constraints:
        raise click.UsageError("--decode-constraints needs --constraints FILE")
    tagger = Tagger.load(model_path)
    test = _read_labeled(test_path, fmt, label_column, fields)
    metrics = tagger.evaluate(test, constraints=cset if decode_constraints else None)
    if cset is not None:
        pred = tagger.predict(test, constraints=cset if decode_constraints else None)
        metrics["constraints"] = tagger.constraint_report(test, cset, predictions=pred)
    if as_json:
        click.echo(json.dumps(_jsonable(metrics), ensure_ascii=False))
    else:
        from tagger.metrics import format_report

        click.echo(format_report(metrics))
        if metrics.get("unknown_labels"):
            click.echo("labels the model never saw in training (always wrong): "
                       + ", ".join(metrics["unknown_labels"]))
        if cset is not None:
            click.echo(_constraint_table(metrics["constraints"]))


def _constraint_table(rows: list[dict]) -> str:
    """Violation rates by gold labels and by predictions, one line per constraint."""
    width = max([len("constraint")] + [len(r["constraint"]) for r in rows])
    out = ["", f"{'constraint':<{width}}  {'kind':<13}  {'gold':>8}  {'predicted':>9}"]
    for r in rows:
        kind = f"{r['level']}{' hard' if r['hard'] else ''}"
        if r["level"] == "instance":
            g, p = f"{100 * r['gold_rate']:.1f}%", f"{100 * r['pred_rate']:.1f}%"
        else:
            g, p = f"{r['gold_value']:.3f}", f"{r['pred_value']:.3f}"
        out.append(f"{r['constraint']:<{width}}  {kind:<13}  {g:>8}  {p:>9}")
    out.append("instance rows: share of sentences violating the rule; corpus rows: the "
               "measured fraction (target +- tolerance in the file)")
    return "\n".join(out)


# ------------------------------------------------------------------------------------------
# inspect


def _inspect_text(r: dict, top: int) -> str:
    labels = r["labels"]
    lines = [
        f"learner: {r.get('learner')}",
        f"parameters: {r['n_params']}   non-zero weights: {r['n_nonzero']}   "
        f"attributes: {r.get('n_attributes')}   labels: {len(labels)}",
        "labels: " + " ".join(labels),
        "",
        f"top {top} features per label (by |weight|):",
    ]
    for lab, feats in r["top_features"].items():
        lines.append(f"  {lab}:")
        if not feats:
            lines.append("    (none)")
        for name, w in feats:
            lines.append(f"    {w:+10.4f}  {name}")
    lines.append("")
    lines.extend(_transition_matrix(r))
    return "\n".join(lines)


def _transition_matrix(r: dict) -> list[str]:
    """Rows: previous label (and start/end weights); columns: next label, by number."""
    labels = r["labels"]
    rows = [(f"{i:>2} {a}", [r["transitions"][a][b] for b in labels])
            for i, a in enumerate(labels)]
    for key in ("start", "end"):
        if key in r:
            rows.append((f"   {key}", [r[key][b] for b in labels]))
    cells = [[_cell(v) for v in vals] for _, vals in rows]
    width = max([len(str(len(labels) - 1))] + [len(c) for row in cells for c in row])
    head = max(len(name) for name, _ in rows)
    out = ["transitions (row: previous label; column: next label, by number; '.' = 0):",
           " " * head + " " + " ".join(f"{j:>{width}}" for j in range(len(labels)))]
    for (name, _), row in zip(rows, cells):
        out.append(f"{name:<{head}} " + " ".join(f"{c:>{width}}" for c in row))
    return out


def _cell(v: float) -> str:
    return "." if v == 0 else f"{v:.2f}"


@cli.command("inspect")
@click.argument("model_path", metavar="MODEL", type=click.Path(dir_okay=False))
@click.option("--top", type=click.IntRange(min=0), default=10, show_default=True,
              help="Features shown per label.")
@click.option("--json", "as_json", is_flag=True, help="Print Tagger.inspect() as JSON.")
def inspect_cmd(model_path, top, as_json) -> None:
    """Show MODEL's sizes, labels, strongest features per label and transition weights."""
    import json

    from tagger.api import Tagger

    report = Tagger.load(model_path).inspect(top)
    if as_json:
        click.echo(json.dumps(_jsonable(report), ensure_ascii=False))
    else:
        click.echo(_inspect_text(report, top))


# ------------------------------------------------------------------------------------------
# trace


@cli.command("trace")
@click.argument("model_path", metavar="MODEL", type=click.Path(dir_okay=False))
@click.option("--plot", "plot_path", default=None, type=click.Path(dir_okay=False),
              help="Also draw dev (and test) accuracy along training as a PNG (needs "
                   "matplotlib).")
@click.option("--json", "as_json", is_flag=True, help="Print the trace rows as JSON.")
def trace_cmd(model_path, plot_path, as_json) -> None:
    """Print the training trace saved in MODEL (per epoch or annealing step: objective, dev
    and test scores; the row the model was chosen from is marked)."""
    import json

    from tagger.api import Tagger
    from tagger.trace import format_trace, plot_trace

    rows = Tagger.load(model_path).trace_
    if as_json:
        click.echo(json.dumps(_jsonable(rows), ensure_ascii=False))
    else:
        click.echo(format_trace(rows))
    if plot_path is not None:
        plot_trace(rows, plot_path)
        click.echo(f"drew {plot_path}", err=True)


if __name__ == "__main__":
    main()
