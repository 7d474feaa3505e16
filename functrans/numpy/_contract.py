"""Contractions for ``functrans.numpy``: dot, matmul, vdot, inner, outer,
tensordot and einsum.

All of them are one ``dot_general`` (``primitives/linalg.py``) plus, where
needed, shape equations around it: a transpose to put the result's axes in
NumPy's order, a broadcast of matmul's batch axes, and for einsum the
diagonals (a gather) and sums (``reduce_sum``) of indices that only one
operand carries.  Results have NumPy's shapes and dtypes.
"""

from __future__ import annotations

import functools
import operator
from typing import Any

import numpy as np

from functrans.core import Tracer, bind
from functrans.errors import ShapeError
from functrans.numpy import _inplace, _memory_order
from functrans.numpy._elementwise import multiply
from functrans.numpy._indexing import getitem
from functrans.numpy._shape import _broadcast, _broadcast_shape, _convert, _reshape, _transpose
from functrans.numpy._util import asarray, normalize_axis
from functrans.primitives.elementwise import convert_element_type_p
from functrans.primitives.elementwise import unary as _unary
from functrans.primitives.linalg import dot_general_p
from functrans.primitives.reductions import reduce_sum_p

__all__ = ["dot", "matmul", "vdot", "vecdot", "inner", "outer", "tensordot", "einsum"]

conj_p = _unary["conj"]


def _operand(x, dtype=None):
    """``x`` as an array or tracer; a weak (Python-scalar) tracer becomes strong,
    as NumPy turns Python scalars into arrays in these functions."""
    x = asarray(x)
    if isinstance(x, Tracer) and x.weak_type:
        x = bind(convert_element_type_p, x, new_dtype=x.dtype)
    return x if dtype is None else _convert(x, dtype)


def _dot_general(a, b, contract=((), ()), batch=((), ())):
    dims = ((tuple(contract[0]), tuple(contract[1])), (tuple(batch[0]), tuple(batch[1])))
    return bind(dot_general_p, a, b, dimension_numbers=dims)


def _check_sizes(name: str, a, b, a_axes, b_axes) -> None:
    for i, j in zip(a_axes, b_axes):
        if a.shape[i] != b.shape[j]:
            raise ShapeError(
                f"{name}: shapes {tuple(a.shape)} and {tuple(b.shape)} are not aligned: "
                f"axis {i} of the first has size {a.shape[i]} but axis {j} of the second "
                f"has size {b.shape[j]}"
            )


# -- dot, inner, outer, vdot ------------------------------------------------------------


def dot(a, b, out=None):
    """``np.dot``: the sum product over the last axis of ``a`` and the
    second-to-last of ``b`` (the only one when ``b`` is 1-d).

    >>> import numpy as np
    >>> dot(np.array([[1, 2], [3, 4]]), np.array([1, 1]))
    array([3, 7])
    """
    a, b = _operand(a), _operand(b)
    if a.ndim == 0 or b.ndim == 0:
        return _dot_general(a, b)
    ca, cb = a.ndim - 1, max(b.ndim - 2, 0)
    _check_sizes("dot", a, b, (ca,), (cb,))
    return _dot_general(a, b, ((ca,), (cb,)))


def inner(a, b, /):
    """``np.inner``: the sum product over the last axes of ``a`` and ``b``."""
    a, b = _operand(a), _operand(b)
    if a.ndim == 0 or b.ndim == 0:
        return _dot_general(a, b)
    _check_sizes("inner", a, b, (a.ndim - 1,), (b.ndim - 1,))
    return _dot_general(a, b, ((a.ndim - 1,), (b.ndim - 1,)))


def outer(a, b, out=None):
    """``np.outer``: ``a.ravel()[:, None] * b.ravel()[None, :]``."""
    a, b = _operand(a), _operand(b)
    return _dot_general(_reshape(a, (a.size,)), _reshape(b, (b.size,)))


def vdot(a, b, /):
    """``np.vdot``: the dot product of the flattened arrays, conjugating ``a``."""
    a, b = _operand(a), _operand(b)
    if a.dtype.kind == "c":
        a = bind(conj_p, a)
    if a.size != b.size:
        raise ShapeError(
            f"vdot: the arrays must have the same number of elements, got shapes "
            f"{tuple(a.shape)} and {tuple(b.shape)}"
        )
    return _dot_general(_reshape(a, (a.size,)), _reshape(b, (b.size,)), ((0,), (0,)))


