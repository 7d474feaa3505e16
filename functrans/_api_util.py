"""Argument handling shared by the transforms in ``functrans.api`` and by
``jit``, ``lax`` and the custom-derivative decorators: ``argnums`` and axis
specifications checked and normalised, argument and output trees flattened
and checked, the user's function wrapped to take and return flat leaves.
Every check raises an error naming the transform, the user's function, the
argument (with its pytree path), what was found and the fix.
"""

from __future__ import annotations

import inspect
from typing import Any, Callable, Sequence

import numpy as np
import optree

from functrans import array_types, core
from functrans.core import ShapedArray, ShapeDtypeStruct, Tracer
from functrans.devices import check_devices
from functrans.dtypes import float0, is_inexact
from functrans.errors import DTypeError
from functrans.primitives import shape as shape_prims
from functrans.tree_util import keystr, tree_flatten, tree_flatten_with_path, tree_unflatten


def _is_index(x: Any) -> bool:
    """An int (NumPy's included) that is not a bool: ``True`` is no argument
    position and no axis, although Python lets it pass for 1."""
    return isinstance(x, (int, np.integer)) and not isinstance(x, (bool, np.bool_))


def _shown(x: Any) -> str:
    """``x`` as an error message shows it: its repr, cut short, and its type."""
    text = repr(x)
    text = text if len(text) <= 40 else text[:37] + "..."
    return f"{text} ({type(x).__name__})"


def check_callable(transform: str, f: Any) -> None:
    """The function a transform is given must be callable: refused at once,
    not when the transformed function is called or traced."""
    if not callable(f):
        raise TypeError(
            f"{transform}: the function to transform must be callable, got {_shown(f)}; pass "
            "the function itself (f, not a value such as f(x))"
        )


def check_argnums(label: str, argnums: Any, static: bool = False) -> int | tuple[int, ...]:
    """``argnums`` (``static_argnums`` if ``static``) checked when the
    transform is made: an int, or a sequence of ints, returned as an int or a
    tuple (the caller keeps the distinction: one position gives one result, a
    sequence a tuple).  Differentiated positions must be distinct (a repeat
    would take two gradients of one argument); static ones form a set, so a
    repeat is harmless.  Ranges depend on the call: ``normalize_argnums``."""
    what = "static_argnums" if static else "argnums"
    fix = f"pass {what}=0 for the first argument, or {what}=(0, 1) for several"
    if _is_index(argnums):
        return int(argnums)
    if isinstance(argnums, (str, bytes)) or not isinstance(argnums, Sequence):
        raise TypeError(
            f"{label}: {what} must be an int or a sequence of ints (argument positions), "
            f"got {_shown(argnums)}{_not_bool(argnums)}; {fix}"
        )
    for k, i in enumerate(argnums):
        if not _is_index(i):
            raise TypeError(
                f"{label}: {what} must be an int or a sequence of ints (argument positions), "
                f"but {what}[{k}] is {_shown(i)}{_not_bool(i)}; {fix}"
            )
    nums = tuple(int(i) for i in argnums)
    for k, i in enumerate(nums):
        if i in nums[:k] and not static:
            raise ValueError(
                f"{label}: argnums {nums} names argument {i} more than once; list each "
                "position once"
            )
    return nums


def _not_bool(x: Any) -> str:
    return ", and a bool is no position" if isinstance(x, (bool, np.bool_)) else ""


def check_argnames(label: str, what: str, argnames: Any) -> tuple[str, ...]:
    """``static_argnames``: a str or a sequence of strs, as a tuple."""
    if isinstance(argnames, str):
        return (argnames,)
    if isinstance(argnames, Sequence) and all(isinstance(n, str) for n in argnames):
        return tuple(argnames)
    raise TypeError(
        f"{label}: {what} must be a str or a sequence of strs (keyword argument names), "
        f"got {_shown(argnames)}; pass {what}='name' or {what}=('a', 'b')"
    )


