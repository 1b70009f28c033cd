"""``%%tffunction`` through a real IPython shell: def cells, cell functions, signatures,
re-runs and edits, ``--strict``, and every usage error."""

from __future__ import annotations

import numpy as np
import pytest
from IPython.core.error import UsageError

import kernel_ext as kx
from kernel_ext.engine.explain import StrictRetraceError
from kernel_ext.jupyter import cells as cells_module
from kernel_ext.jupyter.magics import TFFunctionMagics

# -- def cells -----------------------------------------------------------------------------------


def test_def_cell_binds_a_traced_function_under_its_name(cells):
    cells.run("%%tffunction --no-widget\ndef dense(x, w):\n    return np.tanh(x @ w)\n")
    dense = cells.ns["dense"]
    assert isinstance(dense, kx.Function)
    out = dense(np.ones((2, 3)), np.ones((3, 1)))
    np.testing.assert_allclose(out, np.tanh(np.full((2, 1), 3.0)))
    assert dense.experimental_get_tracing_count() == 1


def test_statements_after_a_def_use_the_traced_function_and_last_value_is_shown(cells):
    value = cells.run(
        "%%tffunction --no-widget\n"
        "calls = []\n"
        "def f(x):\n"
        "    calls.append(1)\n"
        "    return x * 2\n"
        "f(np.ones(2)); f(np.ones(2))\n"
        "f(np.arange(2.0))\n"
    )
    np.testing.assert_array_equal(value, [0.0, 2.0])
    assert cells.ns["calls"] == [1]  # traced once, run three times
    assert cells.ns["f"].stats["calls"] == 3


def test_each_def_of_a_cell_becomes_its_own_function(cells):
    cells.run(
        "%%tffunction --no-widget\ndef a(x):\n    return x + 1\ndef b(x):\n    return a(x) * 2\n"
    )
    assert isinstance(cells.ns["a"], kx.Function) and isinstance(cells.ns["b"], kx.Function)
    np.testing.assert_array_equal(cells.ns["b"](np.zeros(2)), [2.0, 2.0])


def test_a_def_already_decorated_is_kept_and_noted(cells):
    cells.run(
        "%%tffunction --no-widget\n@kx.function(reduce_retracing=True)\ndef g(x):\n    return x\n"
    )
    g = cells.ns["g"]
    assert isinstance(g, kx.Function)
    assert cells_module.cell_info(g).history == [f"cell [{cells.number}] defined"]


def test_rerunning_an_unchanged_def_keeps_the_function_and_its_traces(cells):
    src = "%%tffunction --no-widget\ndef keep(x):\n    return x * 3\n"
    cells.run(src)
    first = cells.ns["keep"]
    first(np.ones(2))
    defined = cells.number
    cells.run(src)
    assert cells.ns["keep"] is first
    assert first.experimental_get_tracing_count() == 1
    history = cells_module.cell_info(first).history
    assert history[0] == f"cell [{defined}] defined"
    assert history[-1].startswith(f"cell [{cells.number}] re-run, unchanged")


def test_an_edited_def_gets_a_new_function_whose_history_says_edited(cells):
    cells.run("%%tffunction --no-widget\ndef edit_me(x):\n    return x * 3\n")
    old = cells.ns["edit_me"]
    old(np.ones(2))
    first_cell = cells.number
    cells.run("%%tffunction --no-widget\ndef edit_me(x):\n    return x * 4\n")
    new = cells.ns["edit_me"]
    assert new is not old
    np.testing.assert_array_equal(new(np.ones(2)), [4.0, 4.0])
    info = cells_module.cell_info(new)
    assert info.history[-1].startswith(f"cell [{cells.number}] edited")
    assert f"cell [{first_cell}]" in info.history[-1] and "1 trace)" in info.history[-1]
    assert cells_module.cell_info(old).replaced_by == cells.number


