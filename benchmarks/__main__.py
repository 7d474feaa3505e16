"""``python -m benchmarks [--quick] [--only PATTERN,...] [--out PATH] [--list]``.

Prints one row per (workload, variant): the median time, the ratio to the
workload's floor variant, and either the difference from the floor in
microseconds or the time per unit (such as per traced equation).  Writes the
same figures and a description of the machine to ``--out`` as JSON.
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
from pathlib import Path

from benchmarks import TOPICS
from benchmarks._timing import Workload, format_time, measure

DEFAULT_OUT = Path(__file__).parent / "results" / "latest.json"


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
    }


def row(r: dict) -> list[str]:
    if "us_per_unit" in r:
        extra = f"{r['us_per_unit']:.2f} us/{r['unit']} ({r['units']} {r['unit']}s)"
    elif r["floor"]:
        extra = "floor"
    else:
        extra = f"{r['diff_us']:+.2f} us"
    return [r["workload"], r["variant"], format_time(r["median_s"]), f"{r['ratio']:.2f}x", extra]


HEAD = ["workload", "variant", "median", "ratio", "vs floor"]
ALIGN = ["<", "<", ">", ">", "<"]


def table_line(cells: list[str], widths: list[int]) -> str:
    return "  ".join(f"{c:{a}{w}}" for c, a, w in zip(cells, ALIGN, widths)).rstrip()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--quick", action="store_true", help="fewer, shorter repeats")
    parser.add_argument("--only", metavar="PATTERNS", help="comma-separated workload patterns")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help=f"JSON path ({DEFAULT_OUT})")
    parser.add_argument("--list", action="store_true", help="list the workloads and exit")
    args = parser.parse_args(argv)

    workloads = select(all_workloads(), args.only)
    if args.list:
        for w in workloads:
            print(f"{w.name:28} {w.description}")
        return 0
    mode = "quick" if args.quick else "full"
    results = []
    widths = [
        max(8, *(len(w.name) for w in workloads)),
        max(7, *(len(v) for w in workloads for v in w.variants)),
        9,
        7,
        8,
    ]
    print(f"functrans benchmarks ({mode} mode)\n")
    print(table_line(HEAD, widths))
    print(table_line(["-" * w for w in widths], widths), flush=True)
    for w in workloads:
        records = measure(w, mode)
        for r in records:
            r["description"] = w.description
            print(table_line(row(r), widths), flush=True)
        results.extend(records)
    report = {
        "created": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "mode": mode,
        "machine": machine(),
        "results": results,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n")
    print(f"\nwrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
