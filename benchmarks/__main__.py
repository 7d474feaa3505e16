"""``python -m benchmarks [--quick] [--only PATTERN,...] [--out PATH] [--list] [--no-peers]
[--threads N]``.

Prints one row per (workload, variant): the median time, the ratio to the
workload's floor variant, and either the difference from the floor, the time
per unit (such as per traced equation) or, for memory workloads, the peak
traced allocation (the ratio is then the ratio of peaks); for the variants
that say how they warm up, the calls and seconds from a cold start to the
fast tier (jit) or to a steady call time (eager grad), with the reason a
program stays in the NumPy tier on the line below, and the peak traced
allocation of one steady call.  Writes the same
figures and a description of the machine to ``--out`` as JSON.

``--threads N`` caps the threads of every library measured (OpenBLAS, MKL,
OpenMP and Numba, whose threads run functrans' native kernels, through their
environment variables, PyTorch's intra-op pool, XLA's Eigen pool when N is
1) before any of them is imported; with N = 1 the process is also pinned to
one core, since XLA runs a loop on threads of its own pool.  On a small or busy
machine ``--threads 1`` gives steadier figures: a multi-threaded BLAS call
that has to wait for a busy core can take tens of times longer.
"""

from __future__ import annotations

import argparse
import datetime
import fnmatch
import importlib
import json
import os
import platform
import sys
import textwrap
from pathlib import Path

from benchmarks import TOPICS
from benchmarks._peers import NO_PEERS_ENV, THREADS_ENV
from benchmarks._timing import Workload, format_steady, format_time, measure

DEFAULT_OUT = Path(__file__).parent / "results" / "latest.json"

DESCRIPTION = textwrap.fill(
    "Time functrans on its workloads against the same math hand-written in NumPy (each "
    "workload's floor) and against JAX, autograd and PyTorch where they are installed; "
    "print one row per workload and variant (median time, ratio to the floor) and write "
    "the figures, with a description of the machine, as JSON.", 78)
EPILOG = f"""{textwrap.fill("topics, in the order they run: " + ", ".join(TOPICS), 78)}

examples:
  python -m benchmarks --quick                    every workload, short repeats
  python -m benchmarks --only autodiff,jacobians  two topics
  python -m benchmarks --only '*.n1e6' --threads 1
                                  the largest sizes, steadier on a busy machine
  python -m benchmarks --list                     the workloads, what each times

Figures depend on the machine: compare runs made on the same one."""


def all_workloads() -> list[Workload]:
    out: list[Workload] = []
    for topic in TOPICS:
        out.extend(importlib.import_module(f"benchmarks.{topic}").workloads())
    return out


def select(workloads: list[Workload], only: str | None) -> list[Workload]:
    """Workloads whose name matches one of the comma-separated patterns (shell
    wildcards; a pattern without one matches as a prefix, so ``eager`` selects
    every eager workload)."""
    if not only:
        return workloads
    patterns = [p if any(c in p for c in "*?[") else p + "*" for p in only.split(",") if p]
    chosen = [w for w in workloads if any(fnmatch.fnmatchcase(w.name, p) for p in patterns)]
    if not chosen:
        names = ", ".join(w.name for w in workloads)
        raise SystemExit(f"--only {only!r} matches no workload; the workloads are: {names}")
    return chosen


def machine() -> dict:
    import numpy

    import functrans

    return {
        "python": platform.python_version(),
        "implementation": platform.python_implementation(),
        "numpy": numpy.__version__,
        "functrans": functrans.__version__,
        "platform": platform.platform(),
        "processor": platform.processor() or platform.machine(),
        "cpu_count": os.cpu_count(),
        "threads": os.environ.get(THREADS_ENV, "library defaults"),
    }


def peers() -> dict:
    """The peer libraries' versions (None where not importable or left out)."""
    from importlib.metadata import PackageNotFoundError, version

    from benchmarks import _peers

    out = {}
    for name, load in (("jax", _peers.jax), ("autograd", _peers.autograd),
                       ("torch", _peers.torch)):
        try:
            out[name] = version(name) if load() is not None else None
        except PackageNotFoundError:
            out[name] = "unknown"
    return out


