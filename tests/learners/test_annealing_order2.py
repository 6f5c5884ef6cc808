"""``ssvm-annealing`` on second-order chains: the label-switching kernels on pair-state
lattices against enumeration of every labeling on tiny chains (max-marginals, the exact hinge
change of a single switch, a run move from the kept rows, refusals of labelings the lattice
does not allow, the objective switching reports), then training with unlabeled data and a
constraint file on the synthetic address task through the API (the command line: in
test_annealing_pairs.py)."""

from __future__ import annotations

import hashlib
import itertools

import numpy as np
import pytest

from tagger.chain.second_order import SecondOrder
from tagger.constraints import ConstraintSet, ViolationState
from tagger.learners.solvers.label_switching import (
    SwitchLattice,
    SwitchPlan,
    all_max_marginals,
    label_switching,
    max_marginals_any,
    no_constraints,
    path_scores,
    top_after_run_any,
    triples_change_any,
)

from _addresses import address_task, fit_addresses, majority_floor, weights_at_1_and_2_threads
from _brute import labelings
from _rule_texts import SWITCH_RULES

L = 3


# ---- a random second-order chain and its brute-force reference


def _random_lattice(rng):
    """A flat lattice tuple over L labels with a random set of allowed pairs (at least one
    from and into every label, so that long allowed labelings exist) and random triple
    scores; and the triple scores by (a, b, c) read back from the tuple."""
    allowed = rng.random((L, L)) < 0.7
    allowed[np.arange(L), rng.permutation(L)] = True
    codes = np.flatnonzero(allowed.ravel())
    lat = SecondOrder(L, codes, np.arange(L**3)).lattice(0)
    score = rng.normal(size=len(lat.pred_src))
    o2 = (lat.pair_a, lat.pair_b, lat.pair_id, lat.pred_ptr, lat.pred_src, score)
    trip = {}
    for q in range(len(lat.pair_a)):
        for k in range(lat.pred_ptr[q], lat.pred_ptr[q + 1]):
            trip[(int(lat.pair_a[lat.pred_src[k]]), int(lat.pair_a[q]), int(lat.pair_b[q]))] = (
                score[k]
            )
    return o2, allowed, trip


def _score(state, edge, allowed, trip, z):
    """F(z) from its definition: state scores, each position's transition and each triple;
    -inf for a labeling with a pair that is not allowed."""
    T = len(z)
    if any(not allowed[z[t - 1], z[t]] for t in range(1, T)):
        return -np.inf
    f = state[0, z[0]] + sum(state[t, z[t]] + edge[t, z[t - 1], z[t]] for t in range(1, T))
    return f + sum(trip[(z[t - 2], z[t - 1], z[t])] for t in range(2, T))


def _brute(state, edge, allowed, trip, y):
    """(M, best loss-augmented score) over every allowed labeling, Hamming to y."""
    T = len(y)
    M = np.full((T, L), -np.inf)
    for z in labelings(T, L):
        v = _score(state, edge, allowed, trip, z) + float(np.sum(z != y))
        for t in range(T):
            M[t, z[t]] = max(M[t, z[t]], v)
    return M, M.max()


def _chain(rng, longest, allowed, trip, pairs_vary):
    """T tokens, state scores, transitions (one (L, L) matrix, or one per position) and a
    random allowed labeling."""
    T = int(rng.integers(1, longest + 1))
    state = rng.normal(size=(T, L))
    trans = rng.normal(size=(L, L))
    edge = rng.normal(size=(T, L, L)) if pairs_vary else np.broadcast_to(trans, (T, L, L))
    ok = [z for z in labelings(T, L, np.int32) if _score(state, edge, allowed, trip, z) > -np.inf]
    y = ok[int(rng.integers(len(ok)))].copy()
    return T, state, trans, (edge if pairs_vary else None), np.ascontiguousarray(edge), y


def _hinge(state, edge, allowed, trip, y):
    return _brute(state, edge, allowed, trip, y)[1] - _score(state, edge, allowed, trip, y)