def test_changing_options_also_makes_a_new_function(cells):
    cells.run("%%tffunction --no-widget\ndef opt(x):\n    return x\n")
    old = cells.ns["opt"]
    cells.run("%%tffunction --no-widget --reduce-retracing\ndef opt(x):\n    return x\n")
    assert cells.ns["opt"] is not old


def test_fast_math_option_makes_a_fast_math_function(cells):
    x = np.linspace(-5, 5, 1000).astype(np.float32)
    results = {}
    for name, flag in (("fm", " --fast-math"), ("exact", "")):
        cells.run(
            f"%%tffunction --no-widget --backend numba{flag}\n"
            f"def {name}(x):\n    return np.exp(x) * 1.5\n"
        )
        f = cells.ns[name]
        f(x)
        f.get_concrete_function(x).executable.wait(300)  # the kernel, not the first call's NumPy
        results[name] = f(x)
    np.testing.assert_array_equal(results["exact"], np.exp(x) * 1.5)
    assert not np.array_equal(results["fm"], np.exp(x) * 1.5)
    np.testing.assert_allclose(results["fm"], np.exp(x) * 1.5, rtol=1e-6)


def test_moving_a_def_within_its_cell_is_not_an_edit(cells):
    cells.run("%%tffunction --no-widget\ndef moved(x):\n    return x\n")
    old = cells.ns["moved"]
    cells.run("%%tffunction --no-widget\n\n\n# a comment\ndef moved(x):\n    return x\n")
    assert cells.ns["moved"] is old


def test_a_changed_default_value_is_an_edit(cells):
    cells.run("K = 2.0")
    cells.run("%%tffunction --no-widget\ndef dflt(x, k=K):\n    return x * k\n")
    old = cells.ns["dflt"]
    cells.run("K = 3.0")
    cells.run("%%tffunction --no-widget\ndef dflt(x, k=K):\n    return x * k\n")
    assert cells.ns["dflt"] is not old


# -- cell functions --------------------------------------------------------------------------------


def test_a_cell_without_def_is_a_function_of_the_names_it_reads(cells):
    cells.run("x = np.ones(3)\nw = 2.0\ny = None")
    value = cells.run(
        "%%tffunction step --no-widget\ny = np.tanh(x) * w\ntotal = np.sum(y)\ntotal * 10\n"
    )
    step = cells.ns["step"]
    info = cells_module.cell_info(step)
    assert info.mode == "cell" and info.params == ["x", "w"]
    assert info.outputs == ["y", "total"]
    np.testing.assert_allclose(cells.ns["y"], np.tanh(1.0) * 2)
    np.testing.assert_allclose(value, 10 * cells.ns["total"])
    assert [c.record.signature for c in step.concrete_functions] == ["x: float64[3], w: 2.0"]


def test_rerunning_a_cell_function_reuses_its_trace_until_the_inputs_change(cells):
    cells.run("x = np.ones(3)")
    src = "%%tffunction --no-widget\nprint('tracing')\nz = x + 1\n"
    cells.run(src)
    cells.run("x = np.zeros(3)")
    cells.run(src)
    fn = next(
        f
        for f in cells.magics.registry.functions()
        if cells_module.cell_info(f) and cells_module.cell_info(f).outputs == ["z"]
    )
    assert fn.stats["calls"] == 2 and fn.stats["traces"] == 1
    np.testing.assert_array_equal(cells.ns["z"], np.ones(3))
    cells.run("x = np.zeros(5)")
    cells.run(src)
    assert fn.stats["traces"] == 2
    assert fn.retraces[1].cause == "shape"
    assert fn.__name__.startswith("cell_")


