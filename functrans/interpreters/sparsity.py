"""Sparsity detection: which input elements each value of a Jaxpr depends on
(the Jacobian pattern) and which pairs of input elements meet in a nonlinear
operation (the Hessian pattern), found without any input value.

An abstract interpretation over the IR like the other transforms.  A value is
a ``Pattern``: its aval, the boolean ``m x n`` matrix of the ``n`` input
elements each of its ``m`` elements depends on through a derivative that is
not structurally zero (a ``scipy.sparse`` CSR array, or None for none), and
its concrete value where it depends on no input at all (constants, iotas,
index arithmetic), so that gathers, pads and selects with known indices and
masks get exact patterns.

Each primitive declares a ``sparsity`` rule next to its other rules:
``rule(operands, **params)`` gets the operands' Patterns and returns a
``Structure`` (for each operand, how output elements map onto its elements,
plus which operands meet nonlinearly) or, for control flow and custom rules,
the output Patterns themselves (from ``run`` on its sub-Jaxprs).  A primitive
without a rule is taken to make every output element depend on every operand
element, and every pair of them to meet: conservative, never a missing
nonzero.

The Hessian pattern of a scalar function is the union over the nonlinear
operations whose result reaches the output of the products of their operands'
dependence rows (chain rule: ``d2f = sum_v df/dv d2v``); reach is found by a
backward pass over the same maps, so a discarded element adds nothing.  Inside
control flow every element is taken to reach (conservative).

The rule vocabulary (``Gather``, ``Pairs``, ``DENSE``, ``Structure``,
``Sites``) and the rule factories at the end need only NumPy; the interpreter
loads SciPy when it runs (``functrans.sparse`` is its public entry point).
"""

from __future__ import annotations

import threading
from typing import Any, Callable, Sequence

import numpy as np

from functrans.core import (
    ClosedJaxpr,
    Jaxpr,
    Literal,
    Primitive,
    RuleFactory,
    ShapedArray,
    bind,
    rule_factory,
    trace_to_jaxpr,
)
from functrans.dtypes import is_inexact
from functrans.errors import FunctransError

# --------------------------------------------------------------------------
# The rule vocabulary
# --------------------------------------------------------------------------


class Gather:
    """Output element ``i`` depends on operand element ``src[i]`` (none where
    ``src[i] < 0``): broadcasting, reshapes, slices, pads, gathers.  ``None``
    is the identity (an elementwise operand of the output's shape)."""

    __slots__ = ("src",)

    def __init__(self, src: np.ndarray | None):
        self.src = None if src is None else np.asarray(src, np.int64).ravel()


class Pairs:
    """Output element ``rows[t]`` depends on operand element ``cols[t]``, for
    every ``t``: reductions, contractions, scatters."""

    __slots__ = ("rows", "cols")

    def __init__(self, rows: np.ndarray, cols: np.ndarray):
        self.rows = np.asarray(rows, np.int64).ravel()
        self.cols = np.asarray(cols, np.int64).ravel()


class _Dense:
    """Every output element depends on every operand element."""

    def __repr__(self):
        return "DENSE"


DENSE = _Dense()

#: Second-order kinds: no pair of operand elements meets (jointly linear, or
#: piecewise linear such as max), or every pair meets at each output element.
NONE = "none"
ALL = "all"


class Sites:
    """The bilinear terms of a contraction: term ``t`` multiplies operand-0
    element ``left[t]`` by operand-1 element ``right[t]`` into output element
    ``out[t]``; only these pairs meet (not every pair of a row and a column)."""

    __slots__ = ("out", "left", "right")

    def __init__(self, out: np.ndarray, left: np.ndarray, right: np.ndarray):
        self.out, self.left, self.right = out, left, right


class Structure:
    """What a rule returns for a one-output primitive.

    ``maps``: per operand a ``Gather``, ``Pairs``, ``DENSE``, or None (no
    derivative flows from it).  ``second``: ``NONE``, ``ALL``, a tuple of
    operand index pairs ``(k, l)`` that meet at each output element, a
    ``Sites``, or a function of no arguments giving one of these (called only
    when a Hessian pattern is asked for).
    """

    __slots__ = ("maps", "second")

    def __init__(self, maps: Sequence[Any], second: Any = NONE):
        self.maps = tuple(maps)
        self.second = second


# --------------------------------------------------------------------------
# The interpreter
# --------------------------------------------------------------------------


def _sp():
    import scipy.sparse  # lazily: SciPy is an optional dependency (functrans[scipy])

    return scipy.sparse


#: The most dependences one value may hold (element, input element pairs):
#: past it, the pattern is effectively dense and detection stops with an error.
MAX_DEPENDENCES = 100_000_000


def too_dense(what: str, count: float) -> FunctransError:
    """The error for a rule whose result would hold ``count`` dependences,
    past ``MAX_DEPENDENCES``; ``what`` names the primitive and why."""
    return FunctransError(
        f"sparsity detection: {what} would hold {count:.3g} (element, input element) "
        f"dependences, more than {MAX_DEPENDENCES:.0e}: its pattern is (nearly) dense, so "
        "sparse derivatives cannot pay; use the dense transforms (functrans.hessian, "
        "jacfwd, jacrev) or hvp"
    )


class Pattern:
    """A value during detection: ``aval``, ``deps`` (CSR bool, ``size x n``,
    or None) and ``value`` (the concrete array, or None)."""

    __slots__ = ("aval", "deps", "value")

    def __init__(self, aval: ShapedArray, deps: Any = None, value: Any = None):
        self.aval = aval
        self.deps = deps
        self.value = value


