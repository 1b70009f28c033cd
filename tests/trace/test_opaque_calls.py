"""NumPy functions without an op of their own run as opaque ``numpy_call`` nodes, like eager.

Each family is checked against eager NumPy on every executor (the NumPy backend, ``auto`` and
``jit_compile=True``), twice with new values (so nothing is frozen at trace time): values,
dtypes and shapes, data-dependent sizes included.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import kernel_ext as kx
from kernel_ext import errors
from kernel_ext.ir import OpaqueResultError, OpKind

PATHS = {"numpy": {"backend": "numpy"}, "auto": {}, "jit": {"jit_compile": True}}


def _same(actual, expected) -> None:
    if isinstance(expected, (tuple, list)):
        assert type(actual) is type(expected) and len(actual) == len(expected)
        for a, e in zip(actual, expected):
            _same(a, e)
        return
    assert type(actual) is type(expected), (type(actual), type(expected))
    assert np.asarray(actual).dtype == np.asarray(expected).dtype
    assert np.shape(actual) == np.shape(expected)
    np.testing.assert_array_equal(actual, expected)


def _check(fn, *calls, path="numpy") -> kx.Function:
    """``fn`` traced on ``path`` gives eager's result on every argument tuple of ``calls``."""
    traced = kx.function(fn, **PATHS[path])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # jit: "runs as fused segments"
        for args in calls:
            _same(traced(*args), fn(*args))
    return traced


rng = np.random.default_rng(0)


def _arrays(*shape, n=2, kind="f"):
    if kind == "i":
        return [(rng.integers(0, 7, shape),) for _ in range(n)]
    return [(rng.standard_normal(shape),) for _ in range(n)]


FAMILIES = {
    # (np.einsum, np.pad, np.diff, np.tril, np.convolve, np.histogram, np.roll, np.kron,
    # np.fft, np.linalg.eigh, ... are graph ops or compositions now: tests/trace/
    # test_numpy_ops.py; their forms that stay opaque are here, and the rest still check
    # the same values on every path)
    "einsum_interleaved": (
        lambda x, W: np.einsum(x, [0, 1], W, [1, 2]),
        [(rng.standard_normal((4, 3)), rng.standard_normal((3, 3))) for _ in range(2)],
    ),
    "pad_callable_mode": (lambda x: np.pad(x, 1, mode=_pad_with_nines), _arrays(3, 4)),
    "roll": (lambda x: np.roll(x, 1, axis=0), _arrays(4, 5)),
    "kron_trace": (lambda x: (np.kron(x, x), np.trace(x)), _arrays(3, 3)),
    "histogram_traced_range": (
        lambda x: np.histogram(x, bins=5, range=(x.min(), x.max())),
        _arrays(30),
    ),
    "searchsorted": (
        lambda e, q: np.searchsorted(e, q),
        [(np.sort(rng.random(10)), rng.random(4)) for _ in range(2)],
    ),
    "median_percentile": (
        lambda x: (np.median(x, axis=0), np.percentile(x, [10, 90], axis=0)),
        _arrays(7, 3),
    ),
    "norm_inf": (
        lambda x: (np.linalg.norm(x, ord=np.inf), np.linalg.norm(x, ord=1, axis=0)),
        _arrays(4, 4),
    ),
    "fft": (lambda x: np.fft.rfft(x), _arrays(16)),
    "eig_namedtuple": (lambda x: np.linalg.eigh(x @ x.T), _arrays(3, 3)),
    "split_list": (lambda x: np.split(x, 2), _arrays(6)),
    "ufunc_methods": (lambda x: (np.maximum.accumulate(x), np.add.outer(x, x)), _arrays(5)),
}

DATA_DEPENDENT = {
    "unique_counts": (lambda x: np.unique_counts(x), _arrays(20, kind="i", n=3)),
    "unique_axis": (lambda x: np.unique(x, axis=0), _arrays(12, 2, kind="i", n=3)),
    "unique_values_then_traced_ops": (
        lambda x: np.unique_values(x) * 2 + 1,
        _arrays(10, kind="i", n=3),
    ),
}


def _pad_with_nines(vector, pad_width, iaxis, kwargs):
    """A callable np.pad mode (NumPy's documented form): the pad cells become 9."""
    vector[: pad_width[0]] = 9
    vector[vector.size - pad_width[1] :] = 9


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("family", FAMILIES)
def test_opaque_function_families_match_eager(family, path):
    fn, calls = FAMILIES[family]
    _check(fn, *calls, path=path)


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("family", DATA_DEPENDENT)
def test_data_dependent_sizes_match_eager_on_every_call(family, path):
    fn, calls = DATA_DEPENDENT[family]
    traced = _check(fn, *calls, path=path)
    assert traced.experimental_get_tracing_count() == 1


def test_data_dependent_dims_are_unknown_in_the_graph():
    f = kx.function(lambda x: _Opaque.call(np.unique_values, x))  # (a graph op now)
    graph = f.get_concrete_function(np.arange(5)).graph
    (node,) = [n for n in graph.get_operations() if n.op is OpKind.NUMPY_CALL]
    assert node.aval.shape == (None,) and node.aval.dtype == np.int64


def test_static_dims_stay_known():
    f = kx.function(lambda x: _Opaque.call(np.kron, x, x))  # (a composition now)
    graph = f.get_concrete_function(np.ones((3, 4))).graph
    (node,) = [n for n in graph.get_operations() if n.op is OpKind.NUMPY_CALL]
    assert node.aval.shape == (9, 16)


