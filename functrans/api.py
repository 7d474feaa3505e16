"""The user-facing transforms.  Each one flattens its arguments' pytrees, traces
the user's function into a Jaxpr with ``core.trace_to_jaxpr``, rewrites the
Jaxpr with the interpreters in ``functrans.interpreters``, evaluates it and
unflattens the results.  Argument handling (argnums, axis specifications,
leaf checks) lives in ``functrans._api_util``; the eager-gradient engine that
``grad`` runs on host arrays, in ``functrans._eager_grad``.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Hashable
from typing import Any, Callable, Sequence

import numpy as np

from functrans import core
from functrans._api_util import (
    ONE_LEAF,
    axis_spec_leaves,
    check_argnums,
    check_axis_size,
    check_axis_spec,
    check_callable,
    check_grad_inputs,
    check_jacobian_outputs,
    check_leaves,
    check_like,
    check_scalar_output,
    chunk_ranges,
    diff_args,
    flat_fun,
    mapped_size,
    member_aval,
    move_out_axis,
    normalize_argnums,
    outputs_then_aux,
    replace_args,
    split_aux,
    tuple_arg,
)
from functrans._eager_grad import PlanGuard, host_value_and_grad
from functrans.core import (
    ClosedJaxpr,
    JaxprTrace,
    Member,
    ScalarStruct,
    ShapedArray,
    ShapeDtypeStruct,
    Tracer,
    UndefinedPrimal,
    Zero,
    bind,
    open_jaxpr,
    run_jaxpr,
)
from functrans.devices import is_device_array
from functrans.dtypes import float0, is_inexact
from functrans.errors import ConcretizationError, TracerConversionError
from functrans.interpreters import structured
from functrans.interpreters.jvp import tangent_aval
from functrans.interpreters.partial_eval import Linearized
from functrans.interpreters.transpose import backward_pass, transpose_jaxpr
from functrans.interpreters.vmap import batch_jaxpr, named_axis
from functrans.passes.pipeline import run_passes
from functrans.primitives import collectives
from functrans.primitives import shape as shape_prims
from functrans.tree_util import keystr, tree_flatten, tree_flatten_with_path, tree_unflatten

__all__ = [
    "ShapeDtypeStruct",
    "eval_shape",
    "grad",
    "hessian",
    "hvp",
    "jacfwd",
    "jacrev",
    "jvp",
    "linear_transpose",
    "linearize",
    "make_jaxpr",
    "value_and_grad",
    "vjp",
    "vmap",
]


def eval_shape(f: Callable, *args: Any, **kwargs: Any) -> Any:
    """The shapes and dtypes of ``f(*args, **kwargs)``'s results, as a pytree
    of ``ShapeDtypeStruct`` like the output, found by tracing ``f`` without
    computing anything.  The arguments (positional and keyword) may be
    arrays, scalars or ``ShapeDtypeStruct``s: only their shapes and dtypes
    are used, so no memory is spent on a large one.

    >>> import functrans as ft, numpy as np
    >>> out = ft.eval_shape(lambda x, w: {"y": x @ w, "n": x.shape[0]},
    ...                     ft.ShapeDtypeStruct((1000, 3), np.float32), np.ones((3, 2)))
    >>> out["y"], out["n"]
    (ShapeDtypeStruct(shape=(1000, 2), dtype=float64), ShapeDtypeStruct(shape=(), dtype=int64))
    """
    check_callable("eval_shape", f)
    name = core.fun_name(f)
    label = f"eval_shape({name})"
    leaves, in_tree = check_leaves(label, "argument ", (args, kwargs))

    def call(a, k):
        return f(*a, **k)

    flat, out_cell = flat_fun(call, label, in_tree, {}, {})
    avals = [core.get_aval(x) for x in leaves]  # no values: nothing is computed
    closed, _, _ = core.trace_to_jaxpr(flat, avals, name=name)
    return tree_unflatten(out_cell[-1], [ShapeDtypeStruct(a.shape, a.dtype)
                                         for a in closed.out_avals])


def make_jaxpr(f: Callable, static_argnums: int | Sequence[int] = ()) -> Callable[..., ClosedJaxpr]:
    """Trace ``f`` at the given arguments and return its Jaxpr.

    >>> import functrans as ft, numpy as np
    >>> print(ft.make_jaxpr(lambda x: np.sin(x) * 2.0)(np.ones(3)))
    { lambda ; a:f64[3]. let
        b:f64[3] = sin a
        c:f64[3] = mul b 2.0
      in (c,) }
    """
    check_callable("make_jaxpr", f)
    name = core.fun_name(f)
    static_argnums = check_argnums(f"make_jaxpr({name})", static_argnums, static=True)

    @functools.wraps(f)
    def make(*args, **kwargs) -> ClosedJaxpr:
        nums = normalize_argnums(f"make_jaxpr({name})", static_argnums, len(args),
                                 static=True)
        static = {i: args[i] for i in nums}
        dynamic = tuple(a for i, a in enumerate(args) if i not in static)
        # Check with static arguments blanked out (None is an empty node), so
        # that error paths give each argument's position in the call.
        positioned = tuple(None if i in static else a for i, a in enumerate(args))
        check_leaves(f"make_jaxpr({name})", "argument ", positioned)
        leaves, in_tree = tree_flatten(dynamic)
        flat, _ = flat_fun(f, f"make_jaxpr({name})", in_tree, static, kwargs)
        closed, _, _ = core.trace_to_jaxpr(flat, leaves, name=name)
        return closed

    return make


# --------------------------------------------------------------------------
# Differentiation
# --------------------------------------------------------------------------


def _has_values(leaves: Sequence[Any]) -> bool:
    """Whether tracing again with values could help: some leaf has one (the
    unmapped arguments of ``vmap`` have values, its mapped ones none)."""
    return any(
        x.val is not None if isinstance(x, Tracer)
        else not isinstance(x, (ShapedArray, ShapeDtypeStruct))
        for x in leaves
    )


def trace_flat(flat: Callable, leaves: Sequence[Any], name: str, out_cell: list,
               differentiated: bool = True, tape: list | None = None,
               layouts: Sequence[Any] | None = None) -> ClosedJaxpr:
    """Trace ``flat`` abstractly.  If it needs a concrete value (Python ``if``
    on an argument) and the arguments have values, trace again carrying the
    values: the Jaxpr is then specialised to them, as in eager autodiff.
    ``differentiated``: the leaves carry derivatives, so turning a value that
    depends on them into a constant (``float()``, ``np.asarray``) is an error
    (``TracerConversionError``), with or without values.  ``tape``: the
    trace's tape (``JaxprTrace``), the second trace's where there are two.
    ``layouts``: as for ``core.trace_to_jaxpr``."""
    with core.collector_paused:
        return record_flat(flat, leaves, name, out_cell, differentiated, tape, layouts).closed()


def record_flat(flat: Callable, leaves: Sequence[Any], name: str, out_cell: list,
                differentiated: bool = True, tape: list | None = None,
                layouts: Sequence[Any] | None = None) -> JaxprTrace:
    """``trace_flat``'s finished trace, whose program is made on demand
    (``core.record``; the caller pauses the collector)."""
    try:
        trace, _ = core.record(flat, leaves, name=name, differentiated=differentiated,
                               tape=tape, layouts=layouts)
    except TracerConversionError:
        raise
    except ConcretizationError:
        if not _has_values(leaves) or core.in_jit():
            raise
        out_cell.clear()
        if tape is not None:
            tape.clear()
        trace, _ = core.record(flat, leaves, name=name, concrete=True,
                               differentiated=differentiated, tape=tape, layouts=layouts)
    return trace


def _zeros_like_leaf(x: Any) -> np.ndarray:
    aval = core.get_aval(x)
    dtype = aval.dtype if is_inexact(aval.dtype) else float0
    return np.zeros(aval.shape, dtype)


def _materialize(ct: Any, aval: ShapedArray) -> Any:
    return np.zeros(aval.shape, aval.dtype) if type(ct) is Zero else ct


def _owned(outs: Sequence[Any], *sources: Sequence[Any]) -> list[Any]:
    """``outs`` with every output that is one of the arrays in ``sources`` (an
    argument, a tangent, a captured constant) copied: a program the passes
    reduced to the identity (``x * 1.0``) hands its input back, and the
    caller's later writes to one must never show in the other, as in eager
    NumPy.  Views stay views, as NumPy's own ``x.T`` does."""
    ids = {id(x) for group in sources for x in group if hasattr(x, "__array__")}
    return [x.copy() if id(x) in ids and not isinstance(x, Tracer) else x for x in outs]


