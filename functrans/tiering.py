"""Automatic tiering: ``jit`` moves a hot program from the NumPy tier to the
native tier (Numba) on its own, compiling it in the background.

Every program starts in the NumPy tier.  When it is compiled, ``assess``
reads its optimised Jaxpr (no Numba needed) and decides whether it may ever
move and what it would gain: the share of its estimated NumPy-tier cost
that native kernels remove (elementwise work fused into loops, the Python
dispatch of loop steps), the estimated compile time, and whether the
native results are the NumPy tier's bit for bit.  A program that may move
is *watched*: its calls are timed, and once the time it has spent in the
NumPy tier times its gain reaches its estimated compile time (what staying
would have cost pays for the compile, the ski-rental rule), it is queued
for the compiler thread.  Calls keep running in the NumPy tier until the
native program is installed in the cache entry; a failed, unavailable or
over-budget compile leaves the program in the NumPy tier for good, with a
debug line on the ``functrans.jit`` logger.

The compiler thread is a daemon that compiles one program at a time within
a per-program budget and a total budget per process; it is started on the
first need, and it (and Numba) is absent from a forked child until the
child needs it.  While it compiles, the interpreter switches threads every
0.1 ms instead of 5 (``sys.setswitchinterval``, restored after): a thread
calling small programs in a loop holds the GIL, and the compiler thread,
which gives the GIL up at every file it reads while Numba imports and
loads its cache, waited a whole interval for it each time.  See
docs/jit.md, "Tiers".
"""

from __future__ import annotations

import logging
import math
import os
import sys
import threading
import time
from collections import deque
from typing import Any, Callable, NamedTuple

import numpy as np

from functrans.backends import threads
from functrans.core import ClosedJaxpr, Jaxpr, Var
from functrans.dtypes import is_floating
from functrans.primitives.elementwise import IEEE_EXACT
from functrans.primitives.fused import cpu_fusible, have_numexpr
from functrans.primitives.linalg import matmul_bits, reshaped_form

_log = logging.getLogger("functrans.jit")

#: Seconds one program's native compile may take (checked between kernels
#: and at the end; a program estimated over it is never started).
PROGRAM_BUDGET = 60.0
#: Seconds of native compiling one process spends on automatic tiering in all.
TOTAL_BUDGET = 300.0
#: The interpreter's switch interval (seconds) while the compiler thread
#: compiles: behind a thread calling a 3 us program in a loop, Numba's
#: import took over 20 s at the default 5 ms, 2 s at this one.
SWITCH_INTERVAL = 1e-4

#: A program moves only if native kernels would remove at least this share
#: of its estimated NumPy-tier time.
MIN_GAIN = 0.3
#: ... and not before it has been called this many times.
MIN_CALLS = 3
#: After a move in exact numerics, this many native calls are timed (after
#: ``_TRIAL_SKIP`` left out while caches warm) and compared with the NumPy
#: tier's calls: a program the native tier runs slower (by ``_SLOWER``)
#: moves back (the cost model cannot see a kernel call's own cost, which
#: decides small programs).
TRIAL_CALLS = 64
_TRIAL_SKIP = 8
#: How much slower the native calls must be to move back: a margin for the
#: machine's noise between the two tiers' timings.
_SLOWER = 1.1
#: What a moved program's reason ends with until its trial's verdict.
_ON_TRIAL = "; on trial"

# The cost model, in seconds (measured on the project's test machine: one
# NumPy call costs about a microsecond of dispatch, a float64 elementwise
# pass about a nanosecond per element, a BLAS product about a tenth of a
# nanosecond per multiply-add; Numba takes about 0.3 s to set up a kernel
# and about 30 ms more per fused equation).
_DISPATCH = 1e-6
_PER_ELEMENT = 1e-9
# A float64 transcendental function costs several passes: NumPy's sin and
# cos about 8 ns an element, tanh 1.7, arctan 1.2, exp and log 0.8 (float32
# ones about 0.5, so they count as a pass).
_PER_TRANSCENDENTAL = 4e-9
#: ``backends.native.elementwise.SPLIT_ELEMENTS``, the size from which a
#: native call runs on all cores (written here, not imported, so that
#: ``import functrans`` does not load the native backend).
SPLIT_ELEMENTS = 1 << 18
_PER_FLOP = 1e-10
_COMPILE_BASE = 0.3
_COMPILE_PER_EQN = 0.03

