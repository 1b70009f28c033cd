"""Writes only an ndarray takes (``s[()] = v``, ``out=s``, ``np.copyto``, ``np.put``,
``s.fill``), aimed at a NumPy scalar: NumPy raises ``TypeError`` or writes into a temporary.

A traced function must do the same, whether the scalar was made inside it (``s = x.sum()``:
decided while tracing) or came in as an argument (one trace serves ``np.float64(1.5)`` and
``np.array(1.5)``: decided per call, ``engine.guards``). Also ``np.putmask``, with NumPy's
own conversion of its ``values``.
"""

from __future__ import annotations

import importlib.util
import itertools

import numpy as np
import pytest

import kernel_ext as kx
from tests.same_as_numpy import assert_same

PATHS = {
    "numpy": {"backend": "numpy"},
    "auto": {},
    "numba": {"backend": "numba"},
    "jit": {"jit_compile": True},
}

#: each write, as the statement a user writes, into ``d`` (``v`` is a float64 value)
WRITES = {
    "item": "d[()] = v",
    "ellipsis": "d[...] = v",
    "copyto": "np.copyto(d, v)",
    "place": "np.place(d, True, [v])",
    "putmask": "np.putmask(d, True, v)",
    "put": "np.put(d, 0, v)",
    "put_along_axis": "np.put_along_axis(d, np.array([0]), v, axis=None)",
    "ufunc_out": "np.negative(v, out=d)",
    "ufunc_out_tuple": "np.negative(v, out=(d,))",
    "ufunc_at": "np.add.at(d, (), v)",
    "function_out": "np.clip(v, 0.0, 1.0, out=d)",
    "fill": "d.fill(v)",
}

#: 0-d destinations made inside the function: NumPy scalars and 0-d arrays
MADE = {
    "sum": "d = x.sum()",
    "element": "d = x[1]",
    "ufunc": "d = np.sqrt(x[0])",
    "zeros": "d = np.zeros(())",
    "ellipsis_view": "d = np.array(x[2])[...]",
    "array_of_sum": "d = np.array(x.sum())",
}


def _function_name(*parts: str) -> str:
    return "_".join(parts)


