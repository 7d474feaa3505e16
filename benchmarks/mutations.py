"""Mutation testing of ``functrans.testing.check_derivatives`` on the primitive
registry: ``python -m benchmarks.mutations [--dtype float64|float32]
[--cases N] [--only NAME,...] [--out PATH]``.

For every differentiable primitive (``tests/_specs.py`` draws its operands,
away from kinks), each mutant below replaces the primitive's derivative rule
at run time, one at a time (the declarations are not edited), and
``check_derivatives(order=2)`` runs on the same points; a mutant is caught
when it raises AssertionError.  The unmutated registry runs first on the same
points: any failure there is a false alarm.

Mutants of the JVP rule (forward and reverse mode alike, since reverse mode
transposes the JVP), applied to each float tangent it returns:

* ``sign``: the tangent negated;
* ``rel1e-3`` / ``rel1e-6``: the tangent off by a relative 1e-3 / 1e-6;
* ``broadcast``: the tangent's leading axis collapsed to its mean and
  broadcast back, as a rule that forgot to broadcast one operand's tangent;
* ``transposed``: the tangent transposed in its last two axes (square ones),
  otherwise reversed along its last axis, as a rule using a transposed operand;
* ``second``: ``t + 1e-6 * (y - stop_gradient(y)) * t`` for the primal
  output ``y``: the first derivative exact everywhere, the second one wrong;
* ``some_inputs``: off by a relative 1e-6 only where the primal output is
  positive;

and of the transpose rule, for linear primitives (reverse mode only):

* ``reverse``: every cotangent it returns off by a relative 1e-6.

A mutant that changes no derivative at any drawn point by more than 16
roundings of the dtype (a transposed scalar, a collapsed axis of size one, a
relative 1e-6 in float32) is equivalent there: it is reported, not counted.
Writes the figures as JSON (``benchmarks/results/mutations.json`` by
default).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any, Callable

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from _specs import DIFFERENTIABLE, SPECS, bind_with, zero_derivative  # noqa: E402
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

import functrans as ft  # noqa: E402
import functrans.numpy as fnp  # noqa: E402
from functrans import core  # noqa: E402
from functrans.core import Zero, registry  # noqa: E402
from functrans.testing import check_derivatives  # noqa: E402
from functrans.testing._arguments import random_like  # noqa: E402

DEFAULT_OUT = ROOT / "benchmarks" / "results" / "mutations.json"


# --------------------------------------------------------------------------
# The mutants: each maps a float tangent (and the primal output) to another
# --------------------------------------------------------------------------


def _collapse(t, y):
    if t.ndim == 0 or t.shape[0] < 2:
        return t
    return fnp.broadcast_to(fnp.mean(t, axis=0, keepdims=True), t.shape)


def _transpose(t, y):
    if t.ndim >= 2 and t.shape[-1] == t.shape[-2]:
        return fnp.swapaxes(t, -1, -2)
    if t.ndim >= 1 and t.shape[-1] > 1:
        return fnp.flip(t, axis=-1)
    return t


def _second(t, y):
    return t + 1e-6 * (y - ft.lax.stop_gradient(y)) * t


def _some_inputs(t, y):
    return t * fnp.where(fnp.real(y) > 0, 1 + 1e-6, 1.0)


TANGENT_MUTANTS: dict[str, Callable[[Any, Any], Any]] = {
    "sign": lambda t, y: -t,
    "rel1e-3": lambda t, y: t * (1 + 1e-3),
    "rel1e-6": lambda t, y: t * (1 + 1e-6),
    "broadcast": _collapse,
    "transposed": _transpose,
    "second": _second,
    "some_inputs": _some_inputs,
}
MUTANTS = (*TANGENT_MUTANTS, "reverse")


def _float(x) -> bool:
    return type(x) is not Zero and np.dtype(getattr(x, "dtype", np.float64)).kind in "fc"


def _mutate_jvp(rule: Callable, change: Callable) -> Callable:
    def mutated(primals, tangents, **params):
        out, t_out = rule(primals, tangents, **params)
        if isinstance(t_out, (list, tuple)):
            t_out = type(t_out)(change(t, y) if _float(t) else t for t, y in zip(t_out, out))
        elif _float(t_out):
            t_out = change(t_out, out)
        return out, t_out

    return mutated


def _mutate_transpose(rule: Callable) -> Callable:
    def mutated(ct, *args, **params):
        cts = rule(ct, *args, **params)
        return [c * (1 + 1e-6) if c is not None and _float(c) else c for c in cts]

    return mutated


def _clear_caches() -> None:
    """Drop every cached transform and program, so that a changed rule is
    used (and a restored one after it)."""
    for clear in core.on_value_checks:
        clear()
    for name, module in list(sys.modules.items()):
        if name == "functrans" or name.startswith("functrans."):
            for obj in list(vars(module).values()):
                if not isinstance(obj, type) and callable(getattr(obj, "cache_clear", None)):
                    obj.cache_clear()


class Installed:
    """``with Installed(name, mutant):`` the primitive's rule mutated."""

    def __init__(self, name: str, mutant: str):
        self.prim, self.mutant = registry[name], mutant
        self.slot = "transpose" if mutant == "reverse" else "jvp"

    def __enter__(self):
        self.saved = getattr(self.prim, self.slot)
        if self.mutant == "reverse":
            setattr(self.prim, self.slot, _mutate_transpose(self.saved))
        else:
            setattr(self.prim, self.slot, _mutate_jvp(self.saved, TANGENT_MUTANTS[self.mutant]))
        _clear_caches()

    def __exit__(self, *exc):
        setattr(self.prim, self.slot, self.saved)
        _clear_caches()