def check_argnames_exist(label: str, f: Callable, argnames: tuple[str, ...]) -> None:
    """Each of ``static_argnames`` must name a parameter ``f`` takes by
    keyword (anything goes when ``f`` takes ``**kwargs`` or has no signature
    to read): a misspelt name would otherwise leave that argument traced."""
    try:
        params = inspect.signature(f).parameters
    except (TypeError, ValueError):
        return
    if any(p.kind is p.VAR_KEYWORD for p in params.values()):
        return
    for n in argnames:
        p = params.get(n)
        if p is None or p.kind is p.POSITIONAL_ONLY:
            listing = ", ".join(q.name for q in params.values() if q.kind is not q.POSITIONAL_ONLY)
            what = "is positional-only" if p is not None else "is not one of its parameters"
            raise ValueError(
                f"{label}: static_argnames names {n!r}, which {what} (it takes by keyword: "
                f"{listing or 'nothing'}); name one of those, or mark a positional argument "
                "static with static_argnums"
            )


def normalize_argnums(name: str, argnums: int | Sequence[int], nargs: int,
                      static: bool = False) -> tuple[int, ...]:
    """The positions ``argnums`` (checked by ``check_argnums``) gives in a call
    with ``nargs`` positional arguments, negative ones counted from the end.
    Two that name one argument are refused unless ``static`` (then one is
    kept)."""
    nums = (argnums,) if isinstance(argnums, int) else tuple(argnums)
    out: list[int] = []
    for i in nums:
        if not -nargs <= i < nargs:
            raise ValueError(
                f"{name}: argnums/static_argnums value {i} is out of range for a call "
                f"with {nargs} positional arguments; use a position in [{-nargs}, {nargs})"
            )
        if i % nargs in out and not static:
            first = nums[out.index(i % nargs)]
            raise ValueError(
                f"{name}: argnums {nums} names argument {i % nargs} twice: {first} and {i} "
                f"are the same position in a call with {nargs} positional arguments; list "
                "each position once"
            )
        if i % nargs not in out:
            out.append(i % nargs)
    return tuple(out)


def check_axis_spec(label: str, what: str, spec: Any) -> None:
    """``in_axes`` / ``out_axes`` checked when ``vmap`` is made: an int, None or
    a pytree whose leaves are ints or None; the error gives the bad leaf's
    path inside the specification."""
    paths, leaves, _ = tree_flatten_with_path(spec)
    for path, leaf in zip(paths, leaves):
        if _is_index(leaf):
            continue
        if isinstance(leaf, str) and leaf.lstrip("-").isdigit():
            fix = f"write {int(leaf)}, not the string {leaf!r}"
        elif isinstance(leaf, float) and leaf.is_integer():
            fix = f"write {int(leaf)}"
        elif isinstance(leaf, (bool, np.bool_)):
            fix = "a bool is no axis: write 0 or 1"
        else:
            fix = "pass an int such as 0 or -1, or None"
        raise TypeError(
            f"{label}: {what}{keystr(path)} is {_shown(leaf)}, but each {what} entry must be "
            f"an int axis (negative counts from the end) or None (not mapped); {fix}"
        )


def check_axis_size(label: str, axis_size: Any) -> int | None:
    """``vmap``'s ``axis_size``: None (taken from the mapped arguments) or a
    non-negative int."""
    if axis_size is None:
        return None
    if not _is_index(axis_size):
        raise TypeError(
            f"{label}: axis_size must be an int (the size of the mapped axis) or None, got "
            f"{_shown(axis_size)}; pass axis_size={_suggested_size(axis_size)}"
        )
    if axis_size < 0:
        raise ValueError(
            f"{label}: axis_size must be non-negative, got {int(axis_size)}; it is the number "
            "of members the function is mapped over (0 or more), or None to take it from "
            "the mapped arguments"
        )
    return int(axis_size)


def _suggested_size(x: Any) -> str:
    if isinstance(x, float) and x.is_integer() and x >= 0:
        return str(int(x))
    return "N (an int) or None"