@pytest.fixture(scope="module")
def programs(tmp_path_factory):
    """Every generated function, written to a module file (AutoGraph reads their source):
    ``made__write(x)`` makes ``d``, writes ``v`` into it and reads it back;
    ``arg__write(d, x)`` writes into its argument."""
    lines = ["import numpy as np", ""]
    for made, write in itertools.product(MADE, WRITES):
        lines += [
            f"def {_function_name(made, write)}(x):",
            f"    {MADE[made]}",
            "    v = x[3] * 0.5",
            f"    {WRITES[write]}",
            "    return d * 2.0, d",
            "",
        ]
    for write in WRITES:
        lines += [
            f"def {_function_name('arg', write)}(d, x):",
            "    v = x[1] * 0.5",
            f"    {WRITES[write]}",
            "    return d * 2.0",
            "",
        ]
    path = tmp_path_factory.mktemp("array_targets") / "array_target_programs.py"
    path.write_text("\n".join(lines))
    spec = importlib.util.spec_from_file_location("array_target_programs", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _outcome(fn, *args):
    try:
        return "ok", fn(*args)
    except Exception as e:  # noqa: BLE001 (the exception's type is what is compared)
        return "raised", e


def _same_outcome(got, want) -> None:
    if want[0] == "raised":
        assert got[0] == "raised", f"NumPy raised {want[1]!r}, the trace gave {got[1]!r}"
        assert isinstance(got[1], type(want[1])), (got[1], want[1])
    else:
        assert got[0] == "ok", f"NumPy gave {want[1]!r}, the trace raised {got[1]!r}"
        assert_same(got[1], want[1])


@pytest.mark.parametrize("made", sorted(MADE))
@pytest.mark.parametrize("write", sorted(WRITES))
def test_writes_into_zero_d_values_made_inside_the_function_do_what_numpy_does(
    programs, made, write
):
    fn = getattr(programs, _function_name(made, write))
    x = np.array([4.0, -2.5, 9.0, 0.75])
    want = _outcome(fn, x.copy())
    _same_outcome(_outcome(kx.function(fn, backend="numpy"), x.copy()), want)


@pytest.mark.parametrize("path", sorted(PATHS))
@pytest.mark.parametrize("write", ["item", "copyto", "fill", "put", "ufunc_out"])
def test_writes_into_a_zero_d_argument_follow_the_form_each_call_passes(programs, path, write):
    # one traced function, called with both forms in turn: NumPy's answer each time, and
    # the caller's 0-d array holds what the write left
    fn = getattr(programs, _function_name("arg", write))
    traced = kx.function(fn, **PATHS[path])
    x = np.array([3.0, 0.25])
    for form in (np.array, np.float64, np.array, np.float64):
        mine, theirs = form(1.5), form(1.5)
        want = _outcome(fn, theirs, x)
        _same_outcome(_outcome(traced, mine, x), want)
        assert_same(mine, theirs)
    assert traced.experimental_get_tracing_count() == 1


def test_a_write_into_a_numpy_scalar_says_why_and_names_the_fix():
    def f(x):
        s = x.sum()
        s[()] = 3.0
        return s

    with pytest.raises(TypeError) as info:
        kx.function(f, backend="numpy")(np.ones(3))
    text = str(info.value)
    assert "'numpy.float64' object does not support item assignment" in text
    assert "s[()] = 3.0" in text and "np.array(s)" in text


def test_augmented_assignment_on_a_numpy_scalar_argument_rebinds_it_as_numpy_does():
    # ``s += v`` is not a write only an ndarray takes: a NumPy scalar argument is rebound
    # (the caller's scalar unchanged), a 0-d array updated in place; no eager fallback
    def f(s, x):
        s += x[0]
        return s * 2.0

    traced = kx.function(f, backend="numpy")
    for form in (np.float64, np.array):
        mine, theirs = form(1.5), form(1.5)
        assert_same(traced(mine, np.array([0.25])), f(theirs, np.array([0.25])))
        assert_same(mine, theirs)
    assert traced.experimental_get_tracing_count() == 1


_VALUES = [
    2.7,
    np.float64(2.7),
    np.array(2.7),
    [2.7, -1.25],
    np.array([2, 3], np.int64),
    300,
    np.array([1.5], np.float32),
    True,
    np.arange(7) * 1.5,
    [],
    -1,
]


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int32, np.uint8, np.bool_])
def test_putmask_converts_its_values_as_numpy_does(dtype):
    def f(a, mask, values):
        b = a.copy()
        np.putmask(b, mask, values)
        np.putmask(a, ~mask, b[::-1].copy())
        return b

    traced = kx.function(f, backend="numpy")
    rng = np.random.default_rng(7)
    for values in _VALUES:
        a = (np.arange(6) - 2).astype(dtype).reshape(2, 3)
        mask = rng.random((2, 3)) > 0.4
        mine, theirs = a.copy(), a.copy()
        want = _outcome(f, theirs, mask, values)
        _same_outcome(_outcome(traced, mine, mask, values), want)
        assert_same(mine, theirs)


@pytest.mark.parametrize("path", sorted(PATHS))
def test_putmask_repeats_values_by_position_on_every_executor(path):
    def f(a, mask, values):
        np.putmask(a, mask > 0.3, values)
        # (max, not sum: a compiled float sum may differ from NumPy's in the last bits,
        # within the bound docs/backends.md states; a max is bitwise on every executor)
        return a.max()

    rng = np.random.default_rng(11)
    traced = kx.function(f, reduce_retracing=True, **PATHS[path])
    for rows, n_values in itertools.product((1, 4, 9), (1, 3, 5)):
        a = rng.standard_normal((rows, 5))
        mask, values = rng.random((rows, 5)), rng.standard_normal(n_values)
        mine, theirs = a.copy(), a.copy()
        assert_same(traced(mine, mask, values), f(theirs, mask, values))
        assert_same(mine, theirs)


def test_putmask_with_a_mask_of_another_size_raises_numpys_error():
    def f(a):
        np.putmask(a, np.array([True, False]), 1.0)
        return a

    with pytest.raises(ValueError, match="mask and data must be the same size"):
        kx.function(f, backend="numpy")(np.zeros(3))


def test_numpy_checks_a_scalar_destination_before_the_shapes_as_numpy_does():
    # NumPy refuses a NumPy scalar destination (TypeError) before it compares shapes; a
    # 0-d array destination gets the shape error. The trace fails on the shapes, so a call
    # passing a scalar there is answered by NumPy itself, and nothing is cached for it.
    def f(d, x):
        np.copyto(d, x)
        return d

    traced = kx.function(f, backend="numpy")
    x = np.ones((3, 4))
    with pytest.raises(TypeError, match="copyto"):
        traced(np.float64(1.0), x)
    with pytest.raises(ValueError):
        traced(np.array(1.0), x)
    assert traced.experimental_get_tracing_count() == 0
