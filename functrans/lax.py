"""Low-level operations beyond NumPy's API: structured control flow (``cond``,
``switch``, ``while_loop``, ``fori_loop``, ``scan``) and ``stop_gradient``.

Python ``if``/``for`` work on concrete values outside ``jit``; these
functions are what to use when the condition or trip count is traced (inside
``jit``, or to keep one compiled program for every value).  Each traces its
functions into sub-Jaxprs of one primitive, so every transform sees through
it, including reverse mode through ``while_loop``.
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from functrans import core
from functrans._api_util import check_leaves
from functrans.core import ShapedArray, Tracer, open_jaxpr
from functrans.primitives import collectives as _coll
from functrans.primitives.control_flow import cond_p, scan_p, while_p
from functrans.primitives.custom import stop_gradient_p
from functrans.primitives.elementwise import convert_element_type
from functrans.tree_util import (
    keystr,
    tree_flatten,
    tree_flatten_with_path,
    tree_map,
    tree_unflatten,
)

__all__ = [
    "all_gather", "axis_index", "cond", "fori_loop", "pmax", "pmean", "pmin", "ppermute",
    "psum", "psum_scatter", "pvary", "scan", "stop_gradient", "switch", "while_loop",
]


def stop_gradient(x: Any) -> Any:
    """``x`` unchanged, but with zero derivative under every transform.

    >>> import functrans as ft
    >>> ft.grad(lambda x: x * ft.lax.stop_gradient(x))(3.0)
    array(3.)
    """
    return tree_map(stop_gradient_p.bind, x)


class _Traced:
    """``fun`` traced at the avals of a pytree of arguments: an open Jaxpr
    (constants first), the constants, and the output tree.  ``layouts``:
    per argument, the ``core.Member`` whose memory layout it has, False
    (not known) or None (C-contiguous), as ``core.trace_to_jaxpr`` takes
    them.  ``out_layouts``: per output, its layout as NumPy's call of
    ``fun`` gives it (``core.tracer_layout``; False: not known).  The first
    ``n_carry`` arguments are a loop's carry, which the outputs of the same
    positions become: ``changed`` lists those whose layout the trace read
    (``Member.read``, of this trace or an earlier one sharing the Members)
    and whose output is laid out otherwise."""

    def __init__(self, label: str, fun: Callable, avals: list, in_tree,
                 layouts: list | None = None, n_carry: int = 0):
        out_cell: list = []
        self.changed: list[int] = []
        self.out_layouts: list = []

        def flat(*xs):
            out = fun(*tree_unflatten(in_tree, xs))
            leaves, tree = check_leaves(label, "output", out)
            out_cell.append(tree)
            if layouts is not None:  # while the trace can still tell its layouts
                # Asking the outputs' layouts reads the Members they follow:
                # what the function itself read decides ``changed``.
                members = [m for m in layouts if type(m) is core.Member]
                read = [m.read for m in members]
                self.out_layouts = [_layout(x) for x in leaves]
                for m, was in zip(members, read):
                    m.read = was
                self.changed = [i for i in range(min(n_carry, len(leaves)))
                                if _changes_layout(layouts[i], self.out_layouts[i])]
            return leaves

        closed, _, _ = core.trace_to_jaxpr(flat, avals, name=core.fun_name(fun), layouts=layouts)
        self.jaxpr, self.consts = open_jaxpr(closed)
        self.out_tree = out_cell[-1]
        self.out_avals = [a.strip_weak() for a in closed.out_avals]


#: ``core.memory_layout``'s answer for strides that order nothing: not known.
_UNKNOWN = (False, ())


def _layout(x: Any) -> Any:
    """``x``'s memory layout (``core.tracer_layout``; False: not known)."""
    if isinstance(x, Tracer):
        layout = core.tracer_layout(x)
    else:  # None: a scalar, or an array NumPy makes C-ordered
        layout = core.memory_layout(x) if type(x) is np.ndarray else None
    return False if layout == _UNKNOWN else layout


def _changes_layout(given: Any, layout: Any) -> bool:
    """Whether a loop's carry, laid out as ``given`` (a ``core.Member`` of
    its initial value) says and read so in the body, becomes an output laid
    out as ``layout`` (False: not known) says otherwise: NumPy's next
    iteration gets that layout."""
    if type(given) is not core.Member or not given.read or given.layout == _UNKNOWN:
        return False
    return (_UNKNOWN if layout is False else layout) != given.layout


