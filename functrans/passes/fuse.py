"""Elementwise fusion: maximal groups of elementwise equations over one shape
become single ``fused_elementwise`` equations.

Run by ``jit`` when it lowers for the GPU, where each group is one CUDA
kernel that reads the group's inputs once, keeps every intermediate in
registers and writes only the values used outside the group.

* Members are the equations whose primitive has an elementwise ``cuda``
  rule (a CUDA expression), with one output, plus ``broadcast_in_dim``,
  which costs nothing in a kernel: the broadcast operand is read through
  a view with unit axes, and CuPy broadcasts it.  Every member of a group
  produces the group's shape; operands may be smaller (NumPy broadcasting),
  scalar literals are written into the kernel.
* An equation joins the group of one of its operands' producers when that
  keeps the program acyclic: no other operand may depend on the group
  through an equation outside it.  When it could join several, those groups
  merge where that too keeps the program acyclic.
* A broadcast whose result is also used outside its group stays outside
  (a view costs nothing; a kernel would write the whole array).
* The new program lists groups and the other equations in an order that
  respects their dependencies (groups where their last member was).
"""

from __future__ import annotations

import heapq
from typing import Callable

from functrans.core import ClosedJaxpr, Eqn, Jaxpr, Literal, Var, lookup_primitive


def is_elementwise(e: Eqn) -> bool:
    """True for an equation a GPU kernel can compute elementwise."""
    prim = e.primitive
    if prim.multiple_results or len(e.outputs) != 1:
        return False
    return prim.broadcasts or hasattr(prim.cuda, "loop_dtypes")


class _Groups:
    """Union-find over group ids, with each group's member equations and the
    groups its members' operands come from (through other equations)."""

    def __init__(self):
        self.parent: list[int] = []
        self.members: list[list[int]] = []
        self.deps: list[int] = []  # bitmask of groups the operands come from

    def new(self, eqn_index: int) -> int:
        g = len(self.parent)
        self.parent.append(g)
        self.members.append([eqn_index])
        self.deps.append(0)
        return g

    def find(self, g: int) -> int:
        while self.parent[g] != g:
            self.parent[g] = self.parent[self.parent[g]]
            g = self.parent[g]
        return g

    def roots(self, mask: int) -> set[int]:
        out = set()
        while mask:
            low = mask & -mask
            out.add(self.find(low.bit_length() - 1))
            mask ^= low
        return out

    def depends(self, mask: int, target: int) -> bool:
        """Whether a value coming from the groups in ``mask`` depends on group
        ``target`` (a root)."""
        stack, seen = list(self.roots(mask)), set()
        while stack:
            g = stack.pop()
            if g == target:
                return True
            if g not in seen:
                seen.add(g)
                stack.extend(self.roots(self.deps[g]) - seen)
        return False

    def merge(self, keep: int, other: int) -> None:
        self.parent[other] = keep
        self.members[keep] += self.members[other]
        self.deps[keep] |= self.deps[other]
        self.members[other] = []


def fuse(closed: ClosedJaxpr, fusible: Callable[[Eqn], bool] = is_elementwise) -> ClosedJaxpr:
    """``closed`` with its elementwise groups fused (groups of one stay as
    they are); ``fusible`` picks the equations that may join a group."""
    jaxpr = closed.jaxpr
    eqns = jaxpr.eqns
    groups = _Groups()
    group_of: dict[int, int] = {}  # eqn index -> group id (maybe merged since)
    producer: dict[int, int] = {}  # var id -> eqn index
    comes_from: dict[int, int] = {}  # var id -> bitmask of groups it comes from

    def source_mask(a) -> int:
        return 0 if type(a) is Literal else comes_from.get(id(a), 0)

    def group_of_var(a) -> int | None:
        if type(a) is Literal or id(a) not in producer:
            return None
        g = group_of.get(producer[id(a)])
        return None if g is None else groups.find(g)

    for i, e in enumerate(eqns):
        g = None
        if fusible(e):
            shape = e.outputs[0].aval.shape
            candidates = []
            for a in e.inputs:
                c = group_of_var(a)
                if c is not None and c not in candidates and \
                        eqns[groups.members[c][0]].outputs[0].aval.shape == shape:
                    candidates.append(c)
            for c in candidates:
                if g is None:
                    if _can_join(groups, e.inputs, {c}, group_of_var, source_mask):
                        g = c
                elif _can_join(groups, e.inputs, {g, c}, group_of_var, source_mask):
                    _try_merge(groups, g, c, eqns, group_of_var, source_mask)
            if g is None:
                g = groups.new(i)
            else:
                groups.members[g].append(i)
            group_of[i] = g
            for a in e.inputs:
                if group_of_var(a) != g:
                    groups.deps[g] |= source_mask(a)
        for v in e.outputs:
            producer[id(v)] = i
            if g is not None:
                comes_from[id(v)] = 1 << g
            else:
                mask = 0
                for a in e.inputs:
                    mask |= source_mask(a)
                comes_from[id(v)] = mask
    return _rebuild(closed, groups, group_of, producer)


def _can_join(groups: _Groups, inputs, targets: set[int], group_of_var, source_mask) -> bool:
    """An equation may join the groups ``targets`` unless an operand from
    elsewhere depends on one of them."""
    return not any(
        group_of_var(a) not in targets and groups.depends(source_mask(a), t)
        for a in inputs for t in targets
    )


def _try_merge(groups: _Groups, g: int, c: int, eqns, group_of_var, source_mask) -> None:
    """Merge group ``c`` into ``g`` (both feed the joining equation) unless
    one depends on the other through an equation outside both."""
    both = {g, c}
    for mine, other in ((g, c), (c, g)):
        for i in groups.members[mine]:
            for a in eqns[i].inputs:
                if group_of_var(a) not in both and groups.depends(source_mask(a), other):
                    return
    groups.merge(g, c)