class SparsityDetection:
    """One run of detection over ``n`` input elements: the Hessian terms met
    so far and, at the top level, the record of maps for the reach pass."""

    def __init__(self, n: int, hessian: bool, top: bool = True):
        self.n = n
        self.hessian = hessian
        self.top = top
        # (output var id or None for ungated, site -> output element or None, L, R)
        self.terms: list[tuple[Any, Any, Any, Any]] = []
        # (output var ids, [(operand var id, its Gather/Pairs/DENSE map, or "all")])
        self.tape: list[tuple[tuple[int, ...], list[tuple[int | None, Any]]]] = []
        self.sizes: dict[int, int] = {}  # var id -> size, for the reach pass
        self.custom_depth = 0  # custom rules being analysed (custom_jvp_rule, custom_vjp_rule)

    # -- building blocks -----------------------------------------------------

    def empty(self, m: int):
        return _sp().csr_array((m, self.n), dtype=bool)

    def map_matrix(self, mp: Pairs, m_out: int, m_in: int):
        """The CSR ``m_out x m_in`` bool matrix of a Pairs map."""
        ones = np.ones(mp.rows.shape[0], bool)
        out = _sp().coo_array((ones, (mp.rows, mp.cols)), shape=(m_out, m_in)).tocsr()
        out.sum_duplicates()
        return out

    def union_row(self, deps) -> Any:
        """The 1 x n row of every input element ``deps`` has."""
        seen = np.zeros(self.n, bool)
        seen[deps.indices] = True
        cols = np.flatnonzero(seen)
        return _sp().csr_array((np.ones(cols.shape[0], bool), cols, [0, cols.shape[0]]),
                               shape=(1, self.n))

    def broadcast_row(self, row, m: int):
        """``row`` (1 x n) repeated for ``m`` rows."""
        cols = row.indices
        k = cols.shape[0]
        return _sp().csr_array((np.ones(m * k, bool), np.tile(cols, m),
                                np.arange(m + 1, dtype=np.int64) * k), shape=(m, self.n))

    # -- running a Jaxpr -----------------------------------------------------

    def run(self, jaxpr: Jaxpr, consts: Sequence[Any], args: Sequence[Pattern]) -> list[Pattern]:
        env: dict[int, Pattern] = {}
        for v, c in zip(jaxpr.constvars, consts):
            env[id(v)] = c if type(c) is Pattern else Pattern(v.aval, None, c)
        for v, x in zip(jaxpr.invars, args):
            env[id(v)] = x

        def read(a) -> Pattern:
            if type(a) is Literal:
                return Pattern(a.aval, None, a.val)
            return env[id(a)]

        for e in jaxpr.eqns:
            ins = [read(a) for a in e.inputs]
            outs = self.apply(e.primitive, ins, e.params, e.outputs,
                              [None if type(a) is Literal else id(a) for a in e.inputs])
            for v, x in zip(e.outputs, outs):
                env[id(v)] = x
        return [read(a) for a in jaxpr.outvars]

    def apply(self, prim: Primitive, ins: list[Pattern], params: dict, outvars,
              in_ids: list[int | None]) -> list[Pattern]:
        out_avals = [v.aval for v in outvars]
        if all(x.value is not None for x in ins):  # depends on no input: compute it
            res = bind(prim, *[x.value for x in ins], **params)
            vals = list(res) if prim.multiple_results else [res]
            return [Pattern(a, None, np.asarray(val)) for a, val in zip(out_avals, vals)]
        if all(x.deps is None for x in ins) or getattr(prim.jvp, "zero_derivative", False):
            return [Pattern(a) for a in out_avals]
        rule: Any = prim.sparsity
        res = rule(ins, **params) if rule is not None else _default(prim, ins)
        if res is _all_on_all:
            res = _all_on_all(self, ins, out_avals)
        out_ids = tuple(id(v) for v in outvars)
        if type(res) is not Structure:  # the rule ran the program itself
            outs = [Pattern(a, p.deps if _inexact(a) else None, None)
                    for a, p in zip(out_avals, res)]
            if self.top:  # reached anywhere: every operand element reaches
                self.tape.append((out_ids, [(i, "all") for i, x in zip(in_ids, ins)
                                            if i is not None and x.deps is not None]))
            return outs
        aval = out_avals[0]
        m_out = aval.size
        gs: list[Any] = []  # per operand: its contribution m_out x n, or None
        record = []
        for mp, x, i in zip(res.maps, ins, in_ids):
            if mp is None or x.deps is None:
                gs.append(None)
                continue
            if mp is DENSE:
                row = self.union_row(x.deps)
                if float(m_out) * row.nnz > MAX_DEPENDENCES:
                    raise too_dense(f"'{prim.name}' (every output element on every operand "
                                    "element)", float(m_out) * row.nnz)
                g = self.broadcast_row(row, m_out)
            elif type(mp) is Gather:
                g = x.deps if mp.src is None else _take_rows(x.deps, mp.src)
            else:
                g = self.map_matrix(mp, m_out, x.aval.size) @ x.deps
            record.append((i, mp))
            gs.append(g)
        present = [g for g in gs if g is not None]
        if not present or not _inexact(aval):
            return [Pattern(aval)]
        deps = present[0]
        for g in present[1:]:
            deps = deps + g
        deps = _csr(deps)
        if self.top:
            self.tape.append((out_ids, [r for r in record if r[0] is not None]))
        if self.hessian:
            self._second(res.second, gs, ins, deps, out_ids[0])
        return [Pattern(aval, deps)]

    def _second(self, second, gs, ins, deps, out_id):
        if callable(second):
            second = second()
        gate = out_id if self.top else None
        if second is NONE:
            return
        if second is ALL:
            self.terms.append((gate, None, deps, deps))
            return
        if type(second) is Sites:
            a, b = ins[0].deps, ins[1].deps
            if a is None or b is None:
                return
            self.terms.append((gate, second.out, a[second.left], b[second.right]))
            return
        for k, j in second:
            if gs[k] is not None and gs[j] is not None:
                self.terms.append((gate, None, gs[k], gs[j]))

    # -- the Hessian pattern -------------------------------------------------

    def hessian_pattern(self, outvars) -> Any:
        """Gate the recorded terms by reach (a backward pass over the tape)
        and add them up into the symmetric ``n x n`` pattern."""
        reach: dict[int, np.ndarray] = {}
        for v in outvars:
            if type(v) is not Literal:
                reach[id(v)] = np.ones(v.aval.size, bool)
        for out_ids, record in reversed(self.tape):
            r_outs = [reach.get(i) for i in out_ids]
            if all(r is None or not r.any() for r in r_outs):
                continue
            for i, mp in record:
                size = self.sizes.get(i)
                if size is None:
                    continue
                r_in = _reach_back(mp, r_outs[0], size)
                old = reach.get(i)
                reach[i] = r_in if old is None else old | r_in
        lefts, rights = [], []
        same = all(t[2] is t[3] for t in self.terms)  # operands meeting themselves only
        for gate, site_out, left, right in self.terms:
            if gate is not None:
                r = reach.get(gate)
                if r is None or not r.any():
                    continue
                mask = r if site_out is None else r[site_out]
                if not mask.all():
                    left, right = left[mask], right[mask]
            lefts.append(left)
            rights.append(right)
        return _meeting_pattern(lefts, None if same else rights, self.n)