def _give_layouts(outs: list, layouts: list) -> None:
    """Lay out the results of a loop or a branch as NumPy's own Python
    code returns them (``core.give_layout``)."""
    for x, layout in zip(outs, layouts):
        if isinstance(x, Tracer):
            core.give_layout(x, layout)


def _stacked(layout: Any, length: int) -> Any:
    """The layout of ``np.stack`` of ``length`` arrays laid out as ``layout``
    says: NumPy's ``concatenate`` allocates its result in the order of its
    operands' strides, the new axis slowest (a stack of F-ordered arrays is
    no C-ordered array; one of arrays with gaps has none)."""
    if not length or layout is None or layout is False:
        return layout if length else None
    axes = tuple(a + 1 for a in layout[1])
    return True, (0, *axes) if length > 1 else axes


def _agreed(*layouts: Any) -> Any:
    """The layout of a result that is one of several values laid out as
    ``layouts`` say: theirs where they agree, else not known (False)."""
    return layouts[0] if all(la == layouts[0] for la in layouts) else False


def _own_layouts(leaves) -> list:
    """Per leaf, a ``core.Member`` of it where its layout can matter (two
    axes or more): the function gets the value itself, as a branch of
    ``cond`` does its operands and a loop's first iteration its carry."""
    return [core.Member(x, None) if np.ndim(x) >= 2 else None for x in leaves]


def _trace_loop(label: str, funs: Sequence[Callable], avals: list, in_tree, layouts: list,
                n_carry: int) -> list[_Traced]:
    """A loop's functions traced with its carry laid out as in every
    iteration: ``while_loop``'s ``cond_fun`` and body, or ``scan``'s body
    (the last of ``funs``, whose outputs are the next carry).  A carry is
    laid out as its initial value where the body keeps that layout or no
    trace reads it, else not known (``layouts`` marked False, all traced
    again).  A loop that reads no layout is traced once, as before."""
    while True:
        traced = [_Traced(label, f, avals, in_tree, layouts, n_carry if f is funs[-1] else 0)
                  for f in funs]
        if not traced[-1].changed:
            return traced
        for i in traced[-1].changed:
            layouts[i] = False


def _avals(leaves) -> list[ShapedArray]:
    return [core.get_aval(x) for x in leaves]


def _check_same(label: str, what: tuple[str, str], tree_a, avals_a, tree_b, avals_b) -> None:
    """Two traced functions must agree on output structure, shapes and dtypes."""
    if tree_a != tree_b:
        raise TypeError(
            f"{label}: {what[0]} and {what[1]} must return the same structure, but they "
            f"return {tree_a} and {tree_b}"
        )
    paths = tree_flatten_with_path(tree_unflatten(tree_a, list(range(len(avals_a)))))[0]
    for path, a, b in zip(paths, avals_a, avals_b):
        if a.shape != b.shape or a.dtype != b.dtype:
            raise TypeError(
                f"{label}: output{keystr(path)} is {a.str_short()} in {what[0]} but "
                f"{b.str_short()} in {what[1]}; both must have the same shape and dtype"
            )


def switch(index: Any, branches: Sequence[Callable], *operands: Any) -> Any:
    """``branches[index](*operands)``, with ``index`` clamped into range (as in
    JAX) and traced or not.

    >>> import functrans as ft, numpy as np
    >>> ft.lax.switch(5, [np.sin, np.cos], 0.0)
    array(1.)
    """
    label = "lax.switch"
    branches = list(branches)
    if not branches:
        raise ValueError(f"{label}: needs at least one branch")
    aval = core.get_aval(index)
    if aval.shape != () or aval.dtype.kind not in "iub":
        raise TypeError(f"{label}: the index must be an integer scalar, got {aval.str_short()}")
    return _branch(label, convert_element_type(index, np.int32), branches, operands,
                   [f"branches[{i}]" for i in range(len(branches))])


