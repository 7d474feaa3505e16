"""The collectives across processes: ``mpiexec -n 2`` runs of the scripts in
tests/api/mpi_scripts/ (each launch costs about a second, so one script holds
all value and derivative checks), and two runs where one rank fails."""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

SCRIPTS = Path(__file__).parent / "mpi_scripts"
MPIEXEC = shutil.which("mpiexec") or shutil.which("mpirun")

pytestmark = [
    pytest.mark.mpi,
    pytest.mark.skipif(
        importlib.util.find_spec("mpi4py") is None,
        reason="mpi4py is not installed (pip install 'functrans[mpi]')",
    ),
    pytest.mark.skipif(MPIEXEC is None, reason="no mpiexec on PATH (pip install mpich)"),
]


def launch(script: str | Path, *args: str,
           timeout: float = 120) -> tuple[subprocess.CompletedProcess, float]:
    """``mpiexec -n 2 python script args``: the finished run and its seconds
    (``script`` relative to tests/api/mpi_scripts/, or a full path)."""
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    start = time.monotonic()
    done = subprocess.run(
        [MPIEXEC, "-n", "2", sys.executable, str(SCRIPTS / script), *args],
        capture_output=True, text=True, timeout=timeout, env=env,
    )
    return done, time.monotonic() - start


def test_collectives_values_and_derivatives_over_two_processes():
    done, _ = launch("collectives.py")
    out = done.stdout + done.stderr
    assert done.returncode == 0, out
    for rank in (0, 1):
        assert f"done rank {rank}" in out, out
    # The ranks share one stdout, so their lines can run together: count the
    # checks, not the lines.
    checks = re.findall(r"ok [^\n]*? \(rank [01]\)", done.stdout)
    assert len(checks) >= 80, out  # every check ran on both ranks
    assert "ok grad dp (rank 1)" in out and "ok hessian dp (rank 0)" in out


def test_a_rank_that_raises_aborts_the_other():
    done, seconds = launch("failing_rank.py", "raise", timeout=60)
    out = done.stdout + done.stderr
    assert done.returncode != 0, out
    assert "ValueError: rank 1 fails on purpose" in out
    assert "rank 1 of 2 failed with an uncaught exception; aborting all ranks" in out
    assert "rank 0 finished" not in out
    assert seconds < 30, out  # rank 0 was blocked in psum: only the abort ends it


def test_a_collective_times_out_naming_itself_and_the_rank():
    done, seconds = launch("failing_rank.py", "timeout", timeout=60)
    out = done.stdout + done.stderr
    assert done.returncode != 0, out
    assert ("CollectiveTimeoutError: psum over functrans.distributed.AXIS: rank 0 of 2 "
            "waited 1 s for the other ranks") in out, out
    assert seconds < 30, out  # rank 1 sleeps 60 s: the abort ends it early


def test_the_docs_example_trains_as_one_process_would(tmp_path):
    page = (Path(__file__).resolve().parents[2] / "docs" / "distributed.md").read_text()
    marker = "<!-- the example below is run by tests/api/test_distributed.py -->\n```python\n"
    assert marker in page
    script = tmp_path / "train.py"
    script.write_text(page.split(marker, 1)[1].split("```", 1)[0])
    done, _ = launch(script)
    out = done.stdout + done.stderr
    assert done.returncode == 0, out
    for rank in (0, 1):
        assert f"rank {rank}: same parameters as one process: True" in out, out
        assert f"rank {rank}: Newton-CG success=True" in out, out
        assert "same as one process: True" in out.split(f"rank {rank}: Newton-CG")[1], out