def _meeting_pattern(lefts: list, rights: list | None, n: int):
    """The symmetric ``n x n`` pattern of ``sum_t L_t' R_t`` and its transpose,
    as one product of the stacked terms (SciPy's sparse product beat building
    every pair of a row and deduplicating them: 0.2 s against 0.33 s of CPU at
    n = 1e6 on the chained Rosenbrock function).  ``rights`` None: each
    ``R_t`` is ``L_t`` (operands meeting themselves, as in powers), so the
    product is symmetric as it is and one stack serves both sides."""
    if not lefts:
        return _sp().csr_array((n, n), dtype=bool)
    sp = _sp()
    left = sp.vstack(lefts, format="csr")
    if rights is None:
        return _csr(left.T @ left)
    h = left.T @ sp.vstack(rights, format="csr")
    return _csr(h + h.T)


def _take_rows(deps, src: np.ndarray):
    """Rows ``src`` of the CSR array ``deps`` (empty rows where ``src < 0``),
    by index arithmetic: O(rows + entries taken)."""
    ok = src >= 0
    safe = np.where(ok, src, 0)
    lengths = np.where(ok, np.diff(deps.indptr)[safe], 0)
    indptr = np.zeros(src.shape[0] + 1, np.int64)
    np.cumsum(lengths, out=indptr[1:])
    total = int(indptr[-1])
    starts = np.repeat(deps.indptr[:-1][safe] - indptr[:-1], lengths)
    taken = deps.indices[starts + np.arange(total, dtype=np.int64)]
    return _sp().csr_array((np.ones(total, bool), taken, indptr),
                           shape=(src.shape[0], deps.shape[1]))


def _reach_back(mp: Any, r_out: np.ndarray | None, size: int) -> np.ndarray:
    """The operand elements that output elements ``r_out`` depend on."""
    if r_out is None or isinstance(mp, str) or mp is DENSE:
        return np.full(size, r_out is None or bool(r_out.any()))
    r_in = np.zeros(size, bool)
    if type(mp) is Gather:
        if mp.src is None:
            return r_out.copy()
        src = mp.src[r_out]
        r_in[src[src >= 0]] = True
    else:
        r_in[mp.cols[r_out[mp.rows]]] = True
    return r_in


def _csr(a):
    a = _sp().csr_array(a)
    a.sum_duplicates()
    a.sort_indices()
    return a


def _inexact(aval: ShapedArray) -> bool:
    return is_inexact(aval.dtype)


def _default(prim: Primitive, ins: list[Pattern]) -> Any:
    """No declared rule: an elementwise primitive (one with an elementwise GPU
    kernel, as fusion knows them) maps broadcast elements and its operands
    meet; any other makes every output element depend on every operand
    element."""
    if prim.multiple_results:
        return _all_on_all
    if hasattr(prim.cuda, "loop_dtypes"):
        out_shape = np.broadcast_shapes(*(x.aval.shape for x in ins))
        return Structure([broadcast_gather(x.aval.shape, out_shape) for x in ins], ALL)
    return Structure([DENSE] * len(ins), ALL)


def _all_on_all(run: SparsityDetection, ins: list[Pattern], out_avals) -> list[Pattern]:
    """The outputs of a several-output primitive with no rule: each element
    on every operand element, and all of them meeting."""
    rows = [run.union_row(x.deps) for x in ins if x.deps is not None]
    union = rows[0]
    for r in rows[1:]:
        union = union + r
    union = _csr(union)
    if run.hessian:
        run.terms.append((None, None, union, union))
    return [Pattern(a, run.broadcast_row(union, a.size) if _inexact(a) else None)
            for a in out_avals]


