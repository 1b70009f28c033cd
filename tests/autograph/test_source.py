"""AutoGraph finds a function's source (:mod:`kernel_ext.autograph.source`).

``source_lines`` reads it through linecache, the way ``inspect.getsourcelines`` would, without
inspect's first-call cost; odd layouts take inspect's own way, and the answer must be inspect's,
line for line, whatever the layout. ``find_definition`` then picks the one definition in those
lines that *is* the function (by the line and column spans its code object records, checked by
compiling it): several lambdas on one line, nested lambdas, lambdas in defaults and decorators,
one-line defs each convert as themselves, and stale or ambiguous text runs unconverted with a
warning rather than as another function."""

from __future__ import annotations

import inspect
import linecache
import subprocess
import sys
import textwrap
import types
import warnings
from pathlib import Path

import numpy as np
import pytest

import kernel_ext as kx
from kernel_ext import errors
from kernel_ext.autograph.source import source_lines as _source_lines

_SOURCE = '''\
def deco(f):
    return f


def plain(x):
    return x + 1


@deco
@deco
def decorated(x):
    # a comment
    y = x * 2

    return y


def one_liner(x): return x - 1


def spans_the_margin(x):
    s = """text
at the margin"""
    return x


def continued(x):
    y = (x +
1)
    return y


def outer():
    def inner(x):
        if x > 0:
            return x
        return -x
    return inner


async def coro(x):
    return x


square = lambda x: x * x  # noqa: E731
pair = (lambda a: a + 1,
        lambda b: b - 1)


def trailing(x):
    return x
# a comment at the margin after the body
'''


@pytest.fixture(scope="module")
def module(tmp_path_factory) -> dict:
    path = tmp_path_factory.mktemp("src") / "kx_source_sample.py"
    path.write_text(_SOURCE)
    namespace: dict = {"__name__": "kx_source_sample"}
    exec(compile(_SOURCE, str(path), "exec"), namespace)
    return namespace


@pytest.mark.parametrize(
    "name",
    [
        "plain",
        "decorated",
        "one_liner",
        "spans_the_margin",
        "continued",
        "outer",
        "inner",
        "coro",
        "square",
        "pair0",
        "pair1",
        "trailing",
    ],
)
def test_source_lines_equal_inspects(module, name):
    fns = {
        "inner": module["outer"](),
        "pair0": module["pair"][0],
        "pair1": module["pair"][1],
    }
    fn = fns.get(name) or module[name]
    code = fn.__code__
    ours = _source_lines(code)
    theirs = inspect.getsourcelines(code)
    if name in ("square", "pair0", "pair1"):
        # a lambda's block may run on past its logical line in our version; AutoGraph finds
        # the lambda inside the text, so the text must start at the same line and hold it
        assert ours[1] == theirs[1] and "".join(theirs[0]) in "".join(ours[0])
    else:
        assert ours == theirs


@pytest.mark.parametrize("name", ["plain", "decorated", "one_liner", "outer", "coro", "trailing"])
def test_source_lines_of_usual_layouts_need_no_inspect(module, name, monkeypatch):
    """The fast way answers by itself for the usual layouts (inspect's first call maps every
    loaded module to its file: tens of milliseconds of a first trace)."""
    expected = inspect.getsourcelines(module[name].__code__)

    def refuse(*args, **kwargs):
        raise AssertionError("inspect.getsourcelines was called")

    monkeypatch.setattr(inspect, "getsourcelines", refuse)
    assert _source_lines(module[name].__code__) == expected


def test_source_lines_read_cells_registered_in_linecache():
    """Notebook cells live only in linecache (IPython's way, and ours for %%tffunction)."""
    name = "<kx-test-cell-source>"
    text = textwrap.dedent("""\
        def cell_fn(x):
            while np.sum(x) > 1:
                x = np.tanh(x)
            return x
        """)
    linecache.cache[name] = (len(text), None, text.splitlines(True), name)
    try:
        namespace = {"np": np}
        exec(compile(text, name, "exec"), namespace)
        lines, first = _source_lines(namespace["cell_fn"].__code__)
        assert first == 1 and "".join(lines) == text
        f = kx.function(namespace["cell_fn"])
        out = f(np.ones(5, np.float32))
        assert f.get_concrete_function(np.ones(5, np.float32)).graph.count_ops() > 0
        assert np.sum(out) <= 1  # the while became a graph loop: AutoGraph read the cell
    finally:
        del linecache.cache[name]


def test_source_lines_of_a_function_without_source_raise_oserror():
    fn = types.FunctionType(
        compile("def g(x):\n    return x\n", "<nowhere>", "exec").co_consts[0], {}
    )
    with pytest.raises(OSError):
        _source_lines(fn.__code__)


