"""Function / ConcreteFunction behaviour: tracing, cache keys, dispatch, signatures."""

from __future__ import annotations

import collections
import dataclasses
import functools
import gc
import threading
import weakref

import numpy as np
import pytest

import kernel_ext as kx
from kernel_ext import errors


def counting(fn):
    """Wrap ``fn`` in kx.function; the Python body increments ``.traces`` on every trace."""
    calls = {"n": 0}

    @functools.wraps(fn)  # keeps fn's signature: binding and defaults are fn's
    def body(*args, **kwargs):
        calls["n"] += 1
        return fn(*args, **kwargs)

    f = kx.function(body)
    f.python_traces = calls
    return f


# -- tracing vs running ------------------------------------------------------------------------


def test_python_print_runs_only_while_tracing_and_kx_print_every_call(capsys):
    @kx.function
    def f(x):
        print("Traced with", x.shape)
        kx.print("Executed with", x)
        return x * 2

    x = np.array([1, 2], np.int32)
    np.testing.assert_array_equal(f(x), x * 2)
    f(x)
    f(x)
    out = capsys.readouterr().out.splitlines()
    assert out == [
        "Traced with (2,)",
        "Executed with [1 2]",
        "Executed with [1 2]",
        "Executed with [1 2]",
    ]


def test_kx_print_formats_like_numpy(capsys):
    @kx.function
    def f(x):
        kx.print("x:", x, sep=" ", end="!\n")
        return x

    f(np.int32(1))
    kx.print("eager:", np.float32(2.5), [1, 2])
    assert capsys.readouterr().out == "x: 1!\neager: 2.5 [1, 2]\n"


def test_kx_print_of_a_variable_prints_its_current_value(capsys):
    v = kx.Variable(3.0)

    @kx.function
    def show():
        kx.print("v =", v)

    show()
    v.assign(4.0)
    show()
    kx.print(v)
    assert capsys.readouterr().out == "v = 3.0\nv = 4.0\n4.0\n"


def test_array_values_are_read_at_call_time():
    f = kx.function(lambda x: x + 1)
    x = np.zeros(3)
    f(x)
    x[:] = 5
    np.testing.assert_array_equal(f(x), np.full(3, 6.0))
    assert f.experimental_get_tracing_count() == 1


# -- cache keys --------------------------------------------------------------------------------


def test_arrays_key_by_dtype_and_shape():
    f = counting(lambda x: x + 1)
    f(np.zeros(3, np.float32))
    f(np.ones(3, np.float32))
    assert f.experimental_get_tracing_count() == 1
    f(np.zeros(4, np.float32))
    f(np.zeros(3, np.float64))
    f(np.zeros((3, 1), np.float32))
    assert f.experimental_get_tracing_count() == 4


def test_numpy_scalar_and_zero_d_array_share_a_trace():
    f = counting(lambda x: x * 2)
    assert f(np.float32(2.0)) == np.float32(4.0)
    r = f(np.array(3.0, np.float32))
    assert f.experimental_get_tracing_count() == 1
    assert isinstance(r, np.float32) and r == 6.0


def test_python_scalars_key_by_value_and_type():
    f = counting(lambda x, n: x * n)
    x = np.ones(2)
    f(x, 2)
    f(x, 2)
    assert f.experimental_get_tracing_count() == 1
    f(x, 3)
    f(x, 2.0)
    f(x, True)
    assert f.experimental_get_tracing_count() == 4


def test_strings_and_none_key_by_value():
    f = counting(lambda x, mode=None: x + (1 if mode == "inc" else 0))
    x = np.zeros(2)
    np.testing.assert_array_equal(f(x, "inc"), [1, 1])
    np.testing.assert_array_equal(f(x, None), [0, 0])
    np.testing.assert_array_equal(f(x), [0, 0])
    assert f.experimental_get_tracing_count() == 2


def test_sequences_key_structurally_and_order_sensitively():
    f = counting(lambda xs: xs[0] - xs[1])
    a, b = np.ones(2), np.zeros(2)
    np.testing.assert_array_equal(f((a, b)), [1, 1])
    np.testing.assert_array_equal(f((b, a)), [-1, -1])
    assert f.experimental_get_tracing_count() == 1
    f([a, b])  # a list is a different structure than a tuple
    f((a, b, a))
    f((1.0, b))
    assert f.experimental_get_tracing_count() == 4