def vecdot(x1, x2, /, *, axis=-1):
    """``numpy.vecdot``: dot products of vectors along ``axis``, the first
    operand conjugated, the other axes broadcast.  The vector axes must have
    the same size (they are not broadcast against each other).

    >>> vecdot(np.ones((4, 3)), np.arange(3.0))
    array([3., 3., 3., 3.])
    """
    a, b = _operand(x1), _operand(x2)
    n, ax = min(a.ndim, b.ndim), operator.index(axis)
    if not -n <= ax < n:
        raise ShapeError(
            f"fnp.vecdot: axis={axis!r} for operands of shapes {tuple(a.shape)} and "
            f"{tuple(b.shape)}; the vector axis must exist in both: use an axis in "
            f"[-{n}, -1] (counted from the end)"
        )
    ax = ax - n if ax >= 0 else ax
    if a.shape[ax] != b.shape[ax]:
        raise ShapeError(
            f"fnp.vecdot: the vectors along axis {axis} have {a.shape[ax]} and "
            f"{b.shape[ax]} components (shapes {tuple(a.shape)} and {tuple(b.shape)}); "
            "they must have the same length"
        )
    if a.dtype.kind == "c":
        a = bind(conj_p, a)
    return summed_products(a, b, ax)


def summed_products(a, b, axis: int):
    """``sum(a * b)`` over ``axis`` (negative, counted on the broadcast
    shape) as NumPy's inner products compute it: in the operands' dtype (a
    sum would widen small integers to int64), float16 in float32 and rounded
    once at the end (NumPy's half-precision dot accumulates in float, and
    rounding each product and partial sum to float16 lost a digit where
    terms cancel)."""
    dtype = np.result_type(a.dtype, b.dtype)
    if dtype == np.float16:
        a, b = _convert(a, np.dtype(np.float32)), _convert(b, np.dtype(np.float32))
    prod = multiply(a, b)
    out = bind(reduce_sum_p, prod, axes=(prod.ndim + axis,))
    return out if out.dtype == dtype else _convert(out, dtype)


# -- matmul ----------------------------------------------------------------------------------


def matmul(x1, x2, /, out=None, *, dtype=None):
    """``np.matmul`` (``@``): matrix products broadcast over leading batch axes;
    a 1-d operand is a vector whose axis disappears from the result.

    >>> import numpy as np
    >>> matmul(np.ones((5, 2, 3)), np.ones((3, 4))).shape
    (5, 2, 4)
    """
    a, b = _operand(x1, dtype), _operand(x2, dtype)
    for i, x in enumerate((a, b)):
        if x.ndim == 0:
            raise ShapeError(
                f"matmul: operand {i} is 0-d (shape ()), but matmul needs at least 1-d "
                "operands; use multiply (*) for scalars"
            )
    ca, cb = a.ndim - 1, max(b.ndim - 2, 0)
    if a.shape[ca] != b.shape[cb]:
        raise ShapeError(
            f"matmul: shapes {tuple(a.shape)} and {tuple(b.shape)} do not match: the last "
            f"axis of the first has size {a.shape[ca]}, but the contracted axis of the "
            f"second has size {b.shape[cb]}"
        )
    batch_a, batch_b = tuple(a.shape[:-2]), tuple(b.shape[:-2])
    # Equal batch shapes (no batch axes, the common case) need no broadcasting.
    batch = batch_a if batch_a == batch_b else _broadcast_shape("matmul", batch_a, batch_b)
    if not batch_b:  # a's batch axes are free axes of a: already in place
        return _dot_general(a, b, ((ca,), (cb,)))
    if not batch_a:  # the result is (m, *batch, n): move m after the batch axes
        res = _dot_general(a, b, ((ca,), (cb,)))
        if a.ndim == 1:
            return res
        nb = len(batch)
        return _transpose(res, tuple(range(1, nb + 1)) + (0,) + tuple(range(nb + 1, res.ndim)))
    a, b = _batch_to(a, batch), _batch_to(b, batch)
    nb = len(batch)
    return _dot_general(a, b, ((nb + 1,), (nb,)), (tuple(range(nb)), tuple(range(nb))))


def _batch_to(x, batch: tuple[int, ...]):
    shape = batch + tuple(x.shape[-2:])
    return _broadcast(x, shape, tuple(range(len(shape) - x.ndim, len(shape))))