#: Elementwise equations with a native form that are not ufuncs: ``where``,
#: and a NumPy scalar's ``**``, which native kernels compute with C's
#: ``pow`` as the NumPy tier does (``backends/native/c_power.py``; where
#: this process's ``pow`` fails its check, the lowering refuses it).
_NATIVE_ELEMENTWISE = frozenset({"select", "scalar_pow"})
#: What a loop body may hold for its loop to become one kernel, besides
#: elementwise ufuncs (``backends/native/body.py``).
_LOOP_BODY = _NATIVE_ELEMENTWISE | frozenset({"convert_element_type", "dot_general", "transpose",
                        "reduce_sum", "reduce_prod", "reduce_max", "reduce_min", "reduce_and",
                        "reduce_or", "scan", "while_loop", "recorded_loop", "gather",
                        "dynamic_slice", "slice", "rev", "broadcast_in_dim", "squeeze",
                        "expand_dims", "reshape"})
#: Body equations whose NumPy-tier results may be strided views of a
#: contiguous operand (a broadcast's stride 0, a slice's step, a reversal, a
#: window).
_STRIDED = frozenset({"broadcast_in_dim", "slice", "rev", "dynamic_slice", "gather"})
_INDEXING = frozenset({"gather", "dynamic_slice", "slice", "rev"})
_LOOPS = frozenset({"scan", "while_loop", "recorded_loop"})
_REAL = "biuf"


class Assessment(NamedTuple):
    """``assess``'s verdict on a program, for the native lowering of
    ``numerics`` (``"exact"`` or ``"close"``): ``gain``, the estimated share
    of its NumPy-tier time native kernels remove; ``compile_seconds``, the
    estimated compile time; ``exact``, whether its native results are the
    NumPy tier's bit for bit, and if not, ``differs``, what may differ;
    ``never``, why it may never move (or None)."""

    gain: float
    compile_seconds: float
    exact: bool
    never: str | None
    numerics: str = "exact"
    differs: str = ""


def _ufunc(e) -> Any:
    prim = e.primitive
    if prim.multiple_results or len(e.outputs) != 1:
        return None
    kernel: Any = prim.numpy_kernel
    fn = kernel([a.aval for a in e.inputs], **e.params) if kernel is not None else None
    if fn is None and not e.params:
        fn = prim.numpy_fn
    if isinstance(fn, np.ufunc) and fn.nout == 1 and fn.nin == len(e.inputs):
        return fn
    return None


def _real(e) -> bool:
    # (Loops, not a generator over the operands and results: this runs per
    # equation of programs of tens of thousands.)
    for atoms in (e.inputs, e.outputs):
        for a in atoms:
            dtype = a.aval.dtype
            if dtype.kind not in _REAL or dtype == _FLOAT16:
                return False
    return True


_FLOAT16 = np.dtype(np.float16)


def _narrow_floats(e) -> set[str]:
    """The 16-bit float dtypes (float16, bfloat16) among ``e``'s values."""
    return {a.aval.dtype.name for a in (*e.inputs, *e.outputs)
            if a.aval.dtype.itemsize == 2 and is_floating(a.aval.dtype)}


