"""In-place updates reach the caller, exactly as in NumPy (functionalization + write-back).

Each case runs eagerly on one copy of its arguments and through ``kx.function`` on another,
twice (the second call runs the cached graph on new values), on every executor; the returned
values and every argument after the call must match NumPy bit for bit.
"""

from __future__ import annotations

import copy
import warnings

import numpy as np
import pytest

import kernel_ext as kx
from kernel_ext import errors

PATHS = {"numpy": {"backend": "numpy"}, "auto": {}, "jit": {"jit_compile": True}}


def _same(a, b) -> bool:
    if isinstance(a, (list, tuple)):
        return type(a) is type(b) and len(a) == len(b) and all(map(_same, a, b))
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if a is None or b is None:
        return a is b
    a, b = np.asarray(a), np.asarray(b)
    return a.dtype == b.dtype and a.shape == b.shape and np.array_equal(a, b, equal_nan=True)


def check(fn, make, path: str, calls: int = 2):
    """Run ``fn`` eagerly and traced on ``make(seed)`` for a few seeds; compare everything."""
    traced = kx.function(fn, **PATHS[path])
    for seed in range(calls):
        args = make(np.random.default_rng(seed))
        eager_args, traced_args = copy.deepcopy(args), copy.deepcopy(args)
        want = fn(*eager_args)
        got = traced(*traced_args)
        assert _same(want, got), (seed, want, got)
        assert _same(eager_args, traced_args), (seed, eager_args, traced_args)
    return traced


def gemm(alpha, beta, C, A, B):
    C[:] = alpha * A @ B + beta * C


def relu_inplace(x):
    x[x < 0] = 0
    return x


def axpy(a, x, y):
    y += a * x
    return y


def write_through_views(x):
    v = x[1:3]
    v[0] = 7.0
    x.T[0] = -1.0
    w = x[:, 1:]
    x[2, 2] = 100.0
    return w.sum(), v.copy()


def sort_rows(x):
    x.sort()


def ufunc_out(a, b):
    np.add(a, b, out=a)
    np.multiply(a, 2, out=a)


def lu_inplace(A):
    n = A.shape[0]
    for k in range(n - 1):
        A[k + 1 :, k] /= A[k, k]
        A[k + 1 :, k + 1 :] -= np.outer(A[k + 1 :, k], A[k, k + 1 :])


def decay_all(ws):
    for w in ws:
        w *= 0.5


def two_d(rng):
    return (rng.standard_normal((4, 4)),)


CASES = {
    "gemm": (gemm, lambda r: (1.5, 0.5, *r.standard_normal((3, 4, 4)))),
    "relu_inplace": (relu_inplace, lambda r: (r.standard_normal(7),)),
    "axpy": (axpy, lambda r: (2.0, r.standard_normal(5), r.standard_normal(5))),
    "write_through_views": (write_through_views, lambda r: (r.standard_normal((4, 3)),)),
    "sort_rows": (sort_rows, lambda r: (r.standard_normal((3, 5)),)),
    "ufunc_out": (ufunc_out, lambda r: (r.standard_normal(4), r.standard_normal(4))),
    "lu_inplace": (lu_inplace, lambda r: (r.standard_normal((5, 5)) + 5 * np.eye(5),)),
    "decay_all": (decay_all, lambda r: ([r.standard_normal(3), r.standard_normal((2, 2))],)),
}


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("name", CASES)
def test_inplace_update_reaches_the_caller(name, path):
    fn, make = CASES[name]
    with warnings.catch_warnings():
        warnings.simplefilter(
            "ignore",
            kx.errors.RetracingWarning if hasattr(kx.errors, "RetracingWarning") else Warning,
        )
        check(fn, make, path)


def test_returned_updated_argument_is_the_callers_array():
    f = kx.function(relu_inplace, backend="numpy")
    x = np.array([-1.0, 2.0])
    assert f(x) is x
    np.testing.assert_array_equal(x, [0.0, 2.0])


def test_numpy_scalar_argument_is_rebound_not_updated():
    @kx.function
    def countdown(x):
        while x > 0:
            x -= 1
        return x

    n = np.int32(5)
    assert countdown(n) == 0 and countdown(n).dtype == np.int32
    assert n == 5


