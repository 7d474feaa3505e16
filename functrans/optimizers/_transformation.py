"""The shape every optimizer has: a ``GradientTransformation`` is a pair of
pure functions, ``init(params) -> state`` and ``update(updates, state,
params=None) -> (updates, state)``, over pytrees of arrays.  ``chain``
composes them, ``apply_updates`` adds the result to the parameters.

The state is a pytree of arrays (NamedTuples of moment estimates and step
counts), never Python numbers that change, so a training step that calls
``update`` can be compiled once with ``functrans.jit`` and called with each
new state.
"""

from __future__ import annotations

from typing import Any, Callable, NamedTuple

import numpy as np

import functrans.numpy as fnp
from functrans.devices import device_put, is_device_array
from functrans.tree_util import keystr, tree_flatten_with_path, tree_map, tree_structure


class GradientTransformation(NamedTuple):
    """``init(params) -> state``; ``update(updates, state, params=None) ->
    (new_updates, new_state)``.  Both are pure: they return new trees and
    never change the ones they are given."""

    init: Callable[[Any], Any]
    update: Callable[..., tuple[Any, Any]]


class EmptyState(NamedTuple):
    """The state of a transformation that keeps none."""


def identity() -> GradientTransformation:
    """Passes the updates through unchanged (a placeholder in ``chain``)."""
    return GradientTransformation(lambda params: EmptyState(),
                                  lambda updates, state, params=None: (updates, state))


def chain(*transforms: GradientTransformation) -> GradientTransformation:
    """Apply ``transforms`` one after the other; the state is the tuple of
    their states.

    >>> import numpy as np
    >>> from functrans import optimizers as optim
    >>> opt = optim.chain(optim.clip_by_global_norm(1.0), optim.sgd(0.5))
    >>> state = opt.init(np.zeros(2))
    >>> updates, state = opt.update(np.array([3.0, 4.0]), state)
    >>> updates
    array([-0.3, -0.4])
    """
    for i, t in enumerate(transforms):
        if not isinstance(t, GradientTransformation):
            raise TypeError(
                f"chain: argument {i} is a {type(t).__name__}, not a GradientTransformation; "
                "pass optimizers and transformations such as sgd(0.1) or "
                "clip_by_global_norm(1.0) (called, not the functions themselves)"
            )

    def init(params):
        return tuple(t.init(params) for t in transforms)

    def update(updates, state, params=None):
        if not (isinstance(state, tuple) and len(state) == len(transforms)):
            raise ValueError(
                f"chain.update: the state must be the tuple of {len(transforms)} states that "
                f"init returned, got {type(state).__name__}"
                + (f" of length {len(state)}" if isinstance(state, tuple) else "")
            )
        new_states = []
        for t, s in zip(transforms, state):
            updates, s = t.update(updates, s, params)
            new_states.append(s)
        return updates, tuple(new_states)

    return GradientTransformation(init, update)


def apply_updates(params: Any, updates: Any) -> Any:
    """``params + updates`` leafwise, each result cast back to its
    parameter's dtype (float32 parameters stay float32 whatever the dtype
    of a learning-rate schedule).

    >>> import numpy as np
    >>> apply_updates({"w": np.ones(2, np.float32)}, {"w": np.array([0.5, -0.5])})
    {'w': array([1.5, 0.5], dtype=float32)}
    """
    check_structures("apply_updates", "updates", updates, params)
    check_floating("apply_updates", params)
    return tree_map(lambda p, u: fnp.asarray(p + u).astype(fnp.result_type(p)), params, updates)


def global_norm(tree: Any):
    """The 2-norm of all leaves of ``tree`` together, accumulated in float64
    (squares of large float32 entries would overflow float32)."""
    total = fnp.zeros((), np.float64)
    for x in _leaves(tree):
        total = fnp.add(total, fnp.sum(abs_squared(_widened(x))))  # mixes CuPy and NumPy
    return fnp.sqrt(total)


# -- helpers shared by the transformations -----------------------------------------------


def _leaves(tree: Any) -> list:
    return tree_flatten_with_path(tree)[1]


def _widened(x):
    """``x`` in float64 (complex128 if complex)."""
    return fnp.asarray(x).astype(np.complex128 if fnp.iscomplexobj(x) else np.float64)