def cond(pred: Any, true_fun: Callable, false_fun: Callable, *operands: Any) -> Any:
    """``true_fun(*operands)`` if ``pred`` else ``false_fun(*operands)``, with a
    traced or concrete boolean scalar ``pred``.

    >>> import functrans as ft, numpy as np
    >>> ft.grad(lambda x: ft.lax.cond(x > 0, np.sin, np.cos, x))(0.5)
    array(0.87758256)
    """
    label = "lax.cond"
    aval = core.get_aval(pred)
    if aval.shape != () or aval.dtype != np.bool_:
        raise TypeError(
            f"{label}: the predicate must be a bool scalar, got {aval.str_short()}; "
            "compare it (x > 0) or reduce it (.any()) first"
        )
    index = convert_element_type(pred, np.int32)
    return _branch(label, index, [false_fun, true_fun], operands, ["false_fun", "true_fun"])


def _branch(label, index, funs, operands, names):
    leaves, in_tree = check_leaves(label, "operand ", tuple(operands))
    avals = _avals(leaves)
    traced = [_Traced(label, f, avals, in_tree, _own_layouts(leaves)) for f in funs]
    for t, name in zip(traced[1:], names[1:]):
        _check_same(label, (names[0], name), traced[0].out_tree, traced[0].out_avals,
                    t.out_tree, t.out_avals)
    # Every branch takes every branch's constants, then the operands.
    all_consts = [c for t in traced for c in t.consts]
    branches = []
    offset = 0
    for t in traced:
        before = [core.get_aval(c) for c in all_consts[:offset]]
        after = [core.get_aval(c) for c in all_consts[offset + len(t.consts):]]
        branches.append(_with_ignored_inputs(t.jaxpr, before, len(t.consts), after))
        offset += len(t.consts)
    outs = _coll.bind_over_axes(cond_p, index, *all_consts, *leaves, branches=tuple(branches))
    _give_layouts(outs, [_agreed(*ls) for ls in zip(*(t.out_layouts for t in traced))])
    return tree_unflatten(traced[0].out_tree, outs)


def _with_ignored_inputs(closed, before, n_own, after):
    """An open Jaxpr taking extra inputs it ignores, around its own constants."""
    j = closed.jaxpr
    pre = [core.Var(a) for a in before]
    post = [core.Var(a) for a in after]
    own, rest = list(j.invars[:n_own]), list(j.invars[n_own:])
    return core.ClosedJaxpr(
        core.Jaxpr(j.constvars, pre + own + post + rest, j.outvars, j.eqns), closed.consts
    )


def while_loop(cond_fun: Callable, body_fun: Callable, init_val: Any) -> Any:
    """Repeat ``val = body_fun(val)`` while ``cond_fun(val)``; differentiable in
    both modes (reverse mode records each iteration's carry while it runs).

    >>> import functrans as ft, numpy as np
    >>> def newton_sqrt(a):
    ...     return ft.lax.while_loop(lambda x: abs(x * x - a) > 1e-12,
    ...                              lambda x: 0.5 * (x + a / x), a)
    >>> ft.grad(newton_sqrt)(4.0)  # 0.5 / sqrt(4)
    array(0.25)
    """
    label = "lax.while_loop"
    leaves, in_tree = check_leaves(label, "init_val", init_val)
    avals = [a.strip_weak() if a.weak_type else a for a in _avals(leaves)]
    args_tree = tree_flatten((init_val,))[1]
    cond_t, body_t = _trace_loop(label, [cond_fun, body_fun], avals, args_tree,
                                 _own_layouts(leaves), len(avals))
    (pred,) = cond_t.out_avals if len(cond_t.out_avals) == 1 else (None,)
    if pred is None or pred.shape != () or pred.dtype != np.bool_:
        got = "several outputs" if pred is None else pred.str_short()
        raise TypeError(f"{label}: cond_fun must return a bool scalar, got {got}")
    _check_same(label, ("init_val", "body_fun's result"), in_tree, avals,
                body_t.out_tree, body_t.out_avals)
    outs = _coll.bind_over_axes(
        while_p,
        *cond_t.consts, *body_t.consts, *leaves, cond_jaxpr=cond_t.jaxpr,
        body_jaxpr=body_t.jaxpr, cond_nconsts=len(cond_t.consts),
        body_nconsts=len(body_t.consts),
    )
    # The final carry is init_val or the body's output, as the count runs.
    _give_layouts(outs, [_agreed(_layout(x), la) for x, la in zip(leaves, body_t.out_layouts)])
    return tree_unflatten(in_tree, outs)