def check_leaves(name: str, what: str, tree: Any) -> tuple[list, Any]:
    """Flatten ``tree`` and check every leaf is an array, a scalar or a tracer;
    otherwise raise a TypeError naming the leaf's path and the way out.  A
    memmap leaf comes back as a plain ndarray viewing its buffer; other
    ndarray subclasses and structured arrays are refused (``array_types``)."""
    paths, leaves, treedef = tree_flatten_with_path(tree)
    for k, (path, leaf) in enumerate(zip(paths, leaves)):
        if isinstance(leaf, np.ndarray) and (type(leaf) is not np.ndarray
                                             or leaf.dtype.fields is not None and
                                             leaf.dtype != float0):
            leaves[k] = _plain_leaf(name, what, path, leaf)
            continue
        if isinstance(leaf, (np.ndarray, np.generic)) and leaf.dtype == object:
            raise DTypeError(
                f"{name}: {what}{keystr(path)} is an object array (object{list(leaf.shape)}), "
                "which holds Python objects, not numbers; convert it with "
                "np.asarray(x, dtype=float) (an object array usually comes from a list of "
                "mixed or ragged values)"
            )
        if isinstance(leaf, (Tracer, np.ndarray, np.generic, ShapeDtypeStruct, bool, int,
                             float, complex)):
            continue
        if hasattr(leaf, "__array__") and hasattr(leaf, "dtype"):
            continue
        raise TypeError(
            f"{name}: {what}{keystr(path)} is a {type(leaf).__name__}, which is not an "
            "array; pass arrays or Python scalars, or mark the argument static "
            "(static_argnums)"
        )
    if what != "output":
        check_devices(name, what, tree, leaves)
    return leaves, treedef


def _plain_leaf(name: str, what: str, path, leaf: np.ndarray) -> np.ndarray:
    """``leaf``, an ndarray subclass or a structured array, as the plain
    ndarray functrans computes with (a memmap's view), or the TypeError that
    says why it is refused and what to pass instead."""
    return array_types.plain(leaf, f"{name}: {what}{keystr(path)}")


def flat_fun(f: Callable, name: str, in_tree, static: dict[int, Any], kwargs: dict):
    """Wrap ``f`` to take flat leaves and return flat output leaves; the output
    tree is left in the returned cell after the call."""
    out_tree_cell: list = []

    def flat(*leaves):
        dynamic = tree_unflatten(in_tree, leaves)
        it = iter(dynamic)
        args = [static[i] if i in static else next(it) for i in range(len(static) + len(dynamic))]
        out = f(*args, **kwargs)
        out_leaves, out_tree = check_leaves(name, "output", out)
        out_tree_cell.append(out_tree)
        return out_leaves

    return flat, out_tree_cell


def check_grad_inputs(
    label: str, nums: tuple, diff: tuple, allow_int: bool, holomorphic: bool = False,
    real_only: bool = False,
) -> None:
    """Differentiable inputs are float or complex (JAX's rules): complex ones
    must all be complex with ``holomorphic=True``, and ``real_only``
    (``jacfwd`` without ``holomorphic``) refuses them."""
    paths, leaves, _ = tree_flatten_with_path(diff)
    for path, leaf in zip(paths, leaves):
        aval = core.get_aval(leaf)
        dtype = aval.dtype
        where = f"argument {nums[path[0]]}{keystr(path[1:])}"
        if holomorphic and dtype.kind != "c":
            raise DTypeError(
                f"{label}: holomorphic=True needs complex inputs, but {where} has type "
                f"{aval.str_short()}; convert it with .astype(complex), or drop "
                "holomorphic=True"
            )
        if real_only and dtype.kind == "c" and not holomorphic:
            raise DTypeError(
                f"{label}: {where} is complex ({aval.str_short()}); jacfwd needs real "
                "inputs unless holomorphic=True (for a holomorphic function); for other "
                "functions of complex inputs use jacrev or vjp"
            )
        if not is_inexact(dtype) and not allow_int:
            raise DTypeError(
                f"{label}: argument {nums[path[0]]}{keystr(path[1:])} has integer or bool "
                f"type {core.get_aval(leaf).str_short()}; differentiate with respect to "
                "float arguments (x.astype(float)), or pass allow_int=True to get float0 "
                "zeros for it"
            )