def _keep_residuals(lin: Linearized, leaves: Sequence[Any]) -> None:
    """For a linear map handed back to the caller (``vjp``, ``linearize``):
    its residuals that are the caller's arrays (an argument, a captured
    constant) are copied, so that writing into them before the map is applied
    cannot change what it computes, as a NumPy array the caller owns may be
    written at any time."""
    lin.residuals = _owned(lin.residuals, leaves, lin.consts)


def _linearized(flat: Callable, leaves: list, name: str, out_cell: list, active,
                drop_first: bool = False) -> Linearized:
    """``flat`` traced at ``leaves`` and linearized in the ``active`` ones
    (see ``functrans.interpreters.partial_eval.Linearized``).  Its forward
    values (outputs and aux) are the caller's from here on, so none is an
    argument, a captured constant or a residual that the linear part still
    reads: writing into ``vjp``'s output must not change what ``vjp_fn``
    returns later."""
    lin = Linearized(trace_flat(flat, leaves, name, out_cell), leaves, active, drop_first)
    lin.outs = _owned(lin.outs, leaves, lin.consts, lin.residuals)
    return lin


def value_and_grad(
    f: Callable, argnums: int | Sequence[int] = 0, has_aux: bool = False,
    allow_int: bool = False, holomorphic: bool = False,
) -> Callable:
    """``f``'s value and its gradient with respect to the ``argnums`` arguments.

    Complex inputs follow JAX: for a real-valued ``f`` the gradient is the
    transpose of its derivative applied to 1 (``grad(lambda z: abs(z)**2)(z)``
    is ``2 * conj(z)``); a complex-valued ``f`` needs ``holomorphic=True``
    and complex inputs, and then the gradient is the complex derivative
    ``f'(z)`` (see docs/complex.md).

    >>> import functrans as ft, numpy as np
    >>> ft.value_and_grad(lambda x: np.sum(x ** 2))(np.array([1.0, 2.0]))
    (array(5.), array([2., 4.]))
    """
    check_callable("value_and_grad", f)
    call = _value_and_grad(f, argnums, has_aux, allow_int, holomorphic, need_value=True)

    @functools.wraps(f)
    def value_and_grad_f(*args, **kwargs):
        with core.collector_paused:  # see _value_and_grad
            return call(args, kwargs)

    value_and_grad_f.__name__ = value_and_grad_f.__qualname__ = \
        f"value_and_grad_of_{core.fun_name(f)}"
    return value_and_grad_f