def narrow_floats(jaxpr: Jaxpr) -> list[str]:
    """The 16-bit float dtypes a program computes in, loop bodies included:
    Numba has no arithmetic for float16 or bfloat16, so the native tier
    leaves their operations to NumPy (ml_dtypes' loops for bfloat16)."""
    found: set[str] = set()
    for e in jaxpr.eqns:
        found |= _narrow_floats(e)
        for j in _jaxprs(e):
            found.update(narrow_floats(j))
    return sorted(found)


def _float(e) -> bool:
    for atoms in (e.inputs, e.outputs):
        for a in atoms:
            if a.aval.dtype.kind == "f":
                return True
    return False


def _size(v) -> int:
    return math.prod(v.aval.shape)


def _jaxprs(e):
    """The jaxprs in ``e``'s params (a loop's bodies and predicate)."""
    for value in e.params.values():
        for x in value if isinstance(value, tuple) else (value,):
            if isinstance(x, ClosedJaxpr):
                yield x.jaxpr
            elif isinstance(x, Jaxpr):
                yield x


def _trips(e) -> int:
    length = e.params.get("length")
    return length if isinstance(length, int) and length > 0 else 1


class _Tally:
    """The walk's sums: NumPy-tier cost, the part native kernels remove,
    native equations (for the compile estimate), exactness."""

    def __init__(self, numerics: str):
        self.numerics = numerics
        self.cost = self.saved = 0.0
        self.eqns = 0
        #: The cost of the transcendental functions the exact lowering
        #: leaves NumPy calls.
        self.unfused = 0.0
        #: What makes the native results differ from the NumPy tier's.
        self.differs: list[str] = []
        self.loop_misses: list[str] = []
        #: 16-bit float dtypes of elementwise work that stays NumPy calls.
        self.narrow: set[str] = set()


def _dot_flops(e) -> int:
    lhs, rhs = e.inputs
    (contract, _), (batch, _) = e.params["dimension_numbers"]
    k = math.prod(lhs.aval.shape[d] for d in contract)
    return 2 * _size(e.outputs[0]) * max(k, 1)


def _eqn_cost(e, transcendental: bool | None = None) -> float:
    """``e``'s estimated NumPy-tier cost; ``transcendental``: whether it is
    (``_transcendental``), where the caller knows already."""
    if e.primitive.name == "dot_general":
        return _DISPATCH + _dot_flops(e) * _PER_FLOP
    if transcendental is None:
        transcendental = _transcendental(e)
    per = _PER_TRANSCENDENTAL if transcendental and any(
        v.aval.dtype == np.float64 for v in e.outputs) else _PER_ELEMENT
    return _DISPATCH + sum(_size(v) for v in e.outputs) * per


def _split(e) -> bool:
    """Whether the exact lowering computes transcendental equation ``e`` on
    several threads (``backends/native/chunked.py``; counted only where its
    operands are arrays of its shape and dtype)."""
    out = e.outputs[0].aval
    return threads.count() > 1 and math.prod(out.shape) >= SPLIT_ELEMENTS and all(
        type(a) is Var and a.aval.shape == out.shape and a.aval.dtype == out.dtype
        for a in e.inputs)


def _transcendental(e) -> bool:
    """A float ufunc whose results IEEE 754 does not fix (``sin``, ``exp``, ...)."""
    return _transcendental_ufunc(e, _ufunc(e))


def _transcendental_ufunc(e, ufunc) -> bool:
    """``_transcendental`` of ``e``, whose ``_ufunc`` is ``ufunc``."""
    return ufunc is not None and _float(e) and ufunc not in IEEE_EXACT