def pass_the_input_checks(leaves: Sequence[Any], holomorphic: bool, real_only: bool) -> bool:
    """Whether ``leaves``, all of a call's arguments, are NumPy arrays or
    Python floats that the checks of ``diff_args`` (devices, leaf types,
    dtypes) all pass: one look at each leaf, instead of those checks' four
    flattenings of the arguments, in the common eager call on host arrays."""
    kinds = "c" if holomorphic else "f" if real_only else "fc"
    for x in leaves:
        t = type(x)
        if not (t is np.ndarray and x.dtype.kind in kinds or t is float and "f" in kinds):
            return False
    return True


#: The tree of ``(x,)`` for a leaf ``x``: one array argument, differentiated.
#: ``diff_args`` hands back this very object for the call ``f(x)`` with
#: ``argnums=0`` (the caller may then skip rebuilding trees).
ONE_LEAF = tree_flatten((0.0,))[1]


def diff_args(label: str, argnums, args: tuple, allow_int: bool, holomorphic: bool,
               real_only: bool = False):
    """The positions, flattened leaves and tree of the arguments to
    differentiate, after checking devices and dtypes."""
    if len(args) == 1 and type(argnums) is int and argnums in (0, -1):
        leaves = list(args)  # the common call, f(x): no flattening to do
        if pass_the_input_checks(leaves, holomorphic, real_only):
            return (0,), leaves, ONE_LEAF
    nums = normalize_argnums(label, argnums, len(args))
    diff = tuple(args[i] for i in nums)
    if len(nums) == len(args):
        leaves, in_tree = tree_flatten(diff)
        if pass_the_input_checks(leaves, holomorphic, real_only):
            return nums, leaves, in_tree
    check_devices(label, "argument ", args, tree_flatten(args)[0], call="args")
    # Checked with the other arguments blanked out (None is an empty node), so
    # that error paths give each argument's position in the call.
    check_leaves(label, "argument ", tuple(a if i in nums else None for i, a in enumerate(args)))
    leaves, in_tree = tree_flatten(diff)
    check_grad_inputs(label, nums, diff, allow_int, holomorphic, real_only=real_only)
    return nums, leaves, in_tree


def split_aux(label: str, name: str, out: Any, has_aux: bool, aux_cell: list,
               first: str = "out"):
    """``(out, aux leaves)``: with ``has_aux`` the function must return the pair
    ``(out, aux)`` (``first`` names its first part in the error); the aux tree
    is recorded in ``aux_cell``."""
    if not has_aux:
        return out, []
    if not (isinstance(out, (tuple, list)) and len(out) == 2):
        raise TypeError(
            f"{label}: with has_aux=True, {name} must return a pair ({first}, aux), "
            f"got {type(out).__name__}"
        )
    out, aux = out
    aux_leaves, aux_tree = tree_flatten(aux)
    aux_cell.append(aux_tree)
    return out, aux_leaves


def replace_args(args: tuple, nums: tuple, new: Sequence[Any]) -> list:
    out = list(args)
    for i, x in zip(nums, new):
        out[i] = x
    return out