def _value_and_grad(f: Callable, argnums, has_aux: bool, allow_int: bool, holomorphic: bool,
                    need_value: bool) -> Callable[[tuple, dict], Any]:
    """``value_and_grad`` as a function of the call's ``(args, kwargs)``;
    without ``need_value`` the value is None and the forward pass skips what
    only it needs (``grad``).  Its callers run it with the collector paused
    (``core.collector_paused``) until the call's trace and programs have
    died by reference counting (when it returns): resumed where the trace
    ends, the collector would walk them all at the next allocation (one
    collection a call of a 4k-equation loop, and now and then a full one).
    ``grad`` and ``value_and_grad`` each call it from their own function,
    with no layer between (a layer cost a twentieth of a small call)."""
    name = core.fun_name(f)
    label = f"grad({name})"
    argnums = check_argnums(label, argnums)
    guard = PlanGuard()  # this function's last plan, found again by its trace's tape

    def call(args, kwargs):
        nums, leaves, in_tree = diff_args(label, argnums, args, allow_int, holomorphic)
        single = in_tree is ONE_LEAF  # f(x), x an array: the leaf is the argument
        aux_cell: list = []

        def flat(*xs):
            out = f(*(xs if single else replace_args(args, nums, tree_unflatten(in_tree, xs))),
                    **kwargs)
            if not has_aux:
                check_scalar_output(label, name, out, holomorphic)
                return [out]
            out, aux_leaves = split_aux(label, name, out, has_aux, aux_cell, "value")
            check_scalar_output(label, name, out, holomorphic)
            return [out] + list(aux_leaves)

        # Taped where the plan may run: outside any trace.
        tape: list | None = None if core.current_trace() is not None else []
        trace = record_flat(flat, leaves, name, aux_cell, tape=tape)
        # With debug_nans/debug_infs on, the value is computed even for grad,
        # so that the values f computes are checked (JAX's behaviour): without
        # it, log(v - 1) in sum(log(v - 1)) is dead code for the gradient.
        keep_value = need_value or core.checks.value_checks != (False, False)
        done = host_value_and_grad(trace, leaves, keep_value, guard, checked=single)
        if done is not None:
            outs, flat_grads = done
            if need_value or has_aux:  # none is the caller's array (see _linearized)
                outs = _owned(outs, leaves, trace.constvals)
        else:
            lin = Linearized(trace.closed(), leaves, [True] * len(leaves),
                             drop_first=not keep_value)
            outs = _owned(lin.outs, leaves, lin.consts, lin.residuals)
            one = np.ones((), lin.out_avals[0].dtype)
            cts = [one] + [Zero(a.strip_weak()) for a in lin.out_avals[1:]]
            grads = iter(lin.vjp(cts))
            flat_grads = [next(grads) if a else _zeros_like_leaf(x)
                          for x, a in zip(leaves, lin.active)]
        if single:
            g = flat_grads[0]
        else:
            g = tree_unflatten(in_tree, flat_grads)
            g = g[0] if isinstance(argnums, int) else g
        if has_aux:
            return (outs[0], tree_unflatten(aux_cell[-1], outs[1:])), g
        return outs[0], g

    return call


def grad(
    f: Callable, argnums: int | Sequence[int] = 0, has_aux: bool = False,
    allow_int: bool = False, holomorphic: bool = False,
) -> Callable:
    """The gradient of scalar-valued ``f`` with respect to argument(s) ``argnums``
    (complex inputs and ``holomorphic`` as in ``value_and_grad``).

    >>> import functrans as ft, numpy as np
    >>> ft.grad(lambda x: np.sin(x) * x)(0.0)
    array(0.)
    >>> ft.grad(lambda z: abs(z) ** 2)(3 + 4j)
    array(6.-8.j)
    """
    check_callable("grad", f)
    call = _value_and_grad(f, argnums, has_aux, allow_int, holomorphic, need_value=False)

    @functools.wraps(f)
    def grad_f(*args, **kwargs):
        with core.collector_paused:  # see _value_and_grad
            value, g = call(args, kwargs)
        return (g, value[1]) if has_aux else g

    grad_f.__name__ = grad_f.__qualname__ = f"grad_of_{core.fun_name(f)}"
    return grad_f


def _tangents_in(label: str, t_leaves: Sequence[Any], avals: Sequence[ShapedArray], paths):
    """Check tangents against the primals' avals.  Integer and bool primals
    have no tangent space: their tangents are float0 zeros, as in JAX, and
    enter the program as zeros.  Concrete all-zero tangents of the primal's
    own dtype are taken too; any other tangent of that dtype is refused,
    since dropping it would silently answer as if it were zero."""
    checked = []
    for t, aval, path in zip(t_leaves, avals, paths):
        if not is_inexact(aval.dtype):
            got = core.get_aval(t)
            fix = (f"pass a float0 tangent, np.zeros({aval.shape}, functrans.dtypes.float0), "
                   "or make the primal a float array (x.astype(float)) to differentiate "
                   "along it")
            if got.shape != aval.shape or got.dtype not in (float0, aval.dtype):
                raise TypeError(
                    f"{label}: tangent {keystr(path)} has type {got.str_short()}, but the "
                    f"primal is {aval.str_short()}: integer and bool primals take float0 "
                    f"tangents; {fix}"
                )
            if got.dtype == aval.dtype and (isinstance(t, Tracer) or np.any(t)):
                found = "a traced" if isinstance(t, Tracer) else "a nonzero"
                raise TypeError(
                    f"{label}: tangent {keystr(path)} is {found} {got.str_short()} array, but "
                    f"the primal is {aval.str_short()}: integer and bool primals have no "
                    f"derivative, so this tangent would be dropped as if it were zero; {fix}"
                )
            t = np.zeros(aval.shape, aval.dtype)
        checked.append(t)
    return check_like(label, "tangent ", checked, avals, paths)