def test_namedtuples_and_dataclasses_are_structures():
    Point = collections.namedtuple("Point", "x y")

    @dataclasses.dataclass(frozen=True)
    class Box:
        lo: np.ndarray
        hi: np.ndarray

    f = counting(lambda p: p.x * p.y)
    g = counting(lambda b: b.hi - b.lo)
    np.testing.assert_array_equal(f(Point(np.full(2, 2.0), np.full(2, 3.0))), [6, 6])
    f(Point(np.ones(2), np.ones(2)))
    assert f.experimental_get_tracing_count() == 1
    np.testing.assert_array_equal(g(Box(np.zeros(2), np.ones(2))), [1, 1])
    g(Box(np.ones(2), np.ones(2)))
    assert g.experimental_get_tracing_count() == 1


def test_dicts_key_ignoring_insertion_order():
    f = counting(lambda d: d["a"] - d["b"])
    a, b = np.ones(2), np.zeros(2)
    np.testing.assert_array_equal(f({"a": a, "b": b}), [1, 1])
    np.testing.assert_array_equal(f({"b": b, "a": a}), [1, 1])
    assert f.experimental_get_tracing_count() == 1
    f({"a": a, "b": b, "c": 1})
    assert f.experimental_get_tracing_count() == 2


def test_structured_outputs_are_rebuilt():
    Pair = collections.namedtuple("Pair", "lo hi")

    @kx.function
    def f(x):
        return {"pair": Pair(x - 1, x + 1), "items": [x.sum(), "tag", None]}

    out = f(np.arange(3.0))
    assert isinstance(out["pair"], Pair)
    np.testing.assert_array_equal(out["pair"].hi, [1, 2, 3])
    assert out["items"][0] == 3.0 and out["items"][1:] == ["tag", None]


def test_variables_key_by_identity_dtype_and_shape():
    f = counting(lambda v: v + 1)
    v1, v2 = kx.Variable(1.0), kx.Variable(1.0)
    assert f(v1) == 2.0
    assert f(v1) == 2.0
    assert f.experimental_get_tracing_count() == 1
    f(v2)
    assert f.experimental_get_tracing_count() == 2


def test_other_objects_key_by_weak_identity_equal_objects_share():
    f = counting(lambda x, scale: x * scale.value)

    class Scale:
        def __init__(self, value):
            self.value = value

        def __eq__(self, other):
            return isinstance(other, Scale) and other.value == self.value

        def __hash__(self):
            return hash(self.value)

    x = np.ones(2)
    first = Scale(2.0)  # kept alive: a trace keyed by a dead object is released
    np.testing.assert_array_equal(f(x, first), [2, 2])
    np.testing.assert_array_equal(f(x, Scale(2.0)), [2, 2])  # equal object: same trace
    assert f.experimental_get_tracing_count() == 1
    np.testing.assert_array_equal(f(x, Scale(3.0)), [3, 3])
    assert f.experimental_get_tracing_count() == 2


def test_attributes_of_an_object_argument_are_frozen_at_trace_time():
    class Model:
        def __init__(self):
            self.w = 2.0

    f = counting(lambda x, m: x * m.w)
    m = Model()
    x = np.ones(1)
    assert f(x, m)[0] == 2.0
    m.w = 5.0
    assert f(x, m)[0] == 2.0  # same object: the trace is reused, w was frozen


def test_unhashable_non_container_argument_raises_type_error_naming_it():
    f = kx.function(lambda x, opts: x)
    with pytest.raises(TypeError, match=r"opts.*unhashable set.*tuple or frozenset"):
        f(np.ones(1), {1, 2})
    assert f.concrete_functions == []


def test_traces_keyed_by_a_dead_object_are_released():
    f = kx.function(lambda x, obj: x + 1)

    class Token:
        pass

    tok = Token()
    f(np.ones(1), tok)
    graph_ref = weakref.ref(f.concrete_functions[0].graph)
    del tok
    gc.collect()
    assert f.concrete_functions == []
    gc.collect()
    assert graph_ref() is None


