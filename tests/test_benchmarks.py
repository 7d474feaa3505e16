"""The benchmark runner runs end to end and writes the JSON it promises.
(No timing assertions: figures depend on the machine.)"""

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

RECORD_KEYS = {
    "workload", "variant", "floor", "median_s", "min_s", "max_s",
    "repeats", "number", "ratio", "diff_us", "description",
}


def run_quick(tmp_path, only):
    out = tmp_path / "bench.json"
    proc = subprocess.run(
        [sys.executable, "-m", "benchmarks", "--quick", "--only", only, "--out", str(out)],
        cwd=ROOT, capture_output=True, text=True, timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout, json.loads(out.read_text())


def test_quick_run_writes_table_and_json(tmp_path):
    stdout, report = run_quick(tmp_path, "eager.sin.n10,tracing")
    assert {"created", "mode", "machine", "results"} <= report.keys()
    assert report["mode"] == "quick"
    assert {"python", "numpy", "functrans", "platform", "cpu_count"} <= report["machine"].keys()
    results = report["results"]
    assert {r["workload"] for r in results} == {"eager.sin.n10", "tracing.elementwise1000"}
    for r in results:
        assert RECORD_KEYS <= r.keys()
        assert r["repeats"] >= 7 and r["number"] >= 1 and r["median_s"] > 0
    floors = [r for r in results if r["floor"]]
    assert len(floors) == 2 and all(r["ratio"] == 1.0 for r in floors)
    eager = {r["variant"] for r in results if r["workload"] == "eager.sin.n10"}
    assert eager == {"numpy", "functrans"}
    for r in results:
        if r["workload"].startswith("tracing"):
            assert r["unit"] == "eqn" and r["units"] >= 1000 and r["us_per_unit"] > 0
    assert "eager.sin.n10" in stdout and "us/eqn" in stdout


def test_only_rejects_unknown_workloads(tmp_path):
    proc = subprocess.run(
        [sys.executable, "-m", "benchmarks", "--only", "no-such-workload"],
        cwd=ROOT, capture_output=True, text=True, timeout=120,
    )
    assert proc.returncode != 0
    assert "eager.sin.n10" in proc.stderr  # the message lists what exists