def _tangents_out(touts: Sequence[Any], out_avals: Sequence[ShapedArray]) -> list[Any]:
    """Tangents of integer and bool outputs are float0 zeros, as in JAX."""
    return [t if is_inexact(a.dtype) else np.zeros(a.shape, float0)
            for t, a in zip(touts, out_avals)]


def jvp(f: Callable, primals: Sequence[Any], tangents: Sequence[Any]) -> tuple[Any, Any]:
    """Forward mode: ``(f(*primals), J·tangents)``, both shaped like ``f``'s output.

    >>> import functrans as ft, numpy as np
    >>> ft.jvp(np.sin, (0.0,), (2.0,))
    (array(0.), array(2.))
    """
    check_callable("jvp", f)
    name = core.fun_name(f)
    label = f"jvp({name})"
    primals = tuple_arg(label, "primals", primals)
    tangents = tuple_arg(label, "tangents", tangents)
    leaves, in_tree = check_leaves(label, "primal ", primals)
    paths, t_leaves, t_tree = tree_flatten_with_path(tangents)
    if t_tree != in_tree:
        raise TypeError(
            f"{label}: tangents must have the structure of primals: got {t_tree} for {in_tree}"
        )
    avals = [tangent_aval(core.get_aval(x)) for x in leaves]
    t_leaves = _tangents_in(label, t_leaves, avals, paths)
    flat, out_cell = flat_fun(f, label, in_tree, {}, {})
    lin = _linearized(flat, leaves, name, out_cell, [True] * len(leaves))
    touts = _tangents_out(lin.jvp([t for t, a in zip(t_leaves, lin.active) if a]),
                          lin.out_avals)
    out_tree = out_cell[-1]
    touts = _owned(touts, leaves, t_leaves, lin.consts, lin.residuals)
    return tree_unflatten(out_tree, lin.outs), tree_unflatten(out_tree, touts)


def linearize(f: Callable, *primals: Any) -> tuple[Any, Callable]:
    """``(f(*primals), f_jvp)``: the forward pass runs once; ``f_jvp(*tangents)``
    applies the linear map ``tangents -> J·tangents`` as often as needed."""
    check_callable("linearize", f)
    name = core.fun_name(f)
    label = f"linearize({name})"
    leaves, in_tree = check_leaves(label, "primal ", primals)
    flat, out_cell = flat_fun(f, label, in_tree, {}, {})
    lin = _linearized(flat, leaves, name, out_cell, [True] * len(leaves))
    _keep_residuals(lin, leaves)
    out_tree = out_cell[-1]
    avals = [tangent_aval(core.get_aval(x)) for x in leaves]

    def f_jvp(*tangents):
        paths, t_leaves, t_tree = tree_flatten_with_path(tangents)
        if t_tree != in_tree:
            raise TypeError(f"{label}: tangents must have the structure {in_tree}, got {t_tree}")
        t_leaves = _tangents_in(label, t_leaves, avals, paths)
        touts = _tangents_out(lin.jvp([t for t, a in zip(t_leaves, lin.active) if a]),
                              lin.out_avals)
        return tree_unflatten(out_tree, _owned(touts, leaves, t_leaves, lin.consts,
                                               lin.residuals))

    return tree_unflatten(out_tree, lin.outs), f_jvp


def vjp(f: Callable, *primals: Any, has_aux: bool = False):
    """Reverse mode: ``(f(*primals), vjp_fn)`` where ``vjp_fn(cotangent)``
    returns a tuple with one cotangent per primal (``cotangent·J``)."""
    check_callable("vjp", f)
    name = core.fun_name(f)
    label = f"vjp({name})"
    leaves, in_tree = check_leaves(label, "primal ", primals)
    aux_cell: list = []
    out_cell: list = []
    flat = outputs_then_aux(lambda xs: f(*tree_unflatten(in_tree, xs)), label, name,
                             has_aux, aux_cell, out_cell)
    lin = _linearized(flat, leaves, name, out_cell, [True] * len(leaves))
    _keep_residuals(lin, leaves)
    out_tree, n_out = out_cell[-1]
    out_avals = [a.strip_weak() for a in lin.out_avals[:n_out]]

    def vjp_fn(cotangent):
        paths, ct_leaves, ct_tree = tree_flatten_with_path(cotangent)
        if ct_tree != out_tree:
            raise TypeError(
                f"{label}: the cotangent must have the structure of {name}'s output "
                f"{out_tree}, got {ct_tree}"
            )
        ct_leaves = check_like(label, "cotangent", ct_leaves, out_avals, paths)
        cts = [c if is_inexact(a.dtype) else Zero(a) for c, a in zip(ct_leaves, out_avals)]
        cts += [Zero(a.strip_weak()) for a in lin.out_avals[n_out:]]
        grads = iter(lin.vjp(cts))
        flat_ct = [next(grads) if a else _zeros_like_leaf(x) for x, a in zip(leaves, lin.active)]
        flat_ct = _owned(flat_ct, leaves, ct_leaves, lin.consts, lin.residuals)
        return tuple(tree_unflatten(in_tree, flat_ct))

    out = tree_unflatten(out_tree, lin.outs[:n_out])
    if has_aux:
        aux_tree = aux_cell[-1]
        return out, vjp_fn, tree_unflatten(aux_tree, lin.outs[n_out:])
    return out, vjp_fn