def test_arguments_are_bound_before_keying():
    f = counting(lambda x, y=2.0, *, z=1.0: x * y + z)
    x = np.ones(2)
    np.testing.assert_array_equal(f(x), [3, 3])
    np.testing.assert_array_equal(f(x, 2.0), [3, 3])
    np.testing.assert_array_equal(f(x, y=2.0, z=1.0), [3, 3])
    np.testing.assert_array_equal(f(z=1.0, y=2.0, x=x), [3, 3])
    assert f.experimental_get_tracing_count() == 1


def test_var_positional_and_keyword_parameters():
    f = counting(lambda *xs, **kw: sum(xs) * kw.get("k", 1))
    a = np.ones(2)
    np.testing.assert_array_equal(f(a, a, k=3), [6, 6])
    np.testing.assert_array_equal(f(a, a, k=3), [6, 6])
    assert f.experimental_get_tracing_count() == 1
    np.testing.assert_array_equal(f(a, a, a), [3, 3])
    assert f.experimental_get_tracing_count() == 2


def test_bad_call_arguments_raise_type_error_naming_the_function():
    def add(a, b):
        return a + b

    f = kx.function(add)
    with pytest.raises(TypeError, match=r"add\(\): missing a required argument: 'b'"):
        f(np.ones(1))


# -- wrapper identity --------------------------------------------------------------------------


def test_function_keeps_name_doc_and_python_function():
    def scaled(x):
        """Doubles x."""
        return 2 * x

    f = kx.function(scaled)
    assert f.__name__ == "scaled" and f.__doc__ == "Doubles x."
    assert f.python_function is scaled


def test_decorator_with_options():
    @kx.function(reduce_retracing=True)
    def f(x):
        return x

    assert isinstance(f, kx.Function)


def test_unknown_backend_is_rejected_with_the_choices():
    with pytest.raises(ValueError, match="'auto', 'numpy'"):
        kx.function(lambda x: x, backend="tpu")


# -- dispatch ----------------------------------------------------------------------------------


def test_separate_functions_never_share_traces():
    def body(x):
        return x + 1

    f, g = kx.function(body), kx.function(body)
    f(np.ones(2))
    g(np.ones(2))
    assert f.experimental_get_tracing_count() == 1 and g.experimental_get_tracing_count() == 1


def test_decorated_method_has_one_cache_per_instance():
    class Layer:
        def __init__(self, k):
            self.k = k

        @kx.function
        def __call__(self, x):
            return x * self.k

    a, b = Layer(2.0), Layer(3.0)
    x = np.ones(2)
    np.testing.assert_array_equal(a(x), [2, 2])
    np.testing.assert_array_equal(b(x), [3, 3])
    np.testing.assert_array_equal(a(x), [2, 2])
    assert a.__call__.__func__ is a.__call__.__func__ and a.__call__ == a.__call__
    assert a.__call__.experimental_get_tracing_count() == 1
    assert b.__call__.experimental_get_tracing_count() == 1


def test_get_concrete_function_shares_the_cache():
    f = counting(lambda x: x * 2)
    cf = f.get_concrete_function(kx.TensorSpec([None], np.float32))
    np.testing.assert_array_equal(f(np.ones(3, np.float32)), [2, 2, 2])
    np.testing.assert_array_equal(f(np.ones(5, np.float32)), [2] * 5)
    assert f.experimental_get_tracing_count() == 1
    assert f.get_concrete_function(np.ones(7, np.float32)) is cf


def test_dispatch_picks_the_most_specific_trace():
    f = counting(lambda x: x + 1)
    # Most specific first: a spec that an existing trace already accepts reuses that trace.
    exact = f.get_concrete_function(kx.TensorSpec([3, 2], np.float32))
    middle = f.get_concrete_function(kx.TensorSpec([None, 2], np.float32))
    general = f.get_concrete_function(kx.TensorSpec(None, np.float32))
    assert f.get_concrete_function(kx.TensorSpec([5, 2], np.float32)) is middle
    assert f.get_concrete_function(np.ones((3, 2), np.float32)) is exact
    assert f.get_concrete_function(np.ones((4, 2), np.float32)) is middle
    assert f.get_concrete_function(np.ones(4, np.float32)) is general
    f(np.ones((4, 2), np.float32))
    assert f.experimental_get_tracing_count() == 3


