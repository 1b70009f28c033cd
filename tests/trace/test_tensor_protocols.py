"""Python protocols of a traced value that ordinary NumPy code reaches, as ndarray has them.

``x.shape = ...`` (reshape in place), augmented assignment on a NumPy scalar (immutable: the
name is rebound), hashing (a clear error naming the NumPy way to count), buffers made with
``np.ndarray``/``np.empty`` and filled with traced values (``kernel_ext/trace/tensor.py``).
Every case runs eagerly and traced on fresh copies of the same arguments, on every executor
where it computes something, and compares values bitwise, dtypes, shapes, the 0-d form, the
exception type and the arguments after the call.
"""

from __future__ import annotations

import collections
import copy
import warnings
import zlib

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from same_as_numpy import assert_same

import kernel_ext as kx
from kernel_ext import errors

PATHS = {
    "numpy": {"backend": "numpy"},
    "auto": {},
    "numba": {"backend": "numba"},
    "jit": {"jit_compile": True},
}
rng = np.random.default_rng(2024)


def _outcome(fn, args):
    args = copy.deepcopy(args)
    try:
        return "ok", fn(*args), args
    except Exception as e:  # noqa: BLE001 - the type is what is compared
        return "raises", type(e), str(e)


def like_numpy(fn, *args, path="numpy", traced=None):
    """``fn`` traced on ``path`` does what eager NumPy does (twice: the trace, then the graph)."""
    traced = traced or kx.function(fn, **PATHS[path])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # jit: "runs as fused segments"
        for _ in range(2):
            expected, got = _outcome(fn, args), _outcome(traced, args)
            if expected[0] == "raises":
                assert got[0] == "raises" and issubclass(got[1], expected[1]), (got, expected)
                if expected[1] in (ValueError, AttributeError):  # NumPy's own message
                    assert got[2] == expected[2]
                continue
            assert got[0] == "ok", got
            assert_same(got[1], expected[1])
            assert_same(got[2], expected[2])
    return traced


# -- x.shape = ... ------------------------------------------------------------------------------


def _reshape_root(x):
    y = x * 1.0
    head = y[:3]  # a view taken before the reshape: it keeps its elements
    y.shape = (2, 3)
    y[1, 0] = 100.0  # seen through head? no (element 3); through the row view below
    head[0] = -1.0  # reaches y[0, 0]
    row = y[1]
    y.shape = (3, 2)  # twice: head and row still see their elements
    row[2] = 55.0
    return y, head, row


def _reshape_view(x):
    y = (x * 1.0).reshape(2, 3)
    tail = y[1:]
    tail.shape = (3,)  # a C-contiguous view: reshaped in place
    tail[0] = 7.0
    z = x[::2]
    z.shape = (3, 1)  # a strided 1-d view: adding a length-1 axis needs no copy
    return y, tail, z * 1.0


@pytest.mark.parametrize("path", PATHS)
def test_shape_assignment_reshapes_in_place_as_numpy(path):
    like_numpy(_reshape_root, np.arange(6.0), path=path)
    like_numpy(_reshape_view, np.arange(6.0), path=path)


@pytest.mark.parametrize("shape", [(6,), (3, -1), (1, 6, 1), (4,), (2, 2)])
@pytest.mark.parametrize("view", ["root", "transpose", "rows", "columns"])
def test_shape_assignment_raises_where_numpy_raises(view, shape):
    def f(x):
        y = (x * 1.0).reshape(2, 3)
        target = {"root": x * 1.0, "transpose": y.T, "rows": y[1:], "columns": y[:, 1:]}[view]
        target.shape = shape  # ValueError (size) or AttributeError (a copy needed)
        return target * 1.0

    like_numpy(f, np.arange(6.0))


def test_shape_assignment_on_an_argument_is_refused():
    def f(x):
        x.shape = (2, 3)
        return x

    with pytest.raises(errors.UnsupportedOpError, match="caller's array"):
        kx.function(f)(np.arange(6.0))


def test_shape_assignment_on_a_numpy_scalar_raises_numpys_error():
    def f(x):
        s = np.sum(x)
        s.shape = (1,)
        return s

    like_numpy(f, np.arange(3.0))


# -- augmented assignment on NumPy scalars --------------------------------------------------------

POLY = np.uint32(0xEDB88320)


def crc32(data):
    """CRC-32 (IEEE), bitwise and table-free, as textbooks write it."""
    crc = np.uint32(0xFFFFFFFF)
    for byte in data:
        crc ^= np.uint32(byte)
        for _ in range(8):
            if crc & 1:
                crc = (crc >> 1) ^ POLY
            else:
                crc >>= 1
    return crc ^ np.uint32(0xFFFFFFFF)