# -- which definition: by the code object's line and column spans --------------------------------

_LAYOUTS = """\
import numpy as np
import kernel_ext as kx


def keep(f):
    def deco(g):
        g.kept = f
        return g
    return deco


fs = [lambda x: x + 1, lambda x: x * 100]
g = kx.function(lambda x: x * 2); h = kx.function(lambda x: x - 7)  # noqa: E702
signs = [lambda x: x if np.sum(x) > 0 else -x, lambda x: x * 3 if np.sum(x) > 0 else x]
nested = lambda x: (lambda y: y - x)(x * 3)  # noqa: E731
maker = lambda x: (lambda y: y * x)  # noqa: E731
with_default = lambda x, g=lambda y: y * 3: g(x) + 1  # noqa: E731
pair = (lambda a: a + 1,
        lambda a: a * 100)
same_twice = [lambda x: x + 1, lambda x: x + 1]


@keep(lambda x: x * 5)
def decorated(x): return x + 2
def one(x): return x + 1  # noqa: E704
def two(x): return x * 100  # noqa: E704
def one_line_lambdas(x): return (lambda v: v * 4)(x) + (lambda v: v * 5)(x)  # noqa: E704


def makes_lambdas():
    return [lambda x: x + 10, lambda x: x * 10]


def branches(x):
    return kx.cond(np.sum(x) > 0, lambda: x * 10, lambda: x - 1)
"""


@pytest.fixture(scope="module")
def layouts(tmp_path_factory) -> dict:
    path = tmp_path_factory.mktemp("src") / "kx_layouts.py"
    path.write_text(_LAYOUTS)
    namespace: dict = {"__name__": "kx_layouts"}
    exec(compile(_LAYOUTS, str(path), "exec"), namespace)
    return namespace


def _run(fn, x=None):
    x = np.ones(2) if x is None else x
    with warnings.catch_warnings():
        warnings.simplefilter("error", errors.AutographWarning)  # converted, not run as written
        return kx.function(fn)(x)


@pytest.mark.parametrize(
    "pick, expected",
    [
        (lambda ns: ns["fs"][0], [2, 2]),
        (lambda ns: ns["fs"][1], [100, 100]),
        (lambda ns: ns["pair"][0], [2, 2]),
        (lambda ns: ns["pair"][1], [100, 100]),
        (lambda ns: ns["nested"], [2, 2]),
        (lambda ns: ns["maker"](np.float64(4.0)), [4, 4]),
        (lambda ns: ns["with_default"], [4, 4]),
        (lambda ns: ns["with_default"].__defaults__[0], [3, 3]),
        (lambda ns: ns["decorated"], [3, 3]),
        (lambda ns: ns["decorated"].kept, [5, 5]),
        (lambda ns: ns["one"], [2, 2]),
        (lambda ns: ns["two"], [100, 100]),
        (lambda ns: ns["one_line_lambdas"], [9, 9]),
        (lambda ns: ns["makes_lambdas"]()[0], [11, 11]),
        (lambda ns: ns["makes_lambdas"]()[1], [10, 10]),
    ],
    ids=[
        "list-first",
        "list-second",
        "lines-first",
        "lines-second",
        "nested",
        "made-inside",
        "default-holder",
        "default-itself",
        "decorated",
        "in-decorator",
        "one-line-def-1",
        "one-line-def-2",
        "lambdas-in-one-line-def",
        "def-body-first",
        "def-body-second",
    ],
)
def test_each_function_of_a_shared_line_converts_as_itself(layouts, pick, expected):
    np.testing.assert_array_equal(_run(pick(layouts)), expected)


def test_two_kx_functions_of_lambdas_on_one_line_each_compute_their_own(layouts):
    x = np.ones(2)
    np.testing.assert_array_equal(layouts["g"](x), [2, 2])
    np.testing.assert_array_equal(layouts["h"](x), [-6, -6])


def test_the_converted_text_is_the_lambdas_own(layouts):
    """Control flow on traced values needs the conversion: each lambda is converted from its
    own text (the second's ``x * 3`` is in its code, the first's ``-x`` is not)."""
    first, second = layouts["signs"]
    assert "x * 3" in kx.autograph.to_code(second) and "-x" not in kx.autograph.to_code(second)
    assert "-x" in kx.autograph.to_code(first)
    np.testing.assert_array_equal(_run(second, -np.ones(2)), [-1, -1])
    np.testing.assert_array_equal(_run(second, np.ones(2)), [3, 3])
    np.testing.assert_array_equal(_run(first, -np.ones(2)), [1, 1])


def test_cond_branches_written_as_lambdas_on_one_line_keep_their_own_code(layouts):
    np.testing.assert_array_equal(_run(layouts["branches"], -np.ones(2)), [-2, -2])
    np.testing.assert_array_equal(_run(layouts["branches"], np.ones(2)), [10, 10])