def test_a_function_that_updates_nothing_has_no_guard():
    f = kx.function(lambda x: x * 2)
    f(np.ones(3))
    assert f.get_concrete_function(np.ones(3)).guard is None


def test_aliased_arguments_run_eagerly_with_numpys_answer():
    f = kx.function(axpy)
    x = np.arange(4.0)
    want = x.copy()
    axpy(2.0, want, want)
    got = f(2.0, x, x)
    np.testing.assert_array_equal(x, want)
    assert got is x
    assert f.last_eager_reason == (
        "argument 'y', updated in place, shares memory with argument 'x'"
    )
    y = np.arange(6.0)
    want = y.copy()
    axpy(1.0, want[1:4], want[:3])
    f(1.0, y[1:4], y[:3])  # overlapping views of one array
    np.testing.assert_array_equal(y, want)


def test_reshape_view_of_an_argument_needs_c_order():
    @kx.function
    def bump_flat(x):
        flat = x.reshape(-1)
        flat[0] = 9.0

    c = np.zeros((2, 3))
    bump_flat(c)
    assert c[0, 0] == 9.0
    f_order = np.zeros((3, 2)).T  # reshape copies: NumPy leaves the argument alone
    bump_flat(f_order)
    assert f_order[0, 0] == 0.0
    assert "C-contiguous" in bump_flat.last_eager_reason


def test_update_through_a_reshape_of_a_view_is_refused():
    @kx.function
    def ambiguous(x):
        r = x[:, 1:].reshape(-1)
        r[0] = 1.0

    with pytest.raises(errors.UnsupportedOpError, match="reshape of a view"):
        ambiguous(np.zeros((2, 3)))


def test_view_sees_later_update_of_its_base():
    def f(x):
        v = x[::2]
        x += 1.0
        return v * 1

    check(f, lambda r: (r.standard_normal(6),), "numpy")


def test_update_in_a_branch_on_a_traced_condition():
    def f(x, c):
        if c > 0:
            x[0] = 5.0
        else:
            x[1:] *= 2.0
        return x.sum()

    for path in PATHS:
        check(f, lambda r: (r.standard_normal(3), r.standard_normal()), path, calls=4)


def test_update_in_a_graph_loop_and_through_a_view_in_it():
    def fill(x, n):
        i = 0
        while i < n:
            x[i] = i * 2.0
            i += 1

    def bump_view(x):
        v = x[1:]
        for _ in kx.range(3):
            v[0] += 1.0

    for path in PATHS:
        check(fill, lambda r: (r.standard_normal(5), np.int64(r.integers(1, 5))), path)
        check(bump_view, lambda r: (r.standard_normal(4),), path)


def test_rebinding_in_a_loop_leaves_the_argument_alone():
    def f(x):
        i = np.int64(0)
        while i < 3:
            x = x + 1
            i += 1
        return x

    check(f, lambda r: (r.standard_normal(2),), "numpy")


def test_update_and_rebind_in_one_python_loop_body_follows_numpy():
    def f(x):
        for _ in range(3):  # unrolled: each iteration updates the array the name holds then
            x[0] += 1.0
            x = x * 2
        return x

    check(f, lambda r: (r.standard_normal(2),), "numpy")


def test_update_and_rebind_in_one_graph_loop_body_is_an_error():
    @kx.function
    def f(x, n):
        i = 0
        while i < n:
            x[0] = 1.0
            x = x * 2
            i += 1
        return x

    with pytest.raises(errors.UnsupportedOpError, match="updated in place and also assigned"):
        f(np.zeros(2), np.int64(3))


def test_write_to_a_broadcast_view_is_read_only_as_in_numpy():
    @kx.function
    def f(x):
        b = np.broadcast_to(x, (2, 3))
        b[0, 0] = 1.0

    with pytest.raises(ValueError, match="read-only"):
        f(np.zeros(3))


def test_read_only_argument_update_fails_like_numpy():
    x = np.zeros(3)
    x.setflags(write=False)
    with pytest.raises(ValueError, match="read-only"):
        kx.function(relu_inplace)(x)


