"""Where the user's code made an equation: ``source_location`` reads a code
object's line table once and looks each instruction up in it."""

from __future__ import annotations

import numpy as np

from functrans import core


def _walked(code, offset):
    """The line of ``offset`` by a walk over ``co_lines()``: the definition."""
    for start, stop, line in code.co_lines():
        if start <= offset < stop and line is not None:
            return line
    return code.co_firstlineno


def _branchy(x, n):
    total = 0.0
    for i in range(n):
        if i % 2:
            total += np.sin(x) * i
        else:
            try:
                total -= x / (i or 1)
            except ZeroDivisionError:
                pass
    return total


def test_every_instruction_gets_the_line_a_walk_over_the_line_table_gives():
    codes = [_branchy.__code__, _walked.__code__,
             compile("\n\nx = 1\n\n\ny = (x +\n     2)\n", "<lines>", "exec")]
    for code in codes:
        for offset in [*range(0, len(code.co_code) + 4, 2), -2]:
            file, line, name = core.source_location((code, offset, False))
            assert (file, name) == (code.co_filename, code.co_name)
            assert line == _walked(code, offset), (code.co_name, offset)


def test_a_new_code_object_at_a_reused_id_gets_its_own_lines():
    first = compile("a = 1\nb = 2\n", "<first>", "exec")
    assert core.source_location((first, len(first.co_code) - 2, False))[1] == 2
    del first
    for n in range(50):  # code objects made and freed: ids come back
        code = compile("\n" * n + "c = 3\n", f"<other{n}>", "exec")
        last = len(code.co_code) - 2  # the return at the last line
        assert core.source_location((code, last, False))[:2] == (f"<other{n}>", n + 1)