def applies(name: str, mutant: str) -> bool:
    prim = registry[name]
    return prim.transpose is not None and prim.linear if mutant == "reverse" else True


# --------------------------------------------------------------------------
# Points, visibility, checking
# --------------------------------------------------------------------------


def cases(name: str, n: int, dtype: np.dtype) -> list[tuple[Callable, list]]:
    """``n`` points of the primitive with nonzero derivative, the float
    operands cast to ``dtype``'s precision, each a scalar or of at least two
    entries of which at least two differ and half are nonzero (one at least
    not a scalar), and outputs with at least
    two nonzero entries: at the small points hypothesis tries first (zeros, empty
    arrays), most mutants change nothing."""
    found: list = []
    complex_ = np.complex64 if dtype == np.float32 else np.complex128

    @settings(max_examples=60 * n, derandomize=True, database=None, deadline=None,
              suppress_health_check=list(HealthCheck))
    @given(data=st.data())
    def collect(data):
        case = SPECS[name].draw(data.draw)
        if len(found) >= n or zero_derivative(name, case) or not case.diff:
            return
        args = [np.asarray(case.values[i]) for i in case.diff]
        args = [a.astype(complex_ if a.dtype.kind == "c" else dtype) for a in args]
        if not all(a.size == 1 or (len(np.unique(a)) >= 2 and 2 * np.count_nonzero(a) >= a.size)
                   for a in args) or max(a.size for a in args) < 2:
            return
        f = bind_with(name, case, case.diff, gauge=True)
        # Outputs of at least two entries, and of ``dtype``'s precision: a
        # float32 output is checked to float32's tolerance.
        outs = [np.asarray(o) for o in ft.tree_util.tree_leaves(f(*args))]
        if all(o.size >= 2 and np.count_nonzero(o) >= 2 for o in outs) and all(
                np.finfo(o.dtype).eps <= np.finfo(dtype).eps for o in outs if o.dtype.kind in "fc"):
            found.append((f, args))

    collect()
    return found


def _derivatives(f: Callable, args: list, seed: int = 0) -> list[np.ndarray]:
    """jvp, vjp and second-order jvp values along fixed random directions:
    what a mutant must change to be visible."""
    rng = np.random.default_rng(seed)
    vs = tuple(random_like(rng, a) for a in args)
    ws = tuple(random_like(rng, a) for a in args)
    out, t = ft.jvp(f, tuple(args), vs)
    cts = ft.tree_util.tree_map(lambda o: random_like(rng, o), out)
    grads = ft.vjp(f, *args)[1](cts)
    second = ft.jvp(lambda *xs: ft.jvp(f, xs, vs)[1], tuple(args), ws)[1]
    return [np.asarray(x, dtype=np.complex128) for x in
            ft.tree_util.tree_leaves((t, grads, second)) if np.asarray(x).dtype.kind in "fc"]


def _visible(before: list[np.ndarray], after: list[np.ndarray], dtype: np.dtype) -> bool:
    """Whether a derivative changed by more than 16 roundings of ``dtype``
    (relative to its largest entry): less is rounding, which a reordered but
    equivalent computation changes too, and no check can tell from it."""
    for b, a in zip(before, after):
        if a.shape != b.shape:
            return True
        if a.size and np.max(np.abs(a - b)) > 16 * np.finfo(dtype).eps * np.max(np.abs(b)):
            return True
    return False


