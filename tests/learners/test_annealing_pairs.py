"""``ssvm-annealing`` on a model with label-pair templates (transitions that vary by position):
the label-switching kernels with per-position transitions against enumeration on tiny chains,
the unlabeled sentences' constrained decoding against enumeration, and training on the
synthetic address task through the API and the command line (learns, tags, the saved file
tags the same, the same weights at 1 and 2 threads); a supervised learner given unlabeled data
is refused."""

from __future__ import annotations

import hashlib
import itertools

import numpy as np
import pytest

from tagger.chain import FeatureBatch
from tagger.chain.pairs import pair_edges_batch
from tagger.constraints import ConstraintSet, ViolationState
from tagger.learners.solvers.label_switching import (
    SwitchLattice,
    SwitchPlan,
    _aug_top_after_run,
    all_max_marginals,
    aug_max_marginals,
    label_switching,
    no_constraints,
    path_scores,
)

from _addresses import (
    RULES,
    address_task,
    fit_addresses,
    majority_floor,
    weights_at_1_and_2_threads,
    write_addresses,
)
from _brute import labelings
from _helpers import run_cli
from _rule_texts import SWITCH_RULES

L = 3

FEATURES = """
[featurizer]
columns = ["word"]
templates = ["bias", "lower[0]", "lower[-1]", "lower[1]", "sshape[0]"]
pair_templates = ["punct[-1]", "lower[-1]"]

[views.lower]
function = "lower"
[views.sshape]
function = "short_shape"
[views.punct]
function = "is_punct"
"""


# ---- the kernels, against enumeration


def _score(state, edge, z):
    """F(z) written out from its definition: state scores plus each position's transition."""
    return state[0, z[0]] + sum(state[t, z[t]] + edge[t, z[t - 1], z[t]] for t in range(1, len(z)))


def _brute_max_marginals(state, edge, y):
    """M[t, l]: the best score + Hamming(., y) over every labeling with label l at t."""
    T = len(y)
    M = np.full((T, L), -np.inf)
    for z in labelings(T, L):
        v = _score(state, edge, z) + float(np.sum(z != y))
        for t in range(T):
            M[t, z[t]] = max(M[t, z[t]], v)
    return M


def _brute_hinge(state, edge, y):
    best = max(_score(state, edge, z) + float(np.sum(z != y)) for z in labelings(len(y), L))
    return best - _score(state, edge, y)


def _random_chain(rng, longest):
    """A chain of 1..longest tokens with its own (L, L) transitions at every position."""
    T = int(rng.integers(1, longest + 1))
    return (
        T,
        rng.normal(size=(T, L)),
        rng.normal(size=(T, L, L)),
        rng.integers(0, L, T).astype(np.int32),
    )


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_max_marginals_with_per_position_transitions_against_enumeration(seed):
    rng = np.random.default_rng(seed)
    trans = rng.normal(size=(L, L))  # not read: the positions' own transitions are
    for _ in range(20):
        T, state, edge, y = _random_chain(rng, 5)
        M = np.zeros((T, L))
        fwd, bwd = np.zeros((T, L)), np.zeros((T, L))
        top = aug_max_marginals(state, trans, edge, y, 0, T, M, fwd, bwd)
        want = _brute_max_marginals(state, edge, y)
        np.testing.assert_allclose(M, want, atol=1e-9)
        assert top == pytest.approx(want.max(), abs=1e-9)
        assert path_scores(state, trans, y, np.array([0, T]), edge)[0] == pytest.approx(
            _score(state, edge, y), abs=1e-9
        )


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_a_single_switchs_hinge_change_from_the_max_marginals_is_exact(seed):
    """The rule label switching scores a switch by: moving y[i] from o to n, the new best
    loss-augmented score is max_l (M[i, l] + [l = o] - [l = n]); with the score change of
    the labeling, the hinge change, for every position and new label."""
    rng = np.random.default_rng(10 + seed)
    trans = np.zeros((L, L))
    for _ in range(15):
        T, state, edge, y = _random_chain(rng, 5)
        M = np.zeros((T, L))
        top = aug_max_marginals(state, trans, edge, y, 0, T, M, np.zeros((T, L)), np.zeros((T, L)))
        before = _brute_hinge(state, edge, y)
        for i, new in itertools.product(range(T), range(L)):
            old = y[i]
            if new == old:
                continue
            shift = np.zeros(L)
            shift[old], shift[new] = 1.0, -1.0
            new_top = float((M[i] + shift).max())
            z = y.copy()
            z[i] = new
            d_score = _score(state, edge, z) - _score(state, edge, y)
            want = _brute_hinge(state, edge, z) - before
            assert (new_top - top) - d_score == pytest.approx(want, abs=1e-9)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_a_run_move_from_the_kept_rows_with_per_position_transitions(seed):
    rng = np.random.default_rng(20 + seed)
    trans = np.zeros((L, L))
    for _ in range(60):
        T, state, edge, y = _random_chain(rng, 7)
        M, fwd, bwd = np.zeros((T, L)), np.zeros((T, L)), np.zeros((T, L))
        aug_max_marginals(state, trans, edge, y, 0, T, M, fwd, bwd)
        r0 = int(rng.integers(0, T))
        r1 = int(rng.integers(r0 + 1, T + 1))
        y[r0:r1] = rng.integers(0, L)
        top = _aug_top_after_run(state, trans, edge, y, 0, T, r0, r1, fwd, bwd, np.zeros((T, L)))
        assert top == pytest.approx(_brute_max_marginals(state, edge, y).max(), abs=1e-9)


