"""Corpus: buffers a function creates and then fills by index in Python loops.

``np.zeros``/``empty``/``ones``/``full``/``*_like``/``arange``/``.copy()`` followed by
``out[i] = ...``, ``out[i, j] += ...``, loop-carried recurrences and lists turned into arrays.
"""

import numpy as np

from .harness import case


def points(n, d):
    return lambda rng: ((rng.standard_normal((n, d)),), {})


@case(make=points(7, 3), category="buffers", tags=("zeros", "double_loop", "index_assign"))
def pairwise_dist_loop(x):
    n = x.shape[0]
    out = np.zeros((n, n))
    for i in range(n):
        for j in range(n):
            out[i, j] = np.sqrt(np.sum((x[i] - x[j]) ** 2))
    return out


@case(make=points(6, 4), category="buffers", tags=("zeros", "row_assign"))
def weighted_rows(x):
    out = np.zeros(x.shape)
    for i in range(x.shape[0]):
        out[i] = x[i] * i
    return out


@case(
    make=lambda rng: ((rng.random(10),), {}),
    category="buffers",
    tags=("empty", "index_assign", "slice_sum"),
)
def prefix_sums_loop(x):
    out = np.empty(len(x))
    for i in range(len(x)):
        out[i] = x[: i + 1].sum()
    return out


@case(make=points(5, 3), category="buffers", tags=("ones", "augmented_index_assign"))
def ones_accumulate(x):
    acc = np.ones(x.shape[1])
    for i in range(x.shape[0]):
        acc += x[i] ** 2
    prod = np.ones(x.shape[1])
    for i in range(x.shape[0]):
        prod[i % x.shape[1]] *= 1 + x[i, 0]
    return acc, prod


@case(
    make=lambda rng: ((rng.standard_normal((4, 5)),), {}),
    category="buffers",
    tags=("full_like", "mask_assign"),
)
def fill_negatives_with_sentinel(x):
    out = np.full_like(x, -1.0)
    pos = x > 0
    out[pos] = x[pos]
    return out


def _two_mats(rng):
    return (rng.standard_normal((4, 5)), rng.standard_normal((5, 4))), {}


@case(make=_two_mats, category="buffers", tags=("zeros_like", "double_loop"))
def elementwise_with_transpose(A, B):
    out = np.zeros_like(A)
    rows, cols = A.shape
    for i in range(rows):
        for j in range(cols):
            out[i, j] = A[i, j] * B[j, i]
    return out


@case(
    make=lambda rng: ((rng.integers(-5, 5, 9),), {}),
    category="buffers",
    tags=("arange", "strided_assign", "int"),
)
def signed_index(x):
    idx = np.arange(len(x))
    idx[::2] = -idx[::2]
    return idx * x


@case(
    make=lambda rng: ((rng.standard_normal(16), 0.8), {}),
    category="buffers",
    tags=("copy", "loop_carried"),
)
def ema_copy(x, alpha):
    y = x.copy()
    for t in range(1, len(x)):
        y[t] = alpha * y[t - 1] + (1 - alpha) * x[t]
    return y


def _small_mats(rng):
    return (rng.standard_normal((5, 4)), rng.standard_normal((4, 3))), {}


@case(make=_small_mats, category="buffers", tags=("zeros", "triple_loop", "augmented_index_assign"))
def matmul_triple_loop(A, B):
    n, k = A.shape
    m = B.shape[1]
    C = np.zeros((n, m))
    for i in range(n):
        for j in range(m):
            for p in range(k):
                C[i, j] += A[i, p] * B[p, j]
    return C


@case(
    make=lambda rng: ((rng.random(40),), {}),
    category="buffers",
    tags=("zeros", "int_of_traced", "for_over_array", "augmented_index_assign"),
)
def histogram_by_hand(data):
    counts = np.zeros(10, dtype=int)
    for v in data:
        counts[int(v * 10)] += 1
    return counts


def _vecs(rng):
    return (rng.standard_normal(6), rng.standard_normal(5)), {}


@case(make=_vecs, category="buffers", tags=("empty", "row_assign"))
def outer_by_rows(a, b):
    out = np.empty((len(a), len(b)))
    for i in range(len(a)):
        out[i, :] = a[i] * b
    return out


@case(
    make=lambda rng: ((rng.standard_normal(8),), {}),
    category="buffers",
    tags=("zeros", "column_assign"),
)
def vandermonde3(x):
    V = np.zeros((x.size, 4))
    V[:, 0] = 1
    V[:, 1] = x
    V[:, 2] = x**2
    V[:, 3] = x**3
    return V


@case(
    make=lambda rng: ((rng.standard_normal(12),), {}),
    category="buffers",
    tags=("empty_like", "loop_carried", "maximum"),
)
def running_max(x):
    out = np.empty_like(x)
    m = x[0]
    for i in range(len(x)):
        m = np.maximum(m, x[i])
        out[i] = m
    return out


@case(
    make=lambda rng: ((rng.standard_normal(6),), {}),
    category="buffers",
    tags=("zeros", "double_loop", "python_index"),
)
def toeplitz_by_hand(c):
    n = len(c)
    T = np.zeros((n, n))
    for i in range(n):
        for j in range(n):
            T[i, j] = c[abs(i - j)]
    return T


@case(make=points(5, 3), category="buffers", tags=("list_append", "np_array_of_list"))
def rows_to_array(x):
    rows = []
    for i in range(len(x)):
        rows.append(x[i] * 2 + i)
    return np.array(rows)


def _blocks(rng):
    return (rng.standard_normal((3, 3)), rng.standard_normal((3, 3))), {}


@case(make=_blocks, category="buffers", tags=("zeros", "block_assign"))
def block_diag2(A, B):
    n = A.shape[0]
    out = np.zeros((2 * n, 2 * n))
    out[:n, :n] = A
    out[n:, n:] = B
    out[:n, n:] = A @ B
    return out


@case(
    make=lambda rng: ((rng.standard_normal(10),), {}),
    category="buffers",
    tags=("zeros", "int", "bool_to_int_assign", "index_assign"),
)
def sign_flags(x):
    flags = np.zeros(len(x), dtype=np.int64)
    for i in range(len(x)):
        flags[i] = x[i] > 0
    return flags


@case(
    make=lambda rng: ((rng.standard_normal((4, 6)).astype(np.float32),), {}),
    category="buffers",
    tags=("zeros", "float32", "dtype_of_arg", "row_assign"),
)
def cumulative_rows_f32(x):
    out = np.zeros(x.shape, dtype=x.dtype)
    out[0] = x[0]
    for i in range(1, x.shape[0]):
        out[i] = out[i - 1] + x[i]
    return out