def _views(jaxpr: Jaxpr, outer: bool) -> set[int]:
    """The values of a loop body that may be strided views when the NumPy
    tier runs it: ``transpose`` results (NumPy's are views), broadcasts,
    slices and gathers (``_STRIDED``), and what other equations make of
    them (a ufunc keeps its operand's layout, unless ``_c_ordered`` says
    NumPy allocates it in C order), everything where the body's operands
    may be views (``outer``).  A product reads a view with other BLAS
    arguments than the kernel's contiguous copy."""
    views = {id(v) for v in jaxpr.invars} if outer else set()
    for e in jaxpr.eqns:
        name = e.primitive.name
        if name in _STRIDED and not _rows(e):
            views.update(id(v) for v in e.outputs if v.aval.ndim)
        elif name == "transpose" or name != "dot_general" and any(
                id(a) in views for a in e.inputs) and not _c_ordered(e, views):
            views.update(id(v) for v in e.outputs if v.aval.ndim > 1)
    if not outer and any(id(v) in views for v in jaxpr.outvars):
        return _views(jaxpr, True)  # a view carried into the next step
    return views


def _scalar_indices(e) -> bool:
    """Whether indexing equation ``e`` has the native form of
    ``backends/native/movement.py``: an array operand and rank-0 signed
    integer indices or starts."""
    return e.inputs[0].aval.ndim > 0 and all(
        not a.aval.ndim and a.aval.dtype.kind == "i" for a in e.inputs[1:])


def _rows(e) -> bool:
    """Whether gather ``e`` selects whole rows by leading integers (NumPy's
    result is contiguous where its operand is)."""
    if e.primitive.name != "gather":
        return False
    spec, shape = e.params["spec"], e.inputs[0].aval.shape
    picks = [n for n, s in enumerate(spec) if s[0] in ("int", "array")]
    return picks == list(range(len(picks))) and all(
        s[0] == "slice" and slice(*s[1:]).indices(d) == (0, d, 1)
        for s, d in zip(spec[len(picks):], shape[len(picks):]))


def _c_ordered(e, views: set[int]) -> bool:
    """Whether NumPy allocates ufunc equation ``e``'s result in C order
    whatever the layout of its views: an operand that is no view and has the
    result's shape (no axis broadcast, so no zero stride) is C-ordered, and
    where operands' orders conflict NumPy's iterator keeps C order.  A
    vmapped carry ``tanh(transpose(w @ h) + x)`` is contiguous so."""
    shape = e.outputs[0].aval.shape
    return _ufunc(e) is not None and any(
        type(a) is Var and id(a) not in views and a.aval.shape == shape for a in e.inputs)


def _exact_product(e, views: set[int]) -> bool:
    """Whether the native kernel's float ``dot_general`` ``e`` is the NumPy
    tier's bit for bit: an outer product (one multiplication per element),
    or a call of ``np.matmul``'s own loop where NumPy's product is
    ``matmul``'s bits (``matmul_bits``), or ``np.matmul`` itself on the
    reshaped operands of the general path (``reshaped_form``), on contiguous
    operands."""
    dtype = e.outputs[0].aval.dtype
    if dtype not in (np.float32, np.float64) or any(a.aval.dtype != dtype for a in e.inputs):
        return False
    (contract, _), _ = e.params["dimension_numbers"]
    avals, numbers = [a.aval for a in e.inputs], e.params["dimension_numbers"]
    return not contract or not any(id(a) in views for a in e.inputs) and (
        matmul_bits(avals, numbers) or reshaped_form(avals, numbers) is not None)