def test_transitions_equal_at_every_position_give_the_plain_chains_numbers():
    rng = np.random.default_rng(5)
    N, offsets = 13, np.array([0, 4, 5, 13])
    state, trans = rng.normal(size=(N, L)), rng.normal(size=(L, L))
    y = rng.integers(0, L, N).astype(np.int32)
    edge = np.broadcast_to(trans, (N, L, L)).copy()
    runs = []
    for e in (None, edge):
        M, fwd, bwd, top = np.zeros((N, L)), np.zeros((N, L)), np.zeros((N, L)), np.zeros(3)
        all_max_marginals(state, trans, e, y, offsets, M, fwd, bwd, top, None)
        runs.append((M, top, path_scores(state, trans, y, offsets, e)))
    for plain, pairs in zip(*runs):
        np.testing.assert_allclose(plain, pairs, atol=1e-12)


@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize("run_moves", [False, True])
def test_switching_with_per_position_transitions_lowers_the_objective_it_reports(seed, run_moves):
    """The objective before and after, summed by enumeration (hinges) and a recount
    (penalties), differs by what the switching reports; the kept counts stay true."""
    rng = np.random.default_rng(30 + seed)
    words = ["x", "y", ",", "z"]
    sents = [[words[i] for i in rng.integers(0, 4, int(rng.integers(2, 6)))] for _ in range(8)]
    offsets = np.zeros(len(sents) + 1, np.int64)
    np.cumsum([len(s) for s in sents], out=offsets[1:])
    N = int(offsets[-1])
    state, edge = rng.normal(size=(N, L)), rng.normal(size=(N, L, L))
    trans = np.zeros((L, L))
    cc = ConstraintSet.from_text(SWITCH_RULES).compile(["a", "b", "c"])
    vs = ViolationState(cc, cc.indicators(sents), rng.integers(0, L, N).astype(np.int32))
    rules, counts = vs.records()
    y = vs.y
    cu = 0.3

    def objective():
        hinge = sum(
            _brute_hinge(state[a:b], edge[a:b], y[a:b]) for a, b in zip(offsets[:-1], offsets[1:])
        )
        return cu * hinge + vs.penalty()

    before = objective()
    M, fwd, bwd, top = np.zeros((N, L)), np.zeros((N, L)), np.zeros((N, L)), np.zeros(len(sents))
    all_max_marginals(state, trans, edge, y, offsets, M, fwd, bwd, top, None)
    stats = np.zeros(3)
    label_switching(
        SwitchLattice(state, trans, edge, M, fwd, bwd, top),
        y,
        offsets,
        np.repeat(np.arange(len(sents)), np.diff(offsets)),
        cu,
        rules,
        counts,
        before,
        SwitchPlan(1500, N, 0.0, 3 + seed, run_moves),
        stats,
    )
    kept = vs.phi.copy(), vs.num.copy()
    vs.recount()
    np.testing.assert_allclose(kept[0], vs.phi)
    np.testing.assert_allclose(kept[1], vs.num)
    after = objective()
    assert stats[0] > 0 and after < before
    assert before - after == pytest.approx(stats[2], abs=1e-7)
    # without rules the same kernel lowers the hinges alone
    rules0, counts0 = no_constraints(N, offsets, L)
    h0 = objective() - vs.penalty()
    all_max_marginals(state, trans, edge, y, offsets, M, fwd, bwd, top, None)
    label_switching(
        SwitchLattice(state, trans, edge, M, fwd, bwd, top),
        y,
        offsets,
        np.repeat(np.arange(len(sents)), np.diff(offsets)),
        cu,
        rules0,
        counts0,
        h0,
        SwitchPlan(1500, N, 0.0, 9, run_moves),
        stats,
    )
    vs.recount()
    assert h0 - (objective() - vs.penalty()) == pytest.approx(stats[2], abs=1e-7)