def check_scalar_output(label: str, name: str, out: Any, holomorphic: bool = False) -> None:
    if type(out) is Tracer and not out.aval.shape and out.aval.dtype.kind == (
            "c" if holomorphic else "f"):
        return  # the common case, in one look
    if isinstance(out, (tuple, list, dict)) or out is None:
        raise TypeError(
            f"{label}: {name} must return a scalar, got a {type(out).__name__}; "
            "use jacrev for several outputs, or has_aux=True to return extra values"
        )
    aval = core.get_aval(out)
    if holomorphic:
        if aval.shape != () or aval.dtype.kind != "c":
            raise TypeError(
                f"{label}: with holomorphic=True, {name} must return a complex scalar, got "
                f"{aval.str_short()}; convert it with .astype(complex), or drop holomorphic=True"
            )
        return
    if aval.shape == () and aval.dtype.kind == "c":
        raise TypeError(
            f"{label}: {name} must return a real float scalar, got {aval.str_short()}; pass "
            "holomorphic=True if it is holomorphic, or differentiate a real function of it "
            "(its abs, .real or .imag)"
        )
    if aval.shape != () or not is_inexact(aval.dtype):
        raise TypeError(
            f"{label}: {name} must return a real float scalar, got {aval.str_short()}; "
            "sum it, or use jacrev for a vector output"
        )


def tuple_arg(label: str, what: str, x: Any) -> tuple:
    if not isinstance(x, (tuple, list)):
        raise TypeError(f"{label}: {what} must be a tuple or list, got {type(x).__name__}")
    return tuple(x)


def check_like(label: str, what: str, xs: Sequence[Any], avals: Sequence[ShapedArray],
                paths) -> list[Any]:
    """``xs`` (a memmap as a plain ndarray; other ndarray subclasses refused),
    each of which must have the shape and dtype of the matching aval.  A
    weakly typed Python number takes the aval's dtype, except a complex one
    for a real aval: that would drop its imaginary part (or, run as it is,
    give a real argument a complex cotangent)."""
    checked = []
    for x, aval, path in zip(xs, avals, paths):
        if isinstance(x, np.ndarray) and type(x) is not np.ndarray:
            x = _plain_leaf(label, what, path, x)
        checked.append(x)
        got = core.get_aval(x)
        if got.shape != aval.shape or (got.dtype != aval.dtype and not (
                got.weak_type and (got.dtype.kind != "c" or aval.dtype.kind == "c"))):
            raise TypeError(
                f"{label}: {what}{keystr(path)} has type {got.str_short()} but "
                f"{aval.str_short()} is expected; pass an array of that shape and dtype"
            )
    return checked


def outputs_then_aux(call: Callable, label: str, name: str, has_aux: bool, aux_cell: list,
                      out_cell: list) -> Callable:
    """The flat function ``vjp`` and the Jacobians trace: ``call(leaves)``'s
    output leaves, then its aux leaves; ``out_cell`` gets the output tree and
    leaf count."""

    def flat(*xs):
        out, aux_leaves = split_aux(label, name, call(xs), has_aux, aux_cell)
        out_leaves, out_tree = check_leaves(label, "output", out)
        out_cell.append((out_tree, len(out_leaves)))
        return list(out_leaves) + list(aux_leaves)

    return flat


def axis_spec_leaves(label: str, what: str, spec: Any, tree: Any, path: tuple = ()) -> list:
    """One axis (int or None) per leaf of ``tree``, from ``spec``, a tree prefix
    of it (JAX's in_axes / out_axes semantics)."""
    if spec is None or _is_index(spec):
        return [None if spec is None else int(spec)] * len(tree_flatten(tree)[0])
    if isinstance(spec, list) and not isinstance(tree, list):
        spec = tuple(spec)  # a list for a tuple, as JAX allows; a list matches a list
    s = optree.tree_flatten_one_level(spec, none_is_leaf=False, namespace="functrans")
    t = _one_level(tree)
    if t is None or type(spec) is not type(tree) or s.entries != t.entries or (
            s.metadata != t.metadata):
        whole = "arguments" if what == "in_axes" else "outputs"
        there = (f"a {type(tree).__name__} with keys {list(t.entries)}" if t is not None
                 else f"a leaf ({type(tree).__name__}), which takes one axis or None")
        raise ValueError(
            f"{label}: {what} must be a tree prefix of the {whole if not path else 'value'}"
            f" it maps: at {what}{keystr(path)} it is a {type(spec).__name__} with keys "
            f"{list(s.entries)}, but the value there is {there}; give one axis per "
            "argument (or None) with the same structure"
        )
    out: list = []
    for key, sub_spec, sub_tree in zip(t.entries, s.children, t.children):
        out += axis_spec_leaves(label, what, sub_spec, sub_tree, path + (key,))
    return out