def test_a_cell_function_keeps_modules_functions_and_variables_as_globals(cells):
    cells.run("v = kx.Variable(np.zeros(2))\ndef helper(a):\n    return a * 2\nx = np.ones(2)")
    cells.run("%%tffunction acc --no-widget\nv.assign_add(helper(x))\nout = v.read_value()\n")
    assert cells_module.cell_info(cells.ns["acc"]).params == ["x"]
    cells.run("%%tffunction acc --no-widget\nv.assign_add(helper(x))\nout = v.read_value()\n")
    np.testing.assert_array_equal(cells.ns["out"], [4.0, 4.0])


def test_a_cell_function_loop_accumulator_reads_and_writes_the_namespace(cells):
    cells.run("acc = np.zeros(2)\nx = np.ones(2)")
    cells.run("%%tffunction --no-widget\nfor i in range(3):\n    acc = acc + x * i\n")
    np.testing.assert_array_equal(cells.ns["acc"], [3.0, 3.0])


def test_a_cell_function_call_site_is_its_cell(cells):
    cells.run("x = np.ones(2)")
    cells.run("%%tffunction here --no-widget\nq = x * 2\n")
    site = cells.magics.locator.call_site(cells.ns["here"].retraces[0].call_site)
    assert site == f"cell [{cells.number}], line 1"


def test_an_error_inside_a_cell_function_points_at_the_cell_line(cells):
    cells.run("x = np.ones(2)")
    error = cells.error("%%tffunction bad --no-widget\nq = x * 2\nr = undefined_name + 1\n")
    assert isinstance(error, NameError)
    tb = error.__traceback__
    while tb.tb_next is not None:
        tb = tb.tb_next
    assert tb.tb_lineno == 3  # the cell's own line numbering (line 1 is the magic)


def test_cell_function_with_autograph_control_flow(cells):
    cells.run("x = np.arange(4.0)")
    cells.run(
        "%%tffunction branchy --no-widget\nif np.sum(x) > 3:\n    y = x * 2\nelse:\n    y = x - 1\n"
    )
    np.testing.assert_array_equal(cells.ns["y"], np.arange(4.0) * 2)
    cells.run("x = np.zeros(4)")
    cells.run(
        "%%tffunction branchy --no-widget\nif np.sum(x) > 3:\n    y = x * 2\nelse:\n    y = x - 1\n"
    )
    np.testing.assert_array_equal(cells.ns["y"], -np.ones(4))
    assert cells.ns["branchy"].stats["traces"] == 1


# -- input signatures --------------------------------------------------------------------------


def test_input_signature_mini_language_fixes_the_signature(cells):
    cells.run(
        '%%tffunction --no-widget --input-signature "x: float32[None, 3], n: int64[]"\n'
        "def sig(x, n):\n    return x * n\n"
    )
    sig = cells.ns["sig"]
    sig(np.ones((2, 3), np.float32), 2)
    sig(np.ones((5, 3), np.float32), 7)
    assert sig.experimental_get_tracing_count() == 1
    spec = sig.input_signature
    assert spec[0] == kx.TensorSpec((None, 3), np.float32)
    with pytest.raises(kx.errors.InputSignatureError):
        sig(np.ones((2, 4), np.float32), 2)


def test_input_signature_as_a_python_expression(cells):
    cells.run("SPEC = [kx.TensorSpec([None], np.float32)]")
    cells.run("%%tffunction --no-widget -s SPEC\ndef ex(v):\n    return v * 2\n")
    cells.run(
        "%%tffunction --no-widget -s '[kx.TensorSpec([None], np.float32)]'\n"
        "def ex2(v):\n    return v * 2\n"
    )
    for name in ("ex", "ex2"):
        assert cells.ns[name].input_signature == (kx.TensorSpec((None,), np.float32),)