# -- stale or ambiguous source runs as written ---------------------------------------------------


def _pseudo_file_function(name: str, cached: str, compiled: str) -> types.FunctionType:
    """A function compiled from ``compiled`` under a pseudo file name whose linecache entry
    holds ``cached`` (another definition compiled under the same name earlier)."""
    linecache.cache[name] = (len(cached), None, cached.splitlines(True), name)
    namespace: dict = {"np": np}
    exec(compile(compiled, name, "exec"), namespace)
    return namespace["f"]


@pytest.mark.usefixtures("settled_warnings")
def test_stale_linecache_text_under_a_reused_pseudo_file_name_is_not_converted():
    name = "<no-source>"
    try:
        f = _pseudo_file_function(
            name, "def f(x):\n    return x + 1\n", "def f(x):\n    return x * 100\n"
        )
        with pytest.warns(errors.AutographWarning, match="does not compile to this function"):
            out = kx.function(f)(np.ones(2))
        np.testing.assert_array_equal(out, [100, 100])
    finally:
        linecache.cache.pop(name, None)


@pytest.mark.usefixtures("settled_warnings")
def test_stale_text_of_a_lambda_under_a_reused_name_is_not_converted():
    name = "<string>"
    try:
        f = _pseudo_file_function(name, "f = lambda x: x + 1\n", "f = lambda x: x - 1\n")
        with pytest.warns(errors.AutographWarning, match="does not compile to this function"):
            out = kx.function(f)(np.ones(2))
        np.testing.assert_array_equal(out, [0, 0])
    finally:
        linecache.cache.pop(name, None)


def test_matching_text_under_a_pseudo_file_name_still_converts():
    name = "<kx-test-fresh>"
    text = "def f(x):\n    return x if np.sum(x) > 0 else -x\n"
    try:
        f = _pseudo_file_function(name, text, text)
        np.testing.assert_array_equal(_run(f, -np.ones(2)), [1, 1])
    finally:
        linecache.cache.pop(name, None)


def test_a_function_whose_asserts_pytest_rewrote_still_converts():
    """pytest rewrites the asserts of test modules (this one): that code compiles from no
    source, so the assert lines are left out of the check, and the rest must still match."""

    def f(x):
        assert x.ndim == 1, "a vector"
        return x if np.sum(x) > 0 else -x

    assert any(n.startswith("@py_assert") for n in f.__code__.co_varnames)  # rewritten
    np.testing.assert_array_equal(_run(f, -np.ones(2)), [1, 1])


_NO_COLUMNS = """\
import warnings
import numpy as np
import kernel_ext as kx
fs = [lambda x: x + 1, lambda x: x * 100]
twins = [lambda x: x + 1, lambda x: x + 1]
print(kx.function(fs[1])(np.ones(2)).tolist(), kx.function(fs[0])(np.ones(2)).tolist())
with warnings.catch_warnings(record=True) as w:
    warnings.simplefilter("always")
    print(kx.function(twins[1])(np.ones(2)).tolist())
print([str(x.message) for x in w])
"""


def test_without_column_spans_the_compiled_code_decides_and_twins_run_as_written(tmp_path):
    """``python -X no_debug_ranges`` records lines only: two lambdas of one line are then told
    apart by compiling each; two that compile alike are ambiguous and run as written."""
    path = tmp_path / "kx_no_columns.py"
    path.write_text(_NO_COLUMNS)
    root = Path(__file__).resolve().parents[2]
    done = subprocess.run(
        [sys.executable, "-X", "no_debug_ranges", str(path)],
        capture_output=True,
        text=True,
        timeout=120,
        env={"PYTHONPATH": str(root), "PATH": ""},
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "[100.0, 100.0] [2.0, 2.0]"
    assert lines[1] == "[2.0, 2.0]"
    assert "its source is ambiguous" in lines[2]


def _tanh_loss(w):
    return np.sum(np.tanh(w) ** 2)


def _step_calling_a_transform(w):
    g = kx.grad(_tanh_loss)(w)  # a call of a call's result: PUSH_NULL in 3.11's code
    if np.sum(g) > 0:  # a traced condition: needs the conversion
        w = w - 0.1 * g
    return w


def test_a_function_calling_the_result_of_a_call_is_converted():
    with warnings.catch_warnings():
        warnings.simplefilter("error", errors.AutographWarning)
        f = kx.function(_step_calling_a_transform)
        for w in (np.ones(3), -np.ones(3)):
            g = 2 * np.tanh(w) * (1 - np.tanh(w) ** 2)
            want = w - 0.1 * g if g.sum() > 0 else w
            np.testing.assert_allclose(f(w), want, rtol=1e-12)
