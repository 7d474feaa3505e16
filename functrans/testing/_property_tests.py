"""``derivative_test``: a property-based derivative test in one line, hypothesis
drawing points like an example and ``check_derivatives`` checking each.  It
imports hypothesis, so ``functrans.testing`` loads it only when asked for."""

from __future__ import annotations

import functools
from typing import Any, Callable, Sequence

from hypothesis import given, settings

from functrans.testing._check_derivatives import check_derivatives
from functrans.testing.strategies import assume_smooth, like


def derivative_test(
    order: int = 2,
    *,
    free_axes: int | Sequence[int] | None = None,
    min_value: float = -2.0,
    max_value: float = 2.0,
    max_side: int = 5,
    margin: float = 1e-2,
    max_examples: int | None = None,
    derandomize: bool | None = None,
    **check: Any,
) -> Callable[[Callable[[], tuple[Callable, Sequence[Any]]]], Callable[[], None]]:
    """Turn ``make() -> (f, example_args)`` into a test that runs
    ``check_derivatives(f, args, order, **check)`` on points hypothesis draws
    like ``example_args`` (``strategies.like`` with ``free_axes``,
    ``min_value``, ``max_value``, ``max_side``), rejecting those within
    ``margin`` of a kink (``strategies.assume_smooth``).  A failure shrinks to
    the smallest failing point.  ``max_examples`` and ``derandomize`` set
    hypothesis's settings for this test; otherwise the active profile's apply
    (derandomize it in CI).

    >>> import numpy as np
    >>> from functrans.testing import derivative_test
    >>> @derivative_test(order=2, free_axes=0, max_examples=10)
    ... def test_softplus():
    ...     return (lambda x: np.log1p(np.exp(x)), (np.zeros(3),))
    >>> test_softplus()
    """

    def decorate(make: Callable[[], tuple[Callable, Sequence[Any]]]) -> Callable[[], None]:
        f, example = make()
        example = tuple(example)

        @given(args=like(example, free_axes, min_value, max_value, 1, max_side))
        def test(args):
            assume_smooth(f, args, margin)
            check_derivatives(f, args, order, **check)

        if max_examples is not None or derandomize is not None:
            chosen = settings()  # the active profile, with what was given on top
            if max_examples is not None:
                chosen = settings(chosen, max_examples=max_examples)
            if derandomize is not None:
                chosen = settings(chosen, derandomize=derandomize)
            test = chosen(test)

        @functools.wraps(make)
        def run() -> None:
            test()

        return run

    return decorate
