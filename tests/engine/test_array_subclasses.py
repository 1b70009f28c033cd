"""ndarray subclasses: the class is part of the trace type. ``np.memmap`` computes as a plain
array and is traced as one; any other subclass (masked arrays, ``np.matrix``, user classes
without ``__tracing_type__``) raises one clear error before tracing, the same on every
backend, rather than being traced as the plain array it is not."""

from __future__ import annotations

import numpy as np
import pytest

import kernel_ext as kx
from kernel_ext import errors

BACKENDS = ["numpy", "auto", "numba"]


def masked() -> np.ma.MaskedArray:
    return np.ma.masked_array([1.0, 2.0, 3.0], mask=[False, True, False])


def error_text(fn, *args) -> str:
    with pytest.raises(errors.TraceTypeError) as info:
        fn(*args)
    return str(info.value)


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_masked_array_never_reuses_a_plain_arrays_trace(backend):
    f = kx.function(lambda x: x.sum(), backend=backend)
    assert f(np.array([1.0, 2.0, 3.0])) == 6.0  # a trace (and fast key) for float64[3]
    text = error_text(f, masked())  # was 6.0: the mask was ignored
    assert "argument 'x' is a masked array" in text and "1 of 3 entries masked" in text
    assert "x.filled(fill_value)" in text and "np.asarray(x)" in text
    assert f.experimental_get_tracing_count() == 1


def test_the_subclass_error_is_the_same_on_every_backend():
    def body(x):
        return x * 2.0

    matrix = np.matrix([[1.0, 2.0], [3.0, 4.0]])
    for value in (masked(), matrix):
        texts = {error_text(kx.function(body, backend=b), value) for b in BACKENDS}
        assert len(texts) == 1, texts
    (text,) = {error_text(kx.function(body, backend=b), matrix) for b in BACKENDS}
    assert "numpy.matrix" in text and "np.asarray(x)" in text and "@" in text


def test_other_subclasses_name_their_class_and_the_fix():
    class Meters(np.ndarray):
        pass

    f = kx.function(lambda x: x + 1)
    text = error_text(f, np.zeros(2).view(Meters))
    assert "Meters" in text and "ndarray subclass" in text and "np.asarray(x)" in text


def test_subclasses_inside_containers_are_refused_with_their_path():
    f = kx.function(lambda xs: xs[0] + xs[1])
    text = error_text(f, [np.zeros(3), masked()])
    assert "argument 'xs[1]' is a masked array" in text


def test_an_input_signature_does_not_strip_a_mask():
    f = kx.function(lambda x: x * 2, input_signature=[kx.TensorSpec([None], np.float32)])
    text = error_text(f, masked())  # was silently converted with np.asarray (mask dropped)
    assert "masked array" in text


def test_memmaps_are_traced_as_the_plain_arrays_they_compute_as(tmp_path):
    mm = np.memmap(tmp_path / "data.bin", dtype=np.float32, mode="w+", shape=(4,))
    mm[:] = [1.0, 2.0, 3.0, 4.0]
    f = kx.function(lambda x: np.tanh(x) * 2)
    np.testing.assert_array_equal(f(mm), np.tanh(mm) * 2)
    np.testing.assert_array_equal(f(np.asarray(mm)), np.tanh(mm) * 2)
    assert f.experimental_get_tracing_count() == 1


def test_a_subclass_with_its_own_tracing_type_is_traced_by_it():
    class Tagged(np.ndarray):
        def __tracing_type__(self, context):
            return kx.TensorSpec(self.shape, self.dtype)

    f = kx.function(lambda x: x + 1)
    np.testing.assert_array_equal(f(np.zeros(2).view(Tagged)), np.ones(2))


MASKED_GLOBAL = np.ma.masked_array([1.0, 2.0, 3.0], mask=[False, True, False])


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_masked_array_read_from_outside_is_refused_not_unmasked(backend):
    def f(x):
        return (x + MASKED_GLOBAL).sum()  # eagerly 6.0: the masked entry is skipped

    text = error_text(kx.function(f, backend=backend), np.ones(3))  # was 9.0
    assert "an array read from outside 'f'" in text and "masked array" in text
    assert "x.filled(fill_value)" in text