# ---- a pair-template model on the address task


@pytest.fixture(scope="module")
def task(tmp_path_factory):
    return address_task(tmp_path_factory.mktemp("pairs"), {"f.toml": FEATURES})


@pytest.fixture(scope="module")
def fitted(task):
    return fit_addresses(task)


def test_edges_of_every_token_score_labelings_as_the_model_does(task, fitted):
    """The per-token transitions label switching reads, summed along a labeling with the
    state scores, are the model's own score of that labeling (its joint features . w)."""
    model, w = fitted.model_, fitted.weights_
    X = fitted.featurizer_.transform(task["test"][:5])
    rng = np.random.default_rng(0)
    w = w + rng.normal(scale=0.1, size=w.shape) * (w != 0)
    state = model.state_scores(X, w)
    trans = np.ascontiguousarray(model.transitions(w))
    edge = np.zeros((X.n_tokens, L, L))
    pair_edges_batch(model.pair_layout, FeatureBatch.of(X), w, trans, edge)
    for s in range(X.n_sentences):
        a, b = X.offsets[s], X.offsets[s + 1]
        for _ in range(5):
            y = rng.integers(0, L, b - a).astype(np.int32)
            assert _score(state[a:b], edge[a:b], y) == pytest.approx(
                model.score(X, s, y, w), abs=1e-9
            )


def test_unlabeled_decoding_meets_the_hard_rules_and_is_the_best_such_labeling(task, fitted):
    """Each unlabeled sentence's labeling is the best, by the model's score, of those that
    start with a name and have one segment per label (the rule file's hard rules the
    Viterbi enforces), found by enumeration."""
    from tagger.learners.solvers.unlabeled_decoding import decode

    model, w = fitted.model_, fitted.weights_
    names = fitted.labels_.labels
    short = [s for s in task["unlabeled"] if len(s) <= 7][:3]
    assert short
    U = fitted.featurizer_.transform(short)
    cset = ConstraintSet.from_text(RULES)
    cc = cset.compile(list(names))
    _, y = decode(model, U, w, (cc, cc.indicators([s.columns[0] for s in short])))
    name = list(names).index("name")
    for s in range(U.n_sentences):
        a, b = U.offsets[s], U.offsets[s + 1]

        def allowed(z):
            runs = [k for k, _ in itertools.groupby(z)]
            return z[0] == name and len(runs) == len(set(runs))

        best = max((model.score(U, s, z, w), tuple(z)) for z in labelings(b - a, L) if allowed(z))
        assert allowed(y[a:b])
        assert model.score(U, s, y[a:b], w) == pytest.approx(best[0], abs=1e-9)