# -- Python containers passed in: their changes are replayed at every call ---------------------


def update_running_stats(x, bn, momentum=0.9):
    bn["running_mean"] = momentum * bn["running_mean"] + (1 - momentum) * x.mean(axis=0)
    bn["calls"] = bn.get("calls", 0) + 1
    return x - bn["running_mean"]


def forward_with_cache(x, w, cache):
    h = x @ w
    cache.append(h)
    cache.append((x, w))
    return np.tanh(h)


def rotate_queue(q):
    q.append(q.pop(0))


def sgd_momentum(params, grads, state, lr=0.1):
    for name in params:
        v = state.setdefault(name, np.zeros_like(params[name]))
        v *= 0.9
        v -= lr * grads[name]
        params[name] += v


CONTAINER_CASES = {
    "update_running_stats": (
        update_running_stats,
        lambda r: (r.standard_normal((5, 3)), {"running_mean": np.zeros(3)}),
    ),
    "forward_with_cache": (
        forward_with_cache,
        lambda r: (r.standard_normal((2, 3)), r.standard_normal((3, 4)), []),
    ),
    "rotate_queue": (rotate_queue, lambda r: ([r.standard_normal(2) for _ in range(3)],)),
    "sgd_momentum": (
        sgd_momentum,
        lambda r: (
            {"w": r.standard_normal((2, 2)), "b": np.zeros(2)},
            {"w": r.standard_normal((2, 2)), "b": r.standard_normal(2)},
            {},
        ),
    ),
}


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("name", CONTAINER_CASES)
def test_container_argument_changes_happen_on_every_call(name, path):
    fn, make = CONTAINER_CASES[name]
    check(fn, make, path, calls=3)


def test_container_state_carried_across_calls_matches_eager():
    f = kx.function(update_running_stats)
    x = np.arange(6.0).reshape(3, 2)
    eager_bn, traced_bn = {"running_mean": np.zeros(2)}, {"running_mean": np.zeros(2)}
    for _ in range(4):  # the same dict, updated again each call (its count retraces)
        want = update_running_stats(x, eager_bn)
        got = f(x, traced_bn)
        np.testing.assert_array_equal(got, want)
    assert _same(eager_bn, traced_bn) and traced_bn["calls"] == 4


def test_arrays_kept_in_a_container_stay_the_callers_objects():
    f = kx.function(forward_with_cache)
    x, w, cache = np.ones((2, 3)), np.ones((3, 2)), []
    f(x, w, cache)
    assert cache[1][0] is x and cache[1][1] is w
    q = [np.zeros(1), np.ones(1)]
    first, second = q
    kx.function(rotate_queue)(q)
    assert q[0] is second and q[1] is first


def test_dict_keeps_its_key_order():
    @kx.function
    def touch(d):
        d["b"] = d["b"] + 1
        d["c"] = d["a"] * 2

    d = {"b": np.ones(1), "a": np.ones(1)}
    touch(d)
    assert list(d) == ["b", "a", "c"]


def test_returned_container_argument_is_the_callers_object():
    @kx.function
    def scale(d):
        d["x"] = d["x"] * 2
        return d

    d = {"x": np.ones(2)}
    assert scale(d) is d
    np.testing.assert_array_equal(d["x"], [2.0, 2.0])


def test_dataclass_argument_attribute_updates_are_replayed():
    import dataclasses

    @dataclasses.dataclass
    class Layer:
        w: np.ndarray
        steps: int = 0

    @kx.function
    def step(layer, g):
        layer.w = layer.w - 0.5 * g
        layer.steps += 1

    layer = Layer(np.ones(2))
    for _ in range(2):
        step(layer, np.ones(2))
    np.testing.assert_array_equal(layer.w, [0.0, 0.0])
    assert layer.steps == 2


def test_storing_an_object_that_cannot_be_replayed_is_an_error():
    @kx.function
    def remember(cache):
        cache.append(object())

    with pytest.raises(errors.UnsupportedOpError, match="replays such changes"):
        remember([])


# -- buffers the function creates, filled by index ----------------------------------------------


