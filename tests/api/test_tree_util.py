"""``functrans.tree_util`` follows JAX's pytree semantics."""

from __future__ import annotations

import collections

import numpy as np
import pytest
from hypothesis import given

from functrans import tree_util as tu
from functrans.testing import strategies as fts

Point = collections.namedtuple("Point", "x y")
Other = collections.namedtuple("Other", "x y")


class Box:
    """A registered container: two children and static metadata."""

    def __init__(self, lo, hi, label):
        self.lo, self.hi, self.label = lo, hi, label

    def __eq__(self, other):
        return type(other) is Box and (self.lo, self.hi, self.label) == (
            other.lo, other.hi, other.label)


flattened: list = []


def _flatten_box(b):
    flattened.append(b)
    return (b.lo, b.hi), b.label


tu.register_pytree_node(Box, _flatten_box, lambda label, children: Box(*children, label))


class Opaque:
    """An unregistered class: a leaf."""


def test_dicts_flatten_in_sorted_key_order():
    leaves, treedef = tu.tree_flatten({"b": 1, "a": 2, "c": 3})
    assert leaves == [2, 1, 3]
    assert tu.tree_unflatten(treedef, [20, 10, 30]) == {"a": 20, "b": 10, "c": 30}
    assert tu.tree_structure({"b": 0, "a": 0}) == tu.tree_structure({"a": 1, "b": 1})


def test_ordered_dicts_keep_insertion_order():
    leaves, _ = tu.tree_flatten(collections.OrderedDict([("b", 1), ("a", 2)]))
    assert leaves == [1, 2]


def test_none_is_a_node_without_children():
    assert tu.tree_leaves(None) == []
    assert tu.tree_leaves([1, None, (None, 2)]) == [1, 2]
    leaves, treedef = tu.tree_flatten({"a": None, "b": 1})
    assert leaves == [1]
    assert tu.tree_unflatten(treedef, [5]) == {"a": None, "b": 5}
    assert tu.tree_map(lambda x: x + 1, [None, 1]) == [None, 2]
    assert tu.tree_structure(None) != tu.tree_structure(0)


def test_leaves_are_anything_that_is_not_a_container():
    x, o = np.ones(3), Opaque()
    assert tu.tree_leaves([x, o, 1.0, "text"]) == [x, o, 1.0, "text"]
    assert tu.tree_leaves(x)[0] is x
    assert tu.tree_leaves(()) == [] and tu.tree_leaves({}) == [] and tu.tree_leaves([]) == []


def test_namedtuples_are_containers_of_their_own_type():
    p = Point(1, [2, 3])
    leaves, treedef = tu.tree_flatten(p)
    assert leaves == [1, 2, 3]
    rebuilt = tu.tree_unflatten(treedef, [4, 5, 6])
    assert type(rebuilt) is Point and rebuilt == Point(4, [5, 6])
    assert tu.tree_structure(Point(1, 2)) != tu.tree_structure(Other(1, 2))
    assert tu.tree_structure(Point(1, 2)) != tu.tree_structure((1, 2))


def test_registered_nodes_round_trip_with_their_aux_data():
    tree = {"box": Box(np.zeros(2), [1.0, 2.0], label="unit"), "n": 3}
    leaves, treedef = tu.tree_flatten(tree)
    assert len(leaves) == 4 and leaves[0] is tree["box"].lo and leaves[3] == 3
    rebuilt = tu.tree_unflatten(treedef, leaves)
    assert rebuilt["box"] == tree["box"] and rebuilt["box"] is not tree["box"]
    doubled = tu.tree_map(lambda v: v * 2, tree)
    assert doubled["box"].label == "unit" and doubled["box"].hi == [2.0, 4.0]
    # The label is static: boxes with other labels have other structures.
    assert tu.tree_structure(Box(1, 2, "a")) != tu.tree_structure(Box(1, 2, "b"))
    assert tu.tree_structure(Box(1, 2, "a")) == tu.tree_structure(Box(3, 4, "a"))
    assert flattened  # the registered function was used


def test_tree_map_over_several_trees():
    a = {"w": [1, 2], "b": 3}
    b = {"w": [10, 20], "b": 30}
    c = {"w": [100, 200], "b": 300}
    assert tu.tree_map(lambda x, y, z: x + y + z, a, b, c) == {"w": [111, 222], "b": 333}


def test_tree_map_takes_the_first_trees_structure():
    # As in JAX, later trees may have leaves where the first has subtrees only
    # if is_leaf says so; a mismatch is an error naming the difference.
    assert tu.tree_map(lambda x, y: (x, y), [1], [[2, 3]], is_leaf=lambda x: x == 1) == \
        [(1, [2, 3])]


@pytest.mark.parametrize("a, b, match", [
    ([1, 2], [1, 2, 3], r"arity mismatch"),
    ([1, 2], (1, 2), r"Expected an instance of list"),
    ({"a": 1}, {"b": 1}, r"key mismatch"),
    ([None], [1], r"None"),
    (Point(1, 2), Other(1, 2), r"Point|Other"),
])
def test_structure_mismatch_is_a_value_error(a, b, match):
    with pytest.raises(ValueError, match=match):
        tu.tree_map(lambda x, y: x, a, b)


def test_unflatten_with_the_wrong_number_of_leaves():
    treedef = tu.tree_structure([1, (2, 3)])
    with pytest.raises(ValueError, match="Too few leaves"):
        tu.tree_unflatten(treedef, [1, 2])
    with pytest.raises(ValueError, match="Too many leaves"):
        tu.tree_unflatten(treedef, [1, 2, 3, 4])


def test_is_leaf_stops_flattening():
    tree = [(1, 2), [3, (4, 5)]]
    leaves = tu.tree_leaves(tree, is_leaf=lambda x: isinstance(x, tuple))
    assert leaves == [(1, 2), 3, (4, 5)]
    sizes = tu.tree_map(np.size, tree, is_leaf=lambda x: isinstance(x, tuple))
    assert sizes == [2, [1, 2]]


def test_key_paths():
    tree = {"w": [1, (2, None)], "b": Point(3, 4)}
    paths, leaves, treedef = tu.tree_flatten_with_path(tree)
    assert leaves == [3, 4, 1, 2]
    assert paths == [("b", 0), ("b", 1), ("w", 0), ("w", 1, 0)]
    assert [tu.keystr(p) for p in paths] == ["['b'][0]", "['b'][1]", "['w'][0]", "['w'][1][0]"]
    assert treedef == tu.tree_structure(tree)
    assert tu.keystr(()) == ""


@given(fts.pytrees(max_depth=3))
def test_flatten_unflatten_round_trip(tree):
    leaves, treedef = tu.tree_flatten(tree)
    assert all(isinstance(x, np.ndarray) for x in leaves)
    assert treedef.num_leaves == len(leaves)
    rebuilt = tu.tree_unflatten(treedef, leaves)
    assert tu.tree_structure(rebuilt) == treedef
    assert all(a is b for a, b in zip(tu.tree_leaves(rebuilt), leaves))
    mapped = tu.tree_map(lambda x: x, tree)
    assert all(a is b for a, b in zip(tu.tree_leaves(mapped), leaves))