def test_concrete_function_never_retraces_and_rejects_other_signatures():
    f = kx.function(lambda x, n: x * n)
    cf = f.get_concrete_function(kx.TensorSpec([2], np.float32), 3)
    np.testing.assert_array_equal(cf(np.ones(2, np.float32), 3), [3, 3])
    with pytest.raises(TypeError, match=r"x: float32\[2\] -> float64\[2\] \(dtype\)"):
        cf(np.ones(2, np.float64), 3)
    with pytest.raises(TypeError, match=r"x: float32\[2\] -> float32\[3\] \(shape\)"):
        cf(np.ones(3, np.float32), 3)
    with pytest.raises(TypeError, match=r"n: 3 -> 4 \(python value\)"):
        cf(np.ones(2, np.float32), 4)
    assert f.experimental_get_tracing_count() == 1


def test_structured_input_signature_and_outputs():
    f = kx.function(lambda x, n=2, *, scale=1.0: (x * n * scale, x.sum()))
    cf = f.get_concrete_function(np.ones((2, 3), np.float32))
    args, kwargs = cf.structured_input_signature
    assert args[0] == kx.TensorSpec((2, 3), np.float32, name="x")
    assert repr(args[1]) == "Literal(2)" and repr(kwargs["scale"]) == "Literal(1.0)"
    assert cf.structured_outputs == (
        kx.TensorSpec((2, 3), np.float32),
        kx.TensorSpec((), np.float32),
    )


def test_pretty_printed_concrete_signatures():
    @kx.function
    def f(x):
        return x + 1

    f(np.int32(1))
    f(np.ones(2))
    text = f.pretty_printed_concrete_signatures()
    assert text == (
        "f(x)\n  Input Parameters:\n"
        "    x (POSITIONAL_OR_KEYWORD): TensorSpec(shape=(), dtype=np.int32, name='x')\n"
        "  Output Type:\n    TensorSpec(shape=(), dtype=np.int32, name=None)\n"
        "  Captures:\n    None\n\n"
        "f(x)\n  Input Parameters:\n"
        "    x (POSITIONAL_OR_KEYWORD): TensorSpec(shape=(2,), dtype=np.float64, name='x')\n"
        "  Output Type:\n    TensorSpec(shape=(2,), dtype=np.float64, name=None)\n"
        "  Captures:\n    None"
    )


# -- input_signature ---------------------------------------------------------------------------


def test_input_signature_traces_once_for_all_matching_shapes():
    f = counting(lambda x: x * 2)
    f = kx.function(f.python_function, input_signature=[kx.TensorSpec([None], np.int32)])
    for n in (1, 3, 8):
        np.testing.assert_array_equal(f(np.arange(n, dtype=np.int32)), np.arange(n) * 2)
    assert f.experimental_get_tracing_count() == 1
    assert f.concrete_functions[0].graph.inputs[0].aval.shape == (None,)


def test_input_signature_mismatch_is_type_and_value_error_naming_the_argument():
    f = kx.function(lambda x: x, input_signature=[kx.TensorSpec([None], np.int32)])
    with pytest.raises(TypeError) as info:
        f(np.ones((2, 2), np.int32))
    assert isinstance(info.value, ValueError)
    msg = str(info.value)
    assert "'x'" in msg and "int32[2, 2]" in msg
    assert "TensorSpec(shape=(None,), dtype=np.int32, name=None)" in msg
    with pytest.raises(ValueError, match="float64"):
        f(np.ones(2, np.float64))
    assert f.experimental_get_tracing_count() == 0


def test_input_signature_converts_lists_and_convertible_arrays():
    f = kx.function(lambda x: x * 2, input_signature=[kx.TensorSpec([None], np.float32)])
    out = f([1, 2, 3])
    assert out.dtype == np.float32
    np.testing.assert_array_equal(out, [2, 4, 6])
    np.testing.assert_array_equal(f(np.array([1, 2], np.int16)), [2, 4])
    assert f.experimental_get_tracing_count() == 1


def test_input_signature_unknown_rank_accepts_any_rank():
    f = kx.function(lambda x: x + 1, input_signature=[kx.TensorSpec(None, np.float64)])
    f(np.ones(2))
    f(np.ones((2, 3)))
    assert f(np.float64(1.0)) == 2.0
    assert f.experimental_get_tracing_count() == 1


