"""Cells as functions (reads, outputs, generated source) and call sites as cell numbers."""

from __future__ import annotations

import inspect

import numpy as np
import pytest

import kernel_ext as kx
from kernel_ext.jupyter.cells import (
    CellError,
    CellLocator,
    analyse_cell,
    build_cell_function,
    build_cell_source,
    check_cell,
)


def test_reads_are_names_used_before_assignment():
    program = analyse_cell("y = x * 2\nz = y + w\n")
    assert program.reads == ["x", "w"] and program.outputs == ["y", "z"]
    assert not program.has_value


def test_loop_accumulators_and_conditionals_are_read():
    program = analyse_cell(
        "total = total + x\n"
        "for i in range(3):\n"
        "    acc = acc + i\n"
        "if flag:\n"
        "    only = 1\n"
        "seen = only\n"
        "acc\n"
    )
    assert program.reads == ["total", "x", "range", "acc", "flag", "only"]
    assert program.outputs == ["total", "acc", "only", "seen"]  # the loop index is not
    assert program.has_value


def test_nested_scopes_imports_and_private_names():
    program = analyse_cell(
        "import numpy as np\n"
        "_tmp = np.ones(2)\n"
        "f = lambda q: q + c\n"
        "r = [v * k for v in xs]\n"
        "def helper(a):\n"
        "    b = a + d\n"
        "    return b\n"
    )
    assert program.reads == ["c", "xs", "k", "d"]  # a comprehension's iterable comes first
    assert program.outputs == ["f", "r"]


def test_both_branches_assigning_counts_as_assigned():
    program = analyse_cell("if c:\n    y = 1\nelse:\n    y = 2\nz = y\n")
    assert program.reads == ["c"]


def test_generated_source_keeps_cell_lines_and_multiline_strings():
    body = "s = '''a\nb'''\ny = x + 1\ny * 2\n"
    program = analyse_cell(body)
    last = program.tree.body[-1]
    source = build_cell_source(
        "cell_1", ["x"], body, program.outputs, (last.lineno, last.col_offset)
    )
    lines = source.splitlines()
    assert lines[0] == "def cell_1(x):"
    assert lines[1] == "    s = '''a" and lines[2] == "b'''"  # string contents untouched
    assert lines[3] == "    y = x + 1"  # cell line 4 stays line 4
    assert lines[4] == "    __kx_value__ = y * 2"
    assert lines[-1] == "    return (s, y, __kx_value__,)"


def test_build_cell_function_runs_in_the_namespace():
    ns = {"np": np, "x": np.ones(2), "kx": kx}
    fn, params, outputs, has_value = build_cell_function(
        "cell_9", "y = np.tanh(x)\nnp.sum(y)\n", ns, number=9
    )
    assert params == ["x"] and outputs == ["y"] and has_value
    y, total = fn(np.zeros(2))
    assert total == 0
    assert "np.tanh(x)" in inspect.getsource(fn)  # AutoGraph can read it back


def test_locator_maps_ipython_files_to_cells():
    class Compiler:
        _filename_map = {"/tmp/ipykernel_1/123.py": 5, "<ipython-input-7-abc>": 7}

    class Shell:
        compile = Compiler()

    locator = CellLocator(Shell())
    assert locator.call_site("/tmp/ipykernel_1/123.py:3") == "cell [5], line 3"
    assert locator.call_site("<ipython-input-7-abc>:1") == "cell [7], line 1"
    assert locator.call_site("/tmp/ipykernel_1/999.py:2") == "a cell, line 2"
    assert locator.call_site("/home/me/train.py:12") == "train.py, line 12"
    assert locator.call_site("") == "unknown"


def test_decorated_function_defining_cell(cells):
    cells.run("@kx.function\ndef where(x):\n    return x")
    assert cells.magics.locator.defining_cell(cells.ns["where"]) == cells.number


# -- what a %%tffunction cell refuses --------------------------------------------------------------


@pytest.mark.parametrize(
    "body, as_function, construct, line, column",
    [
        ("z = x + 1\nreturn x * 5\n", True, "'return'", 3, 0),
        ("if x:\n    return 1\n", True, "'return'", 3, 4),
        ("z = [(yield)]\n", True, "'yield'", 2, 6),
        ("z = yield from g()\n", True, "'yield from'", 2, 4),
        ("z = await x\n", True, "'await'", 2, 4),
        ("z = [a async for a in x]\n", True, "'async for'", 2, 4),
        ("async with c:\n    pass\n", True, "'async with'", 2, 0),
        ("async def g():\n    pass\n", True, "'async def g'", 2, 0),
        ("def f():\n    pass\nasync def g():\n    pass\n", False, "'async def g'", 4, 0),
        ("nonlocal x\n", False, "'nonlocal x'", 2, 0),
        ("global x\nx = x + 1\n", True, "'global x'", 2, 0),
        ("z = x\ndel z, (x, y)\n", True, "'del z, x, y'", 3, 0),
        ("from m import *\n", True, "'from m import *'", 2, 0),
        ("def f():\n    pass\nreturn 3\n", False, "'return'", 4, 0),
        ("@deco(await x)\ndef f():\n    pass\n", False, "'await'", 2, 6),
    ],
)
def test_check_cell_names_the_construct_and_where_it_is(body, as_function, construct, line, column):
    with pytest.raises(CellError) as caught:
        check_cell(analyse_cell(body).tree, as_function)
    assert str(caught.value).startswith(f"{construct} at line {line}")
    assert (caught.value.line, caught.value.column) == (line, column)
    assert "Fix:" in str(caught.value)


@pytest.mark.parametrize(
    "body, as_function",
    [
        ("def gen():\n    yield 1\nz = sum(gen())\n", True),  # a def's own yield
        ("def f(a):\n    return a\nz = f(x)\n", True),  # a def's own return
        ("def f():\n    async def g():\n        await h()\n", False),  # nested coroutine
        ("f = lambda: (yield)\n", True),  # a lambda's own yield
        ("d = {1: 2}\ndel d[1]\ndel obj.attr\n", True),  # del of an item: mutation
        ("global x\ndef f(a):\n    return a\n", False),  # a no-op at module level
        ("from m import *\ndef f(a):\n    return a\n", False),  # runs as a plain cell
        ("class A:\n    def m(self):\n        return 1\n", True),
    ],
)
def test_check_cell_leaves_nested_scopes_and_plain_cell_statements_alone(body, as_function):
    check_cell(analyse_cell(body).tree, as_function)
