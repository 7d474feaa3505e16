"""``check_derivatives``: every promise the transforms make for one function at
one point, checked against a high-accuracy finite-difference reference and
against each other.

The reference for a directional derivative is the complex step
(``Im f(x + i h v) / h``, exact to rounding) where ``f`` runs on complex
inputs and is real-analytic there (checked against Richardson along the first
random direction), and otherwise Richardson extrapolation of central
differences (three step sizes, sixth-order accurate), whose error it estimates
from the difference of its last two levels.  Inputs are raised to float64
(complex128) for the reference where ``f`` accepts that, so float32 and
float16 derivatives are measured against a float64 reference.

Each comparison allows ``rtol`` (by dtype: ``RTOL``) of the largest magnitude
in the compared leaf, plus ten times the reference's error estimate (for two
transforms compared with each other, that of the reference at their level:
near zero, what finite differences of values of that size can resolve); the
report of a failure names the check, the argument or output (pytree path), the
worst entry, both values and that tolerance.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import numpy as np

import functrans.numpy as fnp
from functrans import api
from functrans.dtypes import float0, is_inexact
from functrans.jit import jit
from functrans.testing._arguments import (
    function_name,
    leaf_paths,
    numeric,
    random_like,
    refuse_bad_modes,
    refuse_nothing_to_check,
)
from functrans.tree_util import keystr, tree_flatten, tree_flatten_with_path, tree_unflatten

#: Relative tolerance of a derivative, by the lowest precision among the
#: inputs and outputs: float64 derivatives are computed to about 1e-14 even
#: through ill-conditioned rules, so 1e-8 leaves that margin and still catches
#: a rule off by a relative 1e-6; float32 and float16 carry about 3 and 1
#: correct digits through a few rules.
RTOL = {np.dtype(np.float64): 1e-8, np.dtype(np.complex128): 1e-8,
        np.dtype(np.float32): 2e-3, np.dtype(np.complex64): 2e-3,
        np.dtype(np.float16): 5e-2}
#: Relative tolerance between two evaluations of the same values (``vmap``
#: against a loop, ``jit`` against eager): a few roundings apart at most.
SAME = {np.dtype(np.float64): 1e-12, np.dtype(np.complex128): 1e-12,
        np.dtype(np.float32): 1e-5, np.dtype(np.complex64): 1e-5,
        np.dtype(np.float16): 4e-3}
#: How many times the reference's own error estimate a comparison allows.
SAFETY = 10.0
#: How many roundings of the values (over the inputs' scale) a derivative may
#: be off by, wherever the derivative itself is small: the rounding that
#: cancellation leaves in a derivative that is exactly zero.
NOISE = 256.0
#: Richardson's first step, relative to the scale of the inputs: small enough
#: to stay clear of kinks a point is kept away from, large enough that
#: rounding (about eps / step) stays far below RTOL.
_STEP = 1e-3
_FORWARD_IMPOSSIBLE = "forward-mode differentiation"
RICHARDSON = "Richardson extrapolation of central differences"
COMPLEX_STEP = "complex step (agrees with Richardson extrapolation along a random direction)"


@dataclass(frozen=True)
class Checked:
    """What ``check_derivatives`` checked: the names of the checks that ran,
    the ones skipped with the reason, and the reference used."""

    checks: tuple[str, ...]
    skipped: tuple[tuple[str, str], ...]
    reference: str


@dataclass
class _Log:
    ran: list[str] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)
    reference: str = ""


class _Level:
    """The function checked at one derivative order: ``fn(*xs)`` of the float
    leaves ``xs``; ``label`` says what it is (``f``, ``x -> jvp(f, x, v)``)."""

    def __init__(self, fn: Callable, label: str, order: int):
        self.fn, self.label, self.order = fn, label, order
        #: How this level's reference is computed, chosen at its first direction.
        self.reference = ""
        #: The largest derivative seen along any direction, and the rounding
        #: expected in a derivative from the size of the values it is computed
        #: from (``NOISE`` roundings of its values over the inputs' scale).
        self.scale = self.noise = 0.0
        #: The reference's largest error estimate along any direction: two
        #: transforms that agree to within it agree as far as this checker
        #: can tell (a derivative that is zero, computed from terms that
        #: cancel, is rounding this small).
        self.resolution = 0.0


def _leaves(tree) -> tuple[list[str], list[np.ndarray]]:
    paths, leaves, _ = tree_flatten_with_path(tree)
    return [f"out{keystr(p)}" for p in paths], [np.asarray(x) for x in leaves]


def _dtype(x) -> np.dtype:
    """The dtype of an array, a tracer or a Python number (without asking a
    tracer for its value)."""
    return np.dtype(x.dtype) if hasattr(x, "dtype") else np.asarray(x).dtype


def _inexact(x: np.ndarray) -> bool:
    return is_inexact(x.dtype)


def _scale(*arrays) -> float:
    return max([float(np.max(np.abs(numeric(a)))) for a in arrays if np.size(a)] + [0.0])


def _upcast(x: np.ndarray, complex_: bool = False) -> np.ndarray:
    return x.astype(np.complex128 if complex_ or x.dtype.kind == "c" else np.float64)


def _show(x) -> str:
    return np.array2string(np.asarray(x), precision=17 if np.ndim(x) == 0 else 8)


class _Checker:
    """One call of ``check_derivatives``: the point, the settings and the log."""

    def __init__(self, f, args, order, modes, jit_, vmap_, sparse, coordinates, directions,
                 reference, rtol, seed):
        self.name = function_name(f)
        paths, leaves = leaf_paths(args)
        _, treedef = tree_flatten(tuple(args))
        self.diff = [i for i, x in enumerate(leaves) if _inexact(x)]
        self.names = [paths[i] for i in self.diff]
        self.xs = [leaves[i] for i in self.diff]

        def fn(*xs):
            full = list(leaves)
            for i, x in zip(self.diff, xs):
                full[i] = x
            return f(*tree_unflatten(treedef, full))

        self.f = fn
        self.order, self.modes = order, modes
        self.jit, self.vmap, self.sparse = jit_, vmap_, sparse
        self.max_coordinates, self.n_directions = coordinates, directions
        self.method = reference
        self.rng = np.random.default_rng(seed)
        outs = _leaves(fn(*self.xs))[1]
        # Tolerances follow the least precise of the arguments and outputs.
        dtype = max([x.dtype for x in self.xs] + [o.dtype for o in outs if _inexact(o)],
                    key=lambda d: np.finfo(d).eps)
        self.dtype = dtype
        self.rtol = RTOL.get(dtype, 1e-8) if rtol is None else rtol
        self.same = SAME.get(dtype, 1e-12)
        self.eps = float(np.finfo(dtype).eps)
        # Magnitudes below the square root of the smallest normal number are
        # noise: differences of values there underflow.
        self.floor = float(np.sqrt(np.finfo(dtype).tiny))
        self.log = _Log()
        self.complex_out = any(o.dtype.kind == "c" for o in outs)
        self.scale_x = max(1.0, _scale(*self.xs))

    # ------------------------------------------------------------------ report

    def fail(self, level: _Level, check: str, where: str, got, want, bound, err=None,
             index=None, rtol=None, values=False) -> None:
        got, want = np.asarray(got), np.asarray(want)
        at = f", entry {index}" if index is not None and got.ndim else ""
        ref = "" if err is None else f" (its error estimate {float(err):.3g})"
        if values:
            allowed = f"rtol {rtol:g} of the largest magnitude for {self.dtype}"
        else:
            allowed = (f"rtol {self.rtol:g} of the largest derivative for {self.dtype}, plus "
                       f"{SAFETY:g}x the reference's error estimate and {NOISE:g} roundings of "
                       f"the values; reference: {level.reference or 'none'}")
        raise AssertionError(
            f"check_derivatives({self.name}): {check}\n"
            f"  order {level.order}, checking {level.label}\n"
            f"  at {where}{at}: the worst entry\n"
            f"  got:       {_show(got[index] if index is not None and got.ndim else got)}\n"
            f"  expected:  {_show(want[index] if index is not None and want.ndim else want)}"
            f"{ref}\n"
            f"  tolerance: {float(bound):.3g} ({allowed})"
        )

    def compare(self, level, check, where, got, want, rtol, err=None, scale=0.0,
                values=False) -> None:
        """Entrywise ``|got - want| <= rtol * scale + SAFETY * err``, the scale
        being the largest magnitude in either, in ``scale`` (that of the
        whole derivative where ``got`` is one part of it) or in the level's
        values over the inputs' scale (the size of rounding in a derivative
        that is exactly zero)."""
        got, want = numeric(got), numeric(want)
        # Compared as complex numbers, shown as real ones unless either is complex.
        shown = np.complex128 if np.iscomplexobj(got) or np.iscomplexobj(want) else np.float64
        got = np.asarray(got, dtype=np.complex128)
        want = np.asarray(want, dtype=np.complex128)
        if got.shape != want.shape:
            raise AssertionError(
                f"check_derivatives({self.name}): {check}\n  order {level.order}, checking "
                f"{level.label}\n  at {where}: shape {got.shape}, expected {want.shape}")
        err_arr = np.zeros(want.shape) if err is None else np.broadcast_to(err, want.shape)
        scale = max(_scale(got, want), scale, 0.0 if values else level.scale)
        bound = rtol * (scale + self.floor) + SAFETY * err_arr + (0.0 if values else level.noise)
        excess = np.abs(got - want) - bound
        if excess.size and not np.all(excess <= 0):  # NaN counts as a failure
            flat = np.where(np.isnan(excess), np.inf, excess)
            index = tuple(int(i) for i in np.unravel_index(int(np.argmax(flat)), excess.shape))
            if shown is np.float64:
                got, want = got.real, want.real
            self.fail(level, check, where, got, want, bound[index],
                      None if err is None else err_arr[index], index, rtol, values)

    # --------------------------------------------------------------- reference

    def _evaluate(self, level: _Level, xs) -> list[np.ndarray]:
        return _leaves(level.fn(*xs))[1]

    def reference(self, level: _Level, vs) -> tuple[list[np.ndarray], list[np.ndarray]]:
        """The derivative of ``level`` along ``vs``: per output leaf, the
        estimate and its error estimate."""
        if level.reference == COMPLEX_STEP:
            try:
                return self._complex_step(level, vs)
            except Exception:  # f refuses complex values here after all
                level.reference = RICHARDSON
        rich = self._richardson(level, vs)
        if not level.reference:
            level.reference = RICHARDSON
            if self.method == "auto" and self._real_analytic(level, vs, rich):
                level.reference = COMPLEX_STEP
            if level.order == 1:
                self.log.reference = level.reference
        return rich

    def _upcast_xs(self, complex_: bool = False):
        return [_upcast(x, complex_) for x in self.xs]

    def _richardson(self, level, vs):
        try:
            xs = self._upcast_xs()
            self._evaluate(level, xs)
        except Exception:  # f insists on its own dtypes: the reference uses them
            xs = self.xs
        vs = [np.asarray(v, dtype=x.dtype) for v, x in zip(vs, xs)]
        h0 = _STEP * self.scale_x / max(_scale(*vs), 1e-300)

        magnitude = [0.0] * len(self._evaluate(level, xs))

        def central(h):
            plus = self._evaluate(level, [x + h * v for x, v in zip(xs, vs)])
            minus = self._evaluate(level, [x - h * v for x, v in zip(xs, vs)])
            for i, (p, m) in enumerate(zip(plus, minus)):
                if _inexact(p):
                    magnitude[i] = max(magnitude[i], _scale(p, m))
            return [(p - m) / (2 * h) if _inexact(p) else np.zeros(p.shape)
                    for p, m in zip(plus, minus)]

        # Points that overflow give infinite differences, which no
        # comparison accepts: the warnings would only repeat that.
        with np.errstate(over="ignore", invalid="ignore"):
            c1, c2, c3 = central(h0), central(h0 / 2), central(h0 / 4)
            values = self._evaluate(level, xs)
            est, errs = [], []
            for a, b, c, value, size in zip(c1, c2, c3, values, magnitude):
                r1a, r1b = (4 * b - a) / 3, (4 * c - b) / 3
                r2 = (16 * r1b - r1a) / 15
                eps = np.finfo(value.dtype).eps if _inexact(value) else 0.0
                # Rounding in f's values, magnified by the differences and
                # the extrapolation's coefficients (about 4 / h in all).
                rounding = 4 * eps * size / (h0 / 4)
                est.append(r2)
                errs.append(np.abs(r2 - r1b) + rounding)
        return est, errs

    def _complex_step(self, level, vs):
        xs = self._upcast_xs(complex_=True)
        # Its error is about h**2 times f's third derivative: with h this
        # small, far below the smallest magnitude compared (``floor``).
        h = 1e-100 * self.scale_x
        outs = self._evaluate(level, [x + 1j * h * np.asarray(v, np.float64)
                                      for x, v in zip(xs, vs)])
        with np.errstate(over="ignore", invalid="ignore"):
            est = [np.imag(o) / h if _inexact(o) else np.zeros(o.shape) for o in outs]
        return est, [4 * np.finfo(np.float64).eps * np.abs(e) for e in est]

    def _real_analytic(self, level, vs, rich) -> bool:
        """Whether the complex step applies: real inputs and outputs, ``f``
        runs on complex inputs, and its answer agrees with Richardson's."""
        if any(x.dtype.kind == "c" for x in self.xs) or self.complex_out:
            return False
        try:
            est, _ = self._complex_step(level, vs)
        except Exception:  # f refuses complex inputs
            return False
        if not any(r.size for r in rich[0]):  # nothing to tell them apart
            return False
        for e, r, err in zip(est, rich[0], rich[1]):
            if e.shape != r.shape or not np.all(np.abs(e - r) <= SAFETY * err + 1e-9 * _scale(r)):
                return False
        return True

    # ------------------------------------------------------------------ checks

    def directions(self, coordinates: bool) -> list[tuple[str, list[np.ndarray], Any]]:
        """Random directions, then each coordinate when asked for and the
        inputs are small."""
        found: list[tuple[str, list[np.ndarray], Any]] = [
            ("a random direction", [random_like(self.rng, x) for x in self.xs], None)
            for _ in range(self.n_directions)]
        if coordinates and sum(x.size for x in self.xs) <= self.max_coordinates:
            for k, (name, x) in enumerate(zip(self.names, self.xs)):
                units = [1.0] + [1j] * (x.dtype.kind == "c")
                for flat in range(x.size):
                    for unit in units:
                        vs = [np.zeros(y.shape, y.dtype) for y in self.xs]
                        vs[k].reshape(-1)[flat] = unit
                        index = np.unravel_index(flat, x.shape) if x.ndim else ""
                        idx = "[" + ", ".join(map(str, index)) + "]" if x.ndim else ""
                        found.append((f"{name}{idx}" + (" (imaginary part)" if unit == 1j
                                                        else ""), vs, (k, flat, unit)))
        return found

    def tangents(self, level, vs) -> list[np.ndarray] | None:
        """``jvp`` of ``level`` along ``vs``, or None where forward mode does
        not exist (``custom_vjp``)."""
        try:
            return _leaves(api.jvp(level.fn, tuple(self.xs), tuple(vs))[1])[1]
        except TypeError as err:
            if _FORWARD_IMPOSSIBLE not in str(err):
                raise
            self.skip(f"order {level.order}: forward mode", str(err))
            return None

    def check_level(self, level: _Level) -> None:
        out_paths, outs = _leaves(level.fn(*self.xs))
        self.complex_out = any(o.dtype.kind == "c" for o in outs)
        # Coordinates at order 1 only: each costs six evaluations of the
        # level's function, a transformed one from order 2 on.
        directions = self.directions(coordinates=level.order == 1)
        forward = "fwd" in self.modes
        refs = []
        for _, vs, coordinate in directions:
            want, errs = self.reference(level, vs)
            refs.append((coordinate, vs, want, errs))
        # The derivative's size over every direction: rounding in a part of
        # it that is exactly zero is measured against that, not against zero.
        level.scale = max([_scale(*want) for _, _, want, _ in refs] + [0.0])
        level.noise = NOISE * self.eps * _scale(*[o for o in outs if _inexact(o)]) / self.scale_x
        level.resolution = max([_scale(*errs) for _, _, _, errs in refs] + [0.0])
        for (label, vs, _), (_, _, want, errs) in zip(directions, refs):
            if not forward:
                continue
            got = self.tangents(level, vs)
            if got is None:
                forward = False
                continue
            whole = _scale(*[numeric(g) for g in got], *want)
            for path, o, g, w, e in zip(out_paths, outs, got, want, errs):
                if _inexact(o):
                    self.compare(level, "forward mode (jvp) disagrees with the reference "
                                 f"along {label}", path, g, w, self.rtol, e, whole)
            self.ran(level, "forward mode (jvp) against the reference")
        if "rev" in self.modes:
            self.check_reverse(level, out_paths, outs, refs, forward)
        if forward and "rev" in self.modes:
            self.check_jacobians(level, out_paths, outs)
        if self.vmap:
            self.check_vmap(level, out_paths, outs)
        if self.jit:
            self.check_jit(level, out_paths, outs)
        if level.order == 1 and self.order >= 2:
            self.check_hessian(level, outs, forward)

    def skip(self, check: str, reason: str) -> None:
        if (check, reason) not in self.log.skipped:
            self.log.skipped.append((check, reason))

    def ran(self, level: _Level, check: str) -> None:
        name = f"order {level.order}: {check}"
        if name not in self.log.ran:
            self.log.ran.append(name)

    def cotangents(self, outs):
        return [random_like(self.rng, o) for o in outs]

    def check_reverse(self, level, out_paths, outs, refs, forward) -> None:
        cts = self.cotangents(outs)
        out, vjp_fn = api.vjp(level.fn, *self.xs)
        _, treedef = tree_flatten(out)
        cts_tree = tree_unflatten(treedef, cts)
        grads = [numeric(g) for g in vjp_fn(cts_tree)]
        coords = [ref for ref in refs if ref[0] is not None]
        if coords:
            # <ct, J e_k> from the reference, entry by entry, against vjp(ct).
            want = [np.zeros(x.shape, np.complex128) for x in self.xs]
            err = [np.zeros(x.shape) for x in self.xs]
            for (k, flat, unit), _, d, e in coords:
                pair = sum(np.sum(np.real(numeric(c) * dd)) for c, dd in zip(cts, d))
                pair_err = sum(np.sum(np.abs(numeric(c)) * ee) for c, ee in zip(cts, e))
                part = want[k].reshape(-1)
                part[flat] += pair if unit == 1 else 1j * pair
                err[k].reshape(-1)[flat] += pair_err
            whole = _scale(*grads, *want)
            for name, g, w, e, x in zip(self.names, grads, want, err, self.xs):
                w = w if x.dtype.kind == "c" else w.real
                # vjp of a complex input pairs as Re(sum(ct * J v)): its
                # imaginary coordinate reads -Im(grad) (no conjugation).
                g = g.real - 1j * g.imag if x.dtype.kind == "c" else g
                self.compare(level, "reverse mode (vjp) disagrees with the reference", name,
                             g, w, self.rtol, e, whole)
            self.ran(level, "reverse mode (vjp) against the reference")
        for coordinate, vs, d, e in refs:
            if coordinate is not None:
                continue
            rhs = sum(np.sum(np.real(g * v)) for g, v in zip(grads, vs))
            terms = sum(np.sum(np.abs(g * v)) for g, v in zip(grads, vs))
            # The reference's error in <ct, J v>: what this checker can tell
            # from zero, and from the rounding of a derivative that is zero
            # but computed from terms that cancel.
            err_sum = sum(np.sum(np.abs(numeric(c)) * ee) for c, ee in zip(cts, e))
            if forward:
                t = _leaves(api.jvp(level.fn, tuple(self.xs), tuple(vs))[1])[1]
                lhs = sum(np.sum(np.real(numeric(c) * numeric(tt))) for c, tt in zip(cts, t))
                terms = max(terms, sum(np.sum(np.abs(numeric(c) * numeric(tt)))
                                       for c, tt in zip(cts, t)))
                self.compare_scalar(level, "reverse mode (vjp) and forward mode (jvp) break "
                                    "<ct, J v> == <J^T ct, v>", rhs, lhs, terms, err_sum)
                self.ran(level, "reverse mode against forward mode (dot product)")
            elif not coords:
                lhs = sum(np.sum(np.real(numeric(c) * dd)) for c, dd in zip(cts, d))
                self.compare_scalar(level, "reverse mode (vjp) disagrees with the reference "
                                    "along a random direction", rhs, lhs, terms, err_sum)
                self.ran(level, "reverse mode (vjp) against the reference")

    def compare_scalar(self, level, check, got, want, terms, err=0.0) -> None:
        bound = self.rtol * (max(terms, abs(want), abs(got), level.scale) + self.floor) + \
            SAFETY * err + level.noise
        if not abs(got - want) <= bound:
            self.fail(level, check, "<ct, J v> over every argument and output", got, want,
                      bound, err or None)

    def check_jacobians(self, level, out_paths, outs) -> None:
        n = sum(x.size for x in self.xs)
        m = sum(o.size for o in outs)
        if self.complex_out or any(x.dtype.kind == "c" for x in self.xs):
            self.skip(f"order {level.order}: jacfwd == jacrev",
                      "complex arguments or outputs (not holomorphic in general)")
            return
        if n * m > 4096:
            self.skip(f"order {level.order}: jacfwd == jacrev",
                      f"the Jacobian has {n * m} entries")
            return
        argnums = tuple(range(len(self.xs)))
        fwd = api.jacfwd(level.fn, argnums=argnums)(*self.xs)
        rev = api.jacrev(level.fn, argnums=argnums)(*self.xs)
        f_leaves = tree_flatten(fwd)[0]
        r_leaves = tree_flatten(rev)[0]
        pairs = [(o, x) for o in out_paths for x in self.names]
        whole = _scale(*[numeric(a) for a in f_leaves])
        for (o, x), a, b in zip(pairs, f_leaves, r_leaves):
            self.compare(level, "jacfwd and jacrev disagree", f"d {o} / d {x}", b, a,
                         self.rtol, level.resolution, scale=whole)
        self.ran(level, "jacfwd == jacrev")

    def batch(self) -> list[list[np.ndarray]]:
        """Three points near ``xs`` (a relative 1e-3 apart)."""
        return [[(x + 1e-3 * k * self.scale_x * random_like(self.rng, x)).astype(x.dtype)
                 for x in self.xs] for k in range(3)]

    def check_vmap(self, level, out_paths, outs) -> None:
        members = self.batch()
        stacked = [np.stack(column) for column in zip(*members)]
        got = _leaves(api.vmap(level.fn)(*stacked))[1]
        loop = [_leaves(level.fn(*m))[1] for m in members]
        whole = _scale(*got, *[x for row in loop for x in row])
        for i, path in enumerate(out_paths):
            want = np.stack([row[i] for row in loop])
            self.compare(level, "vmap disagrees with a Python loop over the batch",
                         f"{path} (batched)", got[i], want, self.same, scale=whole, values=True)
        self.ran(level, "vmap against a loop")

    def check_jit(self, level, out_paths, outs) -> None:
        got = _leaves(jit(level.fn)(*self.xs))[1]
        whole = _scale(*got, *outs)
        for path, g, o in zip(out_paths, got, outs):
            self.compare(level, "jit disagrees with eager evaluation", path, g, o, self.same,
                         scale=whole, values=True)
        self.ran(level, "jit against eager")

    # ----------------------------------------------------------- second order

    def scalarized(self, outs):
        """``s(z) = <ct, f(x(z))>`` of one flat real vector ``z``, and ``z``."""
        cts = self.cotangents(outs)
        shapes = [x.shape for x in self.xs]
        dtypes = [x.dtype for x in self.xs]
        sizes = [x.size for x in self.xs]
        z = np.concatenate([x.reshape(-1) for x in self.xs]).astype(
            max(dtypes, key=lambda d: d.itemsize))
        f = self.f

        def s(z):
            xs, start = [], 0
            for shape, size, dtype in zip(shapes, sizes, dtypes):
                xs.append(fnp.reshape(z[start:start + size], shape).astype(dtype))
                start += size
            total = 0.0
            for c, o in zip(cts, tree_flatten(f(*xs))[0]):
                if is_inexact(_dtype(o)):
                    total = total + fnp.sum(o * c)
            return total

        return s, z

    def check_hessian(self, level, outs, forward) -> None:
        check = "order 2: Hessian"
        if self.complex_out or any(x.dtype.kind == "c" for x in self.xs):
            self.skip(check, "complex arguments or outputs")
            return
        n = sum(x.size for x in self.xs)
        if n > 64:
            self.skip(check, f"{n} inputs (more than 64)")
            return
        s, z = self.scalarized(outs)
        hess_level = _Level(s, "s(z) = <ct, f(x(z))>, z the arguments raveled", 2)
        # Rounding in the values and the gradient, and the error a finite
        # difference of the gradient would carry (Richardson's rounding term
        # at its smallest step): two Hessians computed from terms that cancel
        # to zero may differ by that much, which no reference could resolve.
        grad_scale = _scale(api.grad(s)(z))
        hess_level.noise = NOISE * self.eps * max(_scale(s(z)) / self.scale_x,
                                                  grad_scale) / self.scale_x
        resolution = 4 * self.eps * grad_scale / (_STEP * self.scale_x / 4)
        rr = np.asarray(api.jacrev(api.jacrev(s))(z))
        self.compare(hess_level, "reverse-over-reverse Hessian is not symmetric",
                     "d2 s / dz dz", rr, rr.T, self.rtol)
        self.ran(hess_level, "Hessian symmetry")
        if forward:
            fr = np.asarray(api.hessian(s)(z))
            self.compare(hess_level, "forward-over-reverse (hessian) and reverse-over-reverse "
                         "Hessians disagree", "d2 s / dz dz", fr, rr, self.rtol, resolution)
            self.ran(hess_level, "forward-over-reverse == reverse-over-reverse")
        if self.sparse:
            import functrans.sparse as fsp  # noqa: PLC0415  (needs SciPy)

            got = fsp.hessian(s)(z).toarray()
            self.compare(hess_level, "the sparse Hessian disagrees with the dense one",
                         "d2 s / dz dz", got, rr, self.rtol)
            self.ran(hess_level, "sparse Hessian against dense")

    def check_sparse_jacobian(self, level) -> None:
        import functrans.sparse as fsp  # noqa: PLC0415  (needs SciPy)

        if len(self.xs) != 1 or self.xs[0].dtype.kind == "c":
            self.skip("order 1: sparse Jacobian", "needs one real array argument")
            return
        x = self.xs[0]
        out = level.fn(x)
        if len(tree_flatten(out)[0]) != 1:
            self.skip("order 1: sparse Jacobian", "needs one array output")
            return
        got = fsp.jacobian(level.fn)(x).toarray()
        want = np.asarray(api.jacrev(level.fn)(x)).reshape(got.shape)
        self.compare(level, "the sparse Jacobian disagrees with the dense one (jacrev)",
                     "d out / d args[0]", got, want, self.rtol)
        self.ran(level, "sparse Jacobian against dense")

    # ---------------------------------------------------------------- orders

    def run(self) -> Checked:
        first = _Level(self.f, "f", 1)
        self.check_level(first)
        if self.sparse:
            self.check_sparse_jacobian(first)
        self.deeper(first)
        if not self.log.ran:
            raise ValueError(
                f"check_derivatives({self.name}): every check was skipped, so nothing was "
                "checked: " + "; ".join(f"{c}: {why}" for c, why in self.log.skipped))
        return Checked(tuple(self.log.ran), tuple(self.log.skipped), self.log.reference)

    def deeper(self, level: _Level) -> None:
        """The derivative functions of ``level`` (``jvp`` and ``vjp`` along
        fixed random directions), checked one order up, and theirs up to
        ``order``."""
        if level.order >= self.order:
            return
        outs = _leaves(level.fn(*self.xs))[1]
        below = level.fn
        if "fwd" in self.modes and self.tangents(level, [np.zeros_like(x) for x in self.xs]):
            vs = [random_like(self.rng, x) for x in self.xs]

            def jvp_of(*xs):
                tangents = api.jvp(below, xs, tuple(v.astype(x.dtype) for v, x in zip(vs, xs)))[1]
                # Only the float outputs' tangents: those of integer outputs
                # are float0 constants, with no derivative to check.
                return [t for t in tree_flatten(tangents)[0] if _dtype(t) != float0]

            up = _Level(jvp_of, f"x -> jvp({level.label}, x, v)", level.order + 1)
            self.check_level(up)
            self.deeper(up)
        if "rev" in self.modes:
            out = level.fn(*self.xs)
            _, treedef = tree_flatten(out)
            cts = self.cotangents(outs)

            def vjp_of(*xs):
                value, vjp_fn = api.vjp(below, *xs)
                like = tree_flatten(value)[0]
                return vjp_fn(tree_unflatten(treedef, [
                    c.astype(_dtype(o)) for c, o in zip(cts, like)]))

            up = _Level(vjp_of, f"x -> vjp({level.label}, x)(ct)", level.order + 1)
            try:
                self.check_level(up)
                self.deeper(up)
            except TypeError as err:
                if _FORWARD_IMPOSSIBLE not in str(err):
                    raise
                self.skip(f"order {level.order + 1}: reverse mode", str(err))