def detect(closed: ClosedJaxpr, diff: Sequence[bool], hessian: bool = False,
           custom_depth: int = 0):
    """The patterns of ``closed``: its inputs marked in ``diff`` are the ``n``
    differentiated elements (raveled in C order, concatenated in order);
    ``custom_depth``: how many custom rules deep ``closed`` is analysed
    (``CUSTOM_DEPTH``).

    Returns ``(jacobian, hessian)``: the CSR bool ``m x n`` pattern of all
    outputs raveled and stacked, and the ``n x n`` Hessian pattern of the
    (scalar) output, or None unless ``hessian``.
    """
    sp = _sp()
    jaxpr = closed.jaxpr
    sizes = [v.aval.size for v, d in zip(jaxpr.invars, diff) if d]
    n = int(sum(sizes))
    run = SparsityDetection(n, hessian)
    run.custom_depth = custom_depth
    run.sizes = _var_sizes(jaxpr)
    args, start = [], 0
    for v, d in zip(jaxpr.invars, diff):
        if d:
            m = v.aval.size
            ident = sp.csr_array((np.ones(m, bool), np.arange(start, start + m),
                                  np.arange(m + 1)), shape=(m, n))
            args.append(Pattern(v.aval, ident))
            start += m
        else:
            args.append(Pattern(v.aval))
    _runs.stack.append(run)
    try:
        outs = run.run(jaxpr, closed.consts, args)
    finally:
        _runs.stack.pop()
    rows = [x.deps if x.deps is not None else run.empty(x.aval.size) for x in outs]
    jac = _csr(sp.vstack(rows, format="csr")) if rows else run.empty(0)
    hess = run.hessian_pattern(jaxpr.outvars) if hessian else None
    return jac, hess


def _var_sizes(jaxpr: Jaxpr) -> dict[int, int]:
    sizes = {id(v): v.aval.size for v in jaxpr.constvars + jaxpr.invars}
    for e in jaxpr.eqns:
        for v in e.outputs:
            sizes[id(v)] = v.aval.size
    return sizes


def run_sub(closed: ClosedJaxpr, ins: Sequence[Pattern]) -> list[Pattern]:
    """Detection inside a sub-program (control flow, custom rules), for their
    rules: the outputs' Patterns, its Hessian terms counted as reaching."""
    outer = _runs.stack[-1]
    sub = SparsityDetection(outer.n, outer.hessian, top=False)
    sub.custom_depth = outer.custom_depth
    _runs.stack.append(sub)
    try:
        outs = sub.run(closed.jaxpr, closed.consts, ins)
    finally:
        _runs.stack.pop()
    outer.terms.extend(sub.terms)
    return outs


class _Runs(threading.local):
    """The runs under way on this thread (``run_sub`` joins the innermost)."""

    def __init__(self):
        self.stack: list[SparsityDetection] = []


_runs = _Runs()


# --------------------------------------------------------------------------
# Rule factories (NumPy only)
# --------------------------------------------------------------------------


def flat_index(shape: tuple[int, ...]) -> np.ndarray:
    """The C-order flat position of every element of an array of ``shape``."""
    return np.arange(int(np.prod(shape, dtype=np.int64)), dtype=np.int64).reshape(shape)


def broadcast_gather(in_shape: tuple[int, ...], out_shape: tuple[int, ...]) -> Gather:
    """The map of NumPy broadcasting from ``in_shape`` to ``out_shape``."""
    if tuple(in_shape) == tuple(out_shape):
        return Gather(None)
    return Gather(np.broadcast_to(flat_index(in_shape), out_shape).ravel())


def movement_sparsity(data: Sequence[int] | None = (0,)) -> RuleFactory:
    """The rule of a primitive that only moves elements of its ``data``
    operands (reshape, transpose, slice, pad, concatenate, gather): found by
    running its own impl on element numbers, so it cannot disagree with the
    impl.  Its other operands (indices) must be known; where one depends on
    the input, every output element depends on every data element.
    ``data=None``: every operand is data (concatenate)."""

    @rule_factory
    def make(prim: Primitive) -> Callable:
        def rule(ins: list[Pattern], **params):
            data = range(len(ins)) if data_ops is None else data_ops
            if any(x.value is None for k, x in enumerate(ins) if k not in data):
                return Structure([DENSE if k in data else None for k in range(len(ins))])
            maps: list[Any] = []
            for k in range(len(ins)):
                if k not in data or ins[k].deps is None:
                    maps.append(None)
                    continue
                args = [x.value if j not in data else
                        np.zeros(x.aval.shape, np.int64) for j, x in enumerate(ins)]
                args[k] = flat_index(ins[k].aval.shape) + 1
                maps.append(Gather(np.asarray(prim.impl(*args, **params)) - 1))
            return Structure(maps, NONE)

        return rule

    data_ops = data
    return make


def _zero_row(deriv: Any) -> bool:
    return isinstance(deriv, str) and deriv.startswith("zero")


