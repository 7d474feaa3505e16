"""The constraints ``minimize`` takes, read into one form: ``cl <= c(x) <=
cu`` with ``c`` the concatenation of every nonlinear constraint function's
raveled output (one traced program, differentiated by functrans) followed by
the rows ``A x`` of the linear ones (a constant matrix, never traced).

Accepted, as in SciPy: a dict ``{"type": "eq" | "ineq", "fun": c, "args":
(...)}`` (``"eq"``: ``c(x) = 0``; ``"ineq"``: ``c(x) >= 0``; a ``"jac"``
entry is not used, functrans differentiates ``c`` itself), any object with
``fun``, ``lb`` and ``ub`` (``scipy.optimize.NonlinearConstraint``), any
object with ``A``, ``lb`` and ``ub`` (``LinearConstraint``), or a list of
them.  SciPy is never imported: the objects are read by their attributes.
A nonlinear object's ``jac`` and ``hess`` are not used either; its
``keep_feasible`` is not honoured (the interior point keeps the bounds on
``x`` strictly feasible, not nonlinear rows), which a warning says.
"""

from __future__ import annotations

import warnings
from typing import Any, Callable, NamedTuple

import numpy as np

from functrans import core
from functrans.optimize._problem import Problem


class Piece(NamedTuple):
    """One constraint as given: its kind (``"eq"``, ``"ineq"``, ``"nonlinear"``
    or ``"linear"``), its rows ``start:stop`` of ``c``, and the shape of its
    output (to hand its multipliers back in that shape)."""

    kind: str
    start: int
    stop: int
    shape: tuple