def _checks(f, args, rtol: float | None = None) -> str:
    """``"pass"``, ``"fail"`` (an AssertionError: the check caught something)
    or ``"error: ..."`` (anything else)."""
    try:
        check_derivatives(f, args, order=2, rtol=rtol)
        return "pass"
    except AssertionError:
        return "fail"
    except Exception as err:  # a mutant that breaks a shape rule is caught too
        return f"error: {type(err).__name__}: {str(err).splitlines()[0][:120]}"


def run(names: list[str], n_cases: int, dtype: np.dtype, rtol: float | None = None) -> dict:
    rows: dict[str, Any] = {"false_alarms": [], "skipped": [], "mutants": {}}
    checked: list[str] = []
    for mutant in MUTANTS:
        rows["mutants"][mutant] = {"applicable": 0, "equivalent": [], "caught": 0,
                                   "caught_by_error": [], "missed": []}
    for name in names:
        points = []
        for f, args in cases(name, n_cases, dtype):
            try:
                reference = _derivatives(f, args)
            except Exception as err:  # e.g. the primitive refuses float32 operands
                rows["skipped"].append(f"{name}: {type(err).__name__}: {err}"[:200])
                continue
            outcome = _checks(f, args, rtol)
            if outcome != "pass":
                rows["false_alarms"].append(f"{name}: {outcome}")
                continue
            points.append((f, args, reference))
        if not points:
            continue
        checked.append(name)
        for mutant in MUTANTS:
            if not applies(name, mutant):
                continue
            row = rows["mutants"][mutant]
            with Installed(name, mutant):
                shown = []
                for f, args, reference in points:
                    try:
                        visible = _visible(reference, _derivatives(f, args), dtype)
                    except Exception:
                        visible = True  # it breaks the transforms: surely not equivalent
                    if visible:
                        shown.append((f, args))
                if not shown:
                    row["equivalent"].append(name)
                    continue
                row["applicable"] += 1
                outcomes = [_checks(f, args, rtol) for f, args in shown]
            if "fail" in outcomes:
                row["caught"] += 1
            elif any(o.startswith("error") for o in outcomes):
                row["caught"] += 1
                row["caught_by_error"].append(f"{name}: {outcomes[0]}")
            else:
                row["missed"].append(name)
    rows["checked"] = checked
    for row in rows["mutants"].values():
        row["fraction_caught"] = row["caught"] / row["applicable"] if row["applicable"] else None
    return rows


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dtype", choices=("float64", "float32"), default="float64")
    parser.add_argument("--cases", type=int, default=2, help="points per primitive")
    parser.add_argument("--only", help="comma-separated primitive names")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument("--rtol", type=float, help="check_derivatives' rtol (default: by dtype)")
    opts = parser.parse_args(argv)
    names = opts.only.split(",") if opts.only else list(DIFFERENTIABLE)
    dtype = np.dtype(opts.dtype)
    start = time.perf_counter()
    rows = run(names, opts.cases, dtype, opts.rtol)
    seconds = time.perf_counter() - start
    print(f"check_derivatives(order=2) against mutated rules, {dtype}, {len(names)} primitives, "
          f"{opts.cases} points each, {seconds:.0f} s")
    print(f"primitives with points: {len(rows['checked'])}; without: "
          f"{', '.join(n for n in names if n not in rows['checked']) or 'none'}")
    print(f"false alarms on the unmutated registry: {len(rows['false_alarms'])}")
    for line in rows["false_alarms"]:
        print(f"  {line}")
    print(f"{'mutant':<12} {'caught':>7} {'of':>4} {'fraction':>9} {'equivalent':>11}  missed")
    for mutant, row in rows["mutants"].items():
        fraction = "-" if row["fraction_caught"] is None else f"{row['fraction_caught']:.3f}"
        print(f"{mutant:<12} {row['caught']:>7} {row['applicable']:>4} {fraction:>9} "
              f"{len(row['equivalent']):>11}  {', '.join(row['missed'])}")
    results = {}
    if opts.out.exists():
        results = json.loads(opts.out.read_text())
    results[str(dtype)] = {"primitives": len(names), "points_each": opts.cases,
                           "seconds": round(seconds, 1), **rows}
    opts.out.parent.mkdir(parents=True, exist_ok=True)
    opts.out.write_text(json.dumps(results, indent=1) + "\n")


if __name__ == "__main__":
    main()