def elementwise_sparsity(deriv: Any) -> RuleFactory:
    """The rule of an elementwise table row with derivative column ``deriv``
    (a function, one per operand, ``"zero derivative"``, ``"linear"``, or
    None where the row gives its own JVP): each output element depends on
    the elements broadcasting puts there, except through a zero derivative.
    Operands ``k`` and ``j`` meet where ``d out / d operand k`` depends on
    operand ``j`` (or on the output): found once, by detection on the row's
    own derivative at scalars, so ``mul`` meets only across its operands and
    ``abs`` (derivative ``sign``) not at all."""

    @rule_factory
    def make(prim: Primitive) -> Callable:
        cache: list[Any] = []

        def second(nin: int) -> Any:
            if not cache:
                cache.append(_derivative_meetings(deriv, nin))
            return cache[0]

        def rule(ins: list[Pattern], **params):
            out_shape = np.broadcast_shapes(*(x.aval.shape for x in ins))
            derivs = deriv if isinstance(deriv, tuple) else (deriv,) * len(ins)
            maps = [None if _zero_row(d) or not _inexact(x.aval)
                    else broadcast_gather(x.aval.shape, out_shape)
                    for d, x in zip(derivs, ins)]
            return Structure(maps, lambda: second(len(ins)))

        return rule

    return make


def _derivative_meetings(deriv: Any, nin: int) -> Any:
    """The operand pairs whose elements meet in a row of derivative ``deriv``."""
    if deriv is None:
        return ALL
    if isinstance(deriv, str):
        return NONE if deriv == "linear" or _zero_row(deriv) else ALL
    derivs = deriv if isinstance(deriv, tuple) else (deriv,)
    scalar = ShapedArray((), np.float64)
    pairs = set()
    for k, d in enumerate(derivs):
        if not callable(d):
            if not (isinstance(d, str) and (d == "linear" or _zero_row(d))):
                return ALL
            continue
        closed, _, _ = trace_to_jaxpr(lambda *a, d=d: [d(*a)], [scalar] * (nin + 1),
                                      name="derivative")
        jac, _ = detect(closed, [True] * (nin + 1))
        used = set(jac.indices.tolist())
        if nin in used:  # through the output: on every operand
            used |= set(range(nin))
        pairs |= {(k, j) for j in used if j < nin}
    return tuple(sorted(pairs)) if pairs else NONE


def reduction_sparsity(second: Any = NONE) -> RuleFactory:
    """The rule of a reduction over ``axes``: each output element depends on
    the elements reduced into it; ``second`` says how they meet (``NONE`` for
    sums and the piecewise linear max/min, ``ALL`` for products)."""

    @rule_factory
    def make(prim: Primitive) -> Callable:
        def rule(ins: list[Pattern], *, axes, **params):
            shape = ins[0].aval.shape
            kept = tuple(1 if i in axes else d for i, d in enumerate(shape))
            rows = np.broadcast_to(flat_index(kept), shape).ravel()
            return Structure([Pairs(rows, np.arange(rows.shape[0]))], second)

        return rule

    return make


def dot_general_sparsity(ins: list[Pattern], *, dimension_numbers, **params) -> Structure:
    """``dot_general``: output element ``o`` depends on the operand elements
    of its terms, and only the two factors of one term meet; a known operand
    (a constant matrix) drops the terms where it is zero."""
    (lc, rc), (lb, rb) = dimension_numbers
    a, b = ins[0].aval.shape, ins[1].aval.shape
    lf = [i for i in range(len(a)) if i not in lc and i not in lb]
    rf = [i for i in range(len(b)) if i not in rc and i not in rb]
    # The term space: batch axes, lhs free, rhs free, contracted (the output's first).
    bs, ls, rs = [a[i] for i in lb], [a[i] for i in lf], [b[i] for i in rf]
    cs = [a[i] for i in lc]
    sizes = tuple(bs + ls + rs + cs)
    count = float(np.prod(sizes, dtype=np.float64))
    if count > MAX_DEPENDENCES:
        raise too_dense(f"'dot_general' of {ins[0].aval.str_short()} and "
                        f"{ins[1].aval.str_short()} ({count:.3g} terms)", count)
    lhs = flat_index(a).transpose(tuple(lb) + tuple(lf) + tuple(lc))
    lhs = lhs.reshape(tuple(bs + ls) + (1,) * len(rs) + tuple(cs))
    rhs = flat_index(b).transpose(tuple(rb) + tuple(rf) + tuple(rc))
    rhs = rhs.reshape(tuple(bs) + (1,) * len(ls) + tuple(rs + cs))
    out = flat_index(tuple(bs + ls + rs)).reshape(tuple(bs + ls + rs) + (1,) * len(cs))
    left, right, out = (np.broadcast_to(t, sizes).ravel() for t in (lhs, rhs, out))
    keep = np.ones(out.shape[0], bool)
    for x, idx in ((ins[0], left), (ins[1], right)):
        if x.value is not None:
            keep &= np.asarray(x.value).ravel()[idx] != 0
    if not keep.all():
        out, left, right = out[keep], left[keep], right[keep]
    maps = [Pairs(out, left), Pairs(out, right)]
    return Structure(maps, Sites(out, left, right))


def select_sparsity(ins: list[Pattern], **params) -> Structure:
    """``select(pred, on_true, on_false)``: each output element depends on the
    branch its predicate picks; an unknown predicate may pick either."""
    pred, *branches = ins
    out_shape = np.broadcast_shapes(*(x.aval.shape for x in ins))
    maps: list[Any] = [None]
    for keep, x in zip((True, False), branches):
        src = np.broadcast_to(flat_index(x.aval.shape), out_shape).ravel()
        if pred.value is not None:
            chosen = np.broadcast_to(np.asarray(pred.value, bool), out_shape).ravel()
            src = np.where(chosen == keep, src, -1)
        maps.append(Gather(src))
    return Structure(maps, NONE)


def pow_sparsity(ins: list[Pattern], *, y, **params) -> Structure:
    """``integer_pow``: the element itself; it meets itself unless ``y`` is 0 or 1."""
    return Structure([Gather(None) if y != 0 else None],
                     NONE if y in (0, 1) else ((0, 0),))