def check_derivatives(
    f: Callable,
    args: Sequence[Any],
    order: int = 2,
    *,
    modes: Sequence[str] = ("fwd", "rev"),
    jit: bool = True,
    vmap: bool = True,
    sparse: bool = False,
    coordinates: int = 16,
    directions: int = 2,
    reference: str = "auto",
    rtol: float | None = None,
    seed: int = 0,
) -> Checked:
    """Check everything the transforms promise for ``f`` at ``args``, up to
    ``order``; raise AssertionError naming the check, the argument or output,
    the worst entry, both values and the tolerance.

    * forward mode (``jvp``) against a finite-difference reference (complex
      step or Richardson extrapolation: ``Checked.reference`` says which)
      along ``directions`` random directions, and along every coordinate when
      the float arguments hold at most ``coordinates`` numbers;
    * reverse mode (``vjp``) against the reference entry by entry (small
      inputs) and against forward mode by ``<ct, J v> == <J^T ct, v>``; only
      against the reference where forward mode does not exist (``custom_vjp``);
    * ``jacfwd == jacrev``, ``vmap(f)`` against a loop, ``jit(f)`` against
      eager ``f``;
    * from order 2: each check again on ``x -> jvp(f, x, v)`` and
      ``x -> vjp(f, x)(ct)``; the Hessian of ``<ct, f>`` symmetric, and
      forward-over-reverse equal to reverse-over-reverse; with ``sparse``, the
      sparse Jacobian and Hessian against the dense ones.

    Integer and bool arguments are held fixed.  A call that would check
    nothing (``order < 1``, no mode, no float or complex argument, every
    check skipped) raises ValueError.  Returns what was checked.

    >>> import numpy as np
    >>> from functrans.testing import check_derivatives
    >>> checked = check_derivatives(lambda x: np.sin(x) * x, (np.array([0.5, 1.5]),))
    >>> checked.reference
    'complex step (agrees with Richardson extrapolation along a random direction)'
    """
    modes = refuse_bad_modes("check_derivatives", f, modes)
    refuse_nothing_to_check("check_derivatives", f, args, order)
    if reference not in ("auto", "richardson"):
        raise ValueError(f"check_derivatives({function_name(f)}): reference must be 'auto' "
                         f"or 'richardson', got {reference!r}")
    checker = _Checker(f, tuple(args), order, modes, jit, vmap, sparse, coordinates,
                       directions, reference, rtol, seed)
    return checker.run()