@pytest.mark.parametrize("pairs_vary", [False, True])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_max_marginals_on_the_pair_lattice_against_enumeration(seed, pairs_vary):
    rng = np.random.default_rng(seed)
    for _ in range(25):
        o2, allowed, trip = _random_lattice(rng)
        T, state, trans, edge, full, y = _chain(rng, 6, allowed, trip, pairs_vary)
        P = len(o2[0])
        M, fwd, bwd = np.zeros((T, L)), np.zeros((T, P)), np.zeros((T, P))
        top = max_marginals_any(state, trans, edge, o2, y, 0, T, M, fwd, bwd)
        want, best = _brute(state, full, allowed, trip, y)
        np.testing.assert_allclose(M, want, atol=1e-9)
        assert top == pytest.approx(best, abs=1e-9)
        got = path_scores(state, trans, y, np.array([0, T]), edge, o2)[0]
        assert got == pytest.approx(_score(state, full, allowed, trip, y), abs=1e-9)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_a_single_switchs_hinge_change_is_exact_and_a_forbidden_one_is_refused(seed):
    """Moving y[i] from o to n: the new best loss-augmented score is max_l (M[i, l] + [l = o]
    - [l = n]); with the state, transition and triple changes (the last from
    ``triples_change_any``), the hinge change, for every position and new label that leave
    the labeling allowed. The others get -inf."""
    rng = np.random.default_rng(10 + seed)
    refused = 0
    for _ in range(20):
        o2, allowed, trip = _random_lattice(rng)
        T, state, trans, edge, full, y = _chain(rng, 6, allowed, trip, True)
        P = len(o2[0])
        M = np.zeros((T, L))
        top = max_marginals_any(
            state, trans, edge, o2, y, 0, T, M, np.zeros((T, P)), np.zeros((T, P))
        )
        before = _hinge(state, full, allowed, trip, y)
        for i, new in itertools.product(range(T), range(L)):
            old = y[i]
            if new == old:
                continue
            z = y.copy()
            z[i] = new
            change = triples_change_any(o2, y, 0, T, i, new)
            assert np.array_equal(y[i], old)  # y is left as it was
            if _score(state, full, allowed, trip, z) == -np.inf:
                assert change == -np.inf
                refused += 1
                continue
            d_score = state[i, new] - state[i, old] + change
            if i > 0:
                d_score += edge[i, y[i - 1], new] - edge[i, y[i - 1], old]
            if i + 1 < T:
                d_score += edge[i + 1, new, y[i + 1]] - edge[i + 1, old, y[i + 1]]
            assert d_score == pytest.approx(
                _score(state, full, allowed, trip, z) - _score(state, full, allowed, trip, y),
                abs=1e-9,
            )
            shift = np.zeros(L)
            shift[old], shift[new] = 1.0, -1.0
            new_top = float((M[i] + shift).max())
            want = _hinge(state, full, allowed, trip, z) - before
            assert (new_top - top) - d_score == pytest.approx(want, abs=1e-9)
    assert refused > 0  # the draws did test refusals


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_a_run_move_from_the_kept_pair_rows(seed):
    rng = np.random.default_rng(20 + seed)
    for _ in range(60):
        o2, allowed, trip = _random_lattice(rng)
        T, state, trans, edge, full, y = _chain(rng, 7, allowed, trip, seed % 2 == 1)
        P = len(o2[0])
        M, fwd, bwd = np.zeros((T, L)), np.zeros((T, P)), np.zeros((T, P))
        max_marginals_any(state, trans, edge, o2, y, 0, T, M, fwd, bwd)
        r0 = int(rng.integers(0, T))
        r1 = int(rng.integers(r0 + 1, T + 1))
        y[r0:r1] = rng.integers(0, L)
        top = top_after_run_any(state, trans, edge, o2, y, 0, T, r0, r1, fwd, bwd, np.zeros((T, P)))
        assert top == pytest.approx(_brute(state, full, allowed, trip, y)[1], abs=1e-9)