def _loop_body_native(jaxpr: Jaxpr, tally: _Tally, outer_views: bool = False) -> bool:
    """Whether every equation of a loop body has a native statement form
    (so that the loop can be one kernel), noting the inexact ones;
    ``outer_views``: whether the body's operands may be strided views."""
    ok = True
    views = _views(jaxpr, outer_views)
    for e in jaxpr.eqns:
        name = e.primitive.name
        ufunc = _ufunc(e)
        if not _real(e):
            dtypes = ", ".join(sorted(_narrow_floats(e))) or "a dtype the native tier lacks"
            tally.loop_misses.append(f"{name} on {dtypes}")
            ok = False
        elif ufunc is not None:
            # On an array a transcendental function calls NumPy's own loop;
            # on a scalar too in the exact lowering, else Numba's (the C
            # library's) code.
            if (_float(e) and ufunc not in IEEE_EXACT and not e.outputs[0].aval.ndim
                    and tally.numerics != "exact"):
                tally.differs.append("transcendental functions of scalars in loop bodies")
        elif name in _INDEXING and not _scalar_indices(e):
            tally.loop_misses.append(f"{name} by index arrays")
            ok = False
        elif name in _LOOP_BODY:
            if name == "dot_general" and _float(e) and not _exact_product(e, views):
                # loops summing in order, or BLAS reading a view's copy
                tally.differs.append("float products in loop bodies")
            if name in _LOOPS:
                nested = any(id(a) in views for a in e.inputs)
                ok = all([_loop_body_native(j, tally, nested) for j in _jaxprs(e)]) and ok
        else:
            tally.loop_misses.append(name)
            ok = False
        tally.eqns += 1
    return ok


def _lowers(e, tally: _Tally) -> bool:
    """Whether the native lowering of ``tally``'s numerics builds loop
    equation ``e`` as one kernel, noting what it refuses where not: the
    rules above count the body's forms, the lowering also its operands'
    shapes, dtypes and parameters (a broadcast operand of NumPy's loop, an
    integer remainder), and a loop counted but not built would be watched
    and compiled for nothing."""
    # (the native backend is loaded once a program has a loop to estimate;
    # its lowering loads no Numba)
    from functrans.backends.native.loops import refusal

    try:
        refused = refusal(e, tally.numerics == "exact")
    except Exception as exc:  # as the compile would: the program stays, saying why
        refused = f"a form its native lowering failed on ({type(exc).__name__}: {exc})"
    if refused is not None:
        tally.loop_misses.append(refused)
    return refused is None


def _loop_cost(jaxpr: Jaxpr) -> float:
    cost = 0.0
    for e in jaxpr.eqns:
        if e.primitive.name in _LOOPS:
            cost += _trips(e) * sum(_loop_cost(j) for j in _jaxprs(e))
        else:
            cost += _eqn_cost(e)
    return cost


