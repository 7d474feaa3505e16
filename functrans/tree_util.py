"""Pytrees with JAX's semantics, backed by optree.

Tuples, lists, dicts (flattened in sorted key order), namedtuples, ``None``
(a node with no children) and classes registered with
``register_pytree_node`` are containers; everything else is a leaf.  optree
does the flattening in C++, which matters because every transformed call
flattens its arguments and results.
"""

from __future__ import annotations

from typing import Any, Callable

import optree

_NS = "functrans"

PyTreeDef = optree.PyTreeSpec


def tree_flatten(tree: Any, is_leaf: Callable[[Any], bool] | None = None):
    """``(leaves, treedef)``; ``tree_unflatten(treedef, leaves)`` rebuilds the tree."""
    return optree.tree_flatten(tree, is_leaf=is_leaf, namespace=_NS)


def tree_unflatten(treedef: PyTreeDef, leaves) -> Any:
    return optree.tree_unflatten(treedef, leaves)


def tree_leaves(tree: Any, is_leaf: Callable[[Any], bool] | None = None) -> list:
    return optree.tree_leaves(tree, is_leaf=is_leaf, namespace=_NS)


def tree_structure(tree: Any, is_leaf: Callable[[Any], bool] | None = None) -> PyTreeDef:
    return optree.tree_structure(tree, is_leaf=is_leaf, namespace=_NS)


def tree_map(f: Callable, tree: Any, *rest: Any, is_leaf: Callable[[Any], bool] | None = None):
    """Apply ``f`` leafwise; ``rest`` trees must have ``tree``'s structure."""
    return optree.tree_map(f, tree, *rest, is_leaf=is_leaf, namespace=_NS)


def register_pytree_node(nodetype: type, flatten_func: Callable, unflatten_func: Callable):
    """Make ``nodetype`` a container: ``flatten_func(x) -> (children, aux_data)``,
    ``unflatten_func(aux_data, children) -> x``, as in JAX."""
    optree.register_pytree_node(nodetype, flatten_func, unflatten_func, namespace=_NS)


def tree_flatten_with_path(tree: Any, is_leaf: Callable[[Any], bool] | None = None):
    """``(paths, leaves, treedef)``: each path a tuple of keys and indices."""
    return optree.tree_flatten_with_path(tree, is_leaf=is_leaf, namespace=_NS)


def keystr(path: tuple) -> str:
    """``[0]['w']``: a path in the form error messages show it."""
    return "".join(f"[{k!r}]" for k in path)