def test_input_signature_get_concrete_function_without_arguments():
    f = kx.function(lambda x: x.sum(), input_signature=[kx.TensorSpec([None, 3])])
    cf = f.get_concrete_function()
    assert cf.structured_input_signature[0][0].shape == (None, 3)
    assert cf(np.ones((4, 3), np.float32)) == 12


def test_input_signature_must_be_a_sequence_of_specs():
    with pytest.raises(TypeError, match="list or tuple"):
        kx.function(lambda x: x, input_signature=kx.TensorSpec([1]))


# -- reduce_retracing --------------------------------------------------------------------------


def test_reduce_retracing_generalises_varying_dims():
    f = kx.function(lambda x: x.sum(axis=0), reduce_retracing=True)
    f(np.ones((2, 3)))
    f(np.ones((4, 3)))
    f(np.ones((7, 3)))
    assert f.experimental_get_tracing_count() == 2
    assert f.concrete_functions[1].graph.inputs[0].aval.shape == (None, 3)
    np.testing.assert_array_equal(f(np.ones((9, 3))), [9, 9, 9])


def test_reduce_retracing_rank_change_goes_to_unknown_rank():
    f = kx.function(lambda x: x * 2, reduce_retracing=True)
    f(np.ones(2))
    f(np.ones((2, 2)))
    assert f.concrete_functions[1].graph.inputs[0].aval.shape is None
    f(np.ones((1, 2, 3)))
    assert f.experimental_get_tracing_count() == 2


def test_reduce_retracing_never_generalises_dtypes_or_literals():
    f = kx.function(lambda x, n: x * n, reduce_retracing=True)
    f(np.ones(2), 1)
    f(np.ones(2), 2)
    f(np.ones(2, np.float32), 2)
    assert [cf.graph.inputs[0].aval.shape for cf in f.concrete_functions] == [(2,), (2,), (2,)]
    assert f.experimental_get_tracing_count() == 3


# -- eager mode --------------------------------------------------------------------------------


def test_run_functions_eagerly_runs_python_and_switching_back_reuses_traces(capsys):
    @kx.function
    def f(x):
        print("python")
        return x + 1

    x = np.ones(1)
    f(x)
    kx.config.run_functions_eagerly(True)
    try:
        assert kx.config.functions_run_eagerly()
        f(x)
        f(x)
    finally:
        kx.config.run_functions_eagerly(False)
    f(x)
    assert capsys.readouterr().out == "python\n" * 3
    assert f.experimental_get_tracing_count() == 1


def test_eager_mode_closes_the_cache_hit_path_once_however_often_it_is_switched():
    from kernel_ext.trace.state import ACTIVITY

    ran = []
    f = kx.function(lambda x: ran.append(1) or x * 2)
    x = np.ones(2)
    f(x)
    depth = ACTIVITY.depth
    kx.config.run_functions_eagerly(True)
    kx.config.run_functions_eagerly(True)
    try:
        assert ACTIVITY.depth == depth + 1  # the one value a cache hit reads
        f(x)
        f(x)
    finally:
        kx.config.run_functions_eagerly(False)
        kx.config.run_functions_eagerly(False)
    assert ACTIVITY.depth == depth
    f(x)
    assert len(ran) == 3 and f.experimental_get_tracing_count() == 1


# -- threads -----------------------------------------------------------------------------------


def test_threads_get_correct_results_and_one_trace_per_signature():
    f = counting(lambda x: np.tanh(x) * 2)
    barrier = threading.Barrier(8)
    results = {}

    def worker(i):
        x = np.full(3 + i % 2, float(i))
        barrier.wait()
        for _ in range(50):
            results[i] = f(x)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for i, r in results.items():
        np.testing.assert_allclose(r, np.tanh(np.full(3 + i % 2, float(i))) * 2)
    assert f.experimental_get_tracing_count() == 2
    assert f.python_traces["n"] == 2


# -- stats and records -------------------------------------------------------------------------


def test_stats_count_calls_traces_and_hits():
    f = kx.function(lambda x: x)
    for _ in range(5):
        f(np.ones(1))
    f(np.ones(2))
    s = f.stats
    assert (s["calls"], s["traces"], s["cache_hits"]) == (6, 2, 4)
    assert s["trace_ms"] > 0