# -- tensordot ----------------------------------------------------------------------------------


def _axis_seq(name: str, axes, ndim: int) -> tuple[int, ...]:
    axes = axes if isinstance(axes, (tuple, list)) else [axes]
    return tuple(normalize_axis(name, ax, ndim) for ax in axes)


def tensordot(a, b, axes=2):
    """``np.tensordot``: sum products over the last ``axes`` axes of ``a`` and
    the first ``axes`` of ``b``, or over the axes listed in ``axes = (a_axes,
    b_axes)``.

    >>> import numpy as np
    >>> tensordot(np.ones((2, 3, 4)), np.ones((4, 3, 5)), ([1, 2], [1, 0])).shape
    (2, 5)
    """
    a, b = _operand(a), _operand(b)
    if isinstance(axes, (tuple, list)):
        if len(axes) != 2:
            raise ValueError(f"tensordot: axes must be an int or a pair of sequences, got {axes!r}")
        ax_a = _axis_seq("tensordot", axes[0], a.ndim)
        ax_b = _axis_seq("tensordot", axes[1], b.ndim)
    else:
        n = operator.index(axes)
        if not 0 <= n <= min(a.ndim, b.ndim):
            raise ValueError(
                f"tensordot: cannot sum over {n} axes of arrays of shapes {tuple(a.shape)} "
                f"and {tuple(b.shape)}"
            )
        ax_a, ax_b = tuple(range(a.ndim - n, a.ndim)), tuple(range(n))
    if len(ax_a) != len(ax_b) or len(set(ax_a)) != len(ax_a) or len(set(ax_b)) != len(ax_b):
        raise ValueError(
            f"tensordot: axes {ax_a} and {ax_b} must be equally long lists of distinct axes"
        )
    _check_sizes("tensordot", a, b, ax_a, ax_b)
    return _dot_general(a, b, (ax_a, ax_b))


# -- einsum ------------------------------------------------------------------------------------

_LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"


def einsum(*operands, out=None, optimize=False, dtype=None, order="K", casting="safe"):
    """``np.einsum``: Einstein summation, in the string form (``"ij,jk->ik"``,
    implicit output, ``...``, repeated indices for diagonals and traces) or
    the interleaved form ``einsum(a, [0, 1], b, [1, 2], [0, 2])``.
    Operands are contracted pairwise from left to right; ``optimize`` is
    accepted for compatibility and ignored.

    >>> import numpy as np
    >>> einsum("ii->", np.eye(3))
    array(3.)
    """
    subscripts, arrays = _einsum_args(operands)
    if out is not None:
        # NumPy computes in the operands' and out's common dtype, then casts
        # the result into out by the casting rule.
        computed = einsum(*operands, optimize=optimize, dtype=dtype or np.result_type(
            *(x.dtype for x in arrays), getattr(out, "dtype", np.float64)), casting=casting)
        return _inplace.write_out("einsum", computed, out, casting, False)
    result, labels, output = _einsum(subscripts, arrays, dtype, casting)
    if len(arrays) == 1 and type(arrays[0]) is Tracer:
        return _single_operand(result, arrays[0], subscripts, dtype, labels, output)
    return result


def _einsum(subscripts: str, arrays: list, dtype, casting: Any):
    """einsum's value, the labels of the first operand and the output's."""
    if dtype is not None:
        for x in arrays:
            if not np.can_cast(x.dtype, dtype, casting):
                raise TypeError(
                    f"einsum: cannot cast operand of dtype {x.dtype} to dtype={np.dtype(dtype)}"
                    f" under casting={casting!r}"
                )
    # NumPy computes in the operands' common dtype: a bool operand summed on
    # its own next to an int one counts, it does not take the logical or.
    common = np.result_type(*(x.dtype for x in arrays)) if dtype is None else dtype
    xs = [_operand(x, common) for x in arrays]
    inputs, output = _parse_subscripts(subscripts, xs)
    first = inputs[0]
    sizes = _label_sizes(inputs, xs)
    xs, inputs = map(list, zip(*(_squeeze_labels(x, labels, sizes)
                                 for x, labels in zip(xs, inputs))))
    for i in range(len(xs)):
        others = set(output).union(*(inp for k, inp in enumerate(inputs) if k != i))
        xs[i], inputs[i] = _sum_labels(xs[i], inputs[i], others)
    acc, labels = xs[0], inputs[0]
    for i in range(1, len(xs)):
        keep = set(output).union(*inputs[i + 1 :])
        acc, labels = _contract_pair(acc, labels, xs[i], inputs[i], keep)
    return _transpose(acc, tuple(labels.index(c) for c in output)), first, output


