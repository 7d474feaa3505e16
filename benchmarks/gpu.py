"""GPU benchmarks: what fusion buys, and the transforms at GPU sizes.

    python -m benchmarks.gpu [--quick]      # needs CuPy and a CUDA GPU

Run by ``benchmarks/gpu_check.py`` (which also runs the GPU tests); not a
topic of ``python -m benchmarks``, whose workloads run on any machine.

* ``chain``: a 10-operation elementwise chain on n = 1e8 float32, and its
  gradient: functrans (``jit``, one fused kernel each) against CuPy one
  kernel per operation, ``cupy.fuse`` and JAX.  Reported as time, achieved
  memory bandwidth (the bytes an ideal program moves: read x once, write the
  result once) and that as a fraction of this device's measured copy
  bandwidth.
* ``rosenbrock_hessian``: the dense Hessian of the extended Rosenbrock
  function at n = 4,096 (float64), against JAX.
* ``mlp_per_example``: per-example gradients (``vmap(grad)``) of a 2-layer
  MLP at batch 65,536 (float32), against JAX.

Kernel times are measured with CUDA events around many back-to-back calls
(``timed``), so they are the device's time per call, with the dispatch of
each call overlapped by the previous kernel as in a real loop; JAX, whose
work runs on its own streams, is timed by the wall clock around as many
back-to-back calls ended by one ``block_until_ready``.  A result that
differs from the reference is a MISMATCH row; ``gpu_check`` fails on it.
"""

from __future__ import annotations

import argparse
import os
import time
from typing import Any, Callable

import numpy as np

SIZES = {
    "full": {"chain_n": 100_000_000, "hessian_n": 4096, "batch": 65_536, "repeats": 20},
    "quick": {"chain_n": 1_000_000, "hessian_n": 256, "batch": 1024, "repeats": 5},
}


def cupy_or_none():
    from functrans.backends import cupy as gpu

    return gpu.cupy_module() if gpu.gpu_available() else None


def jax_or_none():
    """JAX with a GPU device and float64 enabled, or None.  JAX is told not
    to take 75% of the GPU's memory up front (CuPy needs it)."""
    os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
    try:
        import jax

        jax.config.update("jax_enable_x64", True)
        if not jax.devices("gpu"):
            return None
        return jax
    except Exception:  # not installed, or no GPU backend
        return None


def timed(fn: Callable[[], Any], cp, calls: int, warmup: int = 3) -> float:
    """Seconds per call of ``fn`` on the device: CUDA events recorded around
    ``calls`` back-to-back calls on CuPy's current stream, after warm-up."""
    for _ in range(warmup):
        fn()
    start, end = cp.cuda.Event(), cp.cuda.Event()
    start.record()
    for _ in range(calls):
        fn()
    end.record()
    end.synchronize()
    return cp.cuda.get_elapsed_time(start, end) / 1e3 / calls


def timed_jax(fn: Callable[[], Any], jax, calls: int, warmup: int = 3) -> float:
    """Seconds per call of a JAX function: the wall clock around ``calls``
    back-to-back calls and one ``block_until_ready`` (JAX dispatches
    asynchronously, on streams of its own)."""
    for _ in range(warmup):
        jax.block_until_ready(fn())
    t0 = time.perf_counter()
    out = None
    for _ in range(calls):
        out = fn()
    jax.block_until_ready(out)
    return (time.perf_counter() - t0) / calls


# -- the elementwise chain --------------------------------------------------------------


def chain(x, xp):
    """Ten elementwise operations (``xp`` is functrans.numpy or cupy)."""
    y = xp.sin(x)          # 1
    y = y * 1.5            # 2
    y = xp.exp(-y)         # 3, 4
    y = y * x              # 5
    y = xp.tanh(y)         # 6
    y = y - 0.5            # 7
    y = y * y              # 8
    return xp.sqrt(y + 1.0)  # 9, 10


def chain_grad_by_hand(x, xp):
    """The chain's derivative written out with CuPy ops (one kernel each)."""
    s = xp.sin(x)
    a = s * 1.5
    e = xp.exp(-a)
    b = e * x
    t = xp.tanh(b)
    c = t - 0.5
    q = c * c + 1.0
    r = xp.sqrt(q)
    dq = 0.5 / r
    dc = dq * 2.0 * c
    db = dc * (1.0 - t * t)
    de = db * x
    da = -de * e
    ds = da * 1.5
    return ds * xp.cos(x) + db * e


