"""On a GPU machine: run the GPU tests and the GPU benchmarks, print one table.

    python -m benchmarks.gpu_check [--quick] [--tests-only | --benchmarks-only]

1. ``pytest -m gpu`` over tests/test_gpu_*.py (CuPy and a GPU: every
   elementwise kernel against NumPy, fused programs against the CPU, the
   transforms on CuPy arrays), then the code-generation tests that run
   anywhere (nvcc compile checks, the CUDA expressions run on the host);
2. ``benchmarks/gpu.py``: the fused 10-op chain and its gradient (n = 1e8)
   against CuPy and ``cupy.fuse``, the Rosenbrock Hessian (n = 4,096) and
   per-example MLP gradients (batch 65,536), with JAX beside them when it is
   installed with GPU support.

Sized to finish in under 8 minutes on one GPU (the first run compiles
about a thousand small kernels; CuPy caches them on disk for the next).
Exits 1 if a test fails, 2 without a GPU.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TEST_BUDGET_S = 360


def run_tests(paths: list[str], marker: str | None, timeout: float) -> dict:
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:randomly", "-p", "no:cacheprovider",
           *paths]
    if marker:
        cmd += ["-m", marker]
    t0 = time.perf_counter()
    try:
        proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=timeout)
        out = proc.stdout + proc.stderr
        code = proc.returncode
    except subprocess.TimeoutExpired as e:
        out = e.stdout.decode() if isinstance(e.stdout, bytes) else (e.stdout or "")
        out += f"\ntimed out after {timeout:.0f} s"
        code = -1
    counts = {k: int(n) for n, k in re.findall(r"(\d+) (passed|failed|skipped|error)", out)}
    return {"code": code, "counts": counts, "seconds": time.perf_counter() - t0, "log": out}


def summary_rows(results: dict[str, dict]) -> list[dict]:
    rows = []
    for name, r in results.items():
        c = r["counts"]
        summary = ", ".join(f"{c[k]} {k}" for k in ("passed", "failed", "error", "skipped")
                            if c.get(k))
        rows.append({"benchmark": "tests", "variant": name, "time_ms": r["seconds"] * 1e3,
                     "GB/s": None, "of_copy": None,
                     "note": summary or ("timed out" if r["code"] == -1 else "no tests ran")})
    return rows


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small benchmark sizes")
    parser.add_argument("--tests-only", action="store_true")
    parser.add_argument("--benchmarks-only", action="store_true")
    args = parser.parse_args(argv)
    sys.path.insert(0, str(ROOT))
    from benchmarks import gpu as bench
    from functrans.backends import cupy as gpu_backend

    if not gpu_backend.gpu_available():
        print("gpu_check: no GPU (CuPy missing, or no CUDA device); nothing to run")
        return 2
    results: dict[str, dict] = {}
    if not args.benchmarks_only:
        print("gpu_check: running the GPU tests (the first run compiles ~1000 kernels)...",
              file=sys.stderr)
        results["pytest -m gpu tests/test_gpu_*.py"] = run_tests(
            ["tests/test_gpu_cupy.py", "tests/test_gpu_dispatch.py"], "gpu", TEST_BUDGET_S)
        results["codegen: lowering, nvcc, host semantics, fusion"] = run_tests(
            ["tests/test_gpu_lowering.py", "tests/test_gpu_host_semantics.py",
             "tests/test_fuse.py"], None, 180)
    rows = summary_rows(results)
    if not args.tests_only:
        print("gpu_check: running the GPU benchmarks...", file=sys.stderr)
        rows += bench.run("quick" if args.quick else "full")
    print(bench.format_rows(rows))
    failed = [name for name, r in results.items()
              if r["code"] not in (0, 5)]  # 5: nothing collected
    for name in failed:
        print(f"\n--- {name} ---\n{results[name]['log'][-6000:]}")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
