"""A strong-Wolfe line search: Moré and Thuente's algorithm (the MINPACK-2
``dcsrch``/``dcstep`` pair that SciPy's BFGS, Newton-CG and L-BFGS-B use),
written as one loop over trial steps.

``evaluate(t)`` gives ``(f, slope, payload)`` at step ``t`` along the search
direction; the search returns the step, its payload and a status:

* ``"wolfe"``: both strong-Wolfe conditions hold (or, where the decrease
  asked for is below f's rounding error, the approximate Wolfe conditions of
  Hager and Zhang, SIAM J. Optim. 16 (2005) 170-192);
* ``"decrease"``: the search could not meet the curvature condition (rounding,
  the interval collapsed, out of evaluations) but the step gives sufficient
  decrease, which is enough to make progress;
* ``"failed"``: no step with sufficient decrease was found;
* ``"nonfinite"``: trial points gave NaN or inf and backtracking from them
  found no acceptable finite point;
* ``"unbounded"``: the objective reached ``-inf``.

NaN or inf at a trial step means the step went somewhere the objective is
undefined: the rest of the search halves the step back towards the best
point so far (Armijo backtracking, up to ``BACKTRACKS`` times), never past
the bad step again.

Reference: J. J. Moré and D. J. Thuente, "Line search algorithms with
guaranteed sufficient decrease", ACM TOMS 20 (1994) 286-307.
"""

from __future__ import annotations

import math
from typing import Any, Callable, NamedTuple

#: Relative size of rounding error assumed in computed values of f.
F_NOISE = 1e3 * 2.0**-52
#: Halvings after a non-finite trial before giving up (a factor of 1e-9).
BACKTRACKS = 30


class LineSearch(NamedTuple):
    step: float
    payload: Any  # what ``evaluate`` returned at ``step`` (None when it failed)
    status: str
    evaluations: int


def _cubic_ratio(s1, f1, d1, s2, f2, d2):
    """``(r, gamma)``: the minimiser of the cubic through ``(s1, f1, d1)`` and
    ``(s2, f2, d2)`` is ``s1 + r * (s2 - s1)``; ``gamma`` is 0 when the cubic
    has no turning point (the square root was clamped)."""
    theta = 3.0 * (f1 - f2) / (s2 - s1) + d1 + d2
    s = max(abs(theta), abs(d1), abs(d2))
    gamma = s * math.sqrt(max(0.0, (theta / s) ** 2 - (d1 / s) * (d2 / s)))
    if s2 < s1:
        gamma = -gamma
    p = (gamma - d1) + theta
    q = ((gamma - d1) + gamma) + d2
    return p / q, gamma


def _trial_step(stx, fx, dx, sty, fy, dy, stp, fp, dp, brackt, stpmin, stpmax):
    """MINPACK's ``dcstep``: the next trial step and whether a minimiser is now
    bracketed, from the best step ``stx``, the other end ``sty`` and the
    current step ``stp`` (values and derivatives at each)."""
    opposite = (dp > 0 > dx) or (dp < 0 < dx)
    if fp > fx:
        # Higher value: the minimiser is bracketed.  Take the cubic step, or
        # halfway to the quadratic one if the cubic step is farther from stx.
        r, _ = _cubic_ratio(stx, fx, dx, stp, fp, dp)
        stpc = stx + r * (stp - stx)
        stpq = stx + (dx / ((fx - fp) / (stp - stx) + dx)) / 2.0 * (stp - stx)
        stpf = stpc if abs(stpc - stx) <= abs(stpq - stx) else stpc + (stpq - stpc) / 2.0
        return stpf, True
    if opposite:
        # Lower value, derivatives of opposite sign: bracketed.  Take the cubic
        # or the secant step, whichever is farther from stp.
        r, _ = _cubic_ratio(stp, fp, dp, stx, fx, dx)
        stpc = stp + r * (stx - stp)
        stpq = stp + (dp / (dp - dx)) * (stx - stp)
        return (stpc if abs(stpc - stp) > abs(stpq - stp) else stpq), True
    if abs(dp) < abs(dx):
        # Lower value, same-sign derivative decreasing in magnitude: the cubic
        # step only if the cubic tends to infinity in the step's direction.
        r, gamma = _cubic_ratio(stp, fp, dp, stx, fx, dx)
        if r < 0 and gamma != 0:
            stpc = stp + r * (stx - stp)
        else:
            stpc = stpmax if stp > stx else stpmin
        stpq = stp + (dp / (dp - dx)) * (stx - stp)
        if brackt:
            stpf = stpc if abs(stpc - stp) < abs(stpq - stp) else stpq
            bound = stp + 0.66 * (sty - stp)
            return (min(bound, stpf) if stp > stx else max(bound, stpf)), brackt
        stpf = stpc if abs(stpc - stp) > abs(stpq - stp) else stpq
        return min(max(stpf, stpmin), stpmax), brackt
    # Lower value, derivative not decreasing in magnitude: cubic towards sty
    # when bracketed, else the far bound.
    if brackt:
        r, _ = _cubic_ratio(stp, fp, dp, sty, fy, dy)
        return stp + r * (sty - stp), brackt
    return (stpmax if stp > stx else stpmin), brackt


