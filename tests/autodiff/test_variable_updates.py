"""Variable updates in place (benchmark W8): an optimizer's ``assign_sub`` writes into the
variable's buffer when nothing else can see the old value, and replaces the buffer otherwise.

Every check compares against the same updates with the buffer replaced each step (the
buffer marked exposed through ``Variable.storage``, which turns the in-place path off): the
values must be the same bits, and whatever saw the old buffer must still see the old value.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import kernel_ext as kx
from kernel_ext.trace import variables as variables_module


@pytest.fixture(autouse=True)
def _every_size_in_place(monkeypatch, request):
    """The rules below on small variables: every size is updated in place (by default only
    buffers of ``IN_PLACE_MIN_BYTES`` and more are; see the last test)."""
    if request.function is not test_only_large_variables_are_updated_in_place_by_default:
        monkeypatch.setattr(variables_module, "IN_PLACE_MIN_BYTES", 0)


def _model(seed: int = 0) -> tuple[list[np.ndarray], np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    params = [
        rng.standard_normal((6, 5)).astype(np.float32),
        rng.standard_normal(5).astype(np.float32),
    ]
    x = rng.standard_normal((8, 6)).astype(np.float32)
    y = rng.standard_normal((8, 5)).astype(np.float32)
    return params, x, y


def _train(
    make_optimizer: Callable[[], Any], backend: str, expose: bool, steps: int = 4
) -> tuple[list[kx.Variable], list[bool]]:
    params, x, y = _model()
    variables = [kx.Variable(p) for p in params]
    optimizer = make_optimizer()

    @kx.function(backend=backend)
    def step(x: Any, y: Any) -> Any:
        w, b = variables
        with kx.GradientTape() as tape:
            loss = np.mean((x @ w + b - y) ** 2)
        optimizer.apply_gradients(zip(tape.gradient(loss, variables), variables))
        return loss

    kept = []
    for i in range(steps):
        if expose:
            for v in variables:
                v.storage  # noqa: B018 - handing the buffer out is the point
        before = [v.peek() for v in variables]
        step(x, y)
        if i:
            kept.append(all(v.peek() is b for v, b in zip(variables, before)))
    return variables, kept


OPTIMIZERS = {
    "sgd": lambda: kx.optimizers.SGD(0.1),
    "momentum": lambda: kx.optimizers.SGD(0.1, momentum=0.9, nesterov=True),
    "adam": lambda: kx.optimizers.Adam(0.01),
    "rmsprop": lambda: kx.optimizers.RMSprop(0.01, momentum=0.5),
}


@pytest.mark.parametrize("backend", ["numpy", "auto"])
@pytest.mark.parametrize("name", sorted(OPTIMIZERS))
def test_optimizer_updates_write_into_the_variable_buffer(name, backend):
    ours, kept = _train(OPTIMIZERS[name], backend, expose=False)
    assert all(kept), f"{name}: a step replaced a private variable buffer"
    theirs, replaced = _train(OPTIMIZERS[name], backend, expose=True)
    assert not any(replaced), f"{name}: an exposed buffer was written in place"
    for a, b in zip(ours, theirs):
        np.testing.assert_array_equal(a.numpy(), b.numpy())
        assert a.peek().flags.writeable is False  # still read-only to everyone else


def test_an_array_taken_from_the_variable_keeps_its_value():
    v = kx.Variable(np.arange(4.0))

    @kx.function
    def step(d: Any) -> None:
        v.assign_sub(d)

    d = np.full(4, 0.5)
    step(d)
    held = np.asarray(v)  # the caller holds the buffer itself now
    seen = v[1:]  # and a view of it
    step(d)
    np.testing.assert_array_equal(held, np.arange(4.0) - 0.5)
    np.testing.assert_array_equal(seen, np.arange(1.0, 4.0) - 0.5)
    np.testing.assert_array_equal(v.numpy(), np.arange(4.0) - 1.0)
    before = v.peek()
    step(d)  # the new buffer is private again: written in place
    assert v.peek() is before
    np.testing.assert_array_equal(v.numpy(), np.arange(4.0) - 1.5)


@pytest.mark.parametrize("backend", ["numpy", "auto"])
def test_reads_used_after_the_update_see_the_old_value(backend):
    """A read whose value (or a view of it) is returned or used after the write: the write
    must not land in that buffer, as eager NumPy code with ``v = v - d`` would not."""
    v = kx.Variable(np.arange(6.0, dtype=np.float32).reshape(2, 3))

    @kx.function(backend=backend)
    def f(d: Any) -> Any:
        old = v.read_value()
        view = old.T
        v.assign_sub(d)
        return old, view[1:], old * 2.0, v.read_value()

    d = np.ones((2, 3), np.float32)
    for k in range(3):
        start = np.arange(6.0, dtype=np.float32).reshape(2, 3) - k
        old, tail, twice, new = f(d)
        np.testing.assert_array_equal(old, start)
        np.testing.assert_array_equal(tail, start.T[1:])
        np.testing.assert_array_equal(twice, start * 2.0)
        np.testing.assert_array_equal(new, start - 1.0)
        np.testing.assert_array_equal(v.numpy(), start - 1.0)


def test_updates_that_cast_or_broadcast_give_numpys_values():
    v = kx.Variable(np.zeros((2, 3), np.float32))
    w = kx.Variable(np.zeros((2, 3), np.float32))

    @kx.function
    def f(d64: Any, row: Any) -> None:
        v.assign_add(d64)  # float64 delta: computed in float64, cast same_kind
        w.assign_add(row)  # a (3,) row broadcast over the variable

    d64 = np.full((2, 3), 0.1)
    row = np.arange(3, dtype=np.float32)
    for _ in range(3):
        f(d64, row)
    want = np.zeros((2, 3), np.float32)
    for _ in range(3):
        want = (want + d64).astype(np.float32)
    np.testing.assert_array_equal(v.numpy(), want)
    np.testing.assert_array_equal(w.numpy(), np.tile(row * 3, (2, 1)))


def test_eager_updates_write_in_place_until_the_buffer_is_handed_out():
    v = kx.Variable(np.linspace(0.0, 1.0, 5, dtype=np.float32))
    d = np.full(5, 0.25, np.float32)
    want = np.linspace(0.0, 1.0, 5, dtype=np.float32)
    buf = v.peek()
    for _ in range(3):
        v.assign_sub(d)
        want = want - d
    assert v.peek() is buf  # nobody saw it: written in place
    np.testing.assert_array_equal(v.numpy(), want)
    held = np.asarray(v)  # handed out: the next update replaces it
    v.assign_add(d * 2)
    assert v.peek() is not held
    np.testing.assert_array_equal(held, want)
    np.testing.assert_array_equal(v.numpy(), want + d * 2)
    v.assign(np.zeros(5))  # float64 into float32: cast, as NumPy does
    np.testing.assert_array_equal(v.numpy(), np.zeros(5, np.float32))
    assert v.dtype == np.float32


def test_only_large_variables_are_updated_in_place_by_default():
    """Small buffers are replaced (malloc's free lists make that cheap, and an in-place
    update there only changed where the step's temporaries sat on the heap); buffers of
    ``IN_PLACE_MIN_BYTES`` and more, which come from fresh pages, are written in place."""
    small = kx.Variable(np.zeros(1000, np.float32))
    large = kx.Variable(np.zeros(variables_module.IN_PLACE_MIN_BYTES // 4, np.float32))

    @kx.function
    def step(ds: Any, dl: Any) -> None:
        small.assign_sub(ds)
        large.assign_sub(dl)

    ds, dl = np.ones(1000, np.float32), np.ones(large.shape, np.float32)
    step(ds, dl)
    before_small, before_large = small.peek(), large.peek()
    step(ds, dl)
    assert small.peek() is not before_small
    assert large.peek() is before_large
    np.testing.assert_array_equal(small.numpy(), np.full(1000, -2.0, np.float32))
    np.testing.assert_array_equal(large.numpy(), np.full(large.shape, -2.0, np.float32))