def _rebuild(closed: ClosedJaxpr, groups: _Groups, group_of, producer) -> ClosedJaxpr:
    jaxpr = closed.jaxpr
    eqns = jaxpr.eqns
    member_sets: dict[int, list[int]] = {}
    for i in range(len(eqns)):
        g = group_of.get(i)
        if g is not None:
            member_sets.setdefault(groups.find(g), []).append(i)
    users: dict[int, set[int]] = {}  # var id -> indices of the equations using it
    for i, e in enumerate(eqns):
        for a in e.inputs:
            if type(a) is Var:
                users.setdefault(id(a), set()).add(i)
    outvar_ids = {id(a) for a in jaxpr.outvars if type(a) is Var}

    # Units of the new program: fused groups (sorted member indices) and
    # single equations.  Broadcasts used outside their group leave it.
    units: list[list[int]] = []
    in_group = set()
    for members in member_sets.values():
        members = sorted(members)
        inside = set(members)
        leaving = [
            i for i in members
            if eqns[i].primitive.broadcasts and _used_outside(eqns[i], inside, users,
                                                                     outvar_ids)
        ]
        kept = [i for i in members if i not in leaving]
        units.extend([i] for i in leaving)
        if sum(not eqns[i].primitive.broadcasts for i in kept) >= 2:
            units.append(kept)
            in_group.update(kept)
        else:
            units.extend([i] for i in kept)
    grouped = {i for u in units for i in u}
    units.extend([i] for i in range(len(eqns)) if i not in grouped)
    if not in_group:
        return closed
    fused_p = lookup_primitive("fused_elementwise")
    new_eqns = []
    for unit in _topological(units, eqns, producer):
        if len(unit) == 1 and unit[0] not in in_group:
            new_eqns.append(eqns[unit[0]])
            continue
        inside = set(unit)
        group: list[Eqn] = [eqns[i] for i in unit]
        defined = {id(v) for m in group for v in m.outputs}
        invars: list[Var] = []
        seen: set[int] = set()
        for m in group:
            for a in m.inputs:
                if type(a) is Var and id(a) not in defined and id(a) not in seen:
                    seen.add(id(a))
                    invars.append(a)
        outvars = [v for m in group for v in m.outputs
                   if _var_used_outside(v, inside, users, outvar_ids)]
        if not outvars:
            continue  # dead code: nothing outside reads the group
        inner = Jaxpr((), invars, outvars, group)
        new_eqns.append(Eqn(fused_p, tuple(invars), tuple(outvars), {"jaxpr": inner}))
    return ClosedJaxpr(Jaxpr(jaxpr.constvars, jaxpr.invars, jaxpr.outvars, new_eqns),
                       closed.consts)


def _var_used_outside(v, inside: set[int], users, outvar_ids) -> bool:
    return id(v) in outvar_ids or any(u not in inside for u in users.get(id(v), ()))


def _used_outside(e: Eqn, inside: set[int], users, outvar_ids) -> bool:
    return any(_var_used_outside(v, inside, users, outvar_ids) for v in e.outputs)


def _topological(units: list[list[int]], eqns, producer) -> list[list[int]]:
    """The units in an order where every operand is computed before its use;
    among ready units, the one whose last equation came first."""
    unit_of = {i: k for k, unit in enumerate(units) for i in unit}
    waiting = [0] * len(units)
    after: list[list[int]] = [[] for _ in units]
    for k, unit in enumerate(units):
        needs = set()
        for i in unit:
            for a in eqns[i].inputs:
                if type(a) is Var and id(a) in producer:
                    src = unit_of[producer[id(a)]]
                    if src != k:
                        needs.add(src)
        waiting[k] = len(needs)
        for src in needs:
            after[src].append(k)
    ready = [(max(unit), k) for k, unit in enumerate(units) if waiting[k] == 0]
    heapq.heapify(ready)
    order = []
    while ready:
        _, k = heapq.heappop(ready)
        order.append(units[k])
        for nxt in after[k]:
            waiting[nxt] -= 1
            if waiting[nxt] == 0:
                heapq.heappush(ready, (max(units[nxt]), nxt))
    if len(order) != len(units):
        raise RuntimeError("functrans: fusion made the program cyclic (internal error); "
                           "please report it with the code that triggered it")
    return order


def unfuse_small(closed: ClosedJaxpr, min_members: int) -> ClosedJaxpr:
    """``closed`` with every fused equation of fewer than ``min_members``
    members put back as those members."""
    fused_p = lookup_primitive("fused_elementwise")
    eqns: list[Eqn] = []
    changed = False
    for e in closed.jaxpr.eqns:
        inner = e.params.get("jaxpr") if e.primitive is fused_p else None
        if inner is None or len(inner.eqns) >= min_members:
            eqns.append(e)
            continue
        changed = True
        rename: dict[int, object] = {id(v): a for v, a in zip(inner.invars, e.inputs)}
        rename.update({id(v): w for v, w in zip(inner.outvars, e.outputs)
                       if type(v) is not Literal})
        for m in inner.eqns:
            ins = tuple(a if type(a) is Literal else rename.get(id(a), a) for a in m.inputs)
            outs = tuple(rename.get(id(v), v) for v in m.outputs)
            eqns.append(Eqn(m.primitive, ins, outs, m.params, m.source))
    if not changed:
        return closed
    j = closed.jaxpr
    return ClosedJaxpr(Jaxpr(j.constvars, j.invars, j.outvars, eqns), closed.consts)