def assess(closed: ClosedJaxpr, numerics: str = "exact") -> Assessment:
    """What moving ``closed`` to the native tier would gain and cost, and
    whether its results would stay the NumPy tier's bit for bit, with the
    native lowering of ``numerics`` (``jit_tier_numerics``).

    The estimate per top-level equation: a NumPy call costs its dispatch
    plus its elements (a product its multiply-adds).  An elementwise ufunc
    or a ``select`` (``where``, which moves values and computes none) on
    real dtypes (not float16 or bfloat16, which Numba lacks) joins a kernel that
    removes its dispatch and half its memory traffic.  A loop whose body
    has a native form becomes one kernel that removes nine tenths of its
    cost (the steps' dispatch dominates).  Everything else (matrix
    products outside loops, shape and indexing operations) stays as it is,
    which is why a program dominated by matrix products never moves.

    A float64 transcendental function (``sin``, ``exp``, ...) costs
    ``_PER_TRANSCENDENTAL`` an element.  In ``"exact"`` numerics such a
    function outside loop bodies is NumPy's own loop, called on chunks in
    its group's kernel: it saves nothing (the estimate leaves out the
    passes over memory the chunks save), and its results are the NumPy
    tier's, unless numexpr computes it in the NumPy tier; over
    ``SPLIT_ELEMENTS`` or more the kernel runs on ``threads.count()``
    threads (``config.native_threads``), which saves its time but one
    thread's share.  In ``"close"`` numerics
    it joins a kernel (Numba's C-library code, a few ulp away)."""
    tally = _Tally(numerics)
    for e in closed.jaxpr.eqns:
        name = e.primitive.name
        if name in _LOOPS:
            cost = _trips(e) * sum(_loop_cost(j) for j in _jaxprs(e))
            tally.cost += cost
            body = _Tally(numerics)
            if all([_loop_body_native(j, body) for j in _jaxprs(e)]) and _lowers(e, body):
                tally.saved += 0.9 * cost
                tally.eqns += body.eqns
                tally.differs += body.differs
            else:
                tally.loop_misses += body.loop_misses
            continue
        ufunc = _ufunc(e)  # (once: it is most of the walk's time per equation)
        transcendental = _transcendental_ufunc(e, ufunc)
        cost = _eqn_cost(e, transcendental)
        tally.cost += cost
        if transcendental and _real(e):
            if numerics != "exact":
                tally.saved += _DISPATCH + 0.5 * (cost - _DISPATCH)
                tally.eqns += 1
                tally.differs.append("transcendental functions")
            else:
                if _split(e):  # NumPy's own call, made by all cores on chunks
                    tally.saved += (cost - _DISPATCH) * (1 - 1 / threads.count())
                else:
                    tally.unfused += cost
                # (cpu_fusible first: have_numexpr asks the import system, 40 us)
                if cpu_fusible(e) and have_numexpr():
                    tally.differs.append("transcendental functions numexpr computes in the "
                                         "NumPy tier")
        elif (ufunc is not None or name in _NATIVE_ELEMENTWISE) and _real(e):
            tally.saved += _DISPATCH + 0.5 * (cost - _DISPATCH)
            tally.eqns += 1
        elif ufunc is not None or name in _NATIVE_ELEMENTWISE:
            tally.narrow |= _narrow_floats(e)
    gain = tally.saved / tally.cost if tally.cost else 0.0
    seconds = _COMPILE_BASE + _COMPILE_PER_EQN * tally.eqns
    never = None
    why = "matrix products and other NumPy calls dominate"
    if tally.unfused > tally.cost / 2:
        why = ("its transcendental functions dominate, which native kernels compute with "
               "NumPy's own loops in exact numerics, as fast as its calls on one thread or "
               "under 2**18 elements")
    if tally.loop_misses:
        why = (f"a loop body holds {', '.join(sorted(set(tally.loop_misses)))}, so its loop "
               "stays NumPy calls")
    if tally.narrow:
        narrow = ", ".join(sorted(tally.narrow))
        why = (f"its {narrow} operations stay NumPy calls: Numba has no {narrow} arithmetic"
               + (f"; {why}" if tally.loop_misses else ""))
    if not tally.eqns:
        never = f"nothing in it has a native form ({why})" if tally.loop_misses or tally.narrow \
            else "nothing in it has a native form"
    elif gain < MIN_GAIN:
        never = (f"native kernels would remove only {gain:.0%} of its estimated time "
                 f"({why}; {MIN_GAIN:.0%} needed)")
    elif seconds > PROGRAM_BUDGET:
        never = (f"its estimated compile time, {seconds:.0f} s, exceeds the budget of "
                 f"{PROGRAM_BUDGET:g} s per program")
    differs = ", ".join(dict.fromkeys(tally.differs))
    return Assessment(gain, seconds, not differs, never, numerics, differs)


# -- a program's tier --------------------------------------------------------------