def scan(
    f: Callable, init: Any, xs: Any = None, length: int | None = None, reverse: bool = False,
    unroll: int = 1,
) -> tuple[Any, Any]:
    """Loop ``carry, y = f(carry, x)`` over the leading axis of ``xs``; returns
    the final carry and the ``y``s stacked.  Reverse mode stores each
    iteration's carry (stacked) instead of recomputing it.

    >>> import functrans as ft, numpy as np
    >>> ft.lax.scan(lambda c, x: (c + x, c + x), 0.0, np.arange(4.0))
    (array(6.), array([0., 1., 3., 6.]))
    """
    label = "lax.scan"
    if not isinstance(unroll, int) or unroll < 1:
        raise ValueError(f"{label}: unroll must be a positive int, got {unroll!r}")
    init_leaves, init_tree = check_leaves(label, "init", init)
    x_leaves, x_tree = check_leaves(label, "xs", xs)
    length = _scan_length(label, xs, x_leaves, length)
    carry_avals = [a.strip_weak() for a in _avals(init_leaves)]
    x_avals = [ShapedArray(a.shape[1:], a.dtype) for a in _avals(x_leaves)]
    in_leaves, in_tree = tree_flatten((init, xs))
    # Each x is laid out as NumPy's xs[i] (a strided view where xs is not
    # C-ordered), each carry as init or not known (_trace_loop).
    layouts = _own_layouts(init_leaves) + [
        core.Member(x, 0) if np.ndim(x) >= 3 else None for x in x_leaves]
    # A body run at most once never gets its own output as its carry.
    (body,) = _trace_loop(label, [f], carry_avals + x_avals, in_tree, layouts,
                          len(carry_avals) if length > 1 else 0)
    out = tree_unflatten(body.out_tree, list(range(len(body.out_avals))))
    if not (isinstance(out, tuple) and len(out) == 2):
        raise TypeError(f"{label}: f must return a pair (carry, y), got {body.out_tree}")
    carry_tree = tree_flatten(out[0])[1]
    n_carry = len(carry_avals)
    _check_same(label, ("init", "f's carry"), init_tree, carry_avals, carry_tree,
                body.out_avals[:n_carry])
    outs = _coll.bind_over_axes(
        scan_p,
        *body.consts, *init_leaves, *x_leaves, jaxpr=body.jaxpr, num_consts=len(body.consts),
        num_carry=n_carry, length=length, reverse=bool(reverse),
    )
    # NumPy's loop returns the last body output (init where none ran) and
    # the ys stacked (np.stack).
    carry_layouts = body.out_layouts[:n_carry] if length else [_layout(x) for x in init_leaves]
    _give_layouts(outs, carry_layouts + [_stacked(la, length)
                                         for la in body.out_layouts[n_carry:]])
    y_tree = tree_flatten(out[1])[1]
    return tree_unflatten(init_tree, outs[:n_carry]), tree_unflatten(y_tree, outs[n_carry:])


def _scan_length(label: str, xs, x_leaves, length) -> int:
    lengths = {}
    paths = tree_flatten_with_path(xs)[0]
    for path, x in zip(paths, x_leaves):
        aval = core.get_aval(x)
        if aval.ndim == 0:
            raise ValueError(
                f"{label}: xs{keystr(path)} is a scalar; xs leaves need a leading axis"
            )
        lengths[keystr(path)] = aval.shape[0]
    sizes = set(lengths.values())
    if len(sizes) > 1:
        listing = ", ".join(f"xs{p} has length {n}" for p, n in lengths.items())
        raise ValueError(f"{label}: the leading axes of xs must agree, but {listing}")
    if length is not None:
        if sizes and sizes != {length}:
            raise ValueError(
                f"{label}: length={length} does not match the leading axis of xs ({sizes.pop()})"
            )
        return int(length)
    if not sizes:
        raise ValueError(f"{label}: with no xs, pass length=")
    return sizes.pop()


