"""Corpus: short NumPy exercises of the kind found in tutorials and interview practice.

Normalization, moving averages, one-hot encoding, top-k, clipping and rescaling, distance
matrices, counting, NaN filling, local maxima and small pattern builders.
"""

import numpy as np

from .harness import case


def mat(n, m, scale=1.0, shift=0.0):
    return lambda rng: ((rng.standard_normal((n, m)) * scale + shift,), {})


@case(make=mat(5, 4, 2.0, 1.0), category="exercises", tags=("normalize_rows", "keepdims"))
def normalize_rows(X):
    return X / X.sum(axis=1, keepdims=True)


@case(
    make=lambda rng: ((rng.standard_normal(20), 4), {}),
    category="exercises",
    tags=("moving_average", "cumsum"),
)
def moving_average(a, n=3):
    ret = np.cumsum(a, dtype=float)
    ret[n:] = ret[n:] - ret[:-n]
    return ret[n - 1 :] / n


@case(
    make=lambda rng: ((rng.integers(0, 5, 9), 5), {}),
    category="exercises",
    tags=("one_hot", "fancy_assign", "int"),
)
def one_hot(labels, num_classes):
    out = np.zeros((labels.size, num_classes))
    out[np.arange(labels.size), labels] = 1
    return out


@case(
    make=lambda rng: ((rng.standard_normal(15), 4), {}),
    category="exercises",
    tags=("top_k", "argsort", "negative_stride"),
)
def top_k(x, k):
    idx = np.argsort(x)[::-1][:k]
    return idx, x[idx]


@case(make=mat(4, 6, 3.0), category="exercises", tags=("clip", "rescale", "where"))
def clip_and_rescale(x, lo=-2.0, hi=2.0):
    c = np.clip(x, lo, hi)
    span = c.max() - c.min()
    return np.where(span > 0, (c - c.min()) / span, 0.0)


def _two_sets(rng):
    return (rng.standard_normal((5, 3)), rng.standard_normal((4, 3))), {}


@case(make=_two_sets, category="exercises", tags=("distance_matrix", "broadcasting"))
def distance_matrix(A, B):
    diff = A[:, None, :] - B[None, :, :]
    return np.sqrt((diff**2).sum(-1))


@case(make=_two_sets, category="exercises", tags=("distance_matrix", "expansion_trick"))
def sq_dists_expansion(A, B):
    d = (A**2).sum(1)[:, None] + (B**2).sum(1)[None, :] - 2 * A @ B.T
    return np.maximum(d, 0)


@case(
    make=lambda rng: ((rng.integers(0, 6, 25),), {}),
    category="exercises",
    tags=("counting", "bincount", "argmax"),
)
def most_common(values):
    counts = np.bincount(values, minlength=6)
    return counts.argmax(), counts


@case(make=mat(12, 3, 5.0, 2.0), category="exercises", tags=("zscore", "reduction"))
def zscore(X):
    mu = X.mean(axis=0)
    sd = X.std(axis=0, ddof=1)
    return (X - mu) / sd


@case(make=mat(3, 7), category="exercises", tags=("softmax", "keepdims"))
def stable_softmax(z):
    e = np.exp(z - z.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


@case(make=mat(6, 4), category="exercises", tags=("cosine_similarity", "linalg.norm"))
def cosine_similarity(X):
    Xn = X / np.linalg.norm(X, axis=1)[:, np.newaxis]
    return Xn @ Xn.T


def _query(rng):
    return (rng.standard_normal((10, 2)), rng.standard_normal(2)), {}


@case(make=_query, category="exercises", tags=("nearest_neighbour", "argmin"))
def nearest_neighbour(points, q):
    d = np.linalg.norm(points - q, axis=1)
    i = np.argmin(d)
    return i, points[i]


@case(
    make=lambda rng: ((rng.standard_normal(12), 3), {}),
    category="exercises",
    tags=("rolling_window", "python_loop", "list_comprehension"),
)
def rolling_mean_loop(x, w):
    return np.array([x[i : i + w].mean() for i in range(len(x) - w + 1)])


def _with_nans(rng):
    X = rng.standard_normal((6, 3))
    X[rng.random((6, 3)) < 0.25] = np.nan
    X[0, 0] = np.nan
    return (X,), {}


@case(make=_with_nans, category="exercises", tags=("nan_fill", "nanmean", "mask_assign"))
def fill_nan_with_column_mean(X):
    col_mean = np.nanmean(X, axis=0)
    rows, cols = np.where(np.isnan(X))
    X[rows, cols] = np.take(col_mean, cols)
    return X


@case(make=mat(5, 3, 10.0), category="exercises", tags=("minmax_scale", "ptp"))
def minmax_scale(X):
    return (X - X.min(axis=0)) / np.ptp(X, axis=0)


@case(
    make=lambda rng: ((rng.standard_normal(16),), {}),
    category="exercises",
    tags=("local_maxima", "nonzero", "logical_and"),
)
def local_maxima(x):
    peaks = (x[1:-1] > x[:-2]) & (x[1:-1] > x[2:])
    return np.nonzero(peaks)[0] + 1


def _size(rng):
    return (rng.random((6, 6)),), {}


@case(make=_size, category="exercises", tags=("checkerboard", "strided_assign", "zeros_like"))
def checkerboard_mask(x):
    board = np.zeros_like(x, dtype=bool)
    board[1::2, ::2] = True
    board[::2, 1::2] = True
    return np.where(board, x, -x)


@case(
    make=lambda rng: ((rng.standard_normal(10),), {}),
    category="exercises",
    tags=("running_mean", "python_loop", "loop_carried"),
)
def running_mean_loop(x):
    out = []
    total = 0.0
    for i, v in enumerate(x):
        total += v
        out.append(total / (i + 1))
    return np.array(out)


@case(
    make=lambda rng: ((rng.integers(0, 4, 12),), {}),
    category="exercises",
    tags=("sort", "count_distinct", "int"),
)
def count_distinct_sorted(a):
    s = np.sort(a)
    return 1 + np.count_nonzero(s[1:] != s[:-1])


@case(make=mat(4, 5), category="exercises", tags=("reverse", "flip", "transpose"))
def rotate_and_flip(X):
    return np.rot90(X), X[::-1, ::-1], np.flipud(X).T