def test_retrace_records_name_the_argument_and_change():
    f = kx.function(lambda x, n: x * n)
    f(np.ones(2), 10)
    f(np.ones(2), 20)
    f(np.ones(3), 20)
    first, second, third = f.retraces
    assert first.cause == "first_trace"
    assert second.cause == "python_value" and second.closest == 1
    assert [str(d) for d in second.diffs] == ["n: 10 -> 20 (python value)"]
    assert third.cause == "shape" and third.closest == 2
    assert [str(d) for d in third.diffs] == ["x: float64[2] -> float64[3] (shape)"]
    assert "test_function.py" in third.call_site


def test_retrace_explanation_read_late_compares_only_with_earlier_traces():
    # Explanations are worked out when first read; one read after later traces must still
    # describe the trace against the traces that existed when it happened.
    f = kx.function(lambda x: x + 1)
    for n in (2, 3, 4, 3):
        f(np.ones(n))
    first, second, third = f.retraces  # the second call with 3 elements hit the cache
    assert third.closest == 2 and [str(d) for d in third.diffs] == [
        "x: float64[3] -> float64[4] (shape)"
    ]
    assert second.closest == 1 and second.cause == "shape"
    assert "float64[2]" in second.closest_signature and second.fixes


@pytest.mark.usefixtures("settled_warnings")
def test_dispatch_prefers_exact_traces_and_still_finds_relaxed_ones():
    f = kx.function(lambda x: x * 2, reduce_retracing=True)
    f(np.ones(2))
    f(np.ones(3))  # relaxed to float64[None]
    assert f.experimental_get_tracing_count() == 2
    f(np.ones(7))  # served by the relaxed trace, no new trace
    assert f.experimental_get_tracing_count() == 2
    g = kx.function(lambda x: x * 2)
    with pytest.warns(errors.RetracingWarning):
        for n in range(1, 40):
            np.testing.assert_array_equal(g(np.ones(n)), np.full(n, 2.0))
    assert g.experimental_get_tracing_count() == 39
    np.testing.assert_array_equal(g(np.ones(5)), np.full(5, 2.0))
    assert g.experimental_get_tracing_count() == 39


@pytest.mark.usefixtures("settled_warnings")
def test_retracing_warning_names_function_and_argument_at_most_twice():
    f = kx.function(lambda x, n: x * n)
    x = np.ones(2)
    with pytest.warns(errors.RetracingWarning) as caught:
        for n in range(30):
            f(x, n)
    assert len(caught) == 2
    msg = str(caught[0].message)
    assert "'<lambda>'" in msg and "n: 3 -> 4" in msg and "np.int64(n)" in msg
    assert caught[0].filename == __file__