def bench_chain(cp, jax, n: int, repeats: int) -> list[dict]:
    import functrans as ft
    import functrans.numpy as fnp

    rows = []
    x = cp.random.default_rng(0).random(n, dtype=cp.float32)
    dst = cp.empty_like(x)
    t_copy = timed(lambda: dst.__setitem__(Ellipsis, x), cp, repeats)
    copy_bw = 2 * x.nbytes / t_copy
    rows.append(_row("chain", "device copy", t_copy, 2 * x.nbytes, copy_bw, f"n={n:,}"))
    ideal = 2 * x.nbytes  # read x, write the result

    variants = {
        "functrans (fused)": ft.jit(lambda v: chain(v, fnp)),
        "cupy (kernel per op)": lambda v: chain(v, cp),
        "cupy.fuse": cp.fuse(lambda v: chain(v, cp)),
    }
    grads = {
        "functrans grad (fused)": ft.jit(ft.grad(lambda v: fnp.sum(chain(v, fnp)))),
        "cupy grad by hand": lambda v: chain_grad_by_hand(v, cp),
        "cupy.fuse grad by hand": cp.fuse(lambda v: chain_grad_by_hand(v, cp)),
    }
    want, want_g = chain(x, cp), chain_grad_by_hand(x, cp)
    for table, check in ((variants, want), (grads, want_g)):
        for name, fn in table.items():
            note = _agreement(cp, fn(x), check)
            t = timed(lambda fn=fn: fn(x), cp, repeats)
            rows.append(_row("chain", name, t, ideal, copy_bw, note))
    if jax is not None:
        jnp = jax.numpy
        xj = jax.device_put(np.asarray(x.get()))
        f = jax.jit(lambda v: chain(v, jnp))
        g = jax.jit(jax.grad(lambda v: jnp.sum(chain(v, jnp))))
        for name, fn, check in (("jax", f, want), ("jax grad", g, want_g)):
            note = _agreement(cp, cp.asarray(np.asarray(fn(xj))), check)
            t = timed_jax(lambda fn=fn: fn(xj), jax, repeats)
            rows.append(_row("chain", name, t, ideal, copy_bw, note))
    return rows


def _agreement(cp, got, want, rtol=1e-4, atol=1e-5) -> str:
    """'' when ``got`` is close to ``want`` (float32 math: 1e-4), else MISMATCH."""
    ok = got.shape == want.shape and bool(cp.allclose(got, want, rtol=rtol, atol=atol))
    return "" if ok else "MISMATCH"


def targets(rows: list[dict]) -> list[str]:
    """The chain's goals, met or missed: functrans's fused forward and gradient
    at >= 70% of the copy bandwidth and >= 3x CuPy's kernel-per-op time."""
    by = {r["variant"]: r for r in rows if r["benchmark"] == "chain"}
    out = []
    for mine, theirs in (("functrans (fused)", "cupy (kernel per op)"),
                         ("functrans grad (fused)", "cupy grad by hand")):
        if mine not in by or theirs not in by:
            continue
        frac = by[mine]["of_copy"] or 0.0
        speedup = by[theirs]["time_ms"] / by[mine]["time_ms"]
        met = frac >= 0.7 and speedup >= 3.0
        out.append(f"{'met' if met else 'MISSED'}: {mine} at {frac:.0%} of copy bandwidth "
                   f"(goal 70%), {speedup:.1f}x {theirs} (goal 3x)")
    return out


# -- Hessian of the extended Rosenbrock function ------------------------------------------


def rosenbrock(x, xp):
    """The extended Rosenbrock function (pairs of variables)."""
    odd, even = x[0::2], x[1::2]
    return xp.sum(100.0 * (even - odd**2) ** 2 + (1.0 - odd) ** 2)


def bench_hessian(cp, jax, n: int, repeats: int) -> list[dict]:
    import functrans as ft
    import functrans.numpy as fnp

    x = cp.linspace(-1.0, 1.5, n)
    hess = ft.jit(ft.hessian(lambda v: rosenbrock(v, fnp)))
    h = hess(x)
    rows = [_row("rosenbrock_hessian", "functrans", timed(lambda: hess(x), cp, repeats),
                 None, None, f"n={n:,}, float64")]
    if jax is not None:
        jnp = jax.numpy
        xj = jax.device_put(np.asarray(x.get()))
        hj = jax.jit(jax.hessian(lambda v: rosenbrock(v, jnp)))
        note = _agreement(cp, cp.asarray(np.asarray(hj(xj))), h, rtol=1e-10, atol=1e-8)
        rows.append(_row("rosenbrock_hessian", "jax", timed_jax(lambda: hj(xj), jax, repeats),
                         None, None, note))
    return rows


# -- per-example gradients of an MLP ---------------------------------------------------------


def mlp_loss(params, x, y, xp):
    w1, b1, w2, b2 = params
    h = xp.tanh(x @ w1 + b1)
    out = h @ w2 + b2
    return xp.sum((out - y) ** 2)