def _single_operand(out, x, subscripts: str, dtype, labels: list[str], output: list[str]):
    """NumPy's einsum of one operand that sums no label (``"ij->ji"``,
    ``"ii->i"``, ``"...->..."``) and needs no cast returns a writable view
    of it, and a scalar where the result has no axes; ``out`` is linked as
    that view (an update of either reaches the other)."""
    if out.ndim == 0:
        return _memory_order.copy(out, "K") if out is x else out
    if not set(labels) <= set(output) or (dtype is not None and np.dtype(dtype) != x.dtype):
        return out  # a new array
    if out is x:
        out = _memory_order.copy(x, "K")
    _inplace.link(out, x, (functools.partial(np.einsum, subscripts),
                           functools.partial(_einsum_view, subscripts), (), {}, None))
    return out


def _einsum_view(subscripts: str, x):
    """The view ``_single_operand`` links, made again from ``x``."""
    return _einsum(subscripts, [x], None, "safe")[0]


def _einsum_args(operands) -> tuple[str, list]:
    """The subscripts string and the arrays, from either calling form."""
    if len(operands) < 2:
        raise ValueError("einsum: needs subscripts and at least one operand")
    if isinstance(operands[0], str):
        return operands[0], [asarray(x) for x in operands[1:]]
    arrays, terms = list(operands[0::2]), list(operands[1::2])
    out_term = None
    if len(arrays) > len(terms):  # an odd count: the last item is the output sublist
        arrays, out_term = arrays[:-1], arrays[-1]
    subscripts = ",".join(_sublist(t) for t in terms)
    if out_term is not None:
        subscripts += "->" + _sublist(out_term)
    return subscripts, [asarray(x) for x in arrays]


def _sublist(term) -> str:
    try:
        return "".join("..." if s is Ellipsis else _LETTERS[operator.index(s)] for s in term)
    except (IndexError, TypeError):
        raise ValueError(
            f"einsum: subscript lists may hold Ellipsis and ints in [0, 52), got {term!r}"
        ) from None


def _parse_subscripts(subscripts: str, xs) -> tuple[list[list[str]], list[str]]:
    """Per-operand label lists and the output labels; ``...`` axes get labels
    outside the letters, shared across operands from the right."""
    spec = subscripts.replace(" ", "")
    lhs, arrow, rhs = spec.partition("->")
    terms = lhs.split(",")
    if len(terms) != len(xs):
        raise ValueError(
            f"einsum: subscripts {subscripts!r} name {len(terms)} operands, but {len(xs)} "
            "were given"
        )
    inputs = [_term_labels(subscripts, t, x.ndim, i) for i, (t, x) in enumerate(zip(terms, xs))]
    n_ell = max((sum(c not in _LETTERS for c in labels) for labels in inputs), default=0)
    ell = [chr(0x100 + k) for k in range(n_ell)]
    inputs = [_name_ellipsis(labels, ell) for labels in inputs]
    if not arrow:
        once = sorted(c for c in set(lhs) if c in _LETTERS and lhs.count(c) == 1)
        return inputs, ell + once
    output = _term_labels(subscripts, rhs, None, None)
    if "." not in output and n_ell:
        raise ValueError(
            f"einsum: output of {subscripts!r} has no '...', but the operands have "
            "'...' axes; add '...' to the output to keep them"
        )
    output = [c for c in output if c != "."]
    if "." in rhs:
        at = rhs.replace("...", ".").index(".")
        output[at:at] = ell
    _check_output(subscripts, inputs, output)
    return inputs, output


def _name_ellipsis(labels: list[str], ell: list[str]) -> list[str]:
    """An operand's "." axes named by the last of the ``...`` labels: ``...``
    axes broadcast against each other aligned from the right."""
    mine = iter(ell[len(ell) - labels.count(".") :])
    return [next(mine) if c == "." else c for c in labels]