def fori_loop(lower: Any, upper: Any, body_fun: Callable, init_val: Any) -> Any:
    """``for i in range(lower, upper): val = body_fun(i, val)``.  Concrete bounds
    make a ``scan`` (reverse mode stores the carries); traced bounds make a
    ``while_loop``.  The bounds are integers (a float, even 3.0, is refused
    rather than truncated); ``body_fun`` keeps the carry's shapes and dtypes.

    >>> import functrans as ft
    >>> ft.lax.fori_loop(0, 5, lambda i, x: x + i, 0.0)
    array(10.)
    """
    name = core.fun_name(body_fun)
    label = f"lax.fori_loop({name})"
    _check_bound(label, "lower", lower)
    _check_bound(label, "upper", upper)
    leaves = check_leaves(label, "init_val", init_val)[0]
    in_avals = [a.strip_weak() for a in _avals(leaves)]

    def checked_body(i, val):
        new = body_fun(i, val)
        _check_carry(label, name, init_val, in_avals, new)
        return new

    if not isinstance(lower, Tracer) and not isinstance(upper, Tracer):
        lo, hi = int(lower), int(upper)

        def step(carry, _):
            i, val = carry
            return (i + 1, checked_body(i, val)), None

        (_, val), _ = scan(step, (np.int64(lo), init_val), None, length=max(hi - lo, 0))
        return val

    def cond_fun(carry):
        return carry[0] < carry[1]

    def body(carry):
        i, hi, val = carry
        return i + 1, hi, checked_body(i, val)

    start = convert_element_type(lower, np.int64)
    stop = convert_element_type(upper, np.int64)
    return while_loop(cond_fun, body, (start, stop, init_val))[2]


def _check_bound(label: str, what: str, bound: Any) -> None:
    """A loop bound is an integer scalar: a Python or NumPy int, or a traced
    one.  Floats are refused, integral ones too (as JAX does): truncating 0.5
    to 0 would run a loop the caller did not write."""
    if isinstance(bound, (bool, np.bool_)):
        raise TypeError(f"{label}: {what} is {bound!r}, a bool; loop bounds are ints: write "
                        f"{int(bound)}")
    if isinstance(bound, int):
        return
    try:
        aval = core.get_aval(bound)
    except TypeError:
        aval = None
    if aval is not None and aval.shape == () and aval.dtype.kind in "iu":
        return
    if aval is not None and aval.shape != ():
        raise TypeError(f"{label}: {what} has type {aval.str_short()}, but a loop bound is one "
                        "integer; pass a scalar")
    shown = (f"a traced {bound.aval.str_short()}" if isinstance(bound, Tracer)
             else f"{bound!r} (a {type(bound).__name__})")
    if aval is None or aval.dtype.kind != "f":
        raise TypeError(f"{label}: {what} is {shown}, but loop bounds are integers; pass an int")
    if isinstance(bound, float) and bound.is_integer():
        fix = f"write {int(bound)}"
    elif isinstance(bound, Tracer):
        fix = f"convert it with {what}.astype(int) (it truncates) or compute it as an integer"
    else:
        fix = f"pass int({what}) to truncate it, or round() it"
    raise TypeError(f"{label}: {what} is {shown}, but loop bounds are integers (a float "
                    f"bound would be truncated); {fix}")


def _check_carry(label: str, name: str, init_val: Any, in_avals: list, new: Any) -> None:
    """``body_fun`` returns the carry with the structure, shapes and dtypes of
    ``init_val`` (checked here, at trace time, to name the loop and the
    carry's path rather than the scan or while loop it becomes)."""
    paths, _, in_tree = tree_flatten_with_path(init_val)
    new_leaves, new_tree = tree_flatten(new)
    if new_tree != in_tree:
        raise TypeError(
            f"{label}: {name} must return the carry with the structure of init_val, "
            f"{in_tree}, but it returns {new_tree}"
        )
    for path, a, x in zip(paths, in_avals, new_leaves):
        b = core.get_aval(x)
        if b.shape != a.shape:
            raise TypeError(
                f"{label}: {name} changes the shape of the carry init_val{keystr(path)} from "
                f"{a.str_short()} to {b.str_short()}; a loop carry keeps its shape, so return "
                f"a value of shape {a.shape} there"
            )
        if b.dtype != a.dtype:
            where = f"init_val{keystr(path)}"
            example = ", or 1.0 for 1" if a.dtype.kind in "biu" and b.dtype.kind == "f" else ""
            raise TypeError(
                f"{label}: {name} changes the dtype of the carry {where} from "
                f"{a.str_short()} to {b.str_short()}; a loop carry keeps its dtype, so give "
                f"{where} that dtype (np.asarray(v, np.{b.dtype.name}){example}) or cast "
                f"{name}'s result back with .astype(np.{a.dtype.name})"
            )