class Constraints:
    """``cl <= c(x) <= cu`` over the flat ``x`` of ``problem``.

    ``funs``/``fun_args``: the nonlinear constraint functions (called on
    ``x`` shaped like ``x0``) and their ``args``; ``n_nonlinear``: how many
    rows they give; ``A``: the linear rows (a dense or ``scipy.sparse``
    ``(m_linear, n)`` matrix, or None); ``pieces``: where each constraint's
    rows are, in the order given."""

    def __init__(self, problem: Problem, constraints: Any):
        self.label = problem.label
        items = _as_list(constraints)
        self.funs: list[Callable] = []
        self.fun_args: list[tuple] = []
        self.pieces: list[Piece] = []
        lows, highs, linear_rows, linear_lo, linear_hi, linear_pieces = [], [], [], [], [], []
        x0 = problem.unravel(problem.x0.copy())
        n = problem.x0.size
        start = 0
        for i, item in enumerate(items):
            where = f"constraints[{i}]" if len(items) > 1 else "constraints"
            kind, fun, args, lb, ub, A = self._read(where, item)
            if kind == "linear":
                a = A if hasattr(A, "tocsr") else np.atleast_2d(np.asarray(A, dtype=np.float64))
                if a.ndim != 2 or a.shape[1] != n:
                    raise ValueError(
                        f"{self.label}: {where} is a linear constraint whose matrix A has shape "
                        f"{a.shape}; it needs {n} columns, one per element of the flattened x0"
                    )
                m = a.shape[0]
                linear_rows.append(a)
                linear_lo.append(_side(self.label, where, "lb", lb, m))
                linear_hi.append(_side(self.label, where, "ub", ub, m))
                linear_pieces.append((kind, m))
                continue
            try:
                with np.errstate(all="ignore"):  # a NaN at x0 is reported once, by the solve
                    out = np.asarray(fun(x0, *args), dtype=np.float64)
            except Exception as e:  # name the constraint that failed at x0
                raise type(e)(f"{e}\n{self.label}: while evaluating {where} "
                              f"({core.fun_name(fun)}) at x0") from None
            m = out.size
            if m == 0:
                raise ValueError(f"{self.label}: {where} ({core.fun_name(fun)}) returned no "
                                 "values at x0; a constraint must return at least one number")
            self.funs.append(fun)
            self.fun_args.append(args)
            self.pieces.append(Piece(kind, start, start + m, out.shape))
            if kind == "eq":
                lows.append(np.zeros(m))
                highs.append(np.zeros(m))
            elif kind == "ineq":
                lows.append(np.zeros(m))
                highs.append(np.full(m, np.inf))
            else:
                lows.append(_side(self.label, where, "lb", lb, m))
                highs.append(_side(self.label, where, "ub", ub, m))
            start += m
        self.n_nonlinear = start
        for kind, m in linear_pieces:
            self.pieces.append(Piece(kind, start, start + m, (m,)))
            start += m
        self.A: Any = None
        if linear_rows:
            if any(hasattr(a, "tocsr") for a in linear_rows):
                import scipy.sparse as sp

                self.A = sp.csr_array(sp.vstack([sp.csr_array(a) for a in linear_rows]))
            else:
                self.A = np.concatenate(linear_rows)
        self.cl = np.concatenate(lows + linear_lo) if start else np.zeros(0)
        self.cu = np.concatenate(highs + linear_hi) if start else np.zeros(0)
        self.m = start
        bad = np.flatnonzero(np.isnan(self.cl) | np.isnan(self.cu) | (self.cl > self.cu)
                             | (self.cl == np.inf) | (self.cu == -np.inf))
        if bad.size:
            i = int(bad[0])
            raise ValueError(
                f"{self.label}: the constraint bounds of row {i} ({self._row_name(i)}) are "
                f"lb={self.cl[i]}, ub={self.cu[i]}; each needs lb <= ub, neither NaN, lb below "
                "inf and ub above -inf"
            )

    def _row_name(self, i: int) -> str:
        for j, piece in enumerate(self.pieces):
            if piece.start <= i < piece.stop:
                return f"constraint {j}, row {i - piece.start}"
        return "?"

    def _read(self, where: str, item: Any):
        label = self.label
        if isinstance(item, dict):
            unknown = sorted(set(item) - {"type", "fun", "jac", "args"})
            if unknown:
                raise ValueError(f"{label}: {where} has unknown keys {unknown}; a constraint "
                                 "dict has 'type', 'fun' and optionally 'args' (and 'jac')")
            kind = item.get("type")
            if kind not in ("eq", "ineq"):
                raise ValueError(f"{label}: {where}['type'] is {kind!r}; use 'eq' (c(x) = 0) "
                                 "or 'ineq' (c(x) >= 0)")
            fun = item.get("fun")
            if not callable(fun):
                raise TypeError(f"{label}: {where}['fun'] must be a function of x, got "
                                f"{type(fun).__name__}")
            args = item.get("args", ())
            return kind, fun, args if isinstance(args, tuple) else (args,), None, None, None
        if all(hasattr(item, a) for a in ("A", "lb", "ub")):
            return "linear", None, (), item.lb, item.ub, item.A
        if all(hasattr(item, a) for a in ("fun", "lb", "ub")):
            if not callable(item.fun):
                raise TypeError(f"{label}: {where}.fun must be a function of x, got "
                                f"{type(item.fun).__name__}")
            if np.any(getattr(item, "keep_feasible", False)):
                warnings.warn(
                    f"{label}: {where} has keep_feasible=True, which is not honoured: the "
                    "interior point keeps the bounds on x feasible, but its iterates may "
                    "violate nonlinear constraints on the way; where fun is undefined outside "
                    "the feasible set, pass that part as bounds on x instead",
                    UserWarning, stacklevel=5)
            return "nonlinear", item.fun, (), item.lb, item.ub, None
        raise TypeError(
            f"{label}: {where} is a {type(item).__name__}; a constraint is a dict "
            "{'type': 'eq' or 'ineq', 'fun': c, 'args': (...)}, or an object with fun, lb and "
            "ub (scipy.optimize.NonlinearConstraint) or with A, lb and ub (LinearConstraint)"
        )

    def flat_function(self, problem: Problem) -> tuple[Callable, tuple, Any]:
        """``(c, dynamic, static_key)``: ``c(v, *dynamic)`` the nonlinear rows
        on the flat vector, with the array arguments of every constraint's
        ``args`` traced (``Problem._split_args``)."""
        dynamic, rebuild, static_key = Problem._split_args(tuple(self.fun_args))
        funs, unravel = tuple(self.funs), problem.unravel

        def c(v, *dyn):
            x = unravel(v)
            outs = [np.reshape(fun(x, *args), (-1,)) for fun, args in zip(funs, rebuild(dyn))]
            return outs[0] if len(outs) == 1 else np.concatenate(outs)

        c.__name__ = "constraints"
        return c, dynamic, static_key

    def split(self, v: np.ndarray) -> list[np.ndarray]:
        """Per-row values (multipliers) back per constraint, each shaped like
        its output."""
        return [v[p.start:p.stop].reshape(p.shape) for p in self.pieces]


def _as_list(constraints: Any) -> list:
    if constraints is None:
        return []
    if isinstance(constraints, dict) or hasattr(constraints, "lb"):
        return [constraints]
    return list(constraints)


def _side(label: str, where: str, name: str, value: Any, m: int) -> np.ndarray:
    try:
        return np.broadcast_to(np.asarray(value, dtype=np.float64), (m,)).copy()
    except (TypeError, ValueError):
        raise ValueError(
            f"{label}: {where}.{name} must be a number or an array of {m} numbers (one per "
            f"row of the constraint), got {np.shape(value)}"
        ) from None
