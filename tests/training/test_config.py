"""Training configuration files: ``tagger init-config``, ``tagger train --config`` (options given
on the command line win), the configuration kept in the model and ``--config-from MODEL``."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from tagger.errors import ConfigError
from tagger.learners import DEFAULT_LEARNER, LEARNERS
from tagger.training import config as training_config

from _helpers import SAMPLE, SAMPLE_DEV, run_cli

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib


def _one_error_line(result, code, *fragments):
    assert result.exit_code == code, (result.exit_code, result.output)
    lines = result.stderr.strip().splitlines()
    assert "Traceback" not in result.output
    for fragment in fragments:
        assert fragment in lines[-1], lines[-1]
    if code == 1:
        assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr


def _write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def _config(tmp_path: Path, extra: str = "", params: str = "epochs = 2") -> Path:
    """A configuration in its own directory, naming the sample by a path relative to it."""
    d = tmp_path / "cfg"
    d.mkdir(exist_ok=True)
    train = os.path.relpath(SAMPLE, d)
    dev = os.path.relpath(SAMPLE_DEV, d)
    return _write(
        d / "train.toml",
        f'[data]\ntrain = ["{train}"]\ndev = "{dev}"\n'
        f'[model]\noutput = "out.tgm"\nseed = 3\nselect = false\n'
        f"{extra}\n[params]\n{params}\n",
    )


def _stored(model: Path) -> dict:
    result = run_cli("inspect", model, "--json")
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)["config"]


def test_init_config_lists_every_setting_and_reads_back_as_the_defaults():
    result = run_cli("init-config")
    assert result.exit_code == 0, result.output
    data = tomllib.loads(result.stdout)
    for section, keys in training_config.SCHEMA.items():
        for name, key in keys.items():
            assert f"{name} = " in result.stdout, name  # set, or shown as a comment
            if key.default is not None:
                assert data[section][name] == key.default
    # every parameter of the default learner is shown, none set: the learner's own defaults
    for p in LEARNERS[DEFAULT_LEARNER].params:
        assert f"# {p.name} = " in result.stdout
    assert data["params"] == {}
    assert training_config.check(data, "x") == training_config.defaults()


@pytest.mark.parametrize("name", sorted(LEARNERS))
def test_every_learners_table_is_valid_toml_whose_values_the_learner_accepts(name):
    text = training_config.to_toml(training_config.defaults(), name)
    # uncommenting every parameter line gives the learner's defaults, accepted as they are
    names = {p.name for p in LEARNERS[name].params}
    lines = [
        ln[2:] if ln.startswith("# ") and ln[2:].split(" = ")[0] in names else ln
        for ln in text.split("[params]")[1].splitlines()[1:]
    ]
    params = tomllib.loads("\n".join(lines))
    assert params == {p.name: p.default for p in LEARNERS[name].params}
    cfg = dict(training_config.defaults(), params=params)
    assert training_config.learner_params(cfg, name, "x") == params


def test_train_from_a_config_file_with_paths_relative_to_it(tmp_path, monkeypatch):
    cfg = _config(tmp_path)
    monkeypatch.chdir(tmp_path)  # not the file's directory
    result = run_cli("train", "--config", cfg, "-q")
    assert result.exit_code == 0, result.output
    model = cfg.parent / "out.tgm"  # output is relative to the file too
    stored = _stored(model)
    assert stored["data"]["train"] == [str(SAMPLE.resolve())]
    assert stored["data"]["dev"] == str(SAMPLE_DEV.resolve())
    assert stored["model"]["seed"] == 3 and stored["model"]["learner"] == DEFAULT_LEARNER
    assert stored["params"]["epochs"] == 2
    assert "output" not in stored["model"]
    # the same run from the command line writes the same model
    again = tmp_path / "cli.tgm"
    result = run_cli(
        "train",
        SAMPLE,
        "--dev",
        SAMPLE_DEV,
        "--seed",
        3,
        "--no-select",
        "--set",
        "epochs=2",
        "-o",
        again,
        "-q",
    )
    assert result.exit_code == 0, result.output
    assert _stored(again)["params"] == stored["params"]


def test_command_line_options_override_the_file(tmp_path):
    cfg = _config(tmp_path)
    out = tmp_path / "other.tgm"
    result = run_cli("train", "--config", cfg, "--seed", 5, "--set", "epochs=1", "-o", out, "-q")
    assert result.exit_code == 0, result.output
    stored = _stored(out)
    assert stored["model"]["seed"] == 5 and stored["params"]["epochs"] == 1
    assert not (cfg.parent / "out.tgm").exists()


def test_config_from_a_model_trains_the_same_model_again(tmp_path):
    cfg = _config(tmp_path)
    assert run_cli("train", "--config", cfg, "-q").exit_code == 0
    first = cfg.parent / "out.tgm"
    second = tmp_path / "again.tgm"
    result = run_cli("train", "--config-from", first, "-o", second, "-q")
    assert result.exit_code == 0, result.output
    assert second.read_bytes() == first.read_bytes()
    # and an override changes what it says
    third = tmp_path / "seed9.tgm"
    assert run_cli("train", "--config-from", first, "--seed", 9, "-o", third, "-q").exit_code == 0
    assert _stored(third)["model"]["seed"] == 9


@pytest.mark.parametrize("learner", ["m3n-subgradient", "crf-l1"])
def test_what_the_path_chooses_is_not_kept_as_a_setting(tmp_path, learner):
    cfg = _config(tmp_path, extra=f'learner = "{learner}"', params="epochs = 2")
    cfg.write_text(cfg.read_text().replace("select = false", "select = true"))
    assert run_cli("train", "--config", cfg, "-q").exit_code == 0
    first = cfg.parent / "out.tgm"
    stored = _stored(first)
    cls = LEARNERS[learner]
    assert stored["model"]["select"] is True and cls.strength[0] not in stored["params"]
    if getattr(cls, "mix", None):  # the L2 mix walked with the strength
        assert cls.mix not in stored["params"]
    # so a rerun walks the same path and writes the same bytes
    again = tmp_path / "again.tgm"
    assert run_cli("train", "--config-from", first, "-o", again, "-q").exit_code == 0
    assert again.read_bytes() == first.read_bytes()


@pytest.mark.parametrize(
    "text, fragments",
    [
        ("[dta]\ntrain = ['a']\n", ["dta", "expected one of the tables data, model, params"]),
        ("[data]\ntrian = ['a']\n", ["data.trian", "expected one of train, dev"]),
        ("[data]\ntrain = 3\n", ["data.train", "a list of file names", "found 3"]),
        ("[data]\nformat = 'csv'\n", ["data.format", "one of auto, conll", "'csv'"]),
        ("[model]\nseed = 'x'\n", ["model.seed", "expected an integer", "'x'"]),
        ("[model]\nselect = 1\n", ["model.select", "expected true or false"]),
        ("[model]\nmax_seconds = -1\n", ["model.max_seconds", "a number >= 0"]),
        ("[data]\ntrain = ['a']\n[params]\nradiuss = 3\n", ["params.radiuss", "radius"]),
        ("[data]\ntrain = ['a']\n[params]\nradius = -3\n", ["params.radius"]),
        ("[data]\ntrain = ['a']\n[params]\nepochs = 2.5\n", ["params.epochs"]),
        ("[data\n", ["not valid TOML"]),
    ],
)
def test_a_mistake_is_one_line_naming_the_file_and_key(tmp_path, text, fragments):
    cfg = _write(tmp_path / "bad.toml", text)
    result = run_cli("train", "--config", cfg, "-o", tmp_path / "m.tgm", "-q")
    _one_error_line(result, 1, str(cfg), *fragments)
    assert not (tmp_path / "m.tgm").exists()


def test_usage_mistakes_exit_2(tmp_path):
    cfg = _config(tmp_path)
    _one_error_line(run_cli("train", "--config", cfg, "--config-from", cfg), 2, "not both")
    _one_error_line(run_cli("train", "-o", tmp_path / "m.tgm"), 2, "no training data")
    _one_error_line(run_cli("train", SAMPLE), 2, "no model file")
    assert run_cli("train", "--config", cfg, "-q").exit_code == 0
    _one_error_line(run_cli("train", "--config-from", cfg.parent / "out.tgm"), 2, "-o NEW")


def test_a_model_without_a_configuration_says_so(tmp_path):
    from tagger.api import Tagger
    from tagger.io import load_corpus

    model = tmp_path / "api.tgm"
    Tagger(features="chunk", params={"epochs": 1}, select=False).fit(load_corpus(SAMPLE)).save(
        model
    )
    result = run_cli("train", "--config-from", model, "-o", tmp_path / "b.tgm")
    _one_error_line(result, 1, str(model), "keeps no training configuration", "init-config")


def test_init_config_for_a_task_trains_as_written(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = run_cli("init-config", "--task", "chunk", "--learner", "crf-l1", "chunk.toml")
    assert result.exit_code == 0, result.output
    data = tomllib.loads((tmp_path / "chunk.toml").read_text())
    assert data["model"]["features"] == "chunk" and data["model"]["learner"] == "crf-l1"
    cfg = training_config.read(tmp_path / "chunk.toml")
    assert Path(cfg["data"]["train"][0]).resolve() == SAMPLE.resolve()
    result = run_cli("train", "--config", "chunk.toml", "--no-select", "--set", "epochs=3", "-q")
    assert result.exit_code == 0, result.output
    assert _stored(tmp_path / "chunker.tgm")["model"]["learner"] == "crf-l1"


def test_check_refuses_params_for_auto():
    cfg = dict(training_config.defaults(), params={"c1": 1.0})
    with pytest.raises(ConfigError, match="learner auto"):
        training_config.learner_params(cfg, "auto", "x")


def test_the_command_lines_own_copies_agree_with_the_package():
    # written out in tagger.cli.commands: `tagger --help` imports neither learners nor readers
    from tagger.cli.commands import DEFAULT_LEARNER_NAME, FORMAT_CHOICES, OUTPUT_FORMATS
    from tagger.io.formats import FORMATS
    from tagger.io.formats import OUTPUT_FORMATS as WRITTEN

    assert DEFAULT_LEARNER_NAME == DEFAULT_LEARNER
    assert FORMAT_CHOICES == ("auto", *FORMATS) == training_config.FORMATS
    assert OUTPUT_FORMATS == WRITTEN


def test_every_path_of_a_file_is_relative_to_it_the_template_and_sources_too(tmp_path):
    d = tmp_path / "sub"
    d.mkdir()
    cfg = _write(
        d / "run.toml",
        '[data]\ntrain = ["a.txt", "hf:conll:data.txt?split=train", "hf:eriktks/conll2000"]\n'
        'dev = "hf:parquet:../dev.parquet"\ntest = "t/test.txt"\n'
        '[model]\nfeatures = "feats.toml"\noutput = "m.tgm"\n',
    )
    read = training_config.read(cfg)
    base = str(d.resolve())
    assert read["data"]["train"] == [
        os.path.join(base, "a.txt"),
        f"hf:conll:{os.path.join(base, 'data.txt')}?split=train",
        "hf:eriktks/conll2000",  # a dataset on the hub is no file
    ]
    assert read["data"]["dev"] == f"hf:parquet:{tmp_path.resolve() / 'dev.parquet'}"
    assert read["data"]["test"] == os.path.join(base, "t", "test.txt")
    assert read["model"]["features"] == os.path.join(base, "feats.toml")
    assert read["model"]["output"] == os.path.join(base, "m.tgm")
    _write(cfg, '[model]\nfeatures = "chunk"\n')
    assert training_config.read(cfg)["model"]["features"] == "chunk"  # a preset stays one


def test_a_template_file_named_by_a_config_file_is_read_beside_it_and_kept(tmp_path, monkeypatch):
    presets = Path(training_config.__file__).resolve().parents[1] / "presets"
    cfg = _config(tmp_path, extra='features = "feats.toml"')
    (cfg.parent / "feats.toml").write_text((presets / "chunk.toml").read_text())
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    # a template of the same name where the command runs must not be taken instead
    (elsewhere / "feats.toml").write_text((presets / "pos.toml").read_text())
    monkeypatch.chdir(elsewhere)
    result = run_cli("train", "--config", cfg, "-q")
    assert result.exit_code == 0, result.output
    model = cfg.parent / "out.tgm"
    assert _stored(model)["model"]["features"] == str(cfg.parent.resolve() / "feats.toml")
    (elsewhere / "feats.toml").unlink()
    again = tmp_path / "again.tgm"
    assert run_cli("train", "--config-from", model, "-o", again, "-q").exit_code == 0
    assert again.read_bytes() == model.read_bytes()


def test_init_config_keeps_an_existing_file_unless_forced(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    victim = _write(tmp_path / "victim.tgm", "not TOML, and precious")
    _one_error_line(run_cli("init-config", "victim.tgm"), 1, "victim.tgm", "--force")
    assert victim.read_text() == "not TOML, and precious"
    assert run_cli("init-config", "victim.tgm", "--force").exit_code == 0
    assert "[data]" in victim.read_text()
    assert run_cli("init-config").stdout.startswith("# Training configuration")  # stdout


@pytest.mark.parametrize("seed", [-5, 2**32, "3"])
def test_a_seed_the_learners_cannot_take_is_refused_where_every_training_passes(seed, tmp_path):
    import tagger
    from tagger.api import Tagger
    from tagger.io import load_corpus
    from tagger.sklearn import SparseTaggerEstimator

    sentences = load_corpus(SAMPLE)[:20]
    with pytest.raises(ConfigError, match="seed"):
        tagger.train(train=str(SAMPLE), seed=seed)
    with pytest.raises(ConfigError, match="seed"):
        Tagger(seed=seed, learner="perceptron").fit(sentences)
    with pytest.raises(ConfigError, match="seed"):
        Tagger(seed=seed, learner="perceptron").path(sentences, sentences, [1.0])
    # the estimator refuses a seed that is not an integer itself, in scikit-learn's words
    with pytest.raises(ConfigError if isinstance(seed, int) else ValueError, match="seed"):
        SparseTaggerEstimator(seed=seed, learner="perceptron").fit([["a"]], [["B-NP"]])
    cfg = _write(tmp_path / "s.toml", f'[data]\ntrain = ["x.txt"]\n[model]\nseed = {seed!r}\n')
    with pytest.raises(ConfigError, match=r"s\.toml: model\.seed: expected an integer"):
        training_config.read(cfg)
    # the learners that seed a generator take the whole range
    from tagger.training.schema import SEED_MAX

    Tagger(seed=SEED_MAX, learner="perceptron", params={"epochs": 1}).fit(sentences)


@pytest.mark.parametrize("dev", [True, False], ids=["dev", "held-out tenth"])
def test_the_default_learner_trained_again_from_its_model_gives_the_same_bytes(tmp_path, dev):
    # the path sets the settings of its points and of the kept point's polish; kept in the
    # model as if the user had set them, they would make a rerun train another model
    first, again = tmp_path / "first.tgm", tmp_path / "again.tgm"
    extra = ["--dev", SAMPLE_DEV] if dev else []
    assert run_cli("train", SAMPLE, *extra, "-o", first, "-q").exit_code == 0
    stored = _stored(first)
    assert "stages" not in stored["params"] and "epochs" not in stored["params"]
    assert run_cli("train", "--config-from", first, "-o", again, "-q").exit_code == 0
    assert again.read_bytes() == first.read_bytes()