def test_no_retracing_warning_for_occasional_retraces(recwarn):
    f = kx.function(lambda x: x)
    for i in range(40):
        f(np.ones(1 + i // 10))
    assert not [w for w in recwarn if issubclass(w.category, errors.RetracingWarning)]


def test_last_concrete_function_and_sampled_run_time():
    f = kx.function(lambda x: x + 1, backend="numpy")
    assert f.last_concrete_function is None and f.stats["last_run_us"] is None
    f(np.ones(2))
    f(np.ones(3))
    assert f.last_concrete_function is f.concrete_functions[1]
    for _ in range(130):  # hits are timed one in 64
        f(np.ones(2))
    assert f.last_concrete_function is f.concrete_functions[0]
    assert f.stats["last_run_us"] > 0


def test_numpy_scalars_in_the_body_are_strong_typed_constants():
    # np.float64 subclasses Python float, but NEP 50 treats it as a typed value, not a weak one
    f = kx.function(lambda x: np.float64(6.0) + x)
    assert f(np.float32(1)).dtype == np.float64
    assert kx.function(lambda: np.float64(6.0))() == 6.0


def test_failed_traces_are_not_counted_as_cache_hits():
    f = kx.function(lambda x: np.copyto(x.sum(), 1.0))  # (a NumPy scalar: TypeError)
    for _ in range(2):
        with pytest.raises(TypeError):
            f(np.ones((2, 2)))
    assert f.stats["cache_hits"] == 0 and f.stats["traces"] == 0


def test_trace_after_released_traces_says_so():
    f = kx.function(lambda x, obj: x)

    class Key:
        pass

    key = Key()
    f(np.ones(1), key)
    del key
    gc.collect()
    f(np.ones(1), Key())
    assert [r.cause for r in f.retraces] == ["first_trace", "released"]


def test_explanations_of_many_retraces_match_a_direct_comparison():
    """Retrace explanations come from an index of earlier signatures (linear time for a
    function retraced hundreds of times); they must name the same closest trace and the same
    differences as comparing with every earlier signature, ties going to the latest."""
    import warnings

    from kernel_ext.engine.explain import closest_trace, derive_input_signature

    def f(x, n, flag):
        return x * n if flag else x

    fn = kx.function(f, backend="numpy")
    rng = np.random.default_rng(3)
    calls = []
    for i in range(60):
        shape = tuple(int(d) for d in rng.integers(1, 4, size=rng.integers(1, 3)))
        dtype = np.float64 if i >= 50 and rng.random() < 0.5 else np.float32
        n = 2 if rng.random() < 0.8 else [3, np.float32(1.5)][rng.integers(2)]
        calls.append((np.ones(shape, dtype), n, rng.random() < 0.9))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for args in calls:
            fn(*args)
    records = fn.retraces
    types_ = [cf.input_types for cf in fn.concrete_functions]
    assert len(records) == len(types_) > 20
    names = ["x", "n", "flag"]
    for k, record in enumerate(records[1:], start=1):
        earlier = [(records[i].index, types_[i]) for i in range(k)]
        closest, diffs = closest_trace(names, earlier, types_[k])
        assert record.closest == closest, k
        assert [str(d) for d in record.diffs] == [str(d) for d in diffs], k
        positions = sorted({names.index(d.argument.split("[")[0]) for d in diffs})
        assert record.suggested_signature == derive_input_signature(
            [*types_[:k], types_[k]], positions
        ), k
    assert sum(r.suggested_signature is not None for r in records) > 10


def test_calls_leaving_atomic_defaults_take_the_fast_path(monkeypatch):
    def f(x, scale=2.0, shift=None, name="a"):
        return x * scale if shift is None else x * scale + shift

    fn = kx.function(f)
    x = np.arange(3, dtype=np.float32)
    slow = []
    real = fn._call_slow
    monkeypatch.setattr(fn, "_call_slow", lambda *a: slow.append(1) or real(*a))
    for rounds in range(4):
        if rounds == 2:  # (a new trace clears the fast cache: round 2 has re-filled it)
            slow.clear()
        np.testing.assert_array_equal(fn(x), f(x))
        np.testing.assert_array_equal(fn(x, 3.0), f(x, 3.0))
        np.testing.assert_array_equal(fn(x, 3.0, 1.0), f(x, 3.0, 1.0))
    assert slow == []  # every call shape, defaults left out or not, is a cache hit
    assert fn.experimental_get_tracing_count() == 3
    assert fn.last_concrete_function is fn.get_concrete_function(x, 3.0, 1.0)


def test_a_mutable_default_is_read_at_every_call():
    """A default list may change between calls, and with it the trace type: such calls never
    take the fast path, so the new value is always seen."""
    scales = [2.0]

    def f(x, scale=scales):
        return x * scale[0]

    fn = kx.function(f)
    x = np.arange(3, dtype=np.float32)
    np.testing.assert_array_equal(fn(x), x * 2.0)
    scales[0] = 5.0
    np.testing.assert_array_equal(fn(x), x * 5.0)
    assert fn.experimental_get_tracing_count() == 2


def test_keyword_calls_take_the_fast_path(monkeypatch):
    """``model(x, training=True)``: a call with keywords is a cache hit too, keyed by the
    names and values given; the values reach their parameters whatever the order."""

    def f(x, scale=2.0, shift=0.0, training=False):
        y = x * scale + shift
        return y * 0.5 if training else y

    fn = kx.function(f)
    x = np.arange(4, dtype=np.float32)
    calls = [
        ((x,), {"training": True}),
        ((x,), {"shift": 1.0, "scale": 3.0}),
        ((x,), {"scale": 3.0, "shift": 1.0}),
        ((x, 4.0), {"training": True}),
        ((), {"x": x, "training": False}),
    ]
    slow = []
    real = fn._call_slow
    monkeypatch.setattr(fn, "_call_slow", lambda *a: slow.append(1) or real(*a))
    for rounds in range(4):
        if rounds == 2:  # (new traces clear the fast cache; round 2 re-filled it)
            slow.clear()
        for args, kwargs in calls:
            np.testing.assert_array_equal(fn(*args, **kwargs), f(*args, **kwargs))
    assert slow == []
    y = np.arange(3, dtype=np.float64)  # another signature through the same call shape
    np.testing.assert_array_equal(fn(y, training=True), f(y, training=True))
    with pytest.raises(TypeError, match="unexpected keyword argument 'bias'"):
        fn(x, bias=1.0)


def test_keyword_calls_leaving_a_mutable_default_stay_on_the_slow_path():
    offsets = [1.0]

    def f(x, scale=2.0, offset=offsets):
        return x * scale + offset[0]

    fn = kx.function(f)
    x = np.arange(3, dtype=np.float32)
    np.testing.assert_array_equal(fn(x, scale=3.0), x * 3.0 + 1.0)
    offsets[0] = 7.0
    np.testing.assert_array_equal(fn(x, scale=3.0), x * 3.0 + 7.0)


# -- objects keyed by identity on the cache-hit path ----------------------------------------


class _Scaler:
    def __init__(self, scale: float) -> None:
        self.scale = scale


def _scaled(x, obj):
    return x * obj.scale  # read at trace time: a constant of the trace made for this object


def test_calls_with_a_plain_object_argument_are_cache_hits():
    f = kx.function(_scaled)
    s = _Scaler(2.0)
    for _ in range(5):
        f(np.ones(2), s)
    assert f.stats["traces"] == 1 and f.stats["cache_hits"] == 4
    assert len(f._fast) == 1  # the hit path keys the object by its identity


def test_a_new_object_at_a_dead_objects_address_never_runs_the_old_trace():
    f = kx.function(_scaled)
    for scale in range(1, 40):  # CPython reuses the address of the object just freed
        s = _Scaler(float(scale))
        np.testing.assert_array_equal(f(np.ones(2), s), [scale, scale])
        np.testing.assert_array_equal(f(np.ones(2), s), [scale, scale])
        del s


def test_a_mutated_dataclass_argument_is_not_keyed_by_identity():
    import dataclasses

    @dataclasses.dataclass
    class Config:
        scale: float

    f = kx.function(lambda x, c: x * c.scale)
    c = Config(2.0)
    np.testing.assert_array_equal(f(np.ones(2), c), [2.0, 2.0])
    c.scale = 3.0  # its trace type follows its fields: a new trace, not the old graph
    np.testing.assert_array_equal(f(np.ones(2), c), [3.0, 3.0])


def test_calls_with_lists_and_dicts_of_arrays_are_cache_hits_keyed_by_their_contents():
    def step(params, lr):
        params["w"] = params["w"] - lr * params["g"]
        return params["w"].sum()

    f = kx.function(step)
    p = {"w": np.ones(3), "g": np.full(3, 0.5)}
    for _ in range(4):
        f(p, 0.1)
    assert f.stats["traces"] == 1 and f.stats["cache_hits"] == 3
    np.testing.assert_allclose(p["w"], 1 - 4 * 0.05)
    p["g"] = np.ones(4)  # another shape inside the dict: another key, another trace
    p["w"] = np.ones(4)
    f(p, 0.1)
    assert f.stats["traces"] == 2
    np.testing.assert_allclose(p["w"], 0.9)


class _Gain:
    def __init__(self, s):
        self.s = s

    @kx.function
    def apply(self, x):
        return x * self.s


def test_a_method_of_a_temporary_instance_runs_and_its_cache_holds_it_weakly():
    import gc
    import weakref

    np.testing.assert_array_equal(_Gain(3.0).apply(np.ones(2)), [3.0, 3.0])
    method = _Gain(4.0).apply  # the bound method keeps its instance, as Python's
    np.testing.assert_array_equal(method(np.ones(2)), [4.0, 4.0])
    assert method.experimental_get_tracing_count() == 1 and method == method.__self__.apply
    instance = method.__self__
    ref = weakref.ref(instance)
    del method, instance
    gc.collect()
    assert ref() is None  # nothing else keeps it (the cache is weak)