def hvp(f: Callable, primals: Sequence[Any], tangents: Sequence[Any]) -> Any:
    """Hessian-vector product ``H(primals)·tangents`` of scalar ``f``, by forward
    mode over reverse mode, without forming the Hessian.  The result is shaped
    like ``primals[0]`` when there is one primal, else a tuple.

    ``f`` is traced on every call; the forward-over-reverse program built from
    its Jaxpr is cached on that Jaxpr's structure, like the other transforms.

    >>> import functrans as ft, numpy as np
    >>> ft.hvp(lambda x: np.sum(x ** 3), (np.array([1.0, 2.0]),), (np.ones(2),))
    array([ 6., 12.])
    """
    check_callable("hvp", f)
    name = core.fun_name(f)
    label = f"hvp({name})"
    primals = tuple_arg(label, "primals", primals)
    tangents = tuple_arg(label, "tangents", tangents)
    leaves, in_tree = check_leaves(label, "primal ", primals)
    check_grad_inputs(label, tuple(range(len(primals))), primals, False)
    paths, t_leaves, t_tree = tree_flatten_with_path(tangents)
    if t_tree != in_tree:
        raise TypeError(
            f"{label}: tangents must have the structure of primals: got {t_tree} for {in_tree}"
        )
    t_avals = [tangent_aval(core.get_aval(x)) for x in leaves]
    t_leaves = check_like(label, "tangent ", t_leaves, t_avals, paths)
    flat, out_cell = flat_fun(f, label, in_tree, {}, {})
    closed = trace_flat(flat, leaves, name, out_cell)
    out_types = [ShapeDtypeStruct(a.shape, a.dtype) for a in closed.out_avals]
    check_scalar_output(label, name, tree_unflatten(out_cell[-1], out_types))
    opened, consts = open_jaxpr(closed)
    program = _hvp_jaxpr(opened, (False,) * len(consts) + (True,) * len(leaves))
    out = tree_unflatten(in_tree, run_jaxpr(program, [*consts, *leaves, *t_leaves]))
    return out[0] if len(primals) == 1 else out


@core.program_cache(maxsize=256, max_equations=50_000)
def _hvp_jaxpr(opened: ClosedJaxpr, active: tuple[bool, ...]) -> ClosedJaxpr:
    """``(*inputs, *tangents of the active ones) -> H·tangents`` for the scalar
    program ``opened``: the JVP of its gradient, as one optimised Jaxpr."""
    n = len(active)

    def gradient(*xs):
        def value(*ys):
            return core.eval_jaxpr(opened.jaxpr, opened.consts, *ys)

        lin = _linearized(value, list(xs), "hvp", [], list(active))
        return lin.vjp([np.ones((), lin.out_avals[0].dtype)])

    def program(*args):
        lin = _linearized(gradient, list(args[:n]), "hvp", [], list(active))
        return lin.jvp(list(args[n:]))

    avals = list(opened.in_avals)
    t_avals = [tangent_aval(a) for a, on in zip(avals, active) if on]
    closed, _, _ = core.trace_to_jaxpr(program, avals + t_avals, name="hvp")
    return run_passes(closed)


def linear_transpose(f: Callable, *primals: Any) -> Callable:
    """The transpose of linear ``f`` (traced at ``primals``' shapes and dtypes):
    ``f_t(cotangent)`` returns one cotangent per primal."""
    check_callable("linear_transpose", f)
    name = core.fun_name(f)
    label = f"linear_transpose({name})"
    leaves, in_tree = check_leaves(label, "primal ", primals)
    avals = [core.get_aval(x).strip_weak() for x in leaves]
    flat, out_cell = flat_fun(f, label, in_tree, {}, {})
    closed, _, _ = core.trace_to_jaxpr(flat, avals, name=name)
    out_tree = out_cell[-1]
    out_avals = [a.strip_weak() for a in closed.out_avals]

    def f_transpose(cotangent):
        paths, ct_leaves, ct_tree = tree_flatten_with_path(cotangent)
        if ct_tree != out_tree:
            raise TypeError(f"{label}: the cotangent must have the structure {out_tree}")
        ct_leaves = check_like(label, "cotangent", ct_leaves, out_avals, paths)
        undefined = [UndefinedPrimal(a) for a in avals]
        cts = backward_pass(closed.jaxpr, closed.consts, undefined, ct_leaves)
        return tuple(tree_unflatten(in_tree, [_materialize(c, a) for c, a in zip(cts, avals)]))

    return f_transpose


# --------------------------------------------------------------------------
# Batching
# --------------------------------------------------------------------------


def _check_axis_name(label: str, axis_name: Any) -> None:
    """``vmap``'s ``axis_name``: None, or a hashable name other than a tuple
    (a tuple in a collective lists several axes) and other than
    ``functrans.distributed.AXIS`` (the processes' axis)."""
    if axis_name is None:
        return
    if isinstance(axis_name, tuple) or not isinstance(axis_name, Hashable):
        raise TypeError(
            f"{label}: axis_name must be a hashable name such as 'i' (not a tuple or a "
            f"list), got {type(axis_name).__name__}; the collectives take it as their axis_name"
        )
    if axis_name == collectives.AXIS:
        raise ValueError(
            f"{label}: axis_name {axis_name!r} is functrans.distributed.AXIS, which names "
            "all processes; give the vmapped axis another name"
        )


