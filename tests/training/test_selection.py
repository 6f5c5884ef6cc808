"""Choosing the regularization strength (tagger.training.selection): the path's order, where it
stops, which point it keeps, the held-out split, and what `tagger train` does with it."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from tagger.cli import cli
from tagger.learners import LEARNERS
from tagger.training import selection

from _helpers import ROOT, SAMPLE, SAMPLE_DEV


@pytest.mark.parametrize("direction", [1, -1])
def test_grid_goes_from_the_strongest_penalty_to_the_weakest(direction):
    values = selection.grid(100.0, direction)
    assert len(values) == selection.STRONG_STEPS + selection.WEAK_STEPS + 1
    assert 100.0 in values
    strong = values[0]
    assert strong == 100.0 * selection.GRID_FACTOR ** (direction * selection.STRONG_STEPS)
    ratios = np.array(values[1:]) / np.array(values[:-1])
    assert np.allclose(ratios, selection.GRID_FACTOR**-direction)


def test_every_learner_but_the_semi_supervised_one_has_a_strength_it_can_vary():
    for name, cls in LEARNERS.items():
        if name in ("ssvm-annealing", "perceptron"):  # no regularization term to vary
            assert cls.strength is None
            continue
        param, direction = cls.strength
        assert direction in (1, -1)
        assert cls.param(param).kind is float


class _Learner:
    """Records the values and warm starts it was trained with; its weight vector holds the
    value, so the fake dev score can read it."""

    strength = ("c", 1)

    def __init__(self):
        self.settings, self.trace_, self.calls = {"c": 1.0}, [], []
        self.chosen_ = {}
        self.warm_start = False

    def fit(self, problem, seed=0, w0=None):
        self.calls.append((self.settings["c"], None if w0 is None else float(w0[0])))
        self.trace_ = [{"epoch": 1, "c": self.settings["c"]}]
        return np.array([self.settings["c"], 0.0])


class _Problem:
    def __init__(self, score):
        self.dev_score = lambda w: {"dev_acc": score(w[0])}


def test_run_path_keeps_the_best_point_and_stops_after_the_patience():
    # c = 4, 2, 1, 0.5, 0.25, 0.125 (strongest first); dev peaks at c = 2
    scores = {4.0: 91.0, 2.0: 93.0, 1.0: 92.0, 0.5: 92.5, 0.25: 99.0}
    learner = _Learner()
    path = selection.run_path(learner, _Problem(lambda c: scores[c]), 1.0, 1, 0, "dev data")
    tried = [c for c, _ in learner.calls]
    assert tried == [4.0, 2.0, 1.0, 0.5]  # two points without a better score: stop
    # each point starts from the weights of the point before
    assert [w0 for _, w0 in learner.calls] == [None, 4.0, 2.0, 1.0]
    assert path.value == 2.0 and learner.settings["c"] == 2.0
    assert path.weights[0] == 2.0 and path.trace == [{"epoch": 1, "c": 2.0}]
    assert [r.get("selected", False) for r in path.rows] == [False, True, False, False]
    assert path.as_info()["scored_on"] == "dev data"


def test_run_path_keeps_the_sparser_point_on_a_tie():
    # the strongest point of the grid ties with the rest: the walk goes on past the strong end
    # (each from the best weights), keeps the strongest tie and stops after the patience
    learner = _Learner()
    path = selection.run_path(learner, _Problem(lambda c: 95.0), 1.0, 1, 0, "dev data")
    assert [r["value"] for r in path.rows] == [4.0, 2.0, 1.0, 8.0, 16.0]
    assert [w0 for _, w0 in learner.calls][3:] == [4.0, 8.0]
    assert path.value == 16.0


def test_the_walk_goes_on_past_the_strong_end_while_it_improves():
    scores = {4.0: 91.0, 2.0: 90.0, 1.0: 89.0, 8.0: 92.0, 16.0: 93.0, 32.0: 92.5, 64.0: 92.0}
    learner = _Learner()
    path = selection.run_path(learner, _Problem(lambda c: scores[c]), 1.0, 1, 0, "dev data")
    assert [r["value"] for r in path.rows] == [4.0, 2.0, 1.0, 8.0, 16.0, 32.0, 64.0]
    assert path.value == 16.0


def test_run_path_goes_past_the_weak_end_while_it_improves():
    learner = _Learner()
    path = selection.run_path(learner, _Problem(lambda c: -c), 1.0, 1, 0, "dev data")
    assert len(path.rows) == selection.MAX_POINTS
    assert path.value == min(r["value"] for r in path.rows)


class _EmptyAboveLearner(_Learner):
    """Zeroes every weight while c >= ``empty_from`` (an L1 penalty past the point where no
    feature pays for itself)."""

    def __init__(self, empty_from):
        super().__init__()
        self.empty_from = empty_from

    def fit(self, problem, seed=0, w0=None):
        w = super().fit(problem, seed, w0)
        return np.zeros_like(w) if self.settings["c"] >= self.empty_from else w


def test_points_without_weights_neither_win_nor_use_up_the_patience():
    # c = 4, 2 zero every weight (the same poor dev score); below, dev peaks at c = 0.5
    scores = {1.0: 90.0, 0.5: 92.0, 0.25: 91.0, 0.125: 90.5}
    learner = _EmptyAboveLearner(2.0)
    problem = _Problem(lambda c: 10.0 if c == 0.0 else scores[c])
    path = selection.run_path(learner, problem, 1.0, 1, 0, "dev data")
    assert [r["value"] for r in path.rows] == [4.0, 2.0, 1.0, 0.5, 0.25, 0.125]
    assert path.value == 0.5 and path.rows[path.best]["nonzero"] == 1


def test_a_path_empty_to_its_weak_end_goes_on_to_weaker_penalties():
    learner = _EmptyAboveLearner(0.1)  # the whole grid (down to 0.125) is empty
    problem = _Problem(lambda c: 10.0 if c == 0.0 else 50.0)
    path = selection.run_path(learner, problem, 1.0, 1, 0, "dev data")
    assert path.value == 0.0625 and path.rows[path.best]["nonzero"] == 1
    # an empty model never wins, even against a point that scores no better
    tie = selection.run_path(
        _EmptyAboveLearner(2.0), _Problem(lambda c: 10.0), 1.0, 1, 0, "dev data"
    )
    assert tie.value == 1.0


class _MixLearner(_Learner):
    """A learner with an L2 mix c2 as well; its weights hold (c, c2)."""

    mix = "c2"

    def __init__(self):
        super().__init__()
        self.settings["c2"] = 0.0

    def fit(self, problem, seed=0, w0=None):
        self.calls.append((self.settings["c"], self.settings["c2"]))
        self.trace_ = [{"epoch": 1}]
        return np.array([self.settings["c"], self.settings["c2"]])


class _Problem2:
    def __init__(self, score):
        self.dev_score = lambda w: {"dev_acc": score(w[0], w[1])}


def test_the_mix_path_tries_l2_at_the_chosen_strength_and_keeps_it_only_if_better():
    # strength peaks at c = 2 with c2 = 0; c2 = 0.01 is better there, 0.1 better still
    def score(c, c2):
        return {0.0: 0.0, 0.01: 0.5, 0.1: 1.0, 1.0: -1.0}[c2] - abs(c - 2.0)

    learner = _MixLearner()
    path = selection.run_path(learner, _Problem2(score), 1.0, 1, 0, "dev data")
    mixed = [(c, c2) for c, c2 in learner.calls if c2 > 0]
    assert mixed == [(2.0, v) for v in selection.MIX_VALUES]  # at c = 2, smallest first
    assert path.value == 2.0 and path.mix == {"c2": 0.1}
    assert learner.settings["c"] == 2.0 and learner.settings["c2"] == 0.1
    assert path.as_info()["mix"] == {"c2": 0.1}
    chosen = [r for r in path.rows if r.get("selected")]
    assert chosen == [r for r in path.rows if r.get("mix") == {"c2": 0.1}]


def test_a_mix_that_only_ties_is_not_kept():
    learner = _MixLearner()
    path = selection.run_path(
        learner, _Problem2(lambda c, c2: -abs(c - 2.0)), 1.0, 1, 0, "dev data"
    )
    assert path.mix == {} and learner.settings["c2"] == 0.0
    # the first mix point did not score better: a larger L2 term is not tried
    assert [r["mix"] for r in path.rows if r.get("mix")] == [{"c2": selection.MIX_VALUES[0]}]
    # and a mix the user set is not walked
    learner = _MixLearner()
    selection.run_path(
        learner, _Problem2(lambda c, c2: -abs(c - 2.0)), 1.0, 1, 0, "dev data", mix=False
    )
    assert all(c2 == 0.0 for _, c2 in learner.calls)


N_DEV = 400


class _NoisyProblem:
    """Dev data of N_DEV one-token sentences; ``right[key]`` is the set of sentences a point
    tags right (key: c, or (c, c2) for a mix point), so the paired standard error of two
    points' difference is known: points whose sets differ by a few swapped sentences are
    within noise of each other, nested sets that differ by many are not."""

    def __init__(self, right, mix=False):
        def dev_score(w):
            key = (float(w[0]), float(w[1])) if mix else float(w[0])
            hit = np.zeros(N_DEV)
            hit[sorted(right[key])] = 1.0
            dev_score.shares = (hit, np.ones(N_DEV))
            return {"dev_acc": 100.0 * hit.mean()}

        self.dev_score = dev_score


def _right(n):
    """The first n sentences right."""
    return set(range(n))


def _swapped(n, gained, lost):
    """The first n sentences right, less ``lost`` of them, plus ``gained`` others."""
    return (set(range(n)) - set(range(lost))) | set(range(n, n + gained))


def test_weaker_points_within_noise_of_the_kept_one_use_up_the_patience():
    # the default c = 1 is clearly best so far; 0.5 and 0.25 each score a little higher (one
    # sentence more than the point before, by swaps): within noise, they cannot change the
    # kept point, so the walk stops after them rather than going on to 0.125
    right = {
        4.0: _right(200),
        2.0: _right(250),
        1.0: _right(300),
        0.5: _swapped(300, 3, 2),
        0.25: _swapped(300, 4, 2),
    }
    learner = _Learner()
    path = selection.run_path(learner, _NoisyProblem(right), 1.0, 1, 0, "dev data")
    assert [c for c, _ in learner.calls] == [4.0, 2.0, 1.0, 0.5, 0.25]
    assert path.rows[4]["best"] and path.value == 1.0  # the sparsest within noise is kept


def test_weaker_points_clearly_better_than_the_kept_one_renew_the_patience():
    right = {
        4.0: _right(200),
        2.0: _right(250),
        1.0: _right(300),
        0.5: _swapped(300, 3, 2),  # within noise of c = 1: one miss
        0.25: _right(330),  # clearly better than c = 1: renewed
        0.125: _right(360),  # clearly better again, at the grid's weak end: one more
        0.0625: _swapped(360, 3, 2),  # within noise of 0.125: no point past it
    }
    learner = _Learner()
    path = selection.run_path(learner, _NoisyProblem(right), 1.0, 1, 0, "dev data")
    assert [c for c, _ in learner.calls] == [4.0, 2.0, 1.0, 0.5, 0.25, 0.125, 0.0625]
    assert path.rows[6]["best"] and path.value == 0.125


def test_the_mix_path_stops_at_a_gain_within_noise():
    right = {(c, 0.0): _right(n) for c, n in ((4.0, 250), (2.0, 300), (1.0, 250), (0.5, 200))}
    right[(2.0, 0.01)] = _swapped(300, 3, 2)  # better by one sentence, within noise
    learner = _MixLearner()
    path = selection.run_path(learner, _NoisyProblem(right, mix=True), 1.0, 1, 0, "dev data")
    assert [c2 for _, c2 in learner.calls if c2] == [0.01]
    assert path.value == 2.0 and path.mix == {}  # the sparser pure L1 point is kept
    right[(2.0, 0.01)] = _right(320)  # clearly better: the next value is tried
    right[(2.0, 0.1)] = _right(321)
    learner = _MixLearner()
    path = selection.run_path(learner, _NoisyProblem(right, mix=True), 1.0, 1, 0, "dev data")
    assert [c2 for _, c2 in learner.calls if c2] == [0.01, 0.1]
    assert path.mix == {"c2": 0.01}


class _BudgetLearner(_Learner):
    """Records the iteration budget of each point."""

    path_settings = {"epochs": 30}
    lead_in_settings = {"epochs": 15}
    polish_settings = {"epochs": 100}

    def __init__(self):
        super().__init__()
        self.settings["epochs"] = 400
        self.budgets = []

    def fit(self, problem, seed=0, w0=None):
        self.budgets.append((self.settings["c"], self.settings["epochs"]))
        return super().fit(problem, seed, w0)


def test_points_stronger_than_the_default_are_trained_with_the_lead_in_settings():
    scores = {4.0: 90.0, 2.0: 91.0, 1.0: 92.0, 0.5: 91.0, 0.25: 90.0}
    learner = _BudgetLearner()
    path = selection.run_path(learner, _Problem(lambda c: scores[c]), 1.0, 1, 0, "dev data")
    assert learner.budgets == [(4.0, 15), (2.0, 15), (1.0, 30), (0.5, 30), (0.25, 30), (1.0, 100)]
    assert learner.settings["epochs"] == 400 and path.recipe == {"epochs": 100}
    # after a held-out path the caller trains the kept point again: no polish here
    learner = _BudgetLearner()
    path = selection.run_path(
        learner, _Problem(lambda c: scores[c]), 1.0, 1, 0, "dev data", refit=False
    )
    assert learner.budgets[-1] == (0.25, 30) and path.recipe == {"epochs": 100}
    assert learner.settings["epochs"] == 400


def test_holdout_split_takes_every_tenth_sentence():
    kept, held = selection.holdout_split(95)
    assert sorted(kept + held) == list(range(95))
    assert held == list(range(5, 95, 10))
    assert selection.holdout_split(3) == ([0, 1, 2], [])


def _train(*args):
    return CliRunner().invoke(
        cli,
        [
            "train",
            str(SAMPLE),
            *map(str, args),
            "--learner",
            "m3n-subgradient",
            "--set",
            "epochs=3",
        ],
        catch_exceptions=False,
    )


def test_train_chooses_the_strength_on_dev_and_reports_it(tmp_path):
    model = tmp_path / "m.tgm"
    r = _train("--dev", SAMPLE_DEV, "-o", model)
    assert r.exit_code == 0, r.output
    assert "regularization chosen on the dev data" in r.stderr
    info = json.loads(CliRunner().invoke(cli, ["inspect", str(model), "--json"]).stdout)
    sel = info["selection"]
    rows = sel["rows"]
    assert sel["param"] == "radius" and len(rows) >= 1 + selection.PATIENCE
    assert info["params"]["radius"] == sel["value"]
    best = max(r["dev_f1"] for r in rows)
    chosen = [r for r in rows if r.get("selected")]
    assert len(chosen) == 1 and chosen[0]["value"] == sel["value"]
    # the best point (the strongest, sparsest of the best score), or a sparser one within noise
    top = [r for r in rows if r.get("best")]
    assert len(top) == 1 and top[0]["dev_f1"] == best
    assert chosen[0] is top[0] or chosen[0]["within_noise"]
    assert f"chose radius={sel['value']:g}" in r.stderr
    # same data and seed: same bytes (no clock in the saved path)
    again = tmp_path / "again.tgm"
    assert _train("--dev", SAMPLE_DEV, "-o", again, "-q").exit_code == 0
    assert again.read_bytes() == model.read_bytes()


def test_train_without_dev_holds_out_a_tenth(tmp_path):
    r = _train("-o", tmp_path / "m.tgm")
    assert r.exit_code == 0, r.output
    assert "chosen on the held-out tenth of the training data" in r.stderr
    assert "trained m3n-subgradient (features chunk) on 74 sentences" in r.stderr


def test_without_dev_all_sentences_are_trained_as_the_kept_held_out_weights_were():
    from tagger import Tagger, read_corpus

    train = list(read_corpus(SAMPLE))
    tg = Tagger(select=True).fit(train)
    sel = tg.info_["selection"]
    assert tg.info_["learner"] == "m3n-owlqn" and sel["recipe"]
    assert {k: tg.info_["params"][k] for k in sel["recipe"]} == sel["recipe"]
    # a setting the user gave is kept over the recipe
    mine = Tagger(select=True, params={"stages": 3}).fit(train)
    assert mine.info_["params"]["stages"] == 3


@pytest.mark.parametrize("fixed", [["--set", "radius=500"], ["--no-select"]])
def test_a_set_strength_or_no_select_trains_once(tmp_path, fixed):
    r = _train("--dev", SAMPLE_DEV, "-o", tmp_path / "m.tgm", *fixed)
    assert r.exit_code == 0, r.output
    assert "selection:" not in r.stderr and "regularization chosen" not in r.stderr
    epochs = [ln.split("epoch=")[1].split()[0] for ln in r.stderr.splitlines() if "epoch=" in ln]
    assert epochs.count("1/3") == 1 and epochs[-1] == "3/3", epochs  # one run of 3 epochs


def test_run_path_stops_when_its_time_budget_is_spent():
    import time

    learner = _Learner()
    long_ago = time.perf_counter() - 100.0
    path = selection.run_path(
        learner, _Problem(lambda c: -c), 1.0, 1, 0, "dev data", max_seconds=50.0, started=long_ago
    )
    assert len(learner.calls) == 1 and path.value == 4.0  # one point, then the budget is out
    assert "--max-seconds 50 was reached" in path.notes[0]
    assert path.as_info()["notes"] == path.notes
    within = selection.run_path(
        _Learner(), _Problem(lambda c: -c), 1.0, 1, 0, "dev data", max_seconds=1e6
    )
    assert len(within.rows) == selection.MAX_POINTS and not within.notes


def test_a_flat_path_says_so_and_keeps_the_strongest_penalty():
    path = selection.run_path(_Learner(), _Problem(lambda c: 95.0), 1.0, 1, 0, "dev data")
    assert path.value == 16.0
    assert len(path.notes) == 1 and "scored the same" in path.notes[0]
    assert (
        "notes"
        not in selection.run_path(
            _Learner(), _Problem(lambda c: -c), 1.0, 1, 0, "dev data"
        ).as_info()
    )


def _write_dev(path: Path, n_sentences: int, relabel: tuple[str, str] | None = None) -> Path:
    blocks = SAMPLE_DEV.read_text().strip().split("\n\n")[:n_sentences]
    text = "\n\n".join(blocks) + "\n"
    if relabel:
        text = text.replace(f" {relabel[0]}\n", f" {relabel[1]}\n")
    path.write_text(text)
    return path


@pytest.mark.parametrize("case", ["unseen label", "one sentence"])
def test_doubtful_dev_data_warn_and_still_give_a_usable_model(tmp_path, case):
    from tagger.api import Tagger
    from tagger.errors import TaggerWarning
    from tagger.io import load_corpus

    if case == "unseen label":
        dev_file = _write_dev(tmp_path / "dev.txt", 100, ("B-NP", "B-NPX"))
        expected = "labels the training data lack: B-NPX ("
    else:
        dev_file = _write_dev(tmp_path / "dev.txt", 1)
        expected = "the dev data have 1 sentence ("
    train, dev = load_corpus(SAMPLE), load_corpus(dev_file)
    with pytest.warns(TaggerWarning, match=expected.replace("(", r"\(")):
        tg = Tagger(params={"epochs": 3}, select=True).fit(train, dev)
    assert "selection" in tg.info_
    pred = tg.predict(dev)
    assert [len(p) for p in pred] == [len(s) for s in dev]
    assert "B-NPX" not in {lab for p in pred for lab in p}


def test_bad_max_seconds_is_a_clear_error():
    from tagger.api import Tagger
    from tagger.errors import TaggerError
    from tagger.io import load_corpus

    with pytest.raises(TaggerError, match="max_seconds: expected a number >= 0"):
        Tagger(select=True, max_seconds=-1).fit(load_corpus(SAMPLE))


def test_train_max_seconds_prints_one_warning_line_and_saves_the_model(tmp_path):
    import subprocess
    import sys

    model = tmp_path / "m.tgm"
    r = subprocess.run(
        [
            sys.executable,
            str(ROOT / "cli.py"),
            "train",
            str(SAMPLE),
            "--dev",
            str(SAMPLE_DEV),
            "--learner",
            "m3n-subgradient",
            "--set",
            "epochs=3",
            "--max-seconds",
            "0.001",
            "-q",
            "-o",
            str(model),
        ],
        capture_output=True,
        text=True,
    )
    assert r.returncode == 0, r.stderr
    lines = r.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("warning: the path stopped after 1 point ")
    assert model.stat().st_size > 0
    bad = subprocess.run(
        [
            sys.executable,
            str(ROOT / "cli.py"),
            "train",
            str(SAMPLE),
            "--max-seconds",
            "-1",
            "-o",
            str(tmp_path / "x.tgm"),
        ],
        capture_output=True,
        text=True,
    )
    assert bad.returncode == 2 and "--max-seconds" in bad.stderr


def test_path_of_a_model_shows_and_draws_the_stored_choice(tmp_path):
    from tagger.cli.plots import plot_available

    model = tmp_path / "m.tgm"
    assert _train("--dev", SAMPLE_DEV, "-o", model, "-q").exit_code == 0
    info = json.loads(CliRunner().invoke(cli, ["inspect", str(model), "--json"]).stdout)
    shown = CliRunner().invoke(cli, ["path", str(model), "--json"])
    assert shown.exit_code == 0, shown.output
    assert json.loads(shown.stdout) == info["selection"]
    table = CliRunner().invoke(cli, ["path", str(model)]).stdout.splitlines()
    assert len(table) == 1 + len(info["selection"]["rows"])
    assert [ln.endswith("*") for ln in table[1:]] == [
        bool(r.get("selected")) for r in info["selection"]["rows"]
    ]
    picture = tmp_path / "p.png"
    drawn = CliRunner().invoke(cli, ["path", str(model), "--plot", str(picture)])
    if not plot_available():
        assert drawn.exit_code == 2 and "matplotlib" in drawn.output
    else:
        assert drawn.exit_code == 0 and picture.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    fixed = tmp_path / "fixed.tgm"
    assert _train("--no-select", "-o", fixed, "-q").exit_code == 0
    none = CliRunner().invoke(cli, ["path", str(fixed)])
    assert none.exit_code == 1 and "holds no regularization path" in none.output
    mixed = CliRunner().invoke(cli, ["path", str(model), "--dev", str(SAMPLE_DEV)])
    assert mixed.exit_code == 2 and "a MODEL only shows the path" in mixed.output
    missing = CliRunner().invoke(cli, ["path", str(SAMPLE), "--dev", str(SAMPLE_DEV)])
    assert missing.exit_code == 2 and "missing option '--values'" in missing.output


def test_learner_auto_keeps_the_candidate_best_on_dev(tmp_path):
    from tagger.learners import AUTO_CANDIDATES

    model = tmp_path / "auto.tgm"
    r = CliRunner().invoke(
        cli,
        [
            "train",
            str(SAMPLE),
            "--dev",
            str(SAMPLE_DEV),
            "--learner",
            "auto",
            "-o",
            str(model),
            "-q",
        ],
        catch_exceptions=False,
    )
    assert r.exit_code == 0, r.output
    info = json.loads(CliRunner().invoke(cli, ["inspect", str(model), "--json"]).stdout)
    rows = info["learner_choice"]["rows"]
    assert [row["learner"] for row in rows] == list(AUTO_CANDIDATES)
    kept = [row for row in rows if row["selected"]]
    assert len(kept) == 1 and kept[0]["learner"] == info["learner"]
    assert kept[0]["dev_f1"] == max(row["dev_f1"] for row in rows)
    assert info["selection"]["value"] == kept[0]["value"] == info["params"][kept[0]["param"]]
    # each candidate's row is what that learner alone chooses on the same data
    for row in rows:
        alone = tmp_path / f"{row['learner']}.tgm"
        assert (
            CliRunner()
            .invoke(
                cli,
                [
                    "train",
                    str(SAMPLE),
                    "--dev",
                    str(SAMPLE_DEV),
                    "--learner",
                    row["learner"],
                    "-o",
                    str(alone),
                    "-q",
                ],
            )
            .exit_code
            == 0
        )
        own = json.loads(CliRunner().invoke(cli, ["inspect", str(alone), "--json"]).stdout)
        assert own["selection"]["value"] == row["value"] and own["n_nonzero"] == row["nonzero"]
    bad = CliRunner().invoke(
        cli,
        ["train", str(SAMPLE), "--learner", "auto", "--set", "c1=1", "-o", str(tmp_path / "x.tgm")],
    )
    assert bad.exit_code == 2 and "--learner auto chooses" in bad.output


class _CheapPathLearner(_Learner):
    """Trains path points with budget 1 and its final model with budget 5; w = [c, budget]."""

    path_settings = {"budget": 1}

    def __init__(self):
        super().__init__()
        self.settings["budget"] = 5

    def fit(self, problem, seed=0, w0=None):
        self.calls.append((self.settings["c"], self.settings["budget"]))
        self.trace_ = [{"epoch": self.settings["budget"]}]
        return np.array([self.settings["c"], float(self.settings["budget"])])


@pytest.mark.parametrize("longer_helps", [True, False])
def test_cheap_path_points_then_the_chosen_one_trained_fully(longer_helps):
    peak = {4.0: 1.0, 2.0: 3.0, 1.0: 2.0, 0.5: 1.5}
    problem = _Problem(lambda c: 0.0)
    sign = 1.0 if longer_helps else -1.0
    problem.dev_score = lambda w: {"dev_acc": peak.get(w[0], 0.0) + sign * 0.1 * (w[1] - 1)}
    learner = _CheapPathLearner()
    path = selection.run_path(learner, problem, 1.0, 1, 0, "dev data")
    assert learner.calls[:-1] == [(4.0, 1), (2.0, 1), (1.0, 1), (0.5, 1)]
    assert learner.calls[-1] == (2.0, 5)  # the chosen point, with the full budget
    assert learner.settings == {"c": 2.0, "budget": 5}
    chosen = path.rows[path.best]
    if longer_helps:
        assert path.weights[1] == 5.0 and chosen["refit"] and chosen["dev_acc"] == 3.4
        assert path.trace == [{"epoch": 5}] and not path.notes
        assert path.recipe == {}  # the learner's own settings trained the kept weights
    else:
        assert path.weights[1] == 1.0 and "refit" not in chosen and chosen["dev_acc"] == 3.0
        assert chosen["refit_score"] == pytest.approx(2.6) and not path.notes
        assert path.recipe == {"budget": 1}  # the path's cheaper settings did


def test_train_walks_the_mix_unless_c2_is_set(tmp_path):
    def rows(*extra):
        model = tmp_path / "m.tgm"
        r = CliRunner().invoke(
            cli,
            [
                "train",
                str(SAMPLE),
                "--dev",
                str(SAMPLE_DEV),
                "-o",
                str(model),
                "--learner",
                "crf-l1",
                "--set",
                "epochs=20",
                "-q",
                *extra,
            ],
            catch_exceptions=False,
        )
        assert r.exit_code == 0, r.output
        info = json.loads(CliRunner().invoke(cli, ["inspect", str(model), "--json"]).stdout)
        return info["selection"]["rows"], info["params"]

    walked, params = rows()
    assert any(r.get("mix") for r in walked)
    chosen = next(r for r in walked if r.get("selected"))
    assert params["c2"] == chosen.get("mix", {}).get("c2", 0.0)
    fixed, params = rows("--set", "c2=0.5")
    assert not any(r.get("mix") for r in fixed) and params["c2"] == 0.5


def test_paired_difference_with_equal_sentences_is_the_paired_mean_and_its_error():
    # with every sentence the same length the ratio estimates are means, and the delta method
    # reduces to the textbook paired error: sd(d_i) / sqrt(n)
    seed = 20261127
    print("seed", seed)
    rng = np.random.default_rng(seed)
    n, length = 200, 10
    a = rng.integers(0, length + 1, n).astype(float)
    b = rng.integers(0, length + 1, n).astype(float)
    den = np.full(n, float(length))
    diff, se = selection.paired_difference((a, den), (b, den))
    d = (a - b) / length
    assert diff == pytest.approx(100 * d.mean())
    assert se == pytest.approx(100 * d.std(ddof=1) / np.sqrt(n))


class _SparseLearner(_Learner):
    """Fewer non-zero weights at a stronger penalty: round(32 / c) of them."""

    def fit(self, problem, seed=0, w0=None):
        super().fit(problem, seed, w0)
        w = np.zeros(64)
        w[: round(32 / self.settings["c"])] = self.settings["c"]
        return w


class _SharesProblem:
    """Scores a point from per-sentence correct-token counts (100 sentences of 10 tokens),
    keeping them as ``dev_score.shares`` as the real scorer does."""

    def __init__(self, correct_by_c):
        outer = self

        class Scorer:
            shares = None

            def __call__(self, w):
                c = float(w[np.flatnonzero(w)[0]])
                num = np.asarray(outer.correct[c], dtype=float)
                self.shares = (num, np.full(100, 10.0))
                return {"dev_acc": round(100 * num.sum() / 1000, 2)}

        self.correct = correct_by_c
        self.dev_score = Scorer()


def _dev_counts() -> dict:
    base = np.full(100, 9)
    best = base.copy()
    best[:30] += 1  # 93.0 %
    near = best.copy()  # one token fewer in all, spread over three sentences: noise
    near[[0, 2]] -= 1
    near[40] += 1
    worse = base.copy()  # 92.0 %: ten sentences each a token short of the best
    worse[:20] += 1
    return {8.0: base - 1, 4.0: near, 2.0: best, 1.0: worse, 0.5: worse}


@pytest.mark.parametrize(
    "choose, kept, walked",
    [("sparsest", 4.0, [4.0, 2.0, 1.0]), ("best", 2.0, [4.0, 2.0, 1.0, 0.5])],
)
def test_the_sparsest_point_within_noise_of_the_best_is_kept(choose, kept, walked):
    learner = _SparseLearner()
    path = selection.run_path(
        learner, _SharesProblem(_dev_counts()), 1.0, 1, 0, "dev data", choose=choose
    )
    # under "sparsest", 2.0 is the best but within noise of 4.0, the point kept: it does not
    # renew the patience, and 1.0 ends the walk
    assert [r["value"] for r in path.rows] == walked
    assert path.value == kept and learner.settings["c"] == kept
    assert np.count_nonzero(path.weights) == round(32 / kept)
    by_value = {r["value"]: r for r in path.rows}
    assert by_value[2.0].get("best") and by_value[kept].get("selected")
    if choose == "sparsest":
        # 4.0 is 0.1 points behind with a paired error of 0.17; 1.0 is 1 point behind (0.3)
        assert by_value[4.0]["within_noise"] and by_value[4.0]["deficit"] == pytest.approx(0.1)
        assert by_value[4.0]["se"] == pytest.approx(0.174, abs=1e-3)
        assert not by_value[1.0].get("within_noise")


def test_train_keeps_a_model_no_denser_than_the_best_scoring_point(tmp_path):
    from tagger.api import Tagger
    from tagger.io import load_corpus

    train, dev = load_corpus(SAMPLE, format="conll"), load_corpus(SAMPLE_DEV, format="conll")
    sparsest = Tagger(choose="sparsest").fit(train, dev)
    best = Tagger(choose="best").fit(train, dev)
    rows = sparsest.info_["selection"]["rows"]
    kept = next(r for r in rows if r.get("selected"))
    top = next(r for r in rows if r.get("best"))
    assert kept is top or kept.get("within_noise")
    assert next(r for r in best.info_["selection"]["rows"] if r.get("selected")).get("best")