def pairwise_distances(x):
    n = x.shape[0]
    out = np.zeros((n, n))
    for i in range(n):
        for j in range(n):
            out[i, j] = np.sqrt(np.sum((x[i] - x[j]) ** 2))
    return out


def prefix_rows(x):
    out = np.empty_like(x)
    out[0] = x[0]
    for i in range(1, x.shape[0]):
        out[i] = out[i - 1] + x[i]
    return out


def accumulate_rows(x):
    acc = np.zeros(x.shape[1])
    alias = acc
    for row in range(x.shape[0]):
        acc += x[row]
    return alias  # the same array, under another name


def scatter_slices(x):
    out = np.ones((3, 4))
    out[1:, ::2] *= x[:2, :2]
    out[0] -= x[2].sum()
    return out


def copy_positive(dst, src):
    np.copyto(dst, src, where=src > 0)


def zero_diagonal(a):
    np.fill_diagonal(a, 0.0)
    return a.sum()


def reset(b):
    b.fill(0)


BUFFER_CASES = {
    "pairwise_distances": (pairwise_distances, lambda r: (r.standard_normal((5, 2)),)),
    "prefix_rows": (prefix_rows, lambda r: (r.standard_normal((4, 3)),)),
    "accumulate_rows": (accumulate_rows, lambda r: (r.standard_normal((4, 3)),)),
    "scatter_slices": (scatter_slices, lambda r: (r.standard_normal((3, 4)),)),
    "copy_positive": (copy_positive, lambda r: (r.standard_normal(5), r.standard_normal(5))),
    "zero_diagonal": (zero_diagonal, lambda r: (r.standard_normal((3, 3)),)),
    "reset": (reset, lambda r: (r.standard_normal(3),)),
}


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("name", BUFFER_CASES)
def test_buffer_filled_by_index_matches_numpy(name, path):
    fn, make = BUFFER_CASES[name]
    check(fn, make, path)


SCRATCH = np.zeros(3)


def test_writing_traced_values_into_a_global_array_is_an_error():
    @kx.function
    def stash(x):
        SCRATCH[0] = x.sum()
        return x

    with pytest.raises(errors.UnsupportedOpError, match="did not create"):
        stash(np.ones(3))
    assert not SCRATCH.any()


def test_copyto_casting_follows_numpy():
    @kx.function
    def f(dst, src):
        np.copyto(dst, src)

    with pytest.raises(TypeError, match="same_kind"):
        f(np.zeros(2, np.int64), np.ones(2))


def clip_and_reduce_into(x, buf):
    np.clip(x, -0.5, 0.5, out=x)
    np.sum(x, axis=0, out=buf)


@pytest.mark.parametrize("path", PATHS)
def test_out_argument_of_numpy_functions_is_an_update(path):
    check(clip_and_reduce_into, lambda r: (r.standard_normal((3, 2)), np.zeros(2)), path)


def test_writing_into_a_closure_or_attribute_array_is_an_error():
    buf = np.zeros(2)

    @kx.function
    def via_closure(x):
        buf[0] = x.sum()

    class Model:
        def __init__(self):
            self.state = np.zeros(2)

    model = Model()

    @kx.function
    def via_attribute(m, x):
        m.state[1] = x.sum()

    with pytest.raises(errors.UnsupportedOpError, match="did not create"):
        via_closure(np.ones(2))
    with pytest.raises(errors.UnsupportedOpError, match="did not create"):
        via_attribute(model, np.ones(2))
    assert not buf.any() and not model.state.any()


def test_a_view_of_a_new_array_taken_before_it_is_filled_follows_it():
    def early_view(x):
        out = np.zeros(4)
        head = out[:2]  # taken before any traced write: a traced view all the same
        out[0] = x.sum()
        return head * 1

    check(early_view, lambda r: (r.standard_normal(3),), "numpy")