@pytest.mark.parametrize("path", PATHS)
def test_crc32_of_a_byte_array_as_eager_and_zlib(path):
    f = kx.function(crc32, **PATHS[path])
    for n in (0, 1, 5, 33):
        data = rng.integers(0, 256, n).astype(np.uint8)
        got, expected = f(data), crc32(data)
        assert_same(got, expected)
        assert int(got) == zlib.crc32(data.tobytes())


@settings(max_examples=25, deadline=None)
@given(st.binary(min_size=1, max_size=24))  # (empty input: the static-shape test above)
def test_crc32_matches_zlib_for_any_bytes(payload):
    data = np.frombuffer(payload, np.uint8).copy()
    assert int(_CRC_NUMPY(data)) == zlib.crc32(payload)
    np.testing.assert_array_equal(data, np.frombuffer(payload, np.uint8))  # argument unchanged


_CRC_NUMPY = kx.function(
    crc32,
    backend="numpy",  # one trace for every length
    input_signature=[kx.TensorSpec((None,), np.uint8)],
)


def _scalar_aliases(x):
    total = np.sum(x)
    before = total  # a NumPy scalar: `total += ...` makes a new one, `before` keeps it
    total += x[0]
    n = x[1]
    if n > 0:
        m = n * 2
    else:
        m = n
    m -= 1  # the if's 0-d output: a NumPy scalar too
    acc = np.zeros(())  # a 0-d array is updated in place: its alias sees it
    alias = acc
    acc += total
    return before, total, m, n, alias


@pytest.mark.parametrize("path", PATHS)
def test_augmented_assignment_on_a_numpy_scalar_rebinds_the_name(path):
    f = kx.function(_scalar_aliases, **PATHS[path])
    # whole numbers: the fused paths' float sums (another order, docs/backends.md) are exact
    like_numpy(_scalar_aliases, np.round(rng.standard_normal(3) * 10), traced=f)
    like_numpy(_scalar_aliases, -np.abs(np.round(rng.standard_normal(3) * 10)), traced=f)


# -- hashing ------------------------------------------------------------------------------------


def _knn_vote(labels):
    votes = collections.Counter(labels[:3])  # the user's line
    return votes.most_common(1)[0][0]


@pytest.mark.parametrize("use", ["counter", "dict", "set"])
def test_hashing_a_traced_value_names_the_line_and_the_numpy_way(use):
    def f(x):
        if use == "counter":
            return _knn_vote(x)
        if use == "dict":
            return {x[0]: 1}
        return len({v for v in x[:2]})

    line = {"counter": "Counter(labels[:3])", "dict": "{x[0]: 1}", "set": "{v for v in x[:2]}"}
    with pytest.raises(TypeError) as info:
        kx.function(f)(np.array([1, 2, 2]))
    message = str(info.value)
    assert isinstance(info.value, errors.KxError)
    assert line[use] in message and "np.bincount" in message and "return_counts=True" in message
    assert "not known while tracing" in message


def test_the_numpy_way_to_vote_runs_traced():
    def vote(labels):
        values, counts = np.unique(labels, return_counts=True)
        return values[np.argmax(counts)], np.argmax(np.bincount(labels))

    like_numpy(vote, np.array([3, 1, 3, 2, 1, 3]))


# -- buffers made with np.ndarray / np.empty ------------------------------------------------------


def _buffers(x):
    n = x.shape[0]
    rows = np.ndarray((n, 3), np.float64)
    for i in range(n):
        rows[i] = x[i] * 2.0
    cols = np.ndarray(shape=(n, 2), dtype=np.float32)
    cols[:, 0] = x
    cols[:, 1] = -x
    squares = np.empty(n)
    for i in range(n):
        squares[i] = x[i] ** 2
    return rows, cols, squares


@pytest.mark.parametrize("path", PATHS)
def test_uninitialised_buffers_filled_with_traced_values(path):
    like_numpy(_buffers, rng.standard_normal(4), path=path)


def test_filling_a_plain_buffer_without_autograph_names_the_fix():
    def f(x):
        buf = np.ndarray((3,), np.float64)
        buf[0] = x[0]  # NumPy asks float() of the traced value
        return buf

    with pytest.raises(ValueError, match="sequence") as info:
        kx.function(f, autograph=False)(np.arange(3.0))
    cause = str(info.value.__cause__)
    assert "writing into a plain float array" in cause and "keep AutoGraph on" in cause


def test_numpy_scalar_type_without_autograph_names_the_fix():
    with pytest.raises(errors.TracingConversionError, match=r"np\.float64\(x\)"):
        kx.function(lambda x: np.float64(np.sum(x)), autograph=False)(np.arange(3.0))