def _term_labels(subscripts: str, term: str, ndim: int | None, i: int | None) -> list[str]:
    """One term's labels, with ``...`` expanded to one "." per axis it covers."""
    if term.count("...") > 1 or "." in term.replace("...", ""):
        raise ValueError(f"einsum: invalid '...' in term {term!r} of {subscripts!r}")
    letters = term.replace("...", "")
    bad = [c for c in letters if c not in _LETTERS]
    if bad:
        raise ValueError(f"einsum: invalid subscript {bad[0]!r} in {subscripts!r}; use letters")
    if ndim is None:
        return list(term.replace("...", "."))
    n_ell = ndim - len(letters)
    if n_ell < 0 or (n_ell and "..." not in term):
        raise ValueError(
            f"einsum: operand {i} has {ndim} axes, but its term {term!r} in {subscripts!r} "
            f"names {len(letters)}"
        )
    return list(term.replace("...", "." * n_ell))


def _check_output(subscripts: str, inputs, output) -> None:
    seen = set().union(*inputs)
    for c in output:
        if c not in seen:
            raise ValueError(f"einsum: output subscript {c!r} of {subscripts!r} is in no input")
        if output.count(c) > 1:
            raise ValueError(f"einsum: output subscript {c!r} of {subscripts!r} repeats")


def _label_sizes(inputs, xs) -> dict[str, int]:
    """Each label's size; size-1 axes broadcast against larger ones, as in NumPy."""
    sizes: dict[str, int] = {}
    for i, (labels, x) in enumerate(zip(inputs, xs)):
        for c, d in zip(labels, x.shape):
            if sizes.get(c, 1) != 1 and d not in (1, sizes[c]):
                name = c if c in _LETTERS else "..."
                raise ShapeError(
                    f"einsum: subscript {name!r} has sizes {sizes[c]} and {d} (operand {i} "
                    f"has shape {tuple(x.shape)}); sizes of one subscript must match or be 1"
                )
            sizes[c] = d if sizes.get(c, 1) == 1 else sizes[c]
    return sizes


def _squeeze_labels(x, labels, sizes):
    """One operand with its diagonals taken and its unit axes that broadcast
    against larger ones dropped, so that it carries each label at most once."""
    x, labels = _diagonals(x, list(labels))
    unit = tuple(j for j, c in enumerate(labels) if x.shape[j] == 1 and sizes[c] != 1)
    if unit:
        x = _reshape(x, tuple(d for j, d in enumerate(x.shape) if j not in unit))
        labels = [c for j, c in enumerate(labels) if j not in unit]
    return x, labels


def _sum_labels(x, labels, others: set[str]):
    """Sum out the labels no other operand and not the output carries, keeping
    the dtype (einsum sums bool with ``or`` and int32 in int32)."""
    private = tuple(j for j, c in enumerate(labels) if c not in others)
    if not private:
        return x, labels
    x = _convert(bind(reduce_sum_p, x, axes=private), x.dtype)
    return x, [c for j, c in enumerate(labels) if j not in private]


def _diagonals(x, labels: list[str]):
    """Take the diagonal over every label repeated within one operand (a gather)."""
    for c in labels:
        where = [j for j, d in enumerate(labels) if d == c]
        if len(where) == 1:
            continue
        sizes = {x.shape[j] for j in where}
        if len(sizes) > 1:
            raise ShapeError(
                f"einsum: repeated subscript {c!r} indexes axes {where} of sizes "
                f"{[x.shape[j] for j in where]}; a diagonal needs equal sizes"
            )
        n = sizes.pop()
        x = getitem(x, tuple(np.arange(n) if j in where else slice(None) for j in range(x.ndim)))
        rest = [d for j, d in enumerate(labels) if j not in where]
        # NumPy puts the advanced-index axis first unless the indexed axes are adjacent.
        at = where[0] if where == list(range(where[0], where[0] + len(where))) else 0
        return _diagonals(x, rest[:at] + [c] + rest[at:])
    return x, labels


def _contract_pair(a, la: list[str], b, lb: list[str], keep: set[str]):
    """``dot_general`` of two operands: shared labels still needed later are
    batch axes, the other shared labels are summed."""
    shared = [c for c in la if c in lb]
    batch = [c for c in shared if c in keep]
    summed = [c for c in shared if c not in keep]
    out = _dot_general(
        a, b,
        ([la.index(c) for c in summed], [lb.index(c) for c in summed]),
        ([la.index(c) for c in batch], [lb.index(c) for c in batch]),
    )  # fmt: skip
    labels = batch + [c for c in la if c not in shared] + [c for c in lb if c not in shared]
    return out, labels

