"""Plain-object arguments: a traced value stored in one is refused, and the object restored.

An object is traced as itself, so what the function does to it happens once, at trace time,
on the caller's object. Storing a traced value there would leave a value with no data in the
caller's object and store nothing at later calls, where eager NumPy stores a new array at
every call: the trace stops with an error naming the attribute, and the object is put back.
"""

from __future__ import annotations

import numpy as np
import pytest

import kernel_ext as kx


class Holder:
    def __init__(self):
        self.history = []
        self.cache = {}
        self.scale = 2.0


def append_flipped(h, x):
    h.history.append(np.flip(x))
    return x * h.scale


def cache_square(h, x):
    h.cache["sq"] = x * x
    return x + 1


def keep_last(h, x):
    y = x * h.scale
    h.last = y
    return y


@pytest.mark.parametrize(
    "fn, where",
    [
        (append_flipped, r"h\.history\[1\]"),
        (cache_square, r"h\.cache\['sq'\]"),
        (keep_last, r"h\.last"),
    ],
)
def test_a_traced_value_stored_in_an_object_argument_is_refused_and_undone(fn, where):
    h = Holder()
    h.history.append(np.zeros(3))
    before_history, before_cache = list(h.history), dict(h.cache)
    f = kx.function(fn, backend="numpy")
    with pytest.raises(kx.errors.UnsupportedOpError, match=where + r".*Fix: return the value"):
        f(h, np.arange(3.0))
    assert h.history == before_history and h.cache == before_cache
    assert not hasattr(h, "last")
    assert f.experimental_get_tracing_count() == 0


def test_reading_an_object_argument_and_storing_plain_values_still_traces():
    def scaled(h, x):
        h.note = "seen"  # a Python value: a trace-time side effect, as in TensorFlow
        return x * h.scale

    h = Holder()
    f = kx.function(scaled, backend="numpy")
    np.testing.assert_array_equal(f(h, np.arange(3.0)), np.arange(3.0) * 2.0)
    assert h.note == "seen"


def test_a_failing_trace_leaves_no_traced_value_in_the_object():
    def fails(h, x):
        h.history.append(x * 2)
        raise ValueError("bad input")

    h = Holder()
    with pytest.raises(ValueError, match="bad input"):
        kx.function(fails, backend="numpy")(h, np.ones(2))
    assert h.history == []


def test_writing_into_an_attribute_array_is_refused_after_its_dict_was_read():
    # Reading obj.__dict__ (vars(), copy.deepcopy, verify mode) leaves an attribute dict the
    # garbage collector no longer reports; the refusal must not depend on it.
    class Model:
        def __init__(self):
            self.state = np.zeros(2)

    model = Model()
    assert vars(model)["state"] is model.state

    @kx.function
    def via_attribute(m, x):
        m.state[1] = x.sum()

    @kx.function
    def via_global_object(x):
        GLOBAL_MODEL.state[0] = x.sum()

    with pytest.raises(kx.errors.UnsupportedOpError, match="did not create"):
        via_attribute(model, np.ones(2))
    vars(GLOBAL_MODEL)
    with pytest.raises(kx.errors.UnsupportedOpError, match="did not create"):
        via_global_object(np.ones(2))
    assert not model.state.any() and not GLOBAL_MODEL.state.any()


class _Model:
    def __init__(self):
        self.state = np.zeros(2)


GLOBAL_MODEL = _Model()