def test_annealing_trains_a_pair_model_that_tags_and_loads_the_same(task, fitted, tmp_path):
    from tagger import Tagger

    test = task["test"]
    assert fitted.model_.n_pair > 0 and fitted.model_.order == 1
    # learned: far above always saying the most frequent field
    assert fitted.evaluate(test)["accuracy"] >= majority_floor(test)
    steps = [row for row in fitted.trace_ if row["step"] > 0]
    assert steps and sum(row["switches"] for row in steps) > 0
    assert all(row["violations_viterbi"] >= 0 for row in steps)
    fitted.save(tmp_path / "m.tgm")
    back = Tagger.load(tmp_path / "m.tgm")
    assert back.model_.n_pair == fitted.model_.n_pair
    assert back.predict(test) == fitted.predict(test)


def test_the_sparse_step_trains_the_pair_model_too(task):
    tg = fit_addresses(task, inner="owlqn", c1=1.0, tau=0.25)
    test = task["test"]
    assert tg.model_.n_pair > 0
    assert tg.evaluate(test)["accuracy"] >= majority_floor(test)


def test_same_weights_at_1_and_2_threads(task):
    """With the address rules: the parallel kernels (forced by a zero size threshold, the
    constrained decoding of the unlabeled sentences included) at 1 and 2 threads."""
    one, two = weights_at_1_and_2_threads(task["dir"] / "f.toml")
    assert one == two and len(one) == len(hashlib.sha256().hexdigest())


# ---- the command line


@pytest.mark.parametrize("order", ["1", "2"])
def test_the_command_line_trains_a_pair_model_with_unlabeled_data(task, tmp_path, order):
    from tagger import Tagger

    rng = np.random.default_rng(4)
    write_addresses(tmp_path / "train.tsv", rng, 3)
    write_addresses(tmp_path / "dev.tsv", rng, 10)
    write_addresses(tmp_path / "unl.tsv", rng, 30, labeled=False)
    model, out = tmp_path / "m.tgm", tmp_path / "dev.out"
    args = ["train", tmp_path / "train.tsv", "--unlabeled", tmp_path / "unl.tsv"]
    args += ["--constraints", task["dir"] / "rules.toml", "--features", task["dir"] / "f.toml"]
    args += ["--learner", "ssvm-annealing", "--set", "steps=2", "--set", "epochs=5"]
    done = run_cli(*args, "--order", order, "-o", model, "-q")
    assert done.exit_code == 0, done.output
    tagger = Tagger.load(model)
    assert tagger.learner == "ssvm-annealing" and tagger.model_.n_pair > 0
    assert tagger.model_.order == int(order)
    assert max(row["step"] for row in tagger.trace_) == 2
    done = run_cli("tag", model, tmp_path / "dev.tsv", "-o", out)
    assert done.exit_code == 0, done.output
    tagged = [line.split()[-1] for line in out.read_text().splitlines() if line.strip()]
    gold = [line.split()[-1] for line in (tmp_path / "dev.tsv").read_text().splitlines() if line]
    assert len(tagged) == len(gold)
    assert np.mean([t == g for t, g in zip(tagged, gold)]) > 0.8


def test_a_supervised_learner_with_unlabeled_data_is_pointed_to_ssvm_annealing(task, tmp_path):
    rng = np.random.default_rng(5)
    write_addresses(tmp_path / "train.tsv", rng, 3)
    write_addresses(tmp_path / "unl.tsv", rng, 5, labeled=False)
    args = ["train", tmp_path / "train.tsv", "--unlabeled", tmp_path / "unl.tsv"]
    args += ["--features", task["dir"] / "f.toml", "--learner", "m3n-l2"]
    for order in ("1", "2"):
        done = run_cli(*args, "--order", order, "-o", tmp_path / "x.tgm", "-q")
        assert done.exit_code == 2
        lines = done.stderr.strip().splitlines()
        assert len(lines) == 1 and "ssvm-annealing trains them with unlabeled data" in lines[0]
        assert not (tmp_path / "x.tgm").exists()