def test_input_signature_orders_a_cell_functions_inputs(cells):
    cells.run("a = np.ones(2, np.float32)\nb = np.ones(3, np.float32)")
    cells.run(
        '%%tffunction ordered --no-widget -s "b: float32[None], a: float32[None]"\n'
        "c = np.sum(a) + np.sum(b)\n"
    )
    assert cells_module.cell_info(cells.ns["ordered"]).params == ["b", "a"]
    cells.run("a = np.ones(7, np.float32)")
    cells.run(
        '%%tffunction ordered --no-widget -s "b: float32[None], a: float32[None]"\n'
        "c = np.sum(a) + np.sum(b)\n"
    )
    assert cells.ns["c"] == 10 and cells.ns["ordered"].stats["traces"] == 1


def test_a_malformed_input_signature_is_a_usage_error_with_the_column(cells):
    error = cells.error(
        '%%tffunction --input-signature "x: float32[None, 3x]"\ndef f(x):\n    return x\n'
    )
    assert isinstance(error, UsageError)
    text = str(error)
    assert "at column 18" in text and "x: float32[None, 3x]" in text
    caret = text.splitlines()[-1]
    assert caret.index("^") == 2 + 18


def test_an_unknown_dtype_is_a_usage_error(cells):
    error = cells.error('%%tffunction -s "x: flaot32[3]"\ndef f(x):\n    return x\n')
    assert isinstance(error, UsageError) and "unknown dtype 'flaot32'" in str(error)


def test_signature_naming_a_missing_parameter_is_a_usage_error(cells):
    error = cells.error('%%tffunction -s "q: float32[None]"\ndef f(x):\n    return x\n')
    assert isinstance(error, UsageError)
    assert "names q" in str(error) and "(x)" in str(error)


def test_signature_with_too_many_entries_is_a_usage_error(cells):
    error = cells.error('%%tffunction -s "float32[2], float32[3]"\ndef f(x):\n    return x\n')
    assert isinstance(error, UsageError) and "2 entries" in str(error)


def test_bad_options_are_usage_errors(cells):
    assert isinstance(
        cells.error("%%tffunction --backend foo\ndef f(x):\n    return x\n"), UsageError
    )
    assert isinstance(
        cells.error("%%tffunction --frobnicate\ndef f(x):\n    return x\n"), UsageError
    )
    assert isinstance(cells.error("%%tffunction a b\nx = 1\n"), UsageError)


def test_a_backend_this_installation_lacks_is_a_usage_error(cells, monkeypatch):
    import kernel_ext.backends as backends

    monkeypatch.setattr(backends, "BACKENDS", ("auto", "numpy"))
    error = cells.error("%%tffunction --backend numba\ndef f(x):\n    return x\n")
    # kx.function's own check, as a UsageError: it names the backend and the choices.
    assert isinstance(error, UsageError) and "backend='numba'" in str(error)
    assert "'auto', 'numpy'" in str(error)


def test_a_syntax_error_in_the_cell_is_a_usage_error_with_its_line(cells):
    error = cells.error("%%tffunction\ndef f(x):\n    return x +\n")
    assert isinstance(error, UsageError) and "line 3" in str(error)


# -- strict ------------------------------------------------------------------------------------


def test_strict_raises_on_retrace_with_the_explanation_and_keeps_no_trace(cells):
    cells.run("%%tffunction --no-widget --strict\ndef s(x):\n    return x + 1\n")
    cells.run("s(np.ones(2))")
    error = cells.error("s(np.ones(3))")
    assert isinstance(error, StrictRetraceError)
    text = str(error)
    assert "trace #2" in text and "x: shape float64[2] → float64[3]" in text
    assert f"cell [{cells.number}], line 1" in text
    assert '%%tffunction --input-signature "x: float64[None]"' in text
    assert cells.ns["s"].experimental_get_tracing_count() == 1
    assert cells.error("s(np.ones(3))")  # still refused: nothing was cached


def test_strict_cell_function_raises_when_its_inputs_change_shape(cells):
    cells.run("x = np.ones(2)")
    src = "%%tffunction strictcell --strict --no-widget\ny = x * 2\n"
    cells.run(src)
    cells.run("x = np.ones(5)")
    error = cells.error(src)
    assert isinstance(error, StrictRetraceError) and "strictcell" in str(error)


