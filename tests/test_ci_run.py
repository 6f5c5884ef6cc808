"""``.ci/run`` killed by a signal reports the signal and a failing status (130 for SIGINT, 143
for SIGTERM), never "finished with status 0". The script runs in a copy of the repository's
layout with no corpus required and a stub interpreter that only waits, so nothing is
installed: the signal reaches the script's process group, as a CI runner's or a terminal's
does, while the stub "creates the virtual environment"."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time

import pytest

from _helpers import ROOT


def _default_stop_signals() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)


@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")
@pytest.mark.parametrize("sig, status", [(signal.SIGTERM, 143), (signal.SIGINT, 130)])
def test_ci_run_killed_by_a_signal_says_so_and_fails(sig, status, tmp_path):
    repo = tmp_path / "repo"
    (repo / ".ci").mkdir(parents=True)
    (repo / "tests").mkdir()
    (tmp_path / "shared" / "corpora").mkdir(parents=True)
    shutil.copy(ROOT / ".ci" / "run", repo / ".ci" / "run")
    (repo / "tests" / "required_corpora.txt").write_text("# none\n")
    started = tmp_path / "started"
    stub = tmp_path / "python-stub"
    stub.write_text(f'#!/bin/sh\ntouch "{started}"\nexec sleep 60\n')
    stub.chmod(0o755)
    env = dict(os.environ, PYTHON=str(stub), TMPDIR=str(tmp_path))
    proc = subprocess.Popen(
        ["bash", str(repo / ".ci" / "run")],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
        # a CI runner or terminal delivers SIGINT to a script that can act on it; a test run
        # started in the background by a non-interactive shell inherits SIGINT ignored, and a
        # shell cannot trap a signal ignored when it starts
        preexec_fn=_default_stop_signals,
    )
    while not started.exists() and proc.poll() is None:
        time.sleep(0.05)
    assert proc.poll() is None, proc.communicate()
    os.killpg(proc.pid, sig)
    out, err = proc.communicate()
    assert proc.returncode == status, (out, err)
    assert f"killed by {sig.name}" in err, err
    assert "finished with status 0" not in out + err
    assert not list(tmp_path.glob("tagger-ci.*"))  # its work directory removed
