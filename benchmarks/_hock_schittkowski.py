"""Problems of Hock and Schittkowski's collection, written from the published
definitions (W. Hock and K. Schittkowski, "Test Examples for Nonlinear
Programming Codes", Lecture Notes in Economics and Mathematical Systems 187,
Springer 1981): objective, constraints in SciPy's dict form (``"ineq"``
meaning ``c(x) >= 0``), bounds, the standard start and the optimal value.
Two infeasible problems close the list: every solver must fail on them.

Each entry: ``(name, f, x0, constraints, bounds, f_star, kinds)``, with
``f_star`` None for an infeasible problem and ``kinds`` a subset of
``{"eq", "ineq", "bounds", "degenerate", "infeasible"}``.
"""

from __future__ import annotations

import numpy as np

SQ2 = np.sqrt(2.0)


def _rosen(x):
    return 100.0 * (x[1] - x[0] ** 2) ** 2 + (1.0 - x[0]) ** 2


def _eq(f):
    return {"type": "eq", "fun": f}


def _ineq(f):
    return {"type": "ineq", "fun": f}


PROBLEMS = [
    ("hs001", _rosen, [-2.0, 1.0], [], [(None, None), (-1.5, None)], 0.0, {"bounds"}),
    ("hs002", _rosen, [-2.0, 1.0], [], [(None, None), (1.5, None)], 0.0504261879, {"bounds"}),
    ("hs003", lambda x: x[1] + 1e-5 * (x[1] - x[0]) ** 2, [10.0, 1.0], [],
     [(None, None), (0.0, None)], 0.0, {"bounds"}),
    ("hs004", lambda x: (x[0] + 1.0) ** 3 / 3.0 + x[1], [1.125, 0.125], [],
     [(1.0, None), (0.0, None)], 8.0 / 3.0, {"bounds"}),
    ("hs005", lambda x: np.sin(x[0] + x[1]) + (x[0] - x[1]) ** 2 - 1.5 * x[0] + 2.5 * x[1] + 1.0,
     [0.0, 0.0], [], [(-1.5, 4.0), (-3.0, 3.0)], -np.sqrt(3.0) / 2.0 - np.pi / 3.0, {"bounds"}),
    ("hs006", lambda x: (1.0 - x[0]) ** 2, [-1.2, 1.0],
     [_eq(lambda x: 10.0 * (x[1] - x[0] ** 2))], None, 0.0, {"eq"}),
    ("hs007", lambda x: np.log(1.0 + x[0] ** 2) - x[1], [2.0, 2.0],
     [_eq(lambda x: (1.0 + x[0] ** 2) ** 2 + x[1] ** 2 - 4.0)], None, -np.sqrt(3.0), {"eq"}),
    ("hs008", lambda x: -1.0 + 0.0 * x[0], [2.0, 1.0],
     [_eq(lambda x: x[0] ** 2 + x[1] ** 2 - 25.0), _eq(lambda x: x[0] * x[1] - 9.0)], None,
     -1.0, {"eq", "degenerate"}),
    ("hs009", lambda x: np.sin(np.pi * x[0] / 12.0) * np.cos(np.pi * x[1] / 16.0), [0.0, 0.0],
     [_eq(lambda x: 4.0 * x[0] - 3.0 * x[1])], None, -0.5, {"eq"}),
    ("hs010", lambda x: x[0] - x[1], [-10.0, 10.0],
     [_ineq(lambda x: -3.0 * x[0] ** 2 + 2.0 * x[0] * x[1] - x[1] ** 2 + 1.0)], None, -1.0,
     {"ineq"}),
    ("hs011", lambda x: (x[0] - 5.0) ** 2 + x[1] ** 2 - 25.0, [4.9, 0.1],
     [_ineq(lambda x: -x[0] ** 2 + x[1])], None, -8.498464223, {"ineq"}),
    ("hs012", lambda x: 0.5 * x[0] ** 2 + x[1] ** 2 - x[0] * x[1] - 7.0 * x[0] - 7.0 * x[1],
     [0.0, 0.0], [_ineq(lambda x: 25.0 - 4.0 * x[0] ** 2 - x[1] ** 2)], None, -30.0, {"ineq"}),
    ("hs013", lambda x: (x[0] - 2.0) ** 2 + x[1] ** 2, [-2.0, -2.0],
     [_ineq(lambda x: (1.0 - x[0]) ** 3 - x[1])], [(0.0, None), (0.0, None)], 1.0,
     {"ineq", "bounds", "degenerate"}),
    ("hs014", lambda x: (x[0] - 2.0) ** 2 + (x[1] - 1.0) ** 2, [2.0, 2.0],
     [_eq(lambda x: x[0] - 2.0 * x[1] + 1.0),
      _ineq(lambda x: -x[0] ** 2 / 4.0 - x[1] ** 2 + 1.0)], None,
     9.0 - 2.875 * np.sqrt(7.0), {"eq", "ineq"}),
    ("hs015", _rosen, [-2.0, 1.0],
     [_ineq(lambda x: x[0] * x[1] - 1.0), _ineq(lambda x: x[0] + x[1] ** 2)],
     [(None, 0.5), (None, None)], 306.5, {"ineq", "bounds"}),
    ("hs016", _rosen, [-2.0, 1.0],
     [_ineq(lambda x: x[0] + x[1] ** 2), _ineq(lambda x: x[0] ** 2 + x[1])],
     [(-0.5, 0.5), (None, 1.0)], 0.25, {"ineq", "bounds"}),
    ("hs018", lambda x: 0.01 * x[0] ** 2 + x[1] ** 2, [2.0, 2.0],
     [_ineq(lambda x: x[0] * x[1] - 25.0), _ineq(lambda x: x[0] ** 2 + x[1] ** 2 - 25.0)],
     [(2.0, 50.0), (0.0, 50.0)], 5.0, {"ineq", "bounds"}),
    ("hs021", lambda x: 0.01 * x[0] ** 2 + x[1] ** 2 - 100.0, [-1.0, -1.0],
     [_ineq(lambda x: 10.0 * x[0] - x[1] - 10.0)], [(2.0, 50.0), (-50.0, 50.0)], -99.96,
     {"ineq", "bounds"}),
    ("hs035", lambda x: (9.0 - 8.0 * x[0] - 6.0 * x[1] - 4.0 * x[2] + 2.0 * x[0] ** 2
                         + 2.0 * x[1] ** 2 + x[2] ** 2 + 2.0 * x[0] * x[1] + 2.0 * x[0] * x[2]),
     [0.5, 0.5, 0.5], [_ineq(lambda x: 3.0 - x[0] - x[1] - 2.0 * x[2])], [(0.0, None)] * 3,
     1.0 / 9.0, {"ineq", "bounds"}),
    ("hs039", lambda x: -x[0], [2.0, 2.0, 2.0, 2.0],
     [_eq(lambda x: x[1] - x[0] ** 3 - x[2] ** 2), _eq(lambda x: x[0] ** 2 - x[1] - x[3] ** 2)],
     None, -1.0, {"eq"}),
    ("hs040", lambda x: -x[0] * x[1] * x[2] * x[3], [0.8, 0.8, 0.8, 0.8],
     [_eq(lambda x: x[0] ** 3 + x[1] ** 2 - 1.0), _eq(lambda x: x[0] ** 2 * x[3] - x[2]),
      _eq(lambda x: x[3] ** 2 - x[1])], None, -0.25, {"eq"}),
    ("hs042", lambda x: np.sum((x - np.arange(1.0, 5.0)) ** 2), [1.0, 1.0, 1.0, 1.0],
     [_eq(lambda x: x[0] - 2.0), _eq(lambda x: x[2] ** 2 + x[3] ** 2 - 2.0)], None,
     28.0 - 10.0 * SQ2, {"eq"}),
    ("hs046", lambda x: ((x[0] - x[1]) ** 2 + (x[2] - 1.0) ** 2 + (x[3] - 1.0) ** 4
                         + (x[4] - 1.0) ** 6),
     [SQ2 / 2.0, 1.75, 0.5, 2.0, 2.0],
     [_eq(lambda x: x[0] ** 2 * x[3] + np.sin(x[3] - x[4]) - 1.0),
      _eq(lambda x: x[1] + x[2] ** 4 * x[3] ** 2 - 2.0)], None, 0.0, {"eq", "degenerate"}),
    ("hs071", lambda x: x[0] * x[3] * (x[0] + x[1] + x[2]) + x[2], [1.0, 5.0, 5.0, 1.0],
     [_ineq(lambda x: x[0] * x[1] * x[2] * x[3] - 25.0),
      _eq(lambda x: np.sum(x ** 2) - 40.0)], [(1.0, 5.0)] * 4, 17.0140173, {"eq", "ineq",
                                                                              "bounds"}),
    ("hs076", lambda x: (x[0] ** 2 + 0.5 * x[1] ** 2 + x[2] ** 2 + 0.5 * x[3] ** 2 - x[0] * x[2]
                         + x[2] * x[3] - x[0] - 3.0 * x[1] + x[2] - x[3]),
     [0.5, 0.5, 0.5, 0.5],
     [_ineq(lambda x: 5.0 - x[0] - 2.0 * x[1] - x[2] - x[3]),
      _ineq(lambda x: 4.0 - 3.0 * x[0] - x[1] - 2.0 * x[2] + x[3]),
      _ineq(lambda x: x[1] + 4.0 * x[2] - 1.5)], [(0.0, None)] * 4, -4.681818181,
     {"ineq", "bounds"}),
    ("hs077", lambda x: ((x[0] - 1.0) ** 2 + (x[0] - x[1]) ** 2 + (x[2] - 1.0) ** 2
                         + (x[3] - 1.0) ** 4 + (x[4] - 1.0) ** 6), [2.0] * 5,
     [_eq(lambda x: x[0] ** 2 * x[3] + np.sin(x[3] - x[4]) - 2.0 * SQ2),
      _eq(lambda x: x[1] + x[2] ** 4 * x[3] ** 2 - 8.0 - SQ2)], None, 0.24150513, {"eq"}),
    ("hs078", lambda x: x[0] * x[1] * x[2] * x[3] * x[4], [-2.0, 1.5, 2.0, -1.0, -1.0],
     [_eq(lambda x: np.sum(x ** 2) - 10.0), _eq(lambda x: x[1] * x[2] - 5.0 * x[3] * x[4]),
      _eq(lambda x: x[0] ** 3 + x[1] ** 3 + 1.0)], None, -2.91970041, {"eq"}),
    ("hs079", lambda x: ((x[0] - 1.0) ** 2 + (x[0] - x[1]) ** 2 + (x[1] - x[2]) ** 2
                         + (x[2] - x[3]) ** 4 + (x[3] - x[4]) ** 4), [2.0] * 5,
     [_eq(lambda x: x[0] + x[1] ** 2 + x[2] ** 3 - 2.0 - 3.0 * SQ2),
      _eq(lambda x: x[1] - x[2] ** 2 + x[3] + 2.0 - 2.0 * SQ2),
      _eq(lambda x: x[0] * x[4] - 2.0)], None, 0.0787768209, {"eq"}),
    # Infeasible: x0^2 = -1, and a disc that misses a half-plane (from hs012's start).
    ("infeasible-eq", lambda x: np.sum(x ** 2), [3.0, -1.0],
     [_eq(lambda x: x[0] ** 2 + 1.0)], None, None, {"eq", "infeasible"}),
    ("infeasible-ineq", lambda x: np.sum(x ** 2), [0.0, 0.0],
     [_ineq(lambda x: 1.0 - x[0] ** 2 - x[1] ** 2), _ineq(lambda x: x[0] + x[1] - 3.0)], None,
     None, {"ineq", "infeasible"}),
]