def vmap(
    f: Callable, in_axes: Any = 0, out_axes: Any = 0, axis_size: int | None = None,
    axis_name: Any = None,
) -> Callable:
    """Map ``f`` over an axis of its arguments, as if by a loop, without one.

    ``in_axes``: an int, None (not mapped) or a tree prefix of the positional
    arguments giving one of those per leaf; ``out_axes`` likewise for the
    output.  Keyword arguments are mapped along their leading axis, as in
    JAX (pass an unmapped value positionally with ``in_axes`` None for it, or
    close over it).  ``axis_name`` names the
    mapped axis for the collectives of ``functrans.lax`` (``psum``,
    ``all_gather``, ``axis_index`` ...), which then work across the members.

    >>> import functrans as ft, numpy as np
    >>> ft.vmap(lambda x, y: x @ y, in_axes=(0, None))(np.eye(2)[None].repeat(3, 0), np.ones(2))
    array([[1., 1.],
           [1., 1.],
           [1., 1.]])
    """
    check_callable("vmap", f)
    name = core.fun_name(f)
    label = f"vmap({name})"
    check_axis_spec(label, "in_axes", in_axes)
    check_axis_spec(label, "out_axes", out_axes)
    axis_size = check_axis_size(label, axis_size)
    _check_axis_name(label, axis_name)

    @functools.wraps(f)
    def vmapped(*args, **kwargs):
        spec = tuple(in_axes) if isinstance(in_axes, list) else in_axes
        if isinstance(spec, tuple) and len(spec) != len(args):
            raise ValueError(
                f"{label}: in_axes has {len(spec)} entries but {name} got {len(args)} "
                "positional arguments; give one entry per argument"
            )
        leaves, in_tree = check_leaves(label, "argument ", args)
        paths = tree_flatten_with_path(args)[0]
        dims = axis_spec_leaves(label, "in_axes", spec, args)
        call = f
        if kwargs:
            # As in JAX, in_axes covers the positional arguments and keyword
            # arguments are mapped along their leading axis.
            kw_leaves, _ = check_leaves(label, "keyword argument ", kwargs)
            kw_paths = tree_flatten_with_path(kwargs)[0]
            _check_keyword_leaves(label, kw_leaves, kw_paths)
            leaves, paths, dims = leaves + kw_leaves, paths + kw_paths, dims + [0] * len(kw_leaves)
            in_tree = tree_flatten((args, kwargs))[1]

            def call(args, kwargs):
                return f(*args, **kwargs)
        size = mapped_size(label, leaves, dims, paths, axis_size)
        dims = [None if d is None else d % core.get_aval(x).ndim for x, d in zip(leaves, dims)]
        # An element of a mapped 1-d array is a NumPy scalar, as x[i] is in NumPy.
        avals = [core.get_aval(x) for x in leaves]
        member = [
            x if d is None else ScalarStruct(a.dtype) if a.ndim == 1 else member_aval(a, d)
            for x, a, d in zip(leaves, avals, dims)
        ]
        # Each member has the memory layout NumPy's loop gives it (x[:, i] is a
        # strided view), which decides whether its reshape is a view.
        layouts = [None if d is None or a.ndim == 1 else Member(x, d)
                   for x, a, d in zip(leaves, avals, dims)]
        flat, out_cell = flat_fun(call, label, in_tree, {}, {})
        with named_axis(axis_name, size) if axis_name is not None else contextlib.nullcontext():
            closed = trace_flat(flat, member, name, out_cell, differentiated=False,
                                layouts=layouts)
        opened, consts = open_jaxpr(closed)
        batched, out_dims = batch_jaxpr(
            opened, (None,) * len(consts) + tuple(dims), size, axis_name
        )
        outs = _owned(run_jaxpr(batched, list(consts) + list(leaves)), consts, leaves)
        out_tree = out_cell[-1]
        out_paths = tree_flatten_with_path(tree_unflatten(out_tree, outs))[0]
        axes = axis_spec_leaves(label, "out_axes", out_axes, tree_unflatten(out_tree, outs))
        moved = [move_out_axis(label, p, x, d, a, size)
                 for p, x, d, a in zip(out_paths, outs, out_dims, axes)]
        return tree_unflatten(out_tree, [
            _as_result(x) for x in moved
        ])

    vmapped.__name__ = vmapped.__qualname__ = f"vmap_of_{name}"
    return vmapped


def _check_keyword_leaves(label: str, leaves: Sequence[Any], paths) -> None:
    """Keyword arguments of a vmapped function are mapped along axis 0, so
    each leaf needs one."""
    for x, path in zip(leaves, paths):
        aval = core.get_aval(x)
        if not aval.shape:
            raise ValueError(
                f"{label}: keyword argument {keystr(path)} is a scalar ({aval.str_short()}), "
                "but keyword arguments are mapped along their leading axis (in_axes covers "
                "only the positional ones); pass it positionally with in_axes None for it, or "
                "close over it"
            )


# --------------------------------------------------------------------------
# Jacobians and Hessians
# --------------------------------------------------------------------------


def _basis_chunk(rows: range, offset: int, aval: ShapedArray) -> np.ndarray:
    """Rows ``rows`` of the identity matrix restricted to one leaf's columns
    (``offset`` onwards), shaped ``(len(rows), *aval.shape)``: never the whole
    identity, so chunked Jacobians stay in O(chunk * n) memory."""
    size = aval.size
    block = np.zeros((len(rows), size), aval.dtype)
    if aval.dtype == float0:  # an integer output's tangent: no basis entry is nonzero
        return block.reshape((len(rows),) + aval.shape)
    ks = np.arange(rows.start, rows.stop)
    hit = (ks >= offset) & (ks < offset + size)
    block[np.nonzero(hit)[0], ks[hit] - offset] = 1
    return block.reshape((len(rows),) + aval.shape)


