"""Corpus: functions that update their array arguments in place (the update is the result).

Slices, masks, augmented assignment, ``out=``, ``np.copyto``, ``fill``, writes through views and
transposes, factorizations that overwrite their input, and aliased or overlapping arguments.
"""

import numpy as np

from .harness import case


def _gemm_args(rng):
    A = rng.standard_normal((8, 6))
    B = rng.standard_normal((6, 5))
    C = rng.standard_normal((8, 5))
    return (A, B, C, 1.5, 0.5), {}


@case(make=_gemm_args, category="inplace", tags=("slice_assign", "returns_none", "matmul"))
def gemm_inplace(A, B, C, alpha, beta):
    """BLAS-style C <- alpha*A@B + beta*C."""
    C[:] = alpha * A @ B + beta * C


@case(
    make=lambda rng: ((rng.standard_normal(10), 3.25), {}),
    category="inplace",
    tags=("index_assign", "returns_none"),
)
def set_endpoints(x, v):
    x[0] = v
    x[-1] = x[0] * 2
    x[4] = x[3] + x[5]


@case(
    make=lambda rng: ((rng.standard_normal((6, 7)),), {}),
    category="inplace",
    tags=("mask_assign", "returns_arg"),
)
def relu_inplace(x):
    x[x < 0] = 0
    return x


@case(
    make=lambda rng: ((rng.standard_normal(12), rng.standard_normal(12)), {}),
    category="inplace",
    tags=("augmented_assign", "returns_none"),
)
def accumulate_and_scale(acc, y):
    acc += y
    y *= 2.0
    acc -= 0.5 * y


@case(
    make=lambda rng: (
        (rng.random((4, 5)).astype(np.float32), rng.random((4, 5)).astype(np.float32)),
        {},
    ),
    category="inplace",
    tags=("ufunc_out", "float32"),
)
def ufunc_out_args(a, b):
    np.add(a, b, out=a)
    np.multiply(a, 2, out=b)
    np.sqrt(b, out=b)
    return a.sum()


@case(
    make=lambda rng: ((rng.standard_normal(16), rng.standard_normal(16)), {}),
    category="inplace",
    tags=("copyto", "where"),
)
def copyto_where_positive(dst, src):
    np.copyto(dst, src, where=src > 0)
    return dst.max()


@case(
    make=lambda rng: ((rng.standard_normal((5, 4)),), {}),
    category="inplace",
    tags=("fill", "strided_assign"),
)
def reset_buffer(buf):
    # Zero the buffer, then mark every other row.
    buf.fill(0)
    buf[::2] = 1.0


@case(
    make=lambda rng: ((rng.standard_normal(8),), {}),
    category="inplace",
    tags=("view_write", "augmented_assign"),
)
def write_through_view(x):
    v = x[1:3]
    v[0] = 1.0
    v *= 2
    w = x[::-1]
    w[0] = -7.0
    return v.sum()


def _life_board(rng):
    Z = (rng.random((12, 12)) < 0.35).astype(np.int64)
    Z[0, :] = Z[-1, :] = Z[:, 0] = Z[:, -1] = 0
    return (Z,), {}


@case(make=_life_board, category="inplace", tags=("view_write", "mask_assign", "int"))
def life_step_inplace(Z):
    """One Game of Life generation, updating the board's interior in place."""
    N = (
        Z[0:-2, 0:-2]
        + Z[0:-2, 1:-1]
        + Z[0:-2, 2:]
        + Z[1:-1, 0:-2]
        + Z[1:-1, 2:]
        + Z[2:, 0:-2]
        + Z[2:, 1:-1]
        + Z[2:, 2:]
    )
    birth = (N == 3) & (Z[1:-1, 1:-1] == 0)
    survive = ((N == 2) | (N == 3)) & (Z[1:-1, 1:-1] == 1)
    Z[...] = 0
    Z[1:-1, 1:-1][birth | survive] = 1


@case(
    make=lambda rng: ((rng.standard_normal((4, 6)), rng.standard_normal(6)), {}),
    category="inplace",
    tags=("transpose_write",),
)
def set_first_column_via_T(M, col):
    M.T[0] = col[:4]
    M.T[-1] += 1.0