def abs_squared(x):
    """``|x|^2`` elementwise, real for complex ``x``."""
    return fnp.real(x * fnp.conj(x)) if fnp.iscomplexobj(x) else x * x


def zeros_like(x, dtype: Any = None):
    """Zeros of ``x``'s shape, in ``dtype`` (``x``'s by default), on ``x``'s
    device: moments of CuPy parameters live on the GPU."""
    z = np.zeros(fnp.shape(x), fnp.result_type(x) if dtype is None else dtype)
    return device_put(z, "gpu") if is_device_array(x) else z


def real_zeros_like(x):
    """Zeros like ``x`` in its real dtype (second moments of complex
    parameters are real)."""
    return zeros_like(x, real_dtype(x))


def real_dtype(x) -> np.dtype:
    dtype = np.dtype(fnp.result_type(x))
    return np.finfo(dtype).dtype if dtype.kind == "c" else dtype


def next_count(count):
    """``count + 1`` for an int32 step count, staying at int32's largest
    value rather than wrapping to a negative count (whose bias corrections
    and schedule values would be garbage)."""
    return fnp.where(count < np.iinfo(np.int32).max, count + 1, count)


def times(u, s):
    """``u * s`` with the scalar ``s`` (a Python number or a 0-d array, say
    a schedule's value or a bias correction) cast to ``u``'s real dtype,
    so that float32 updates stay float32."""
    if type(s) in (int, float):  # weak Python scalars; np.float64 is a float subclass
        return u * s
    # fnp.multiply, not *: a CuPy u refuses a NumPy 0-d s, functrans mixes them
    return fnp.multiply(u, fnp.asarray(s).astype(real_dtype(u)))


def check_floating(name: str, params: Any) -> None:
    """Refuse parameters an optimizer cannot move: integer and boolean leaves."""
    paths, leaves, _ = tree_flatten_with_path(params)
    for path, leaf in zip(paths, leaves):
        dtype = np.dtype(fnp.result_type(leaf))
        if dtype.kind not in "fc":
            raise TypeError(
                f"{name}: params{keystr(path)} has dtype {dtype}; optimizers move "
                "floating-point parameters only: cast it with .astype(float), or keep it "
                "out of the params (pass it as a separate argument of the loss)"
            )


def check_structures(name: str, what: str, tree: Any, params: Any) -> None:
    """``tree`` (gradients, updates) must be shaped like ``params``: the same
    structure, and each leaf the shape of its parameter (NumPy would
    broadcast a (3, 1) update onto a (3,) parameter into a (3, 3) one)."""
    if params is None:
        return
    got, want = tree_structure(tree), tree_structure(params)
    if got != want:
        raise ValueError(
            f"{name}: {what} must have the structure of params, got {got} for params of "
            f"structure {want}; pass the gradient of the loss with respect to params "
            "(grad of a function of params returns that structure)"
        )
    check_shapes(name, what, tree, params, "params")


def check_shapes(name: str, what: str, tree: Any, like: Any, like_what: str) -> None:
    """Each leaf of ``tree`` must have the shape of the matching leaf of
    ``like``, a tree of the same structure (the params, or a state made
    from them by ``init``)."""
    paths, leaves, _ = tree_flatten_with_path(tree)
    for path, x, y in zip(paths, leaves, _leaves(like)):
        got, want = fnp.shape(x), fnp.shape(y)
        if got != want:
            raise ValueError(
                f"{name}: {what}{keystr(path)} has shape {got}, but {like_what}{keystr(path)} "
                f"has shape {want}; pass {what} shaped like the params, one leaf per "
                "parameter (the gradient of the loss with respect to params is)"
            )


def check_number(name: str, arg: str, value: Any, lo: float, hi: float | None = None,
                 lo_open: bool = False, hi_open: bool = True) -> None:
    """``value`` must be a real number in the given interval."""
    ok = isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, bool)
    if ok:
        v = float(value)
        ok = (v > lo if lo_open else v >= lo) and (
            hi is None or (v < hi if hi_open else v <= hi))
    if not ok:
        interval = (("(" if lo_open else "[") + f"{lo:g}, "
                    + ("inf)" if hi is None else f"{hi:g}" + (")" if hi_open else "]")))
        raise ValueError(f"{name}: {arg} must be a number in {interval}, got {value!r}")