def test_reading_a_plain_view_of_a_promoted_buffer_is_an_error():
    base = np.zeros(4)

    @kx.function
    def via_plain(x):
        out = np.concatenate([base, base])  # not a creation function: a plain array
        head = out[:2]
        out[0] = x.sum()
        return head + x[:2]

    with pytest.raises(errors.UnsupportedOpError, match="old contents"):
        via_plain(np.ones(3))

    @kx.function
    def fresh(x):
        out = np.zeros(4)
        out[0] = x.sum()
        head = out[:2]  # taken from the traced buffer: follows it
        out[1] = 5.0
        return head * 1

    np.testing.assert_array_equal(fresh(np.ones(3)), [3.0, 5.0])


# -- an if on a traced value that picks an existing array ------------------------------------


def _pick_then_write(x):
    out = x * 2.0
    other = x + 1.0
    y = out if x.sum() > 0 else other
    out[0] = 100.0
    return y


def _pick_then_write_through(x):
    out = x * 2.0
    other = x + 1.0
    if x.sum() > 0:
        y = out
    else:
        y = other
    y[0] = 100.0
    return out, other


def test_reading_a_picked_array_after_writing_its_source_is_an_error():
    with pytest.raises(
        errors.UnsupportedOpError,
        match=r"(?s)may be the array.*test_inplace.py:\d+.*written after.*"
        r"y = a.copy\(\) if c else b",
    ):
        kx.function(_pick_then_write)(np.ones(3))


def test_writing_through_a_picked_array_is_an_error():
    with pytest.raises(
        errors.UnsupportedOpError, match=r"(?s)Writing to .* may be the array.*as 'y'"
    ):
        kx.function(_pick_then_write_through)(np.ones(3))


def _pick_a_copy_then_write(x):
    out = x * 2.0
    other = x + 1.0
    y = out.copy() if x.sum() > 0 else other
    out[0] = 100.0
    return y, out


def _pick_without_writes(x):
    out = x * 2.0
    y = out if x.sum() > 0 else x
    return y + 1.0, out


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("fn", [_pick_a_copy_then_write, _pick_without_writes])
def test_picked_arrays_work_when_nothing_writes_through_both_names(fn, path):
    check(fn, lambda rng: (rng.standard_normal(4),), path, calls=3)


TABLE = np.arange(5.0)


def _copy_of_a_global(x):
    buf = TABLE.copy()
    view = buf[1:3]  # taken before the traced write: follows it, as in NumPy
    buf[1] = x[0]
    return view * 2


def _array_from_a_list(x):
    buf = np.array([1.0, 2.0, 3.0])
    head = buf[:2]
    buf[0] = x[0]
    return head.sum()


def _astype_of_a_global(x):
    buf = TABLE.astype(np.float32)
    evens = buf[::2]
    buf[2] = x[1]
    return evens + 1


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("fn", [_copy_of_a_global, _array_from_a_list, _astype_of_a_global])
def test_views_of_copies_made_in_the_function_follow_later_writes(fn, path):
    check(fn, lambda rng: (rng.standard_normal(2),), path)


def test_the_guard_tells_aliases_inside_containers_and_lets_disjoint_views_through():
    @kx.function
    def step(params, grads):
        params["w"] -= 0.5 * grads["w"]
        params["b"] -= 0.5 * grads["b"]

    w, g = np.arange(4.0), np.ones(4)

    def eager_calls():
        return step.stats["eager_calls"]

    step({"w": w, "b": np.zeros(2)}, {"w": g, "b": np.ones(2)})  # owned arrays
    assert eager_calls() == 0 and w.tolist() == [-0.5, 0.5, 1.5, 2.5]
    shared = np.arange(4.0)  # one array under two names: NumPy's answer
    want = shared.copy()
    want -= 0.5 * want
    step({"w": shared, "b": np.zeros(2)}, {"w": shared, "b": np.ones(2)})
    np.testing.assert_array_equal(shared, want)
    assert "shares memory" in step.last_eager_reason and eager_calls() == 1
    base = np.arange(12.0)  # views of one array that do not overlap
    eager = base.copy()
    step.python_function({"w": eager[:4], "b": eager[4:6]}, {"w": eager[6:10], "b": eager[10:]})
    step({"w": base[:4], "b": base[4:6]}, {"w": base[6:10], "b": base[10:]})
    np.testing.assert_array_equal(base, eager)
    assert eager_calls() == 1