# --------------------------------------------------------------------------
# Control flow and custom rules (helpers for their declarations)
# --------------------------------------------------------------------------


def union(a: Pattern, b: Pattern) -> Pattern:
    """A value that may be either ``a`` or ``b`` (a branch, a loop carry)."""
    if a.deps is None and b.deps is None:
        same = (a.value is not None and b.value is not None
                and np.array_equal(a.value, b.value, equal_nan=True))
        return Pattern(a.aval, None, a.value if same else None)
    if a.deps is None or b.deps is None:
        return Pattern(a.aval, a.deps if b.deps is None else b.deps)
    return Pattern(a.aval, _csr(a.deps + b.deps))


def _covers(new: Pattern, old: Pattern) -> bool:
    """Whether ``old`` already holds every dependence (and value) of ``new``."""
    if new.deps is not None:
        if old.deps is None or (new.deps > old.deps).nnz:
            return False
    return new.value is None or old.value is not None


def cond_rule(branches: Sequence[ClosedJaxpr], index: Pattern,
              operands: Sequence[Pattern]) -> list[Pattern]:
    """``cond``: the branch a known index picks, else every branch (their union)."""
    if index.value is not None:
        k = int(min(max(int(index.value), 0), len(branches) - 1))
        return run_sub(branches[k], operands)
    outs = run_sub(branches[0], operands)
    for b in branches[1:]:
        outs = [union(x, y) for x, y in zip(outs, run_sub(b, operands))]
    return [Pattern(o.aval, o.deps) for o in outs]  # the branch taken is unknown


def fixed_point(step: Callable[[list[Pattern]], list[Pattern]],
                carry: list[Pattern]) -> list[Pattern]:
    """The smallest carry pattern that one more ``step`` does not grow: a loop
    of any trip count (values dropped: they change from step to step).
    Dependences only grow and are bounded, so this ends."""
    carry = [Pattern(x.aval, x.deps) for x in carry]
    while True:
        new = [union(x, y) for x, y in zip(carry, step(carry))]
        new = [Pattern(x.aval, x.deps) for x in new]
        if all(_covers(y, x) for x, y in zip(carry, new)):
            return carry
        carry = new


def while_rule(body: ClosedJaxpr, consts: Sequence[Pattern],
               carry: Sequence[Pattern]) -> list[Pattern]:
    """``while_loop``: a fixed point of the body over the carry (the trip
    count depends on values, so every count is covered, zero included)."""
    return fixed_point(lambda c: run_sub(body, list(consts) + c), list(carry))


#: Scans up to this length are unrolled in detection (exact, index values
#: known); longer ones are taken to a fixed point (conservative).
UNROLL = 32


def scan_rule(body: ClosedJaxpr, consts: Sequence[Pattern], carry: Sequence[Pattern],
              xs: Sequence[Pattern], length: int, reverse: bool) -> list[Pattern]:
    """``scan``: carry outputs, then the stacked per-step outputs."""
    y_avals = body.out_avals[len(carry):]
    if length <= UNROLL:
        c, ys = list(carry), []
        for step in range(length):
            i = length - 1 - step if reverse else step
            outs = run_sub(body, list(consts) + c + [_row(x, i, length) for x in xs])
            c, y = outs[: len(carry)], outs[len(carry):]
            ys.append((i, y))
        ys.sort(key=lambda t: t[0])
        stacked = [_stack([y[k] for _, y in ys], a, length) for k, a in enumerate(y_avals)]
        return c + stacked
    slices = [_any_row(x, length) for x in xs]
    c = fixed_point(lambda c: run_sub(body, list(consts) + c + slices)[: len(carry)],
                    list(carry))
    ys_one = run_sub(body, list(consts) + c + slices)[len(carry):]
    return c + [_stack([y] * length, a, length) for y, a in zip(ys_one, y_avals)]


def _row(x: Pattern, i: int, length: int) -> Pattern:
    aval = ShapedArray(x.aval.shape[1:], x.aval.dtype)
    k = aval.size
    deps = None if x.deps is None else x.deps[i * k:(i + 1) * k]
    value = None if x.value is None else np.asarray(x.value)[i]
    return Pattern(aval, deps, value)


def _any_row(x: Pattern, length: int) -> Pattern:
    """A step's slice of ``x`` at an unknown step: the union of its rows."""
    aval = ShapedArray(x.aval.shape[1:], x.aval.dtype)
    if x.deps is None:
        return Pattern(aval)
    k = aval.size
    rows = np.arange(length * k, dtype=np.int64) % k
    sp = _sp()
    m = sp.csr_array((np.ones(length * k, bool), (rows, np.arange(length * k))),
                     shape=(k, length * k))
    return Pattern(aval, _csr(m @ x.deps))


def _stack(ys: list[Pattern], aval: ShapedArray, length: int) -> Pattern:
    out = ShapedArray((length,) + aval.shape, aval.dtype)
    if all(y.deps is None for y in ys):
        return Pattern(out)
    sp = _sp()
    rows = [y.deps if y.deps is not None else sp.csr_array((y.aval.size, _runs.stack[-1].n),
                                                             dtype=bool) for y in ys]
    return Pattern(out, _csr(sp.vstack(rows, format="csr")))


#: How deep custom rules are analysed inside custom rules: a rule may call
#: functions with custom rules of their own without end (a series whose
#: derivative is the next series), and the Hessian needs two levels.
CUSTOM_DEPTH = 2


