"""Random draws inside traced functions are made at every call, the very numbers eager draws.

``np.random.seed(s); f(x)`` must equal ``np.random.seed(s); f_eager(x)`` draw for draw, over
several calls and several draws per call, from the global RandomState and from Generators
(passed in, global, or made inside the function), in helpers, branches and graph loops.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import kernel_ext as kx
from kernel_ext import errors
from kernel_ext.ir import OpKind, format_graph

PATHS = {"numpy": {"backend": "numpy"}, "auto": {}, "jit": {"jit_compile": True}}


def _same(actual, expected) -> None:
    if isinstance(expected, (tuple, list)):
        assert len(actual) == len(expected)
        for a, e in zip(actual, expected):
            _same(a, e)
        return
    assert np.asarray(actual).dtype == np.asarray(expected).dtype
    np.testing.assert_array_equal(actual, expected)


def _global_sequence(fn, args_list, path="numpy", seed=0):
    """Outputs of ``fn`` traced and eager over ``args_list``, each run from one seed."""
    traced = kx.function(fn, **PATHS[path])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        np.random.seed(seed)
        got = [traced(*a) for a in args_list]
    np.random.seed(seed)
    want = [fn(*a) for a in args_list]
    return traced, got, want


def dropout(x, p):
    mask = (np.random.rand(*x.shape) < p) / p
    return x * mask


def several_draws(x):
    a = np.random.randn(*x.shape)
    b = np.random.uniform(-1.0, 1.0, size=x.shape)
    c = np.random.randint(0, 10, size=3)
    perm = np.random.permutation(len(x))
    return x + a * b, c, perm


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize(
    "fn, args",
    [
        (dropout, (np.ones((4, 3)), 0.5)),
        (several_draws, (np.ones(5),)),
    ],
)
def test_global_state_draws_equal_eager_call_after_call(fn, args, path):
    traced, got, want = _global_sequence(fn, [args] * 4, path)
    for g, w in zip(got, want):
        _same(g, w)
    assert traced.experimental_get_tracing_count() == 1


def test_draws_are_not_frozen():
    f = kx.function(lambda x: x + np.random.rand(3))
    assert not np.array_equal(f(np.zeros(3)), f(np.zeros(3)))


def test_tracing_does_not_advance_the_state():
    f = kx.function(lambda x: x + np.random.rand(3))
    np.random.seed(1)
    f.get_concrete_function(np.zeros(3))
    after_trace = np.random.rand()
    np.random.seed(1)
    assert after_trace == np.random.rand()


def test_array_arguments_of_draws_are_read_at_run_time():
    def perturb(mu):
        return np.random.normal(loc=mu, scale=np.abs(mu) + 0.1)

    mus = [(np.arange(4.0),), (np.arange(4.0) * -2,)]
    _, got, want = _global_sequence(perturb, mus)
    for g, w in zip(got, want):
        _same(g, w)


@pytest.mark.parametrize("path", PATHS)
def test_generator_argument_draws_equal_eager(path):
    def noisy(x, rng):
        z = rng.standard_normal(x.shape)
        return x + z * rng.exponential(1.0, size=x.shape), rng.integers(0, 5, size=2)

    f = kx.function(noisy, **PATHS[path])
    traced_rng, eager_rng = np.random.default_rng(5), np.random.default_rng(5)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        for _ in range(3):
            _same(f(np.ones(4), traced_rng), noisy(np.ones(4), eager_rng))
    assert f.experimental_get_tracing_count() == 1  # the same Generator: one trace
    assert traced_rng.bit_generator.state == eager_rng.bit_generator.state


def test_new_generator_object_retraces_by_identity():
    f = kx.function(lambda x, rng: x + rng.random(2))
    f(np.ones(2), np.random.default_rng(0))
    f(np.ones(2), np.random.default_rng(0))
    assert f.experimental_get_tracing_count() == 2


def test_global_generator_draws_at_every_call():
    gen = np.random.default_rng(11)
    f = kx.function(lambda x: x * gen.random(x.shape))
    got = [f(np.ones(3)) for _ in range(3)]
    eager = np.random.default_rng(11)
    for g in got:
        _same(g, np.ones(3) * eager.random(3))


def _helper_noise(shape):
    return np.random.randn(*shape) * 0.1


def _outer_helper(x):
    return x + _helper_noise(x.shape) + np.random.rand()


def test_draws_inside_nested_helper_functions():
    _, got, want = _global_sequence(_outer_helper, [(np.ones(3),)] * 3)
    for g, w in zip(got, want):
        _same(g, w)


def _random_walk_until(x):
    steps = 0
    while np.sum(x) < 3.0:
        x = x + np.random.rand(*x.shape)
        steps += 1
    return x


@pytest.mark.parametrize("path", PATHS)
def test_draws_inside_a_graph_while_loop_body(path):
    traced, got, want = _global_sequence(_random_walk_until, [(np.zeros(2),)] * 3, path)
    for g, w in zip(got, want):
        _same(g, w)
    graph = traced.get_concrete_function(np.zeros(2)).graph
    # (AutoGraph may peel the first iteration into a branch: the loop can be nested)
    assert "while(" in format_graph(graph)


def _branchy(x):
    if np.sum(x) > 0:
        x = x + np.random.rand(*x.shape)
    else:
        x = x - np.random.randn(*x.shape)
    return x


def test_only_the_taken_branch_draws():
    inputs = [(np.ones(2),), (-np.ones(2),), (np.ones(2),)]
    _, got, want = _global_sequence(_branchy, inputs)
    for g, w in zip(got, want):
        _same(g, w)


def test_python_number_draws_combine_weakly_with_arrays():
    def fn(x):
        scale = np.random.rand() * 0.5 + 0.1  # a Python float eagerly
        return x * scale, np.random.randint(0, 3) + np.arange(2, dtype=np.int16)

    x = np.ones(3, np.float32)
    _, got, want = _global_sequence(fn, [(x,)] * 2)
    for g, w in zip(got, want):
        _same(g, w)
    assert got[0][0].dtype == np.float32 and got[0][1].dtype == np.int16


def test_python_number_draw_as_a_branch_condition():
    def fn(x):
        if np.random.rand() < 0.5:
            x = x * 2.0
        return x

    _, got, want = _global_sequence(fn, [(np.ones(2),)] * 6)
    for g, w in zip(got, want):
        _same(g, w)


def test_generator_made_inside_the_function_restarts_each_call():
    def fn(x):
        rng = np.random.default_rng(42)
        return x + rng.random(3) + rng.random(3)

    f = kx.function(fn)
    for _ in range(2):
        _same(f(np.zeros(3)), fn(np.zeros(3)))


def test_unseeded_generator_made_inside_the_function_is_fresh_each_call():
    f = kx.function(lambda x: x + np.random.default_rng().random(3))
    assert not np.array_equal(f(np.zeros(3)), f(np.zeros(3)))


def test_seeding_inside_the_function_runs_at_every_call():
    def fn(x):
        np.random.seed(3)
        return x + np.random.rand(2)

    f = kx.function(fn)
    np.random.seed(99)
    _same(f(np.zeros(2)), fn(np.zeros(2)))
    np.random.rand(5)
    _same(f(np.zeros(2)), fn(np.zeros(2)))


def test_generator_shuffle_in_place_is_drawn_like_eager():
    def fn(x, rng):
        rng.shuffle(x)
        return x[:3] * 1.0

    f = kx.function(fn)
    traced_rng, eager_rng = np.random.default_rng(2), np.random.default_rng(2)
    for _ in range(2):
        _same(f(np.arange(9.0), traced_rng), fn(np.arange(9.0), eager_rng))


def test_random_calls_are_stateful_nodes_in_program_order():
    def fn(x):
        a = np.random.rand(2)
        b = np.random.rand(2)
        return b - a

    graph = kx.function(fn).get_concrete_function(np.zeros(2)).graph
    draws = [n for n in graph.get_operations() if n.op is OpKind.RANDOM_CALL]
    assert len(draws) == 2 and all(n.op.is_stateful for n in draws)


def test_unused_draws_still_advance_the_state():
    def fn(x):
        np.random.rand(4)  # unused, but eager advances the state
        return x + np.random.rand(2)

    _, got, want = _global_sequence(fn, [(np.zeros(2),)] * 2)
    for g, w in zip(got, want):
        _same(g, w)


def test_draw_frozen_with_autograph_off_raises_with_fix():
    f = kx.function(lambda x: x + np.random.rand(2), autograph=False)
    np.random.seed(4)
    with pytest.raises(
        errors.UnsupportedOpError,
        match=r"global state advanced while tracing"
        r".*frozen.*Fix: keep AutoGraph on",
    ):
        f(np.zeros(2))
    after = np.random.rand()  # the failed trace put the state back
    np.random.seed(4)
    assert after == np.random.rand()


def test_generator_argument_draw_frozen_with_autograph_off_raises():
    f = kx.function(lambda x, rng: x + rng.random(2), autograph=False)
    with pytest.raises(errors.UnsupportedOpError, match="a Generator argument advanced"):
        f(np.zeros(2), np.random.default_rng(0))


def test_traced_seed_raises():
    f = kx.function(lambda x, s: x + np.random.default_rng(s).random(2))
    with pytest.raises(errors.UnsupportedOpError, match="seed"):
        f(np.zeros(2), np.int64(3))