def _one_level(tree: Any):
    """``tree``'s children and keys, or None for a leaf."""
    if tree_flatten(tree)[1].is_leaf():
        return None
    return optree.tree_flatten_one_level(tree, none_is_leaf=False, namespace="functrans")


def move_out_axis(label: str, path, x, dim: int | None, axis: int | None, size: int):
    if axis is None:
        if dim is not None:
            raise ValueError(
                f"{label}: out_axes is None for output{keystr(path)}, but that output varies "
                "along the mapped axis; give it an out axis, or return an unmapped value there"
            )
        return x
    aval = core.get_aval(x)
    rank = aval.ndim + (dim is None)
    if not -rank <= axis < rank:
        raise ValueError(
            f"{label}: out_axes {axis} is out of range for output{keystr(path)} of rank {rank}"
        )
    return shape_prims.moveaxis(shape_prims.to_front(x, dim, size), 0, axis % rank)


def member_aval(aval: ShapedArray, dim: int) -> ShapedArray:
    return ShapedArray(aval.shape[:dim] + aval.shape[dim + 1 :], aval.dtype)


def mapped_size(label: str, leaves, dims, paths, axis_size: int | None) -> int:
    sizes = {}
    for x, d, path in zip(leaves, dims, paths):
        if d is None:
            continue
        aval = core.get_aval(x)
        if not -aval.ndim <= d < aval.ndim:
            raise ValueError(
                f"{label}: in_axes {d} is out of range for argument{keystr(path)} of type "
                f"{aval.str_short()} (rank {aval.ndim}); use an axis in "
                f"[{-aval.ndim}, {aval.ndim}) or None"
            )
        sizes[path] = aval.shape[d]
    if not sizes:
        if axis_size is None:
            raise ValueError(
                f"{label}: no argument is mapped (every in_axes entry is None), so the batch "
                "size is unknown; pass axis_size="
            )
        return axis_size
    distinct = set(sizes.values()) | ({axis_size} if axis_size is not None else set())
    if len(distinct) > 1:
        listing = ", ".join(f"argument{keystr(p)} has size {n}" for p, n in sizes.items())
        extra = f" and axis_size={axis_size}" if axis_size is not None else ""
        raise ValueError(
            f"{label}: mapped axes must all have the same size, but {listing}{extra}; map "
            "axes of one size (in_axes=None for an argument that is not mapped)"
            + (", or drop axis_size" if axis_size is not None else "")
        )
    return distinct.pop()


def chunk_ranges(total: int, chunk_size: int | None, label: str):
    if chunk_size is not None and (not isinstance(chunk_size, int) or chunk_size < 1):
        raise ValueError(f"{label}: chunk_size must be a positive int or None, got {chunk_size!r}")
    step = total if chunk_size is None else chunk_size
    return [range(r, min(r + step, total)) for r in range(0, total, max(step, 1))]


def check_jacobian_outputs(label: str, name: str, avals, mode: str, holomorphic: bool):
    """JAX's rules: holomorphic=True needs complex outputs; without it, reverse
    mode needs real ones (it would pull back a real basis through a complex map)."""
    for i, aval in enumerate(avals):
        if holomorphic and aval.dtype.kind != "c":
            raise TypeError(
                f"{label}: with holomorphic=True, {name} must return complex outputs, but "
                f"output {i} is {aval.str_short()}; convert it with .astype(complex)"
            )
        if not holomorphic and mode == "rev" and aval.dtype.kind == "c":
            raise TypeError(
                f"{label}: output {i} of {name} is complex ({aval.str_short()}); jacrev "
                "needs real outputs unless holomorphic=True (for a holomorphic function); "
                "for others use jacfwd or vjp"
            )