class Tier:
    """Where one cached program runs and why: ``name`` is ``"numpy"`` or
    ``"native"``, ``reason`` says why, ``watching`` is true while its calls
    are timed for the rule.  ``install`` is called (by the compiler thread)
    with the native lowering; it returns False when the program left the
    cache meanwhile."""

    def __init__(self, name: str, reason: str, assessment: Assessment | None = None,
                 closed: ClosedJaxpr | None = None, label: str = ""):
        self.name, self.reason = name, reason
        self.assessment, self.closed, self.label = assessment, closed, label
        self.install: Callable[[Any], bool] | None = None
        self.cache_dir = ""
        self.watching = False
        self.calls = 0
        self.seconds = 0.0
        #: While the native tier is on trial (``moved``): what puts the NumPy
        #: tier's program back, and the native calls timed so far.
        self.undo: Callable[[], bool] | None = None
        self.trial = 0
        self.trial_seconds = 0.0
        #: NumPy-tier seconds after which the move pays: time x gain >= compile time.
        self.threshold = math.inf if assessment is None or assessment.gain <= 0 \
            else assessment.compile_seconds / assessment.gain

    def watch(self, install: Callable[[Any], bool], cache_dir: str) -> None:
        """Start timing the calls; the compiler thread hands ``install`` the
        native lowering (its kernels cached in ``cache_dir``) once the rule
        has queued the program."""
        self.install, self.cache_dir = install, cache_dir
        self.watching = True

    def moved(self, kernels: int, undo: Callable[[], bool] | None = None) -> None:
        """Say that the program now runs in the native tier; ``undo`` puts
        the NumPy tier's program back (False where it left the cache), for
        the trial of its first native calls (``timed``), made where the
        native results are the NumPy tier's bit for bit and the NumPy
        tier's calls were timed."""
        self.name = "native"
        self.reason = (f"moved by the rule after {self.calls} calls and "
                       f"{self.seconds * 1e3:.1f} ms in the NumPy tier ({kernels} kernels)")
        self.closed = self.install = None
        exact = self.assessment is not None and self.assessment.exact
        self.undo = undo if exact and self.calls else None
        if self.undo is not None:
            self.reason += _ON_TRIAL

    def timed(self, seconds: float) -> None:
        """Count a native call of ``seconds`` during the trial; after
        ``TRIAL_CALLS`` of them, move the program back where its native
        calls were slower than its NumPy tier's.  (Counted without a lock,
        as the watched calls are; one thread judges.)"""
        self.trial += 1
        if self.trial <= _TRIAL_SKIP:
            return
        self.trial_seconds += seconds
        if self.trial < _TRIAL_SKIP + TRIAL_CALLS:
            return
        with _lock:
            undo, self.undo = self.undo, None
        if undo is None:
            return
        native, numpy = self.trial_seconds / TRIAL_CALLS, self.seconds / self.calls
        times = (f"{native * 1e6:.1f} us a native call against {numpy * 1e6:.1f} us in the "
                 "NumPy tier")
        if native > _SLOWER * numpy and undo():
            self.stay(f"moved back after {TRIAL_CALLS} native calls: {times}")
        else:
            self.reason = self.reason.removesuffix(_ON_TRIAL) + f"; {times}"

    def hot(self) -> None:
        """Called by jit once ``seconds`` (the NumPy-tier time of the timed
        calls, counted in ``calls``) reaches ``threshold``: queue the compile
        from the third call on.  (The counts are updated without a lock: a
        lost update among threads only delays the move by a call.)"""
        if self.calls >= MIN_CALLS:
            self.queue()

    def queue(self) -> None:
        """Hand the program to the compiler thread (once)."""
        with _lock:
            if not self.watching:
                return
            self.watching = False
            self.reason = (f"compiling for the native tier (hot: {self.calls} calls, "
                           f"{self.seconds * 1e3:.1f} ms in the NumPy tier)" if self.calls
                           else "compiling for the native tier (jit_tier_up='eager')")
            _submit(self)

    def stay(self, why: str) -> None:
        """Leave the program in the NumPy tier for good, saying why."""
        self.watching = False
        self.name, self.reason = "numpy", why
        self.closed = self.install = None
        _log.debug("%s: stays in the NumPy tier: %s", self.label, why)

    def __repr__(self):
        return f"Tier({self.name!r}, {self.reason!r})"


# -- the compiler thread ---------------------------------------------------------------

_lock = threading.Lock()
_wake = threading.Condition(_lock)
_queue: deque[Tier] = deque()
_worker: threading.Thread | None = None
_running: Tier | None = None
_spent = 0.0
#: Why no program can move in this process (Numba missing, or a fork that
#: interrupted a compile), or None.
_off: str | None = None