def _batched_apply(closed: ClosedJaxpr, fixed: list, batched: list, size: int) -> list:
    """Apply ``closed`` to ``fixed`` (unbatched) inputs and ``batched`` inputs
    with a leading batch axis; results have the batch axis first."""
    dims = (None,) * len(fixed) + (0,) * len(batched)
    jaxpr, out_dims = batch_jaxpr(closed, dims, size, None)
    outs = run_jaxpr(jaxpr, fixed + batched)
    return [shape_prims.to_front(o, d, size) for o, d in zip(outs, out_dims)]


def _reshape(x, new_shape):
    return bind(shape_prims.reshape_p, x, new_sizes=tuple(new_shape))


class _Rows:
    """Chunks of rows stacked along axis 0.  NumPy chunks are written into one
    preallocated array, so peak memory is the result plus one chunk's work;
    traced (or device) chunks are concatenated."""

    def __init__(self, total: int):
        self.total = total
        self.parts: list = []
        self.buffer: np.ndarray | None = None
        self.filled = 0

    def add(self, chunk) -> None:
        if type(chunk) is not np.ndarray or self.parts:
            self.parts.append(chunk)
            return
        if self.buffer is None:
            self.buffer = np.empty((self.total,) + chunk.shape[1:], chunk.dtype)
        self.buffer[self.filled : self.filled + chunk.shape[0]] = chunk
        self.filled += chunk.shape[0]

    def stacked(self):
        if self.buffer is not None:
            return self.buffer
        if len(self.parts) == 1:
            return self.parts[0]
        return bind(shape_prims.concatenate_p, *self.parts, dimension=0)


def _jacobian(f: Callable, argnums, has_aux: bool, chunk_size, mode: str,
              holomorphic: bool = False) -> Callable:
    name = core.fun_name(f)
    label = f"{'jacfwd' if mode == 'fwd' else 'jacrev'}({name})"
    argnums = check_argnums(label, argnums)

    @functools.wraps(f)
    def jacobian_f(*args, **kwargs):
        nums, leaves, in_tree = diff_args(label, argnums, args, False, holomorphic,
                                           real_only=mode == "fwd")
        aux_cell: list = []
        out_cell: list = []
        flat = outputs_then_aux(
            lambda xs: f(*replace_args(args, nums, tree_unflatten(in_tree, xs)), **kwargs),
            label, name, has_aux, aux_cell, out_cell)
        lin = _linearized(flat, leaves, name, out_cell, [True] * len(leaves))
        out_tree, n_out = out_cell[-1]
        in_avals = lin.tangent_avals
        out_avals = [a.strip_weak() for a in lin.out_avals[:n_out]]
        check_jacobian_outputs(label, name, out_avals, mode, holomorphic)
        blocks = (_forward_blocks if mode == "fwd" else _reverse_blocks)(
            lin, in_avals, out_avals, chunk_size, label
        )
        per_out = []
        for i in range(n_out):
            tree = tree_unflatten(in_tree, blocks[i])
            per_out.append(tree[0] if isinstance(argnums, int) else tree)
        jac = tree_unflatten(out_tree, per_out)
        if has_aux:
            return jac, tree_unflatten(aux_cell[-1], lin.outs[n_out:])
        return jac

    jacobian_f.__name__ = jacobian_f.__qualname__ = f"{label.split('(')[0]}_of_{name}"
    return jacobian_f


def _forward_blocks(lin: Linearized, in_avals, out_avals, chunk_size, label) -> list:
    """Push chunks of the input basis through the linear map: blocks[i][j]
    of shape ``out_i.shape + in_j.shape``.  The basis goes as bands
    (``functrans.interpreters.structured``) where it can: a banded output's
    blocks are written straight from its band vectors, computed once (so
    chunks cost no memory beyond the result), and an output whose structure
    is lost on the way is the dense batched value of that program."""
    total = sum(a.size for a in in_avals)
    offsets = np.cumsum([0] + [a.size for a in in_avals])
    n_out = len(out_avals)
    chunks = chunk_ranges(total, chunk_size, label)
    found = _structured_basis(lin, in_avals, offsets, n_out, len(chunks))
    if found is not None:
        program, layout = found
        results = run_jaxpr(program, list(lin.residuals))
        fulls = [None if type(out) is structured.BandsOut
                 else shape_prims.to_front(results[out.index], out.dim, total) for out in layout]
    else:
        columns = [_Rows(total) for _ in range(n_out)]
        for rows in chunks:
            basis = [_basis_chunk(rows, int(o), a) for o, a in zip(offsets, in_avals)]
            outs = _batched_apply(lin.linear, list(lin.residuals), basis, len(rows))
            for i in range(n_out):
                columns[i].add(outs[i])
        fulls = [c.stacked() if total else None for c in columns]  # (total, *out_shape)
    blocks = []
    for i, out_aval in enumerate(out_avals):
        full = fulls[i]
        row = []
        for j, in_aval in enumerate(in_avals):
            if found is not None and type(found[1][i]) is structured.BandsOut:
                part = structured.block_of(found[1][i], results, int(offsets[j]), in_aval.size,
                                           like=list(results) + list(lin.residuals))
                if in_aval.ndim != 1:
                    part = _reshape(part, out_aval.shape + in_aval.shape)
                row.append(_as_result(part))
                continue
            if full is None or not is_inexact(out_aval.dtype):
                # An integer or bool output's block is zero in the input's
                # dtype, as jacrev's pulled-back cotangents give it.
                dtype = out_aval.dtype if is_inexact(out_aval.dtype) else in_aval.dtype
                row.append(np.zeros(out_aval.shape + in_aval.shape, dtype))
                continue
            part = bind(shape_prims.slice_p, full,
                        start_indices=(int(offsets[j]),) + (0,) * out_aval.ndim,
                        limit_indices=(int(offsets[j + 1]),) + out_aval.shape,
                        strides=(1,) * (out_aval.ndim + 1))
            part = _reshape(part, in_aval.shape + out_aval.shape)
            perm = tuple(range(in_aval.ndim, in_aval.ndim + out_aval.ndim)) + tuple(
                range(in_aval.ndim))
            if perm != tuple(range(len(perm))):
                part = bind(shape_prims.transpose_p, part, permutation=perm)
            row.append(_as_result(part))
        blocks.append(row)
    return blocks


