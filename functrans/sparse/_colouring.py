"""Colourings of sparsity patterns, vectorised with NumPy: O(nnz) work per
candidate, no Python loop over vertices.

* ``column_colouring(p)``: columns that share a row get different colours, so
  one product with the sum of a colour's basis vectors gives each of its
  columns' entries separately (forward mode; reverse mode colours the rows,
  the columns of ``p.T``).
* ``hessian_colouring(p)``: a colouring of a symmetric pattern that every
  entry can be read from directly (``star_recovery`` reads it): a star
  colouring (every path on four vertices gets at least three colours), made
  of a distance-2 colouring of the pattern without its densest vertices,
  which get colours of their own.

Two strategies, the fewer colours winning: the cyclic colouring ``j mod k``
in natural order for the smallest valid ``k`` from the lower bound (the
largest row count) up, which is optimal on banded patterns (three colours for
a tridiagonal one) and on many stencils; and a greedy colouring in rounds
(Jones-Plassmann: each round colours, with the smallest colour free among its
neighbours, every vertex ahead of all its uncoloured neighbours in a fixed
pseudo-random order), for irregular patterns.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

#: How many cyclic colourings past the lower bound are tried.
CYCLIC_TRIES = 8


def row_indices(p) -> np.ndarray:
    """The row of every stored entry of the CSR array ``p``."""
    return np.repeat(np.arange(p.shape[0], dtype=np.int64), np.diff(p.indptr))


def column_colouring(p) -> np.ndarray:
    """A colour per column of the CSR pattern ``p``, columns sharing a row
    coloured apart."""
    p = sp.csr_array(p, dtype=bool)
    n = p.shape[1]
    if p.nnz == 0:
        return np.zeros(n, np.int64)
    rows, cols = row_indices(p), p.indices.astype(np.int64)
    lower = int(np.diff(p.indptr).max())
    cyclic = _cyclic(rows, cols, lower, n)
    if cyclic is not None and cyclic.max() + 1 == lower:
        return cyclic  # the lower bound: no colouring has fewer
    conflicts = _csr_bool(p.T @ p)
    greedy = _greedy_rounds(conflicts)
    if cyclic is not None and cyclic.max() <= greedy.max():
        return cyclic
    return greedy


#: How many of the densest vertices ``hessian_colouring`` may set apart.
MAX_HUBS = 64


def hessian_colouring(p) -> np.ndarray:
    """A colour per column of the symmetric pattern ``p`` such that
    ``star_recovery`` finds every entry (see the module docstring).

    A vertex of degree ``d`` forces ``d`` colours on a distance-2 colouring
    (an arrowhead pattern needs ``n``), but a star colouring can give it a
    colour of its own and colour the rest without it: an entry in its row or
    column is then read where it is alone with its colour, and the others
    as before.  So the densest vertices (1, 2, 4 ... of them, while they have
    more neighbours than half the colours of the best colouring so far) are
    tried as such hubs where they stand out (more than twice the median
    degree), and the fewest colours win (2 for an arrowhead)."""
    p = sp.csr_array(p, dtype=bool)
    best = column_colouring(p)
    n = p.shape[0]
    if n == 0:
        return best
    degree = np.diff(p.indptr)
    order = np.argsort(-degree, kind="stable")
    rows, cols = row_indices(p), p.indices
    typical = 2 * float(np.median(degree))
    k = 1
    while (k <= min(MAX_HUBS, n - 1) and degree[order[k - 1]] > typical
           and degree[order[k - 1]] > (best.max() + 1) / 2):
        keep = np.ones(n, bool)
        keep[order[:k]] = False
        inside = keep[rows] & keep[cols]
        rest = _csr_bool(sp.coo_array((np.ones(int(inside.sum()), bool),
                                       (rows[inside], cols[inside])), shape=p.shape))
        colours = column_colouring(rest) if rest.nnz else np.zeros(n, np.int64)
        colours[order[:k]] = colours.max() + 1 + np.arange(k)
        if colours.max() < best.max():
            best = colours
        k *= 2
    return best


def _cyclic(rows: np.ndarray, cols: np.ndarray, lower: int, n: int) -> np.ndarray | None:
    """``cols mod k`` for the first valid ``k`` in ``lower .. lower + CYCLIC_TRIES``."""
    for k in range(lower, min(lower + CYCLIC_TRIES, n) + 1):
        keys = rows * k + cols % k
        keys.sort()
        if not (keys[1:] == keys[:-1]).any():
            return np.arange(n, dtype=np.int64) % k
    return None


def _greedy_rounds(conflicts) -> np.ndarray:
    """Jones-Plassmann greedy colouring of the graph ``conflicts`` (a CSR
    array; its diagonal is ignored)."""
    n = conflicts.shape[0]
    src = row_indices(conflicts)
    dst = conflicts.indices.astype(np.int64)
    off = src != dst
    src, dst = src[off], dst[off]
    priority = np.random.default_rng(0).permutation(n)
    colour = np.full(n, -1, np.int64)
    while True:
        open_ = colour < 0
        if not open_.any():
            return colour
        both = open_[src] & open_[dst]
        beaten = np.zeros(n, bool)
        beaten[src[both & (priority[dst] > priority[src])]] = True
        ready = open_ & ~beaten
        edge = ready[src] & ~open_[dst]
        colour[ready] = 0
        if edge.any():
            u, c = src[edge], colour[dst[edge]]
            key = np.sort(u * (n + 1) + c)  # by vertex, then colour
            key = key[np.r_[True, key[1:] != key[:-1]]]
            u, c = key // (n + 1), key % (n + 1)
            start = np.flatnonzero(np.r_[True, u[1:] != u[:-1]])
            rank = np.arange(u.shape[0]) - np.repeat(start, np.diff(np.r_[start, u.shape[0]]))
            gap = np.where(c != rank, rank, np.iinfo(np.int64).max)
            first = np.minimum.reduceat(gap, start)
            size = np.diff(np.r_[start, u.shape[0]])
            colour[u[start]] = np.where(first == np.iinfo(np.int64).max, size, first)
        # Each round colours at least the vertex first in the order, so this ends.


def _csr_bool(a):
    a = sp.csr_array(a, dtype=bool)
    a.sum_duplicates()
    a.sort_indices()
    return a


def check_column_colouring(p, colours: np.ndarray) -> None:
    """Raise if two columns of ``p`` sharing a row have one colour: a wrong
    colouring would give wrong derivatives, never silently."""
    p = sp.csr_array(p, dtype=bool)
    if p.nnz == 0:
        return
    k = int(colours.max()) + 1
    keys = row_indices(p) * k + colours[p.indices]
    keys.sort()
    if (keys[1:] == keys[:-1]).any():
        raise RuntimeError("functrans.sparse: a colouring lets two columns of one row "
                           "share a colour; please report this pattern")


def star_recovery(p, colours: np.ndarray) -> np.ndarray:
    """For each stored entry ``(i, j)`` of the symmetric CSR pattern ``p`` (in
    CSR order), the flat index into the compressed product ``B`` (``B[c, i] =
    (H v_c)[i]``, shape ``colours x n``) that holds ``H[i, j]``: ``B[c(j), i]``
    where ``c(j)`` is the only column of its colour in row ``i``, else
    ``B[c(i), j]``; both halves read the upper triangle's entry.  Raises if
    neither is alone (the colouring is not a star colouring of ``p``)."""
    n = p.shape[0]
    rows, cols = row_indices(p), p.indices.astype(np.int64)
    k = int(colours.max()) + 1 if n else 1
    count = _colour_counts(rows * k + colours[cols], n * k)  # columns of colour c in row i
    direct = count(rows * k + colours[cols]) == 1
    out = colours[cols] * n + rows
    if not direct.all():
        # The transposed read: (j, c(i)) must be alone in row j.
        alone = count(cols * k + colours[rows]) == 1
        if not (direct | alone).all():
            raise RuntimeError("functrans.sparse: the colouring is not a star colouring "
                               "of this Hessian pattern; please report it")
        out = np.where(direct, out, colours[rows] * n + cols)
    # (i, j) and (j, i) read one entry, so the result is exactly symmetric.  The
    # CSR position of (j, i), in CSR order of (i, j): the positions in CSC order
    # (a counting sort), as the pattern is symmetric.
    positions = sp.csr_array((np.arange(rows.shape[0]), p.indices, p.indptr), shape=p.shape)
    mirror = positions.tocsc().data
    return np.where(rows <= cols, out, out[mirror])


def _colour_counts(keys: np.ndarray, size: int):
    """A function giving, for keys, how often each occurs in ``keys`` (all in
    ``range(size)``): a table where it is small, else a sorted search."""
    if size <= 8 * keys.shape[0] + 1024:
        table = np.bincount(keys, minlength=size)
        return lambda q: table[q]
    uniq = np.sort(keys)
    starts = np.flatnonzero(np.r_[True, uniq[1:] != uniq[:-1]])
    counts = np.diff(np.r_[starts, uniq.shape[0]])
    uniq = uniq[starts]

    def count(q):
        pos = np.minimum(np.searchsorted(uniq, q), max(uniq.shape[0] - 1, 0))
        return np.where(uniq[pos] == q, counts[pos], 0) if uniq.shape[0] else np.zeros_like(q)

    return count