def bench_mlp(cp, jax, batch: int, repeats: int) -> list[dict]:
    import functrans as ft
    import functrans.numpy as fnp

    rng = np.random.default_rng(0)
    shapes = [(32, 128), (128,), (128, 4), (4,)]
    params = [(rng.standard_normal(s) / np.sqrt(s[0])).astype(np.float32) for s in shapes]
    xs = rng.standard_normal((batch, 32)).astype(np.float32)
    ys = rng.standard_normal((batch, 4)).astype(np.float32)
    per_example = ft.jit(ft.vmap(ft.grad(lambda p, x, y: mlp_loss(p, x, y, fnp)),
                                 in_axes=(None, 0, 0)))
    p_d, x_d, y_d = ft.device_put((params, xs, ys), "gpu")
    got = per_example(p_d, x_d, y_d)
    rows = [_row("mlp_per_example", "functrans",
                 timed(lambda: per_example(p_d, x_d, y_d), cp, repeats),
                 None, None, f"batch={batch:,}, 32-128-4, float32")]
    if jax is not None:
        jnp = jax.numpy
        pj, xj, yj = jax.device_put((params, xs, ys))
        fj = jax.jit(jax.vmap(jax.grad(lambda p, x, y: mlp_loss(p, x, y, jnp)),
                              in_axes=(None, 0, 0)))
        theirs = fj(pj, xj, yj)
        note = "" if all(_agreement(cp, g, cp.asarray(np.asarray(t)), 1e-3, 1e-4) == ""
                         for g, t in zip(got, theirs)) else "MISMATCH"
        rows.append(_row("mlp_per_example", "jax",
                         timed_jax(lambda: fj(pj, xj, yj), jax, repeats), None, None, note))
    return rows


# -- running and printing ------------------------------------------------------------------


def _row(bench, variant, seconds, nbytes, copy_bw, note) -> dict:
    bw = None if nbytes is None else nbytes / seconds
    return {
        "benchmark": bench, "variant": variant, "time_ms": seconds * 1e3,
        "GB/s": None if bw is None else bw / 1e9,
        "of_copy": None if bw is None or copy_bw is None else bw / copy_bw,
        "note": note,
    }


def run(mode: str = "full", only: tuple[str, ...] = ()) -> list[dict]:
    """Every GPU benchmark's rows; [] without a GPU."""
    cp = cupy_or_none()
    if cp is None:
        return []
    jax = jax_or_none()
    size = SIZES[mode]
    rows: list[dict] = []
    parts = {
        "chain": lambda: bench_chain(cp, jax, size["chain_n"], size["repeats"]),
        "rosenbrock_hessian": lambda: bench_hessian(cp, jax, size["hessian_n"], size["repeats"]),
        "mlp_per_example": lambda: bench_mlp(cp, jax, size["batch"], size["repeats"]),
    }
    for name, part in parts.items():
        if not only or name in only:
            try:
                rows += part()
            except Exception as e:  # report and go on: one table for everything
                rows.append(_row(name, "error", float("nan"), None, None,
                                 f"{type(e).__name__}: {e}"[:120]))
    if jax is None:
        rows.append(_row("jax", "-", float("nan"), None, None,
                         "JAX with a GPU is not installed: no JAX rows"))
    return rows


def format_rows(rows: list[dict]) -> str:
    header = ("benchmark", "variant", "time", "GB/s", "of copy", "note")
    lines = [header]
    for r in rows:
        t = "" if r["time_ms"] != r["time_ms"] else f"{r['time_ms']:.3f} ms"
        bw = "" if r["GB/s"] is None else f"{r['GB/s']:.0f}"
        frac = "" if r["of_copy"] is None else f"{r['of_copy']:.0%}"
        lines.append((r["benchmark"], r["variant"], t, bw, frac, r["note"]))
    widths = [max(len(str(line[i])) for line in lines) for i in range(len(header))]
    out = ["  ".join(str(c).ljust(w) for c, w in zip(line, widths)).rstrip() for line in lines]
    out.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(out)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes, few repeats")
    args = parser.parse_args(argv)
    rows = run("quick" if args.quick else "full")
    if not rows:
        print("no GPU: install CuPy on a machine with a CUDA GPU to run these benchmarks")
        return 0
    print(format_rows(rows))
    print("\n".join(targets(rows)))
    return 1 if failures(rows) else 0


def failures(rows: list[dict]) -> list[dict]:
    """The rows that are a benchmark's error or a result that disagrees."""
    return [r for r in rows if r["variant"] == "error" or r["note"] == "MISMATCH"]


if __name__ == "__main__":
    raise SystemExit(main())
