"""A first ``tagger train`` compiles its kernels in two processes (:mod:`tagger.precompile`):
the shipped list of kernels and argument types is the run's, the helper's results land in
numba's cache where this process loads them, a helper that dies costs time only, and a warm
cache starts nothing."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tagger import precompile

from _helpers import ROOT

README_COMMAND = ["train", "corpora/sample_chunk.txt", "--dev", "corpora/sample_chunk_dev.txt"]


def _run(script: str, *args: str, cache: Path | None) -> str:
    """``python -c script args`` in the checkout, with numba's cache in ``cache`` (None: the
    one this test run uses)."""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    if cache is not None:
        env["NUMBA_CACHE_DIR"] = str(cache)
    done = subprocess.run(
        [sys.executable, "-c", script, *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_the_listed_types_read_back_as_written():
    pytest.importorskip("numba")
    listing = precompile.read_listing()
    assert listing.units and listing.learner == "m3n-owlqn"
    for unit in listing.units:
        types = [precompile.decode_type(a) for a in unit.args]
        assert tuple(precompile.encode_type(t) for t in types) == unit.args, unit.kernel


def test_the_plan_gives_each_process_whole_subtrees():
    import tagger.cli  # noqa: F401  (every kernel module, as a run has them)
    from tagger import jit

    jit.start()
    units = precompile.read_listing().units
    plan = precompile.plan(units)
    for u in units:
        if u.parent >= 0 and units[u.parent].helper:
            assert u.helper, f"{u.kernel} is compiled inside a unit of the helper's"
    explicit = [*plan.helper, *plan.first, *plan.then]
    assert len(explicit) == len(set(explicit))
    assert {units[i].helper for i in plan.helper} == {True}
    assert not any(units[i].helper for i in (*plan.first, *plan.then))
    helper_functions = {u.kernel.removesuffix("__serial") for u in units if u.helper}
    for i in plan.first:  # compiled while the helper works: never one of its functions
        assert not precompile.reach(units[i].kernel) & helper_functions, units[i].kernel
    for i in plan.then:
        assert 1 <= plan.waits[i] <= len(plan.helper)


RECORD_CALLS = """
import json, sys
from numba.core import dispatcher
from tagger import precompile
from tagger.cli import cli

calls = set()
compile_for_args = dispatcher.Dispatcher._compile_for_args

def recording(self, *args, **kws):
    name = precompile.kernel_name(self)
    if name is not None:
        types = tuple(precompile.encode_type(self.typeof_pyval(a)) for a in args)
        calls.add(json.dumps([name, types]))
    return compile_for_args(self, *args, **kws)

dispatcher.Dispatcher._compile_for_args = recording
precompile.compile_for_training = lambda *args, **kwargs: None
cli.main(sys.argv[1:], prog_name="tagger", standalone_mode=False)
print(json.dumps(sorted(calls)))
"""


def test_the_list_names_what_the_readme_command_calls(tmp_path):
    """The kernels the command calls from Python, with their argument types, whatever the
    cache holds (a call from Python passes numba's ``_compile_for_args`` once per new type
    signature, compiled or loaded): every one is a listed unit, and every unit the list has
    called from Python is among them. Stale: run ``python bench/kernel_signatures.py``."""
    out = _run(
        RECORD_CALLS,
        *README_COMMAND,
        "-o",
        str(tmp_path / "m.tgm"),
        "-q",
        cache=None,
    )
    called = {_tuples(json.loads(c)) for c in json.loads(out.strip().splitlines()[-1])}
    units = precompile.read_listing().units
    roots = {(u.kernel, u.args) for u in units if u.parent < 0}
    listed = {(u.kernel, u.args) for u in units}
    # a kernel compiled inside another on an empty cache may be called from Python later
    assert roots <= called <= listed, "stale: run python bench/kernel_signatures.py"


@pytest.mark.slow
@pytest.mark.ci
def test_the_list_is_what_an_empty_cache_compiles():
    """Every unit, the callees' too, as a run on an empty cache compiles them."""
    done = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "kernel_signatures.py"), "--check"],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stdout + done.stderr