def _submit(tier: Tier) -> None:
    """Queue ``tier`` (called with ``_lock`` held)."""
    global _worker
    if _off is not None:
        tier.stay(_off)
        return
    _queue.append(tier)
    if _worker is None:
        _worker = threading.Thread(target=_work, name="functrans-native-compiler", daemon=True)
        _worker.start()
    _wake.notify()


def _work() -> None:
    global _running
    while True:
        with _lock:
            while not _queue:
                _wake.wait()
            tier = _running = _queue.popleft()
        before = sys.getswitchinterval()
        sys.setswitchinterval(min(before, SWITCH_INTERVAL))
        ours = sys.getswitchinterval()
        try:
            _compile(tier)
        finally:
            if sys.getswitchinterval() == ours:  # unless changed meanwhile
                sys.setswitchinterval(before)
            with _lock:
                _running = None
                _wake.notify_all()


def _compile(tier: Tier) -> None:
    global _spent, _off
    if _off is not None:
        tier.stay(_off)
        return
    left = min(PROGRAM_BUDGET, TOTAL_BUDGET - _spent)
    if left <= 0:
        tier.stay(f"the native compile budget of this process ({TOTAL_BUDGET:g} s) is spent")
        return
    try:
        from functrans.backends import native  # Numba loads here, on the first need

        native.load_numba()
    except Exception as e:  # no wheels for this platform, a broken install
        _off = f"Numba cannot be imported ({type(e).__name__}: {e})"
        tier.stay(_off)
        return
    start = time.perf_counter()
    closed, install = tier.closed, tier.install
    if closed is None or install is None:
        return
    try:
        exact = tier.assessment is None or tier.assessment.numerics == "exact"
        lowering = native.lower(closed, tier.cache_dir, budget=left, exact=exact)
    except TimeoutError as e:
        lowering, why = None, f"its native compile ran over budget ({e})"
    except Exception as e:  # Numba's limits (NotImplementedError: float16), its errors
        lowering, why = None, f"its native compile failed ({type(e).__name__}: {e})"
    spent = time.perf_counter() - start
    _spent += spent
    if lowering is not None and spent > left:
        lowering, why = None, (f"its native compile took {spent:.1f} s, over the budget "
                               f"of {left:.1f} s")
    if lowering is not None and not lowering.sources:
        lowering, why = None, "no kernel came out of its native lowering"
    if lowering is None:
        tier.stay(why)
        return
    if install(lowering):
        _log.debug("%s: moved to the native tier (compiled in %.2f s)", tier.label, spent)


def wait(timeout: float | None = None) -> bool:
    """Block until the compiler thread has nothing queued or running (or
    ``timeout`` seconds pass); whether it is idle.  For tests and
    benchmarks that want to see a program's final tier."""
    deadline = None if timeout is None else time.monotonic() + timeout
    with _lock:
        while _queue or _running is not None:
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                return False
            _wake.wait(left)
    return True


def spent() -> float:
    """Seconds of native compiling spent by automatic tiering in this process."""
    return _spent


def _after_fork_in_child() -> None:
    """A forked child has none of the parent's threads: a fresh lock and
    queue, no compiler thread (started again on the child's first need).
    Programs queued in the parent are watched again.  If a compile was
    running at the fork, Numba's compiler lock may be held by a thread the
    child does not have: the child compiles nothing (NumPy tier only)."""
    global _lock, _wake, _queue, _worker, _running, _off
    pending = list(_queue)
    interrupted = _running
    _lock = threading.Lock()
    _wake = threading.Condition(_lock)
    _queue = deque()
    _worker = _running = None
    if interrupted is not None:
        _off = "the process forked while a native compile was running"
        interrupted.stay(_off)
    for tier in pending:
        if interrupted is not None:
            tier.stay(_off or "")
        else:
            tier.watching = True
            tier.reason = "in the NumPy tier; the rule watches its calls"


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)
