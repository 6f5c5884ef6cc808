"""m3n-owlqn against enumeration and an exact LP.

On chains short enough to list every labeling: the smoothed hinge, its gradient and expected
Hamming cost equal their definitions summed over all labelings; the hinge equals the brute-force
maximum; every dual bound the learner reports lies below the L1-M3N optimum that HiGHS finds
for the LP over all labelings (``test_lp._full_lp``), and the learner's weights reach that
optimum with exact zeros.
"""

from __future__ import annotations

import numpy as np
import pytest
from test_lp import _full_lp, _problem

from tagger.learners import LEARNERS
from tagger.learners.m3n_owlqn import dual_bound, hinge
from tagger.learners.solvers.crf_objective import CRFObjective

from _brute import logsumexp, sentence_features


def _by_enumeration(problem, w, cost, tau):
    """(H_tau, grad H_tau, sum_i E_p[hamming], H) summed over sentences by listing labelings."""
    model, X = problem.model, problem.X
    smooth, hard, misses = 0.0, 0.0, 0.0
    grad = np.zeros(model.n_weights)
    for s in range(X.n_sentences):
        a, b = X.offsets[s], X.offsets[s + 1]
        gold = problem.y[a:b]
        paths, feats = sentence_features(model, X, s)
        ham = (paths != gold).sum(axis=1).astype(float)
        aug = feats @ w + cost * ham
        f_gold = model.joint_features(X, s, gold)
        lz = logsumexp(aug / tau)
        p = np.exp(aug / tau - lz)
        smooth += tau * lz - f_gold @ w
        hard += aug.max() - f_gold @ w
        grad += p @ feats - f_gold
        misses += p @ ham
    return smooth, grad, misses, hard


@pytest.mark.parametrize("cost, tau", [(1.0, 1.0), (1.0, 0.1), (2.5, 0.5), (0.0, 1.0)])
def test_smoothed_hinge_gradient_and_hinge_equal_their_definitions(cost, tau):
    problem = _problem(3)
    rng = np.random.default_rng(0)
    w = rng.normal(scale=0.7, size=problem.model.n_weights)
    fun = CRFObjective(problem.model, problem.X, problem.y)
    fun.cost, fun.temperature = cost, tau
    value, grad = fun(w)
    smooth, g_ref, misses, hard = _by_enumeration(problem, w, cost, tau)
    assert value == pytest.approx(smooth, rel=1e-10, abs=1e-10)
    np.testing.assert_allclose(grad, g_ref, rtol=1e-9, atol=1e-9)
    assert fun.expected_misses == pytest.approx(misses, rel=1e-10, abs=1e-10)
    assert hinge(problem, w, cost) == pytest.approx(hard, rel=1e-12, abs=1e-10)
    # the smoothing bound H <= H_tau <= H + tau sum_i T_i log L
    log_l = np.log(problem.model.n_labels)
    assert hard - 1e-9 <= smooth <= hard + tau * problem.X.n_tokens * log_l + 1e-9


@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize("c1", [0.1, 1.0])
def test_reaches_the_exact_l1_m3n_optimum_and_every_dual_bound_is_below_it(seed, c1):
    problem = _problem(seed)
    optimum = c1 * _full_lp(problem, 1.0 / c1, signed=True)  # min ||w||_1 + C sum xi, C = 1/c1
    learner = LEARNERS["m3n-owlqn"](c1=c1, gap=0.0, stages=10, epochs=10000, delta=1e-12)
    w = learner.fit(problem)
    ends = [r for r in learner.trace_ if "gap" in r]
    assert len(ends) == 10
    for r in ends:
        assert r["dual"] <= optimum + 1e-9 <= r["primal"] + 2e-9
    primal = hinge(problem, w, 1.0) + c1 * np.abs(w).sum()
    assert primal == pytest.approx(ends[-1]["primal"], rel=1e-12)
    assert primal - optimum <= 1e-3 * optimum
    assert ends[-1]["gap"] >= primal - optimum - 1e-9  # the certificate bounds the distance
    assert np.count_nonzero(w) < problem.model.n_weights  # exact zeros


def test_the_gap_rule_stops_early_and_elastic_net_bounds_hold():
    problem = _problem(2)
    c1, c2 = 0.5, 0.3
    learner = LEARNERS["m3n-owlqn"](c1=c1, c2=c2, gap=0.05, stages=20, epochs=10000)
    w = learner.fit(problem)
    ends = [r for r in learner.trace_ if "gap" in r]
    assert ends[-1]["rel_gap"] <= 0.05 and len(ends) < 20
    # weak duality: the dual bound of any weights is below the objective at any other weights
    rng = np.random.default_rng(1)
    fun = CRFObjective(problem.model, problem.X, problem.y)
    fun.cost = 1.0
    for tau in (1.0, 0.2):
        fun.temperature = tau
        v = rng.normal(scale=0.5, size=len(w))
        _, g = fun(v)
        bound = dual_bound(g, fun.expected_misses, 1.0, c1, c2)
        for u in (w, v, np.zeros_like(w)):
            assert bound <= hinge(problem, u, 1.0) + c1 * np.abs(u).sum() + c2 * u @ u + 1e-9


def test_with_dev_data_the_best_stage_is_kept_and_the_stages_stop_after_a_worse_one():
    problem = _problem(3)
    settings = dict(c1=0.3, stages=5, epochs=500, gap=0.0)
    seen = []

    def record(w):
        seen.append(w.copy())
        return {"dev_acc": 0.0}

    problem.dev_score = record
    last = LEARNERS["m3n-owlqn"](**settings, select="last")
    last.fit(problem)
    ends = [i for i, r in enumerate(last.trace_) if "gap" in r]
    assert len(ends) == 5  # one dev_score call per trace row: the rows' weights are seen[i]
    stage2 = seen[ends[1]]
    assert not np.array_equal(seen[ends[2]], stage2)
    # a dev score that peaks exactly at the end of stage 2
    problem.dev_score = lambda w: {"dev_acc": -float(np.abs(w - stage2).sum())}
    chosen = LEARNERS["m3n-owlqn"](**settings)
    w = chosen.fit(problem)
    rows = [r for r in chosen.trace_ if "gap" in r]
    assert [r["stage"] for r in rows] == [1, 2, 3]  # stopped after the first worse stage
    assert np.array_equal(w, stage2)
    assert [r.get("selected", False) for r in rows] == [False, True, False]


@pytest.mark.parametrize("select", ["dev", "last"])
def test_the_summary_says_which_stage_was_kept(tmp_path, select):
    from pathlib import Path

    from click.testing import CliRunner

    from tagger.cli import cli

    corpora = Path(__file__).resolve().parents[2] / "corpora"
    r = CliRunner().invoke(
        cli,
        [
            "train",
            str(corpora / "sample_chunk.txt"),
            "--dev",
            str(corpora / "sample_chunk_dev.txt"),
            "--no-select",
            "--set",
            f"select={select}",
            "-o",
            str(tmp_path / "m.tgm"),
        ],
        catch_exceptions=False,
    )
    assert r.exit_code == 0, r.output
    line = next(ln for ln in r.stderr.splitlines() if ln.startswith("dev of the saved weights"))
    assert ("the best stage on dev" in line) == (select == "dev")