def row(r: dict) -> list[str]:
    if "peak_mb" in r:
        extra = f"{r['peak_mb']:.1f} MB peak" + (" (floor)" if r["floor"] else "")
    elif "us_per_unit" in r:
        extra = f"{r['us_per_unit']:.2f} us/{r['unit']} ({r['units']} {r['unit']}s)"
    elif r["floor"]:
        extra = "floor"
    elif abs(r["diff_us"]) >= 1000:
        sign = "+" if r["diff_us"] >= 0 else "-"
        extra = sign + format_time(abs(r["diff_us"]) * 1e-6)
    else:
        extra = f"{r['diff_us']:+.2f} us"
    peak = ""
    if "peak_traced_mb" in r:
        mb = r["peak_traced_mb"]
        peak = f"{mb:.2f} MB" if mb >= 1 else f"{mb * 1e3:.1f} kB"
    return [r["workload"], r["variant"], format_time(r["median_s"]), f"{r['ratio']:.2f}x", extra,
            format_steady(r), peak]


def reason_line(r: dict, indent: int) -> str | None:
    """The line under a jit row whose program is not in the native tier: why."""
    st = r.get("steady")
    if st is None or st.get("tier", "native") == "native":
        return None
    return " " * indent + "NumPy tier: " + st["reason"]


HEAD = ["workload", "variant", "median", "ratio", "vs floor", "to fast tier / steady",
        "peak (traced)"]
ALIGN = ["<", "<", ">", ">", "<", "<", ">"]


def table_line(cells: list[str], widths: list[int]) -> str:
    return "  ".join(f"{c:{a}{w}}" for c, a, w in zip(cells, ALIGN, widths)).rstrip()


def limit_threads(n: int) -> None:
    """Cap the thread pools of NumPy's BLAS, OpenMP, PyTorch and XLA at ``n``
    (environment variables, so before those libraries are imported)."""
    if n < 1:
        raise SystemExit(f"--threads must be at least 1, got {n}")
    if "numpy" in sys.modules:
        print("warning: numpy was imported before --threads took effect", file=sys.stderr)
    for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS",
                "NUMBA_NUM_THREADS"):
        os.environ[var] = str(n)
    os.environ[THREADS_ENV] = str(n)
    if n == 1:
        flags = os.environ.get("XLA_FLAGS", "")
        os.environ["XLA_FLAGS"] = f"{flags} --xla_cpu_multi_thread_eigen=false".strip()
        # XLA still runs a fusion's loop on several threads of its own pool:
        # one core for the whole process makes every library single-threaded.
        if hasattr(os, "sched_setaffinity"):
            os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks", description=DESCRIPTION, epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--quick", action="store_true", help="fewer, shorter repeats")
    parser.add_argument("--only", metavar="PATTERNS",
                        help="comma-separated workload names: a plain word selects every "
                             "workload it begins (autodiff), shell wildcards match whole "
                             "names (*.n1e6); see --list")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, metavar="PATH",
                        help="where to write the JSON (default: benchmarks/results/latest.json)")
    parser.add_argument("--list", action="store_true",
                        help="list the workloads with what each times, and exit")
    parser.add_argument("--no-peers", action="store_true",
                        help="leave out JAX, autograd and PyTorch even where importable")
    parser.add_argument("--threads", type=int, metavar="N",
                        help="cap BLAS/OpenMP/PyTorch/XLA threads (default: each library's own)")
    args = parser.parse_args(argv)
    # Topics that size their workloads by the mode read it here (benchmarks.sparse).
    os.environ["FUNCTRANS_BENCH_MODE"] = "quick" if args.quick else "full"
    if args.no_peers:
        os.environ[NO_PEERS_ENV] = "1"
    if args.threads is not None:
        limit_threads(args.threads)

    workloads = select(all_workloads(), args.only)
    if args.list:
        width = max(len(w.name) for w in workloads)
        for w in workloads:
            print(f"{w.name:{width}}  {w.description}")
        return 0
    mode = "quick" if args.quick else "full"
    results = []
    widths = [
        max(8, *(len(w.name) for w in workloads)),
        max(7, *(len(v) for w in workloads for v in w.variants)),
        9,
        7,
        20,
        44,
        13,
    ]
    print(f"functrans benchmarks ({mode} mode)\n")
    print(table_line(HEAD, widths))
    print(table_line(["-" * w for w in widths], widths), flush=True)
    for w in workloads:
        records = measure(w, mode)
        for r in records:
            r["description"] = w.description
            print(table_line(row(r), widths), flush=True)
            if (why := reason_line(r, widths[0] + 2)) is not None:
                print(why, flush=True)
        results.extend(records)
    report = {
        "created": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "mode": mode,
        "machine": machine(),
        "peers": peers(),
        "results": results,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n")
    print(f"\nwrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
