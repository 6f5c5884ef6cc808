"""``lp-simplex``'s LP engines (tagger.learners.solvers.highs_solver): the interior point
method and PDLP reach the dual simplex's objective on a small labeled set, PDLP's approximate
rounds say so in their progress rows while the rounds that certify the end are exact, and an
unknown engine is refused in one line that lists the engines.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from tagger.api import Tagger
from tagger.errors import ParameterError
from tagger.io import read_corpus
from tagger.learners import LEARNERS
from tagger.learners.solvers import highs_solver
from tagger.learners.solvers.highs_solver import ENGINES, PDLP_TOLERANCE

from _helpers import ROOT

#: the exact engines agree with the simplex to this relative tolerance; PDLP's final objective
#: rests on exact rounds too, so it is held to its own (tighter) tolerance
TOLERANCE = {"auto": 1e-6, "simplex": 1e-6, "ipm": 1e-6, "pdlp": PDLP_TOLERANCE}


@pytest.fixture(scope="module")
def sentences():
    # 21 UD sentences with UPOS labels: the hmm preset's LP, as bench/lp_engines.py trains it
    return list(read_corpus(ROOT / "corpora" / "sample_pos.conllu"))


def _fit(sentences, engine: str, **params) -> Tagger:
    # C = 10: at C = 1 every weight of this set's optimum is 0 (no feature pays for its cost)
    tagger = Tagger(
        features="hmm",
        learner="lp-simplex",
        params={"C": 10.0, "epsilon": 1e-9, "optimality_gap": 0.0, "engine": engine, **params},
        select=False,
    )
    return tagger.fit(sentences)


@pytest.fixture(scope="module")
def by_engine(sentences):
    # the default loop (trust region from the smoothed start), its start kept short
    return {engine: _fit(sentences, engine, smoothing=20) for engine in ENGINES}


def test_auto_is_the_default_engine():
    assert LEARNERS["lp-simplex"].param("engine").default == "auto"
    assert LEARNERS["lp-simplex"].param("engine").choices == ENGINES


@pytest.mark.parametrize("engine", ENGINES)
def test_every_engine_reaches_the_simplex_objective(sentences, by_engine, engine):
    reference = by_engine["simplex"].trace_[-1]
    last = by_engine[engine].trace_[-1]
    assert reference["converged"] is True and last["converged"] is True
    # far from w = 0, whose objective is C = 10 per sentence
    assert 0 < reference["objective"] < 0.9 * 10.0 * len(sentences)
    assert np.count_nonzero(by_engine[engine].weights_) > 0
    assert np.all(by_engine[engine].weights_ >= 0)
    assert last["objective"] == pytest.approx(reference["objective"], rel=TOLERANCE[engine])
    # the certificate: the last LP's value meets the whole objective
    assert last["lp_objective"] == pytest.approx(last["objective"], rel=1e-6)
    # the rounds whose LP is exact never report a status other than optimal
    exact = [r for r in by_engine[engine].trace_ if "lp_gap" not in r]
    assert exact and all("lp_status" not in r for r in exact)


def test_auto_solves_from_scratch_and_large_lps_by_ipm_and_the_rest_by_the_simplex(
    sentences, by_engine, monkeypatch
):
    # this set's LPs stay far below AUTO_IPM_ROWS: the interior point method for the first
    # solve, which has no basis, then the simplex from the basis its crossover left
    engines = [r["lp_engine"] for r in by_engine["auto"].trace_]
    assert engines[0] == "ipm" and set(engines[1:]) == {"simplex"}
    # every LP above the row count: every round by the interior point method, same optimum
    monkeypatch.setattr(highs_solver, "AUTO_IPM_ROWS", 0)
    tagger = _fit(sentences, "auto", smoothing=20)
    assert {r["lp_engine"] for r in tagger.trace_} == {"ipm"}
    assert all("lp_crossover_iterations" in r for r in tagger.trace_)
    reference = by_engine["simplex"].trace_[-1]["objective"]
    assert tagger.trace_[-1]["objective"] == pytest.approx(reference, rel=1e-6)


def test_ipm_rounds_report_their_crossover(by_engine):
    rows = by_engine["ipm"].trace_
    assert all(r["lp_iterations"] > 0 for r in rows)
    assert all("lp_crossover_iterations" in r for r in rows)


def test_pdlp_rounds_are_reported_approximate_and_the_end_is_exact(by_engine):
    rows = by_engine["pdlp"].trace_
    flags = ["lp_gap" in r for r in rows]
    # approximate rounds first, then the exact ones the certificate rests on
    assert flags[0] is True and flags[-1] is False
    assert flags == sorted(flags, reverse=True)
    for r in rows[: flags.count(True)]:
        # "optimal to PDLP's tolerance ... (approximate)", or HiGHS's status when PDLP
        # stopped otherwise (e.g. "Unknown (PDLP)"), never a bare "Optimal"
        assert "PDLP" in r["lp_status"]
        assert math.isfinite(r["lp_gap"]) and r["lp_gap"] >= 0
        assert math.isfinite(r["lp_infeasibility"]) and r["lp_infeasibility"] >= 0
        assert r["converged"] is False
    assert rows[-1]["converged"] is True


@pytest.mark.parametrize("engine", ["ipm", "pdlp"])
def test_plain_column_generation_with_each_engine(sentences, engine):
    """The paper's loop (no trust region) also ends on an exact LP with either engine."""
    plain = {"trust_region": 0.0, "local_rows": False, "epochs": 200}
    # 8 sentences: PDLP from scratch on each of this loop's ~60 rounds is slow
    reference = _fit(sentences[:8], "simplex", **plain).trace_[-1]
    tagger = _fit(sentences[:8], engine, **plain)
    last = tagger.trace_[-1]
    assert reference["converged"] is True and last["converged"] is True
    assert "lp_gap" not in last
    assert last["objective"] == pytest.approx(reference["objective"], rel=TOLERANCE[engine])
    assert np.all(tagger.weights_ >= 0)


def test_an_unknown_engine_is_refused_in_one_line_with_the_choices(sentences):
    with pytest.raises(ParameterError) as info:
        _fit(sentences, "barrier")
    msg = str(info.value)
    assert "\n" not in msg
    assert "'engine'" in msg and "Got 'barrier'" in msg
    assert "one of 'auto', 'simplex', 'ipm', 'pdlp'" in msg


def test_an_unknown_engine_is_refused_from_the_command_line_form():
    cls = LEARNERS["lp-simplex"]
    assert cls.parse_settings(["engine=pdlp"]) == {"engine": "pdlp"}
    with pytest.raises(ParameterError, match="one of 'auto', 'simplex', 'ipm', 'pdlp'"):
        cls(engine="interior").validated()