# -- help, widgets, loading --------------------------------------------------------------------


def test_help_shows_usage_and_examples():
    doc = TFFunctionMagics.tffunction.__doc__
    assert "--input-signature" in doc and "--strict" in doc and "--no-widget" in doc
    assert "%%tffunction step" in doc and "def dense" in doc
    assert "%retrace_report --json" in TFFunctionMagics.retrace_report.__doc__


def test_help_is_what_the_question_mark_shows(cells):
    info = cells.shell.object_inspect("%%tffunction")
    assert info["found"] and "cell itself" in info["docstring"]


def test_a_monitor_is_shown_unless_no_widget(cells):
    cells.run("%%tffunction\ndef shown(x):\n    return x\n")
    cells.run("%%tffunction --no-widget\ndef hidden(x):\n    return x\n")
    assert "def:shown" in cells.magics._monitors
    assert "def:hidden" not in cells.magics._monitors
    monitor = cells.magics._monitors["def:shown"]
    cells.run("shown(np.ones(2)); shown(np.ones(2))")
    assert ">2<" in monitor.counters.value  # the post-cell refresh ran


def test_rerunning_a_cell_replaces_its_monitor(cells):
    cells.run("%%tffunction\ndef mon(x):\n    return x\n")
    first = cells.magics._monitors["def:mon"]
    cells.run("%%tffunction\ndef mon(x):\n    return x\n")
    assert cells.magics._monitors["def:mon"] is not first and first._closed


def test_load_ipython_extension_registers_magics_and_the_sidebar(monkeypatch):
    from IPython.core.interactiveshell import InteractiveShell

    import kernel_ext
    import kernel_ext.jupyter as kj
    from kernel_ext.jupyter import inspector

    started = []
    monkeypatch.setattr(inspector, "start", lambda ip: started.append(ip))
    monkeypatch.setattr(inspector, "stop", lambda: started.append("stopped"))
    shell = InteractiveShell.instance()
    kernel_ext.load_ipython_extension(shell)
    try:
        assert "tffunction" in shell.magics_manager.magics["cell"]
        assert "retrace_report" in shell.magics_manager.magics["line"]
        assert started == [shell]
    finally:
        kj.unload_ipython_extension(shell)
    assert started[-1] == "stopped"


def test_ipython_syntax_inside_a_cell_function_is_explained(cells):
    error = cells.error("%%tffunction\n%time y = 1\n")
    assert isinstance(error, UsageError) and "cannot be used inside a %%tffunction" in str(error)


def test_a_cell_function_without_inputs_runs_once_per_run(cells):
    value = cells.run("%%tffunction constant_cell --no-widget\nones = np.ones(3) * 2\nones\n")
    np.testing.assert_array_equal(value, [2.0, 2.0, 2.0])
    assert cells_module.cell_info(cells.ns["constant_cell"]).params == []


def test_a_signature_expression_whose_value_changed_makes_a_new_function(cells):
    cells.run("SIG = [kx.TensorSpec([None], np.float32)]")
    src = "%%tffunction --no-widget -s SIG\ndef by_expr(v):\n    return v\n"
    cells.run(src)
    first = cells.ns["by_expr"]
    cells.run(src)
    assert cells.ns["by_expr"] is first
    cells.run("SIG = [kx.TensorSpec([None], np.float64)]")
    cells.run(src)
    assert cells.ns["by_expr"] is not first


# -- cells that would not do what the same code does in a plain cell ---------------------------


def _caret_line(error: BaseException) -> tuple[str, int]:
    """The quoted cell line of a UsageError and the column its caret points at."""
    *_, text, caret = str(error).splitlines()
    return text[2:], caret.index("^") - 2