# --------------------------------------------------------------------------
# Collectives over named axes (functrans.primitives.collectives)
# --------------------------------------------------------------------------


def _names(label: str, axis_name: Any) -> tuple:
    """``axis_name`` (one name or a tuple of them) as a checked tuple: each
    bound by an enclosing ``vmap(axis_name=...)`` or ``functrans.distributed.AXIS``."""
    names = axis_name if isinstance(axis_name, tuple) else (axis_name,)
    if not names:
        raise ValueError(f"{label}: axis_name is an empty tuple; name at least one axis")
    for k, n in enumerate(names):
        if n in names[:k]:  # pmean would divide by its size twice, psum sum once
            trace = core.current_trace()
            where = f"{trace.fun_name}: " if trace is not None else ""
            raise ValueError(f"{where}{label}: axis_name {names!r} names the axis {n!r} "
                             "twice; name each axis once")
    for n in names:
        _coll.bound_size(label, n)
    return names


def _one_name(label: str, axis_name: Any) -> Any:
    if isinstance(axis_name, tuple):
        raise TypeError(
            f"{label}: takes one axis name, got the tuple {axis_name!r}; apply it once per axis"
        )
    _coll.bound_size(label, axis_name)
    return axis_name


def psum(x: Any, axis_name: Any) -> Any:
    """The sum of ``x`` over the members of the named axis (or tuple of axes):
    a ``vmap`` axis_name, or ``functrans.distributed.AXIS`` for all processes.
    Keeps ``x``'s dtype.  ``grad`` treats the sum as one value; see ``pvary``
    for the gradient with respect to values the members share.

    >>> import functrans as ft, numpy as np
    >>> ft.vmap(lambda x: ft.lax.psum(x, "i"), axis_name="i")(np.arange(3.0))
    array([3., 3., 3.])
    """
    names = _names("psum", axis_name)
    return tree_map(lambda v: core.bind(_coll.psum_p, v, axis_name=names), x)


def pmean(x: Any, axis_name: Any) -> Any:
    """The mean of ``x`` over the members of the named axis (or axes): ``psum``
    divided by the number of members (so integers give floats, as ``np.mean``).

    >>> import functrans as ft, numpy as np
    >>> ft.vmap(lambda x: ft.lax.pmean(x, "i"), axis_name="i")(np.arange(4.0))
    array([1.5, 1.5, 1.5, 1.5])
    """
    names = _names("pmean", axis_name)
    count = int(np.prod([_coll.bound_size("pmean", n) for n in names]))
    div = core.lookup_primitive("div")
    return tree_map(lambda v: core.bind(div, psum(v, names), count), x)


def pmax(x: Any, axis_name: Any) -> Any:
    """The largest ``x`` over the members of the named axis (or axes); NaN
    wins, as in ``np.max``, and the derivative is split among tied members.

    >>> import functrans as ft, numpy as np
    >>> ft.vmap(lambda x: ft.lax.pmax(x, "i"), axis_name="i")(np.array([1.0, 5.0, 2.0]))
    array([5., 5., 5.])
    """
    names = _names("pmax", axis_name)
    return tree_map(lambda v: core.bind(_coll.pmax_p, v, axis_name=names), x)


def pmin(x: Any, axis_name: Any) -> Any:
    """The smallest ``x`` over the members of the named axis (or axes), as ``pmax``.

    >>> import functrans as ft, numpy as np
    >>> ft.vmap(lambda x: ft.lax.pmin(x, "i"), axis_name="i")(np.array([1.0, 5.0, 2.0]))
    array([1., 1., 1.])
    """
    names = _names("pmin", axis_name)
    return tree_map(lambda v: core.bind(_coll.pmin_p, v, axis_name=names), x)


