"""What each equation of a program calls on the host: its primitive's NumPy
kernel for the operand types, its NumPy function, or its impl with the
equation's params bound.

The interpreter and the generated code call the same callables, so the two
ways of running a program give the same values; equal operations compare
equal, so the generated code names each distinct one once.
"""

from __future__ import annotations

import functools


class _Bound:
    """``impl`` with its params bound; equal for equal (impl, params), so the
    generated code names each distinct operation once."""

    __slots__ = ("fn", "key", "params")

    def __init__(self, impl, params: dict):
        self.fn = impl
        self.params = params
        self.key = (impl, tuple(sorted(params.items(), key=lambda kv: kv[0])))

    def __call__(self, *args):
        return self.fn(*args, **self.params)

    def __eq__(self, other):
        return type(other) is _Bound and self.key == other.key

    def __hash__(self):
        return hash(self.key)


def callable_of(e):
    """What runs the equation ``e`` on NumPy operands: its primitive's kernel
    for the operands' avals where it gives one, else its NumPy function or
    impl, with the params bound."""
    if e.primitive.numpy_kernel is not None:
        kernel = e.primitive.numpy_kernel([a.aval for a in e.inputs], **e.params)
        if kernel is not None:
            return kernel
    if not e.params:
        return e.primitive.numpy_fn or e.primitive.impl
    try:
        bound = _Bound(e.primitive.impl, e.params)
        hash(bound)
        return bound
    except TypeError:
        return functools.partial(e.primitive.impl, **e.params)