def _tuples(value):
    return tuple(_tuples(v) for v in value) if isinstance(value, list) else value


def _small_listing(path: Path) -> Path:
    """A list of three cheap units of the shipped one: ``attribute_id`` compiled here, the
    ``_lookup`` it calls (and ``_slot`` below that) by the helper."""
    units = precompile.read_listing().units
    by_name = {u.kernel.rpartition(":")[2]: u for u in units}
    a, lookup, slot = by_name["attribute_id"], by_name["_lookup"], by_name["_slot"]
    small = precompile.Listing(
        "m3n-owlqn",
        (
            precompile.Unit(a.kernel, a.args, -1, a.seconds, False),
            precompile.Unit(lookup.kernel, lookup.args, 0, lookup.seconds, True),
            precompile.Unit(slot.kernel, slot.args, 1, slot.seconds, True),
        ),
    )
    precompile.write_listing(path, small, ["three units of the shipped list"])
    return path


TWO_PROCESSES = """
import json, os, sys
from pathlib import Path
from tagger import precompile
import tagger.cli

listing, data, dead = Path(sys.argv[1]), sys.argv[2], sys.argv[3] == "dead"
spawned = []
command = precompile.helper_command

def counted(path):
    spawned.append(path)
    return [sys.executable, "-c", "raise SystemExit(3)"] if dead else command(path)

precompile.helper_command = counted
first = precompile.compile_for_training("m3n-owlqn", [data], listing)
from tagger.features import hash_table

lookup = hash_table._lookup
try:
    os.waitpid(-1, os.WNOHANG)
    left = True
except ChildProcessError:
    left = False
second = precompile.compile_for_training("m3n-owlqn", [data], listing)
print(json.dumps({
    "first": first, "second": second, "spawned": len(spawned), "left": left,
    "lookup_hits": sum(lookup.stats.cache_hits.values()),
    "lookup_misses": sum(lookup.stats.cache_misses.values()),
}))
"""


@pytest.mark.parametrize("helper", ["works", "dead"])
def test_the_helper_compiles_into_the_cache_this_process_loads(tmp_path, helper):
    """On an empty cache one helper is started; this process waits for its ``_lookup`` and
    loads it from the cache while compiling ``attribute_id`` (a helper that dies at once: this
    process compiles ``_lookup`` itself); no child is left; then the cache is warm and nothing
    is started."""
    listing = _small_listing(tmp_path / "small.txt")
    data = tmp_path / "train.txt"
    data.write_text("He PRP B-NP\n")
    out = _run(TWO_PROCESSES, str(listing), str(data), helper, cache=tmp_path / "cache")
    result = json.loads(out.strip().splitlines()[-1])
    print(result)
    assert result["first"] is not None and result["spawned"] == 1
    assert not result["left"]
    loaded = (1, 0) if helper == "works" else (0, 1)  # (from the cache, compiled here)
    assert (result["lookup_hits"], result["lookup_misses"]) == loaded
    assert result["second"] is None


def test_only_a_run_like_the_listed_one_is_precompiled(tmp_path):
    """Another learner, large files or names that are not local files: nothing is done (and
    numba is not even started for it)."""
    small = tmp_path / "small.txt"
    small.write_text("He PRP B-NP\n")
    big = tmp_path / "big.txt"
    big.write_text("He PRP B-NP\n" * 4000)
    assert precompile.compile_for_training("crf-l2", [str(small)]) is None
    assert precompile.compile_for_training("m3n-owlqn", [str(big)]) is None
    assert precompile.compile_for_training("m3n-owlqn", ["hf:eriktks/conll2000"]) is None
    assert precompile.compile_for_training("m3n-owlqn", []) is None