def test_unknown_input_dims_make_output_dims_unknown():
    f = kx.function(lambda x: np.roll(x, 1), input_signature=[kx.TensorSpec([None], np.float64)])
    for n in (3, 6):
        _same(f(np.arange(n, dtype=np.float64)), np.roll(np.arange(n, dtype=np.float64), 1))


def test_traced_ops_around_an_opaque_call_fuse_and_fold_around_it():
    def fn(x, W):
        return np.tanh(np.kron(x * 2.0, W)) + 1.0

    calls = [(rng.standard_normal((3, 4)), rng.standard_normal((4, 2))) for _ in range(2)]
    for path in PATHS:
        _check(fn, *calls, path=path)


def test_runtime_shape_check_raises_instead_of_a_wrong_result():
    # A function whose result size depends on the data in a way the stand-ins cannot show:
    # it is static on all of them, so the trace types it [2]; at run time it is not.
    def odd(x):
        return np.arange(3) if np.any(x > 100) else np.arange(2)

    f = kx.function(lambda x: _Opaque.call(odd, x))
    with pytest.raises(
        OpaqueResultError,
        match=r"int64\[3\] at run time, but its trace "
        r"found int64\[2\].*Fix:",
    ):
        f(np.array([500.0]))


class _Opaque:
    """Runs a plain Python function as an opaque call, to test the run-time check."""

    @staticmethod
    def call(fn, *args):
        from kernel_ext.trace.opaque import numpy_call

        return numpy_call(fn, args, {})


def test_runtime_check_passes_values_matching_the_trace():
    f = kx.function(lambda x: _Opaque.call(lambda a: a[::-1].copy(), x))
    _same(f(np.arange(4.0)), np.arange(4.0)[::-1])


@pytest.mark.parametrize(
    "call, name",
    [
        # (np.put, np.place, np.putmask are traced functions: their opaque form is what a
        # parameter their handler lacks would reach)
        (lambda x: _Opaque.call(np.putmask, x, x > 0, [1.0]), "np.putmask"),
        (lambda x: _Opaque.call(np.put, x, [0], [1.0]), "np.put"),
    ],
)
def test_functions_writing_into_an_argument_raise_naming_function_and_fix(call, name):
    f = kx.function(call)
    with pytest.raises(errors.UnsupportedOpError) as info:
        f(np.ones((2, 2)))
    text = str(info.value)
    assert text.startswith(name) and "writes into" in text and "Fix:" in text
    assert "test_opaque_calls.py" in text  # the user's line


def test_out_argument_raises_with_fix(monkeypatch):
    # (np.cumulative_sum is a graph op now, whose out= is an in-place update: run it opaque)
    monkeypatch.delitem(kx.trace.HANDLERS, np.cumulative_sum)
    f = kx.function(lambda x: np.cumulative_sum(x, out=np.empty(3)))
    with pytest.raises(
        errors.UnsupportedOpError,
        match=r"np\.cumulative_sum\(\.\.\., out="
        r"\.\.\.\).*Fix: assign the result",
    ):
        f(np.ones(3))


def test_non_array_results_raise_naming_function():
    f = kx.function(lambda x: np.array2string(x))
    with pytest.raises(errors.UnsupportedOpError, match=r"np\.array2string .* returns a str"):
        f(np.ones(2))


def test_object_array_results_raise():
    f = kx.function(lambda x: _Opaque.call(lambda a: np.array([a, None], dtype=object), x))
    with pytest.raises(errors.UnsupportedOpError, match="cannot be a graph value"):
        f(np.ones(2))


def test_failing_on_every_stand_in_names_the_function_and_the_error():
    f = kx.function(lambda x: np.einsum(x, [0, 1], x, [1, 2]))
    with pytest.raises(
        errors.UnsupportedOpError,
        match=r"np\.einsum .* failed on every "
        r"stand-in input .*ValueError",
    ):
        f(np.ones((2, 3)))


def test_unknown_rank_input_raises():
    f = kx.function(lambda x: np.pad(x, 1), input_signature=[kx.TensorSpec(None, np.float64)])
    with pytest.raises(errors.UnsupportedOpError, match="unknown rank"):
        f(np.ones(2))


def test_python_number_results_combine_weakly():
    # A function returning a Python float: combined with a float32 array the result stays
    # float32 (NEP 50), as eager.
    def fn(x):
        return x * _Opaque.call(lambda a: float(a.sum()), x)

    f = kx.function(fn)
    x = np.ones(3, np.float32)
    _same(f(x), x * float(x.sum()))


def test_graph_text_names_the_function_stably():
    f = kx.function(lambda x: _Opaque.call(np.roll, x, 2))
    text = str(f.get_concrete_function(np.ones(4)).graph)
    assert "numpy_call(%x, fn=np.roll, template=($0, 2)) : float64[4]" in text
    assert "0x" not in text


def test_equal_opaque_calls_are_merged_and_unused_ones_pruned():
    def fn(x):
        _Opaque.call(np.kron, x, x)  # unused: pure, pruned
        return _Opaque.call(np.roll, x, 1) + _Opaque.call(np.roll, x, 1)

    f = kx.function(fn, backend="numpy")
    ops = [
        n
        for n in f.get_concrete_function(np.ones(3)).graph.get_operations()
        if n.op is OpKind.NUMPY_CALL
    ]
    assert len(ops) == 1
    _same(f(np.arange(3.0)), np.roll(np.arange(3.0), 1) * 2)


def test_captured_array_arguments_are_frozen_like_other_captures():
    kernel = np.array([1.0, 2.0])
    f = kx.function(lambda x: np.convolve(x, kernel))
    first = f(np.ones(3))
    kernel[0] = 100.0
    _same(f(np.ones(3)), first)
