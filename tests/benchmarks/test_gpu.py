"""benchmarks/gpu.py and benchmarks/gpu_check.py on any machine: their
math is right (checked on the CPU) and they say so cleanly without a GPU.
The timings themselves need a GPU (``python -m benchmarks.gpu_check``)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np

import functrans as ft
import functrans.numpy as fnp
from benchmarks import gpu as bench
from benchmarks import gpu_check
from functrans.backends import cupy as gpu

ROOT = Path(__file__).resolve().parents[2]


def test_the_chain_has_ten_elementwise_operations_fused_into_one_kernel():
    low = ft.jit(lambda x: bench.chain(x, fnp)).lower(ft.ShapeDtypeStruct((8,), np.float32),
                                                      device="gpu")
    (k,) = low.kernels
    assert len(k.eqns) == 10
    low = ft.jit(ft.grad(lambda x: fnp.sum(bench.chain(x, fnp)))).lower(
        ft.ShapeDtypeStruct((8,), np.float32), device="gpu")
    assert [e.primitive.name for e in low.jaxpr.eqns] == ["fused_elementwise"]


def test_the_hand_written_gradient_is_the_gradient():
    x = np.linspace(-2, 2, 9)
    np.testing.assert_allclose(bench.chain_grad_by_hand(x, np),
                               ft.grad(lambda v: fnp.sum(bench.chain(v, fnp)))(x), rtol=1e-12)


def test_the_workloads_run_on_the_cpu():
    x = np.linspace(-1, 1.5, 8)
    h = ft.hessian(lambda v: bench.rosenbrock(v, fnp))(x)
    assert h.shape == (8, 8) and np.allclose(h, h.T)
    rng = np.random.default_rng(0)
    params = [rng.standard_normal(s) for s in [(32, 128), (128,), (128, 4), (4,)]]
    g = ft.vmap(ft.grad(lambda p, a, b: bench.mlp_loss(p, a, b, fnp)), in_axes=(None, 0, 0))(
        params, rng.standard_normal((3, 32)), rng.standard_normal((3, 4)))
    assert [a.shape for a in g] == [(3, 32, 128), (3, 128), (3, 128, 4), (3, 4)]


def test_the_table():
    rows = [bench._row("chain", "functrans (fused)", 1e-3, 8e8, 1e12, ""),
            bench._row("rosenbrock_hessian", "jax", 2e-3, None, None, "n=4,096")]
    rows += gpu_check.summary_rows({"pytest": {"code": 0, "seconds": 1.5,
                                            "counts": {"passed": 3, "skipped": 1}}})
    text = bench.format_rows(rows)
    assert "800" in text and "80%" in text and "3 passed, 1 skipped" in text


def test_without_a_gpu_they_say_so():
    if gpu.gpu_available():
        return
    assert bench.run("quick") == []
    proc = subprocess.run([sys.executable, "-m", "benchmarks.gpu_check"], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and "no GPU" in proc.stdout


def test_a_mismatch_or_an_error_fails_the_check_and_the_goals_are_reported():
    rows = [bench._row("chain", "device copy", 1e-3, 8e8, 8e11, ""),
            bench._row("chain", "functrans (fused)", 1.2e-3, 8e8, 8e11, ""),
            bench._row("chain", "cupy (kernel per op)", 6e-3, 8e8, 8e11, ""),
            bench._row("chain", "functrans grad (fused)", 2e-3, 8e8, 8e11, "MISMATCH"),
            bench._row("chain", "cupy grad by hand", 4e-3, 8e8, 8e11, "")]
    assert [r["variant"] for r in bench.failures(rows)] == ["functrans grad (fused)"]
    rows.append(bench._row("mlp_per_example", "error", float("nan"), None, None, "boom"))
    assert len(bench.failures(rows)) == 2
    met, missed = bench.targets(rows)
    assert met.startswith("met: functrans (fused) at 83% of copy bandwidth") and "5.0x" in met
    assert missed.startswith("MISSED: functrans grad (fused)") and "2.0x" in missed


def test_the_log_gets_every_line(tmp_path, capsys):
    log = gpu_check.Log(str(tmp_path / "check.log"))
    log("== section")
    log("a row")
    assert (tmp_path / "check.log").read_text() == "== section\na row\n"
    assert capsys.readouterr().out == "== section\na row\n"


def test_the_documented_device_command_uses_the_wheel_folder():
    doc = (ROOT / "docs" / "gpu.md").read_text()
    script = (ROOT / "benchmarks" / "gpu_wheels.sh").read_text()
    assert "bash benchmarks/gpu_wheels.sh" in doc and "-d .whl" in script
    assert "--no-index --no-deps --target /tmp/site .whl/*.whl" in doc
    assert 'python3 -m benchmarks.gpu_check --log "$OUT/gpu_check.log"' in doc
    assert ".whl/" in (ROOT / ".gitignore").read_text().split()


def test_every_test_file_with_a_gpu_variant_is_in_the_checks_gpu_section():
    marked = {p.relative_to(ROOT).as_posix() for p in (ROOT / "tests").rglob("test_*.py")
              if p != Path(__file__).resolve() and "mark.gpu" in p.read_text()}
    name, paths, marker, _ = gpu_check.SECTIONS[0]
    assert marker == "gpu" and marked <= set(paths), sorted(marked - set(paths))


def test_a_section_that_passed_nothing_fails_the_check():
    assert not gpu_check.section_failed({"code": 0, "counts": {"passed": 3, "skipped": 1}})
    for code, counts in ((0, {"skipped": 40}), (5, {}), (1, {"passed": 3, "failed": 1}),
                         (-1, {"passed": 9})):
        assert gpu_check.section_failed({"code": code, "counts": counts})