def _grid(rng):
    u = np.zeros((10, 10))
    u[0, :] = rng.random(10)
    u[:, 0] = rng.random(10)
    return (u, 5), {}


@case(make=_grid, category="inplace", tags=("stencil", "returns_none", "python_loop"))
def jacobi_sweep(u, sweeps):
    for _ in range(sweeps):
        u[1:-1, 1:-1] = 0.25 * (u[:-2, 1:-1] + u[2:, 1:-1] + u[1:-1, :-2] + u[1:-1, 2:])


def _spd(rng):
    M = rng.standard_normal((6, 6))
    return (M @ M.T + 6 * np.eye(6),), {}


@case(make=_spd, category="inplace", tags=("factorization", "returns_none", "python_loop"))
def cholesky_inplace(A):
    """Overwrite A with its lower Cholesky factor L (A = L L^T); the upper part is zeroed."""
    n = A.shape[0]
    for j in range(n):
        A[j, j] = np.sqrt(A[j, j] - np.dot(A[j, :j], A[j, :j]))
        for i in range(j + 1, n):
            A[i, j] = (A[i, j] - np.dot(A[i, :j], A[j, :j])) / A[j, j]
    for j in range(1, n):
        A[:j, j] = 0.0


def _diag_dominant(rng):
    A = rng.standard_normal((7, 7))
    A += np.diag(np.abs(A).sum(axis=1) + 1)
    return (A,), {}


@case(
    make=_diag_dominant,
    category="inplace",
    tags=("factorization", "returns_none", "outer", "python_loop"),
)
def lu_nopivot_inplace(A):
    # Doolittle: L below the diagonal (unit diagonal implied), U on and above it.
    n = len(A)
    for k in range(n - 1):
        A[k + 1 :, k] /= A[k, k]
        A[k + 1 :, k + 1 :] -= np.outer(A[k + 1 :, k], A[k, k + 1 :])


def _same_twice(rng):
    a = rng.standard_normal(9)
    return (a, a), {}


@case(make=_same_twice, category="inplace", tags=("aliasing", "augmented_assign"))
def axpy_aliased(x, y):
    y += 2.0 * x
    return x


@case(
    make=lambda rng: ((rng.standard_normal(10),), {}),
    category="inplace",
    tags=("overlapping_views", "augmented_assign"),
)
def overlapping_shift_add(x):
    x[1:] += x[:-1]
    x[:-2] = x[2:]


@case(
    make=lambda rng: ((rng.standard_normal((5, 3)),), {}),
    category="inplace",
    tags=("fancy_assign",),
)
def swap_rows(A):
    A[[0, 2]] = A[[2, 0]]
    return A[0]


@case(
    make=lambda rng: ((rng.standard_normal((6, 4)) * 3,), {}),
    category="inplace",
    tags=("ufunc_out", "returns_arg"),
)
def clip_inplace(x):
    np.clip(x, -1.0, 1.0, out=x)
    x *= 10
    return x


@case(
    make=lambda rng: ((rng.standard_normal((20, 3)) * 4 + 1,), {}),
    category="inplace",
    tags=("augmented_assign", "reduction", "returns_arg"),
)
def standardize_columns(X):
    X -= X.mean(axis=0)
    X /= X.std(axis=0)
    return X


@case(
    make=lambda rng: ((rng.standard_normal((5, 5)),), {}),
    category="inplace",
    tags=("numpy_inplace_function", "returns_none"),
)
def zero_diagonal(A):
    np.fill_diagonal(A, 0.0)
    A[np.triu_indices(5, k=2)] *= -1


@case(
    make=lambda rng: ((rng.standard_normal((6, 3)), rng.standard_normal(8)), {}),
    category="inplace",
    tags=("method_inplace", "sort"),
)
def sort_in_place(M, v):
    M.sort(axis=0)
    v.sort()
    return v[-1] - v[0]


@case(
    make=lambda rng: ((np.zeros(6, dtype=np.int64), rng.integers(0, 6, 15)), {}),
    category="inplace",
    tags=("fancy_assign", "augmented_assign", "int", "duplicates"),
)
def buffered_fancy_increment(counts, idx):
    # Fancy += is buffered: a repeated index counts once, as in NumPy.
    counts[idx] += 1