def custom_jvp_rule(trace_rule: Callable[[], ClosedJaxpr],
                    own_program: Callable[[], list[Pattern]],
                    operands: Sequence[Pattern]) -> list[Pattern]:
    """A function with a custom JVP rule, whose derivative is the rule's, not
    the function's.  ``trace_rule()`` gives the rule's program from (primals,
    tangents) to the tangent outputs.  First order: a tangent input depends on
    what its operand depends on.  Second order: an output element's tangent
    is linear in the tangents with coefficients of the primals, so the pairs
    that meet are (an input its coefficients depend on, an input its tangent
    depends on).  From ``CUSTOM_DEPTH`` nested rules on, a custom function
    is taken as its own program (``own_program()``)."""
    outer = _runs.stack[-1]
    if outer.custom_depth >= CUSTOM_DEPTH:
        return own_program()
    outer.custom_depth += 1
    try:
        rule = trace_rule()
        plain = [Pattern(x.aval, None, x.value) for x in operands]
        tangents = [Pattern(x.aval.strip_weak(), x.deps) for x in operands]
        outs = _first_order(outer, rule, plain + tangents)
        if outer.hessian:
            coefficients = _first_order(outer, rule, list(operands) + [
                Pattern(x.aval.strip_weak()) for x in operands])
            for t, c in zip(outs, coefficients):
                if t.deps is not None and c.deps is not None:
                    outer.terms.append((None, None, c.deps, t.deps))
    finally:
        outer.custom_depth -= 1
    return [Pattern(o.aval, o.deps) for o in outs]


def _first_order(outer: SparsityDetection, closed: ClosedJaxpr,
                 ins: Sequence[Pattern]) -> list[Pattern]:
    sub = SparsityDetection(outer.n, False, top=False)
    sub.custom_depth = outer.custom_depth
    _runs.stack.append(sub)
    try:
        return sub.run(closed.jaxpr, closed.consts, ins)
    finally:
        _runs.stack.pop()


def cumulative_sparsity(second: Any = NONE) -> RuleFactory:
    """The rule of a running reduction along ``axis``: each output element
    depends on its lane's elements up to it (from the end when ``reverse``);
    ``second`` as for ``reduction_sparsity``."""

    @rule_factory
    def make(prim: Primitive) -> Callable:
        def rule(ins: list[Pattern], *, axis, reverse, **params):
            shape = ins[0].aval.shape
            length = shape[axis] if shape else 1
            lanes = np.moveaxis(flat_index(shape), axis, -1).reshape(-1, length) \
                if shape else flat_index(shape).reshape(1, 1)
            count = float(lanes.shape[0]) * length * (length + 1) / 2
            if count > MAX_DEPENDENCES:
                raise too_dense(f"'{prim.name}' along an axis of {length}", count)
            later, earlier = np.tril_indices(length)  # output position, input position
            if reverse:
                later, earlier = earlier, later
            rows, cols = lanes[:, later].ravel(), lanes[:, earlier].ravel()
            return Structure([Pairs(rows, cols)], second)

        return rule

    return make


# --------------------------------------------------------------------------
# Block rules: linear algebra, sorting, custom reverse rules
# --------------------------------------------------------------------------


def _group_rows(x: Pattern, group: np.ndarray, groups: int, keep: np.ndarray | None = None):
    """The ``groups x n`` union of ``x``'s dependence rows per group: element
    ``e`` of ``x`` goes to row ``group[e]`` (nowhere where ``keep`` is False)."""
    elem = np.arange(x.aval.size, dtype=np.int64)
    if keep is not None:
        elem, group = elem[keep], group[keep]
    ones = np.ones(elem.shape[0], bool)
    pick = _sp().coo_array((ones, (group, elem)), shape=(groups, x.aval.size)).tocsr()
    return _csr(pick @ x.deps)


def _add(a, b):
    return b if a is None else a if b is None else _csr(a + b)