def strong_wolfe(
    evaluate: Callable[[float], tuple[float, float, Any]],
    f0: float,
    g0: float,
    step: float,
    *,
    c1: float = 1e-4,
    c2: float = 0.9,
    xtol: float = 1e-14,
    step_min: float = 0.0,
    step_max: float = 1e100,
    maxiter: int = 100,
) -> LineSearch:
    """A step ``t`` with ``f(t) <= f0 + c1 t g0`` and ``|f'(t)| <= c2 |g0|``,
    starting from the trial ``step``; ``g0 = f'(0)`` must be negative."""
    if not g0 < 0:
        return LineSearch(0.0, None, "failed", 0)
    step = min(max(step, step_min), step_max)
    gtest = c1 * g0
    noise = F_NOISE * abs(f0)
    brackt, stage1 = False, True
    stx, fx, gx, px = 0.0, f0, g0, None  # best step so far (px: its payload)
    sty, fy, gy = 0.0, f0, g0  # other end of the interval
    width = step_max - step_min
    width1 = 2.0 * width
    stmin, stmax = 0.0, step + 4.0 * step
    for k in range(1, maxiter + 1):
        f, g, p = evaluate(step)
        if f == -math.inf:
            return LineSearch(step, None, "unbounded", k)
        if not (math.isfinite(f) and math.isfinite(g)):
            return _backtrack(evaluate, f0, gtest, stx, fx, px, step, k)
        ftest = f0 + step * gtest
        if f <= ftest and abs(g) <= -c2 * g0:
            return LineSearch(step, p, "wolfe", k)
        if -step * g0 <= noise and f <= f0 + noise and abs(g) <= -c2 * g0:
            # The decrease asked for is below f's rounding error, so the test
            # on f cannot decide: Hager and Zhang's approximate Wolfe
            # conditions trust the slope instead.
            return LineSearch(step, p, "wolfe", k)
        if stage1 and f <= ftest and g >= 0:
            stage1 = False
        stuck = brackt and (step <= stmin or step >= stmax or stmax - stmin <= xtol * stmax)
        at_max = step == step_max and f <= ftest and g <= gtest
        at_min = step == step_min and (f > ftest or g >= gtest)
        if stuck or at_max or at_min or k == maxiter:
            return _best(step, f, ftest, p, stx, fx, px, f0, k)

        # Until a step with sufficient decrease and nonnegative slope appears
        # (stage 1), steer by psi(t) = f(t) - f0 - c1 t g0 instead of f.
        shift = gtest if stage1 and fx >= f > ftest else 0.0
        new_step, brackt = _trial_step(
            stx, fx - stx * shift, gx - shift, sty, fy - sty * shift, gy - shift,
            step, f - step * shift, g - shift, brackt, stmin, stmax,
        )
        # The ends move as dcstep moves them (judged on psi in stage 1).
        gm, gxm = g - shift, gx - shift
        if f - step * shift > fx - stx * shift:
            sty, fy, gy = step, f, g
        else:
            if (gm > 0 > gxm) or (gm < 0 < gxm):
                sty, fy, gy = stx, fx, gx
            stx, fx, gx, px = step, f, g, p

        if brackt:
            if abs(sty - stx) >= 0.66 * width1:  # too slow a shrink: bisect
                new_step = stx + 0.5 * (sty - stx)
            width1, width = width, abs(sty - stx)
            stmin, stmax = min(stx, sty), max(stx, sty)
        else:
            stmin = new_step + 1.1 * (new_step - stx)
            stmax = new_step + 4.0 * (new_step - stx)
        new_step = min(max(new_step, step_min), step_max)
        if brackt and (new_step <= stmin or new_step >= stmax
                       or stmax - stmin <= xtol * stmax):
            # No room left between the ends: settle for the best step.
            return _best(step, math.inf, ftest, None, stx, fx, px, f0, k)
        step = new_step
    raise AssertionError("unreachable")


def _best(step, f, ftest, p, stx, fx, px, f0, k) -> LineSearch:
    """The search stopped short of the Wolfe conditions: keep the lower of the
    current and the best steps if it decreased the objective enough (and
    strictly: near a minimiser rounding can make ``f == f0`` pass the test)."""
    if f <= ftest and f < f0 and (px is None or f <= fx):
        return LineSearch(step, p, "decrease", k)
    if px is not None and fx < f0:
        return LineSearch(stx, px, "decrease", k)
    return LineSearch(0.0, None, "failed", k)


def _backtrack(evaluate, f0, gtest, stx, fx, px, bad, k) -> LineSearch:
    """After a non-finite trial at step ``bad``: halve towards the best step
    ``stx`` (at most ``BACKTRACKS`` times) until a finite point with
    sufficient, strict decrease appears."""
    step = bad
    for j in range(k + 1, k + BACKTRACKS + 1):
        step = stx + 0.5 * (step - stx)
        f, g, p = evaluate(step)
        if f == -math.inf:
            return LineSearch(step, None, "unbounded", j)
        if (math.isfinite(f) and math.isfinite(g) and f <= f0 + step * gtest and f < f0
                and f <= fx):
            return LineSearch(step, p, "decrease", j)
    evaluations = k + BACKTRACKS
    if px is not None and fx < f0:
        return LineSearch(stx, px, "decrease", evaluations)
    return LineSearch(0.0, None, "nonfinite", evaluations)