def test_a_top_level_return_in_a_cell_function_is_a_usage_error_and_sets_nothing(cells):
    """It set ``z`` to ``x * 5`` silently (the return value became the first output)."""
    cells.run("x = np.ones(3)\nz = None")
    error = cells.error("%%tffunction --no-widget\nz = x + 1\nreturn x * 5\n")
    assert isinstance(error, UsageError)
    assert "'return' at line 3" in str(error) and "write 'x * 5'" in str(error)
    assert _caret_line(error) == ("return x * 5", 0)
    assert cells.ns["z"] is None


def test_a_top_level_yield_in_a_cell_function_is_a_usage_error(cells):
    """It bound a generator to ``z``."""
    cells.run("x = np.ones(3)\nz = None")
    error = cells.error("%%tffunction --no-widget\nz = x + 1\nyield z\n")
    assert isinstance(error, UsageError) and "'yield' at line 3" in str(error)
    assert cells.ns["z"] is None


def test_a_cell_holding_only_an_async_def_is_a_usage_error_not_a_lost_function(cells):
    cells.shell.user_ns.pop("g", None)
    error = cells.error("%%tffunction --no-widget\nasync def g(a):\n    return a\n")
    assert isinstance(error, UsageError)
    assert "'async def g' at line 2" in str(error) and "cannot trace a coroutine" in str(error)
    assert _caret_line(error) == ("async def g(a):", 0)


@pytest.mark.usefixtures("settled_warnings")
def test_a_yield_inside_a_def_of_a_cell_function_is_the_defs_own(cells):
    cells.run("x = np.ones(3)")
    with pytest.warns(kx.errors.AutographWarning, match="generator"):  # gen runs as written
        cells.run("%%tffunction --no-widget\ndef gen():\n    yield 2.0\nz = x + sum(gen())\n")
    np.testing.assert_array_equal(cells.ns["z"], [3.0, 3.0, 3.0])


def test_a_signature_of_bare_names_is_a_usage_error_not_the_current_shapes(cells):
    """``-s "x, y"`` evaluated as Python gave the arrays themselves, and their shapes became
    the signature silently."""
    cells.run("x = np.ones(3)\ny = np.ones(2)")
    error = cells.error('%%tffunction --no-widget -s "x, y"\nz = x.sum() + y.sum()\n')
    assert isinstance(error, UsageError)
    text = str(error)
    assert "'x, y' is not a signature" in text and "gives a tuple of ndarray" in text
    assert "expected ':' and a type after 'x'" in text
    assert 'Fix: give each input a type, e.g. -s "x: float64[3], y: float64[2]"' in text


def test_a_signature_naming_a_list_of_numbers_is_a_usage_error_not_literals(cells):
    cells.run("x = np.ones(3)\nlst = [1, 2]")
    error = cells.error('%%tffunction --no-widget -s "lst"\nz = x + 1\n')
    assert isinstance(error, UsageError) and "gives a list of int" in str(error)