def matrix_sparsity(read: Callable | None = None, written: Callable | None = None,
                    columns: bool = False, linear: Sequence[int] = ()) -> RuleFactory:
    """The rule of a linear-algebra primitive over stacks of matrices (leading
    batch axes, the last two the matrix): an output element depends on what
    the elements its matrix reads depend on, in the same batch member only,
    and all of them meet (a conservative block pattern: factorisations and
    solves mix every entry they read).

    ``read(k, params, core_shape)``: a boolean mask of the entries of operand
    ``k``'s matrix the primitive reads (a triangle), None for all of them.
    ``written(j, params, core_shape)``: the entries of output ``j`` that are
    not structurally zero (a triangular factor), None for all.  ``columns``:
    a solve ``op(a)^-1 b``, where column ``j`` of the result depends on column
    ``j`` of ``b`` (operand 1) and on all of ``a``.  ``linear``: operands the
    result is linear in, which do not meet themselves."""

    @rule_factory
    def make(prim: Primitive) -> Callable:
        def rule(ins: list[Pattern], **params):
            run = _runs.stack[-1]
            res = prim.abstract_eval(*[x.aval for x in ins], **params)
            out_avals = list(res) if prim.multiple_results else [res]
            lead = ins[0].aval.shape[:-2]
            members = int(np.prod(lead, dtype=np.int64))
            width = ins[1].aval.shape[-1] if columns else 1
            groups = members * width
            nonlinear, everything = None, None
            for k, x in enumerate(ins):
                if x.deps is None or not _inexact(x.aval):
                    continue
                core = x.aval.shape[-2:]
                per = int(np.prod(core, dtype=np.int64))
                elem = np.arange(x.aval.size, dtype=np.int64)
                member, within = elem // max(per, 1), elem % max(per, 1)
                mask = read(k, params, core) if read is not None else None
                keep = None if mask is None else np.asarray(mask, bool).ravel()[within]
                if columns and k == 1:
                    rows = _group_rows(x, member * width + within % core[-1], groups, keep)
                else:
                    rows = _group_rows(x, member, members, keep)
                    if columns:  # a's entries reach every column of their member
                        rows = _take_rows(rows, np.arange(groups, dtype=np.int64) // width)
                everything = _add(everything, rows)
                if k not in linear:
                    nonlinear = _add(nonlinear, rows)
            if run.hessian and nonlinear is not None:
                run.terms.append((None, None, nonlinear, everything))
            outs = []
            for j, aval in enumerate(out_avals):
                if everything is None or not _inexact(aval):
                    outs.append(Pattern(aval))
                    continue
                core = aval.shape[len(lead):]
                per = int(np.prod(core, dtype=np.int64))
                elem = np.arange(aval.size, dtype=np.int64)
                within = elem % max(per, 1)
                src = elem // max(per, 1)
                if columns:
                    src = src * width + within % core[-1]
                mask = written(j, params, core) if written is not None else None
                if mask is not None:
                    src = np.where(np.asarray(mask, bool).ravel()[within], src, -1)
                outs.append(Pattern(aval, _take_rows(everything, src)))
            return outs

        return rule

    return make


def triangle(lower: bool, strict: bool = False) -> Callable[[tuple[int, ...]], np.ndarray]:
    """The mask of a square matrix's lower (or upper) triangle, its diagonal
    left out when ``strict``."""

    def mask(core: tuple[int, ...]) -> np.ndarray:
        n = core[-1]
        k = -1 if strict else 0
        return np.tril(np.ones((n, n), bool), k) if lower else np.triu(np.ones((n, n), bool), -k)

    return mask


def lane_sparsity(ins: list[Pattern], *, axis: int, **params) -> list[Pattern]:
    """``sort`` (values and permutation): each sorted value may be any element
    of its lane (the permutation depends on the values), and is piecewise
    linear in them (no meetings); the permutation has a zero derivative."""
    (x,) = ins
    shape = x.aval.shape
    values_aval, order_aval = x.aval.strip_weak(), ShapedArray(shape, np.int64)
    if x.deps is None or not _inexact(x.aval) or x.aval.size == 0:
        return [Pattern(values_aval), Pattern(order_aval)]
    lanes = np.moveaxis(flat_index(shape), axis, -1).reshape(-1, shape[axis])
    lane = np.empty(x.aval.size, np.int64)
    lane[lanes.ravel()] = np.repeat(np.arange(lanes.shape[0], dtype=np.int64), shape[axis])
    union_rows = _group_rows(x, lane, lanes.shape[0])
    return [Pattern(values_aval, _take_rows(union_rows, lane)), Pattern(order_aval)]


def custom_vjp_rule(trace_bwd: Callable[[], tuple[ClosedJaxpr, list[bool]]],
                    operands: Sequence[Pattern], out_avals: Sequence[ShapedArray]
                    ) -> list[Pattern]:
    """A function with a custom reverse rule, whose derivative is its
    ``bwd``'s.  ``trace_bwd()`` gives ``bwd``'s program from (residuals,
    output cotangents) to the operands' cotangents, and which operands it
    gives one for (the others get zero).  ``bwd`` is linear in the
    cotangents, so detection on it with the cotangents as inputs gives the
    transposed Jacobian pattern.  Second order (a Hessian of a custom_vjp
    function cannot be formed forward over reverse, but a pattern may be
    asked for): every input element any operand depends on meets every
    other, conservatively.  Past ``CUSTOM_DEPTH`` nested rules (a ``bwd``
    that calls its own function, as a self-adjoint operator's may), every
    output element depends on every input element."""
    run = _runs.stack[-1]
    sp = _sp()
    present = [x.deps for x in operands if x.deps is not None]
    union = run.union_row(_csr(sp.vstack(present, format="csr")))
    if run.custom_depth >= CUSTOM_DEPTH:
        if run.hessian:
            run.terms.append((None, None, union, union))
        return [Pattern(a, run.broadcast_row(union, a.size) if _inexact(a) else None)
                for a in out_avals]
    bwd, given = trace_bwd()
    n_res = len(bwd.jaxpr.invars) - len(out_avals)
    diff = [False] * n_res + [True] * len(out_avals)
    # (operand cotangents given) x (output elements)
    transposed, _ = detect(bwd, diff, custom_depth=run.custom_depth + 1)
    rows = [x.deps if x.deps is not None and _inexact(x.aval) else run.empty(x.aval.size)
            for x, g in zip(operands, given) if g]
    if not rows or transposed.nnz == 0:
        return [Pattern(a) for a in out_avals]
    stacked = _csr(sp.vstack(rows, format="csr"))
    if transposed.shape[0] == stacked.shape[0]:
        deps = _csr(_csr(transposed.T) @ stacked)  # output elements x n
    else:  # cotangents not of their operands' sizes: every output on every input
        deps = run.broadcast_row(union, int(sum(a.size for a in out_avals)))
    if run.hessian:
        run.terms.append((None, None, union, union))
    outs, start = [], 0
    for a in out_avals:
        piece = deps[start:start + a.size]
        start += a.size
        outs.append(Pattern(a, _csr(piece) if _inexact(a) and piece.nnz else None))
    return outs
