"""Operand layouts: cutting flat operand lists into named groups and back.

An equation of a primitive with sub-Jaxprs (``scan``, ``while_loop``,
``recorded_loop``) takes its operands as one flat list, groups laid end to
end (constants, carry, per-step inputs) with their sizes in the params.  Its
rules read them by name: a NamedTuple per layout, next to the primitive,
filled with ``split_list`` and flattened back with ``flatten``;
``map_groups`` turns one into flags (which operands are linear, which
tangents nonzero).  ``partition_list``, ``merge_lists`` and ``fill_in``
separate and put back the entries a flag list picks."""

from __future__ import annotations

from typing import Any, Callable, Iterable, NamedTuple, Sequence, TypeVar

L = TypeVar("L", bound=NamedTuple)


def split_list(xs: Sequence[Any], sizes: Sequence[int]) -> list[list]:
    """``xs`` cut into consecutive pieces of the given ``sizes``, then the rest."""
    xs = list(xs)
    pieces, start = [], 0
    for n in sizes:
        pieces.append(xs[start : start + n])
        start += n
    pieces.append(xs[start:])
    return pieces


def flatten(groups: Iterable[Iterable[Any]]) -> list:
    """The groups' entries end to end (a layout's flat operand list)."""
    return [x for group in groups for x in group]


def partition_list(flags: Sequence[bool], xs: Sequence[Any]) -> tuple[list, list]:
    """The entries of ``xs`` where ``flags`` is false, and those where it is true."""
    off = [x for f, x in zip(flags, xs, strict=True) if not f]
    on = [x for f, x in zip(flags, xs, strict=True) if f]
    return off, on


def merge_lists(flags: Sequence[bool], off: Iterable[Any], on: Iterable[Any]) -> list:
    """The inverse of ``partition_list``: the next entry of ``on`` where
    ``flags`` is true, of ``off`` where it is false."""
    off, on = iter(off), iter(on)
    return [next(on) if f else next(off) for f in flags]


def fill_in(flags: Sequence[bool], values: Iterable[Any],
            others: Sequence[Any] | None = None) -> list:
    """One entry per flag: the next of ``values`` where it is true, the entry
    of ``others`` (None when not given) where it is false."""
    values = iter(values)
    if others is None:
        return [next(values) if f else None for f in flags]
    return [next(values) if f else o for f, o in zip(flags, others, strict=True)]


def map_groups(fn: Callable[[Any], Any], layout: L) -> L:
    """``layout`` (a NamedTuple of lists) with ``fn`` applied to every entry."""
    return layout._make([fn(x) for x in group] for group in layout)