def _structured_basis(lin: Linearized, in_avals, offsets, n_out: int, n_chunks: int):
    """The banded push of the basis (``structured.basis_program``), or None
    where the basis must go through ``vmap`` instead: no basis, collectives
    over named axes, or several chunks of a program whose structure is lost
    on the way (its dense part holds every row at once)."""
    total = int(offsets[-1])
    if not total:
        return None
    leaves = tuple((int(o), a) for o, a in zip(offsets, in_avals))
    found = structured.basis_program(lin.linear, len(lin.residuals), leaves, n_out)
    if found is None or (n_chunks > 1 and structured.dense_steps(found[1])):
        return None
    return found


def _reverse_blocks(lin: Linearized, in_avals, out_avals, chunk_size, label) -> list:
    """Pull chunks of the output basis back through the transposed linear map."""
    n_res, n_t, n_out = len(lin.residuals), len(in_avals), len(out_avals)
    n_aux = len(lin.out_avals) - n_out
    nonzero = (True,) * n_out + (False,) * n_aux
    transposed = transpose_jaxpr(lin.linear, (False,) * n_res + (True,) * n_t, nonzero)
    total = sum(a.size for a in out_avals)
    offsets = np.cumsum([0] + [a.size for a in out_avals])
    rows_of = [_Rows(total) for _ in range(n_t)]
    for rows in chunk_ranges(total, chunk_size, label):
        basis = [_basis_chunk(rows, int(o), a) for o, a in zip(offsets, out_avals)]
        cts = _batched_apply(transposed, list(lin.residuals), basis, len(rows))
        for j in range(n_t):
            rows_of[j].add(cts[j])
    stacked = [r.stacked() if total else None for r in rows_of]  # (total, *in_shape)
    blocks = []
    for i, out_aval in enumerate(out_avals):
        row = []
        for j, in_aval in enumerate(in_avals):
            if not total:
                row.append(np.zeros(out_aval.shape + in_aval.shape, in_aval.dtype))
                continue
            part = bind(shape_prims.slice_p, stacked[j],
                        start_indices=(int(offsets[i]),) + (0,) * in_aval.ndim,
                        limit_indices=(int(offsets[i + 1]),) + in_aval.shape,
                        strides=(1,) * (in_aval.ndim + 1))
            row.append(_as_result(_reshape(part, out_aval.shape + in_aval.shape)))
        blocks.append(row)
    return blocks


def _as_result(x):
    """An array result: NumPy scalars become 0-d arrays; tracers and device
    (CuPy) arrays stay as they are."""
    if isinstance(x, Tracer) or type(x) is np.ndarray or is_device_array(x):
        return x
    return np.asarray(x)


def jacfwd(
    f: Callable, argnums: int | Sequence[int] = 0, has_aux: bool = False,
    chunk_size: int | None = None, holomorphic: bool = False,
) -> Callable:
    """The Jacobian of ``f`` by forward mode: the input basis pushed through
    ``jvp`` (``chunk_size`` basis vectors at a time, all at once by default).
    An integer or bool output's block is zeros of the input's dtype, as
    ``jacrev`` gives it.

    >>> import functrans as ft, numpy as np
    >>> ft.jacfwd(lambda x: x ** 2)(np.array([1.0, 2.0]))
    array([[2., 0.],
           [0., 4.]])
    """
    check_callable("jacfwd", f)
    return _jacobian(f, argnums, has_aux, chunk_size, "fwd", holomorphic)


def jacrev(
    f: Callable, argnums: int | Sequence[int] = 0, has_aux: bool = False,
    chunk_size: int | None = None, holomorphic: bool = False,
) -> Callable:
    """The Jacobian of ``f`` by reverse mode: the output basis pulled back
    through ``vjp`` (``chunk_size`` basis vectors at a time).  Complex
    inputs are allowed for real outputs; ``holomorphic=True`` (complex inputs
    and outputs) gives the complex derivative."""
    check_callable("jacrev", f)
    return _jacobian(f, argnums, has_aux, chunk_size, "rev", holomorphic)


def hessian(
    f: Callable, argnums: int | Sequence[int] = 0, has_aux: bool = False,
    chunk_size: int | None = None, holomorphic: bool = False,
) -> Callable:
    """The Hessian of ``f``, forward over reverse: ``jacfwd(jacrev(f))``.
    ``chunk_size`` bounds the working memory of the forward pass over the
    basis to O(chunk_size * n).

    >>> import functrans as ft, numpy as np
    >>> ft.hessian(lambda x: np.sum(x ** 3))(np.array([1.0, 2.0]))
    array([[ 6.,  0.],
           [ 0., 12.]])
    """
    check_callable("hessian", f)
    inner = jacrev(f, argnums, has_aux, holomorphic=holomorphic)
    return jacfwd(inner, argnums, has_aux, chunk_size, holomorphic=holomorphic)
