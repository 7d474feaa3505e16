"""On a GPU machine: run the GPU tests and the GPU benchmarks, one table at the end.

    python -m benchmarks.gpu_check [--log PATH] [--quick] [--tests-only | --benchmarks-only]

1. ``pytest -m gpu`` over the tests with a GPU variant (CuPy and a GPU: every
   elementwise kernel against NumPy, fused programs against the CPU, every
   primitive's GPU impl, the transforms on CuPy arrays);
2. the code-generation tests that run anywhere: nvcc and NVRTC compile
   checks (every per-primitive kernel: ``FUNCTRANS_NVRTC_ALL=1``), the CUDA
   expressions run on the host, the kernels' arguments, fusion;
3. ``benchmarks/gpu.py``: the fused 10-op chain and its gradient (n = 1e8)
   against CuPy and ``cupy.fuse``, the Rosenbrock Hessian (n = 4,096) and
   per-example MLP gradients (batch 65,536), with JAX beside them when it is
   installed with GPU support; kernel times from CUDA events.

Each section is printed as it finishes, to stdout and to ``--log`` (flushed
line by line), so that a run cut short still shows what it did.  JAX is
told not to preallocate 75% of the GPU's memory (``XLA_PYTHON_CLIENT_PREALLOCATE=false``),
in this process and in the test processes.  The two test sections run side
by side (the first on the GPU, the second on the CPUs), at most 330 s,
then the benchmarks (a minute or two): under 10 minutes on one GPU (the
first run compiles about a thousand small kernels; CuPy caches them on disk
for the next).

Exit status: 0 when everything passed, 1 when a test failed, a test section
passed nothing (all skipped, none collected) or a benchmark erred or
disagreed with its reference (MISMATCH), 2 without a GPU, 3 when
functrans cannot be imported (on a machine without its dependencies: see
docs/gpu.md for the wheel folder to carry).
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import TextIO

ROOT = Path(__file__).resolve().parents[1]
ENV = {"XLA_PYTHON_CLIENT_PREALLOCATE": "false", "PYTHONUNBUFFERED": "1"}

#: (section, test files, pytest marker, budget in seconds)
SECTIONS = [
    ("pytest -m gpu (CuPy on the GPU)",
     ["tests/backends/gpu/test_cupy.py", "tests/backends/gpu/test_dispatch.py",
      "tests/backends/gpu/test_gpu_rules.py", "tests/backends/gpu/test_scatter.py",
      "tests/backends/gpu/test_gpu_linalg.py", "tests/optimizers/test_on_device.py",
      "tests/numpy/test_functional_updates.py"],
     "gpu", 330),
    ("codegen: nvcc, NVRTC, host semantics, kernel arguments, fusion",
     ["tests/backends/gpu/test_lowering.py", "tests/backends/gpu/test_nvrtc.py",
      "tests/backends/gpu/test_host_semantics.py", "tests/backends/gpu/test_kernel_args.py",
      "tests/passes/test_fuse.py"],
     None, 330),
]


class Log:
    """Lines to stdout and, when given, to a log file, flushed at once."""

    def __init__(self, path: str | None):
        self.file: TextIO | None = open(path, "a", buffering=1) if path else None

    def __call__(self, text: str = "") -> None:
        print(text, flush=True)
        if self.file is not None:
            self.file.write(text + "\n")
            self.file.flush()


def start_tests(paths: list[str], marker: str | None) -> tuple[subprocess.Popen, float]:
    """A pytest process over ``paths`` (its output to a temporary file), and its start time."""
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:randomly", "-p", "no:cacheprovider",
           *paths]
    if marker:
        cmd += ["-m", marker]
    env = dict(os.environ, **ENV, FUNCTRANS_NVRTC_ALL="1")
    out = tempfile.TemporaryFile("w+")
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=out, stderr=subprocess.STDOUT, text=True,
                            env=env)
    proc.output = out  # type: ignore[attr-defined]
    return proc, time.perf_counter()


def finish_tests(proc: subprocess.Popen, started: float, timeout: float) -> dict:
    """The counts and output of a test process, ended if it runs past ``timeout``."""
    try:
        proc.wait(timeout=max(timeout - (time.perf_counter() - started), 1))
        code = proc.returncode
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        code = -1
    out_file = proc.output  # type: ignore[attr-defined]
    out_file.seek(0)
    out = out_file.read()
    out_file.close()
    if code == -1:
        out += f"\ntimed out after {timeout:.0f} s"
    counts = {k: int(n) for n, k in re.findall(r"(\d+) (passed|failed|skipped|error)", out)}
    return {"code": code, "counts": counts, "seconds": time.perf_counter() - started,
            "log": out}


def run_tests(paths: list[str], marker: str | None, timeout: float) -> dict:
    return finish_tests(*start_tests(paths, marker), timeout)


def section_failed(r: dict) -> bool:
    """A test section failed: a test failed or erred, it timed out, or nothing
    passed (no test collected, or every one skipped: the check saw no GPU)."""
    return r["code"] != 0 or not r["counts"].get("passed")


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
    parser.add_argument("--log", help="also write every line to this file")
    parser.add_argument("--quick", action="store_true", help="small benchmark sizes")
    parser.add_argument("--tests-only", action="store_true")
    parser.add_argument("--benchmarks-only", action="store_true")
    args = parser.parse_args(argv)
    os.environ.update(ENV)  # before anything imports JAX
    log = Log(args.log)
    sys.path.insert(0, str(ROOT))
    try:
        from benchmarks import gpu as bench
        from functrans.backends import cupy as gpu_backend
    except ImportError as e:
        log(f"gpu_check: functrans does not import here ({e}); carry the wheels of "
            "docs/gpu.md ('Running the GPU check') and put them on PYTHONPATH")
        return 3

    if not gpu_backend.gpu_available():
        log("gpu_check: no GPU (CuPy missing, or no CUDA device); nothing to run")
        return 2
    cp = gpu_backend.cupy_module()
    props = cp.cuda.runtime.getDeviceProperties(0)
    log(f"gpu_check: {props['name'].decode()}, CuPy {cp.__version__}, "
        f"CUDA runtime {cp.cuda.runtime.runtimeGetVersion()}, Python {sys.version.split()[0]}")
    results: dict[str, dict] = {}
    if not args.benchmarks_only:
        # Side by side: the first uses the GPU (and NVRTC), the second the CPUs.
        running = []
        for name, paths, marker, budget in SECTIONS:
            log(f"\n== {name}: started")
            running.append((name, budget, *start_tests(paths, marker)))
        for name, budget, proc, started in running:
            r = results[name] = finish_tests(proc, started, budget)
            log(f"\n== {name}: finished")
            log(bench.format_rows(summary_rows({name: r})))
            if section_failed(r):
                log(f"--- {name}: the end of its output ---\n{r['log'][-6000:]}")
    rows = summary_rows(results)
    bench_rows: list[dict] = []
    if not args.tests_only:
        mode = "quick" if args.quick else "full"
        for part in ("chain", "rosenbrock_hessian", "mlp_per_example"):
            log(f"\n== benchmark {part} ({mode}) ...")
            got = bench.run(mode, only=(part,))
            bench_rows += got
            log(bench.format_rows(got))
    log("\n== summary")
    log(bench.format_rows(rows + bench_rows))
    for line in bench.targets(bench_rows):
        log(line)
    failed = [name for name, r in results.items() if section_failed(r)]
    bad = bench.failures(bench_rows)
    for r in bad:
        log(f"benchmark failure: {r['benchmark']} / {r['variant']}: {r['note']}")
    return 1 if failed or bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
