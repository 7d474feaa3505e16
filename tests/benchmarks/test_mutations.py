"""``python -m benchmarks.mutations`` runs end to end on a few primitives: no
false alarm on the unmutated rules, every visible mutant caught, the
transpose-rule mutant applied to linear primitives only, the rules restored
afterwards, and the JSON it promises."""

import json
import subprocess
import sys
from pathlib import Path

import numpy as np

from benchmarks.mutations import Installed
from functrans.core import registry
from functrans.testing import check_derivatives

ROOT = Path(__file__).resolve().parents[2]


def test_mutants_of_sin_and_reduce_sum_are_caught(tmp_path):
    out = tmp_path / "mutations.json"
    proc = subprocess.run(
        [sys.executable, "-m", "benchmarks.mutations", "--only", "sin,reduce_sum", "--cases", "1",
         "--out", str(out)], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    report = json.loads(out.read_text())["float64"]
    assert report["false_alarms"] == [] and report["skipped"] == []
    mutants = report["mutants"]
    assert set(mutants) == {"sign", "rel1e-3", "rel1e-6", "broadcast", "transposed", "second",
                            "some_inputs", "reverse"}
    for name, row in mutants.items():
        assert row["missed"] == [], (name, row)
        assert row["applicable"] + len(row["equivalent"]) == (1 if name == "reverse" else 2)
    assert mutants["rel1e-6"]["caught"] == 2
    assert "false alarms on the unmutated registry: 0" in proc.stdout


def test_installed_mutants_are_removed_afterwards():
    rule = registry["cos"].jvp
    with Installed("cos", "sign"):
        assert registry["cos"].jvp is not rule
    assert registry["cos"].jvp is rule
    check_derivatives(lambda x: np.cos(x) * 0.987654321, (np.array([0.5, 1.5]),))