def pvary(x: Any, axis_name: Any) -> Any:
    """``x``, marked as a value every member of the named axis (or axes) shares
    (replicated parameters): ``grad`` with respect to it sums the members'
    contributions, so the gradient of a ``psum``-reduced loss is the full one.

    >>> import functrans as ft, numpy as np
    >>> xs = np.array([1.0, 2.0, 3.0])
    >>> loss = lambda w, x: ft.lax.psum(ft.lax.pvary(w, "i") * x, "i")
    >>> ft.vmap(ft.grad(loss), in_axes=(None, 0), axis_name="i")(2.0, xs)
    array([6., 6., 6.])
    """
    names = _names("pvary", axis_name)
    return tree_map(lambda v: core.bind(_coll.pvary_p, v, axis_name=names), x)


def all_gather(x: Any, axis_name: Any, *, axis: int = 0, tiled: bool = False) -> Any:
    """Every member's ``x`` stacked along a new axis ``axis`` (in member
    order), or concatenated along the existing axis ``axis`` when ``tiled``.

    >>> import functrans as ft, numpy as np
    >>> ft.vmap(lambda x: ft.lax.all_gather(x, "i"), axis_name="i")(np.arange(2.0))
    array([[0., 1.],
           [0., 1.]])
    """
    name = _one_name("all_gather", axis_name)
    size = _coll.bound_size("all_gather", name)

    def gather(v):
        ndim = core.get_aval(v).ndim + (0 if tiled else 1)
        ax = _normalized_axis("all_gather", axis, ndim)
        return core.bind(_coll.all_gather_p, v, axis_name=name, axis=ax,
                                     tiled=bool(tiled), size=size)

    return tree_map(gather, x)


def psum_scatter(x: Any, axis_name: Any, *, scatter_dimension: int = 0,
                 tiled: bool = False) -> Any:
    """``psum(x)``, of which member ``i`` keeps entry ``i`` along
    ``scatter_dimension`` (whose size must be the number of members), or
    block ``i`` of equal blocks when ``tiled``.

    >>> import functrans as ft, numpy as np
    >>> ft.vmap(lambda x: ft.lax.psum_scatter(x, "i"), axis_name="i")(np.eye(2))
    array([1., 1.])
    """
    name = _one_name("psum_scatter", axis_name)
    size = _coll.bound_size("psum_scatter", name)

    def scatter(v):
        dim = _normalized_axis("psum_scatter", scatter_dimension, core.get_aval(v).ndim)
        return core.bind(_coll.psum_scatter_p, v, axis_name=name,
                                     scatter_dimension=dim, tiled=bool(tiled), size=size)

    return tree_map(scatter, x)


def ppermute(x: Any, axis_name: Any, perm: Sequence[tuple[int, int]]) -> Any:
    """Member ``dst`` gets member ``src``'s ``x`` for each ``(src, dst)`` pair
    of ``perm``; members that no pair sends to get zeros.

    >>> import functrans as ft, numpy as np
    >>> shift = lambda x: ft.lax.ppermute(x, "i", [(0, 1), (1, 2), (2, 0)])
    >>> ft.vmap(shift, axis_name="i")(np.array([10.0, 20.0, 30.0]))
    array([30., 10., 20.])
    """
    name = _one_name("ppermute", axis_name)
    pairs = _coll.check_perm(perm, _coll.bound_size("ppermute", name))
    return tree_map(
        lambda v: core.bind(_coll.ppermute_p, v, axis_name=name, perm=pairs), x)


def axis_index(axis_name: Any) -> Any:
    """The index (int32) of the member along the named axis: the position in
    a ``vmap``, the rank across ``functrans.distributed.AXIS``.

    >>> import functrans as ft, numpy as np
    >>> ft.vmap(lambda x: x * ft.lax.axis_index("i"), axis_name="i")(np.ones(3))
    array([0., 1., 2.])
    """
    name = _one_name("axis_index", axis_name)
    return core.bind(_coll.axis_index_p, axis_name=name)


def _normalized_axis(label: str, axis: Any, ndim: int) -> int:
    if not isinstance(axis, (int, np.integer)) or not -ndim <= axis < ndim:
        raise ValueError(
            f"{label}: axis {axis!r} is out of range for a result of rank {ndim}; "
            f"give an int in [{-ndim}, {ndim})"
        )
    return int(axis) % ndim