@pytest.mark.parametrize(
    "cell, words, line",
    [
        (
            '%%tffunction --no-widget -s "x: 0777"\nz = x + 1\n',
            "leading zeros are not allowed",
            ("x: 0777", 3),
        ),
        (
            "%%tffunction --no-widget -s \"x: '\\x'\"\nz = x + 1\n",
            "truncated \\xXX escape",
            ("x: '\\x'", 3),
        ),
        (
            "%%tffunction --no-widget -s \"x: '\\q'\"\nz = x + 1\n",
            "invalid escape sequence",
            ("x: '\\q'", 3),
        ),
        (
            '%%tffunction --no-widget -s "x: ' + "9" * 5000 + '"\nz = x + 1\n',
            "at most 4300 digits",
            ("x: " + "9" * 5000, 3),
        ),
        (
            '%%tffunction --no-widget -s "x: float64[3]\nz = x + 1\n',
            "No closing quotation",
            ('--no-widget -s "x: float64[3]', 15),
        ),
        ('%%tffunction --no-widget -s "x: \'abc"\nz = x + 1\n', "has no closing '", ("x: 'abc", 3)),
        (
            "%%tffunction --no-widget\nglobal x\nx = x + 1\n",
            "'global x' at line 2",
            ("global x", 0),
        ),
        ("%%tffunction --no-widget\nz = await x\n", "'await' at line 2", ("z = await x", 4)),
        (
            "%%tffunction --no-widget\nasync for a in x:\n    pass\n",
            "'async for' at line 2",
            ("async for a in x:", 0),
        ),
        (
            "%%tffunction --no-widget\nnonlocal x\nx = x + 1\n",
            "'nonlocal x' at line 2",
            ("nonlocal x", 0),
        ),
        (
            "%%tffunction --no-widget\nfrom math import *\nz = x + 1\n",
            "'from math import *' at line 2",
            ("from math import *", 0),
        ),
        (
            "%%tffunction --no-widget\ndef f(a):\n    return a\nreturn 3\n",
            "'return' at line 4 is outside any def",
            ("return 3", 0),
        ),
        ("%%tffunction --no-widget\nz = x + 1\ndel x\n", "'del x' at line 3", ("del x", 0)),
        (
            "%%tffunction --no-widget\nz = x + 1\nbreak\n",
            "'break' outside loop at line 3",
            ("break", 0),
        ),
        (
            "%%tffunction --no-widget\ndef f(a):\n    return a\nbreak\n",
            "'break' outside loop at line 4",
            ("break", 0),
        ),
    ],
    ids=[
        "octal-looking",
        "truncated-escape",
        "invalid-escape",
        "5000-digits",
        "open-quote",
        "open-string",
        "global",
        "await",
        "async-for",
        "nonlocal",
        "import-star",
        "return-in-def-cell",
        "del",
        "break",
        "break-in-def-cell",
    ],
)
def test_malformed_cells_are_usage_errors_pointing_at_the_construct(cells, cell, words, line):
    """Each raised from inside the project or from Python's compiler (SyntaxError,
    ValueError), or ran differently from the same code in a plain cell (``del x``)."""
    cells.run("x = np.ones(3)")
    error = cells.error(cell)
    assert isinstance(error, UsageError), repr(error)
    assert words in str(error)
    assert _caret_line(error) == line
    np.testing.assert_array_equal(cells.ns["x"], np.ones(3))  # nothing ran


@pytest.mark.parametrize("name", ["1abc", "class", "a-b"])
def test_a_name_that_is_not_a_python_name_is_a_usage_error(cells, name):
    error = cells.error(f"%%tffunction {name} --no-widget\nz = 1\n")
    assert isinstance(error, UsageError)
    assert f"NAME {name!r} is not a Python name" in str(error) and "Fix:" in str(error)


def test_a_def_cell_runs_nothing_when_a_later_statement_cannot_compile(cells):
    cells.shell.user_ns.pop("early", None)
    error = cells.error("%%tffunction --no-widget\nearly = 1\ndef f(a):\n    return a\ncontinue\n")
    assert isinstance(error, UsageError) and "early" not in cells.ns


def test_a_failing_tolist_is_named_and_its_traceback_starts_in_the_cell(cells):
    import traceback

    cells.run("x_list = np.ones(3)")
    error = cells.error("%%tffunction --no-widget to_list\ny = np.tanh(x_list)\nz = y.tolist()\n")
    assert ".tolist() has no value while tracing" in str(error)
    assert ".item()" not in str(error)
    frames = traceback.extract_tb(error.__traceback__)
    # what follows the magic's call is the cell's own code, then the method that refused
    magic = max(
        i for i, f in enumerate(frames) if "/kernel_ext/jupyter/" in f.filename.replace("\\", "/")
    )
    after = frames[magic + 1 :]
    assert after[0].line == "z = y.tolist()" and after[0].lineno == 3
    assert [f.name for f in after[1:]] == ["tolist"]