@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize("run_moves", [False, True])
def test_switching_on_a_second_order_chain_lowers_the_objective_it_reports(seed, run_moves):
    """The objective before and after, summed by enumeration (hinges) and a recount
    (penalties), differs by what the switching reports; the labelings stay allowed and the
    kept counts true."""
    rng = np.random.default_rng(30 + seed)
    o2, allowed, trip = _random_lattice(rng)
    words = ["x", "y", ",", "z"]
    chains = [_chain(rng, 5, allowed, trip, True) for _ in range(8)]
    sents = [[words[i] for i in rng.integers(0, 4, c[0])] for c in chains]
    offsets = np.zeros(len(sents) + 1, np.int64)
    np.cumsum([c[0] for c in chains], out=offsets[1:])
    N, P = int(offsets[-1]), len(o2[0])
    state = np.concatenate([c[1] for c in chains])
    edge = np.ascontiguousarray(np.concatenate([c[4] for c in chains]))
    trans = np.zeros((L, L))
    cc = ConstraintSet.from_text(SWITCH_RULES).compile(["a", "b", "c"])
    vs = ViolationState(cc, cc.indicators(sents), np.concatenate([c[5] for c in chains]))
    rules, counts = vs.records()
    y = vs.y
    cu = 0.3
    spans = list(zip(offsets[:-1], offsets[1:]))

    def hinges():
        return sum(_hinge(state[a:b], edge[a:b], allowed, trip, y[a:b]) for a, b in spans)

    def switch(rules, counts, start, seed):
        M, fwd, bwd, top = np.zeros((N, L)), np.zeros((N, P)), np.zeros((N, P)), np.zeros(8)
        all_max_marginals(state, trans, edge, y, offsets, M, fwd, bwd, top, o2)
        stats = np.zeros(3)
        label_switching(
            SwitchLattice(state, trans, edge, M, fwd, bwd, top, o2),
            y,
            offsets,
            np.repeat(np.arange(len(sents)), np.diff(offsets)),
            cu,
            rules,
            counts,
            start,
            # one window for the whole budget: a lattice that allows few labelings can leave
            # no improving switch among the first N proposals, which would end a shorter window
            SwitchPlan(1500, 1500, 0.0, seed, run_moves),
            stats,
        )
        return stats

    before = cu * hinges() + vs.penalty()
    stats = switch(rules, counts, before, 3 + seed)
    kept = vs.phi.copy(), vs.num.copy()
    vs.recount()
    np.testing.assert_allclose(kept[0], vs.phi)
    np.testing.assert_allclose(kept[1], vs.num)
    after = cu * hinges() + vs.penalty()
    assert stats[0] > 0 and after < before
    assert before - after == pytest.approx(stats[2], abs=1e-7)
    for a, b in spans:
        assert _score(state[a:b], edge[a:b], allowed, trip, y[a:b]) > -np.inf
    # without rules the same kernel lowers the hinges alone
    h0 = hinges()
    stats = switch(*no_constraints(N, offsets, L), cu * h0, 9)
    assert cu * (h0 - hinges()) == pytest.approx(stats[2], abs=1e-7)


# ---- a second-order model on the address task

FEATURES = """
[featurizer]
columns = ["word"]
templates = ["bias", "lower[0]", "lower[-1]", "lower[1]", "sshape[0]"]
order = 2

[views.lower]
function = "lower"
[views.sshape]
function = "short_shape"
"""


@pytest.fixture(scope="module")
def task(tmp_path_factory):
    pairs = FEATURES.replace("order = 2", 'order = 2\npair_templates = ["lower[-1]"]')
    return address_task(tmp_path_factory.mktemp("order2"), {"f.toml": FEATURES, "fp.toml": pairs})


@pytest.fixture(scope="module")
def fitted(task):
    return fit_addresses(task)


def test_annealing_trains_a_second_order_model_that_tags_and_loads_the_same(task, fitted, tmp_path):
    from tagger import Tagger

    test = task["test"]
    model = fitted.model_
    # with unlabeled data every label pair is allowed (and every triple had a weight; the
    # file keeps the non-zero ones)
    assert model.order == 2 and len(model.second.allowed) == L * L
    assert np.count_nonzero(model.trip_weights(fitted.weights_)) > 0
    assert fitted.evaluate(test)["accuracy"] >= majority_floor(test)
    steps = [row for row in fitted.trace_ if row["step"] > 0]
    assert steps and sum(row["switches"] for row in steps) > 0
    fitted.save(tmp_path / "m.tgm")
    back = Tagger.load(tmp_path / "m.tgm")
    assert back.model_.order == 2
    assert back.predict(test) == fitted.predict(test)


@pytest.mark.parametrize("params", [{}, {"inner": "owlqn", "c1": 1.0, "tau": 0.25}])
def test_with_label_pair_templates_too_by_either_supervised_step(task, params):
    tg = fit_addresses(task, "fp.toml", **params)
    assert tg.model_.order == 2 and tg.model_.n_pair > 0
    assert tg.evaluate(task["test"])["accuracy"] >= majority_floor(task["test"])


def test_same_weights_at_1_and_2_threads(task):
    """Every parallel kernel forced on (a zero size threshold), the constrained decoding on
    the pair-state lattice and the switching lattices included, at 1 and 2 threads."""
    one, two = weights_at_1_and_2_threads(task["dir"] / "f.toml")
    assert one == two and len(one) == len(hashlib.sha256().hexdigest())
