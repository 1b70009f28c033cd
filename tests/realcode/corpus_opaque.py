"""Corpus: NumPy functions beyond ufuncs and reductions, which an engine may not know natively.

einsum, linalg, convolve, histogram, unique, searchsorted, cumulative and shape functions,
sorting and counting, interpolation, FFT; each used the way an analysis script uses them.
"""

import numpy as np

from .harness import case


def arr(*shape, scale=1.0):
    return lambda rng: ((rng.standard_normal(shape) * scale,), {})


def _bilinear(rng):
    return (
        rng.standard_normal((4, 3)),
        rng.standard_normal((3, 3)),
        rng.standard_normal((4, 3)),
    ), {}


@case(make=_bilinear, category="opaque", tags=("einsum",))
def batched_bilinear(x, W, y):
    return np.einsum("bi,ij,bj->b", x, W, y), np.einsum("ii", W)


@case(make=arr(6, 4), category="opaque", tags=("linalg.norm", "axis"))
def unit_rows(X):
    norms = np.linalg.norm(X, axis=1, keepdims=True)
    return X / norms, np.linalg.norm(X), np.linalg.norm(X, ord=np.inf)


def _signal(rng):
    return (rng.standard_normal(32), np.array([0.25, 0.5, 0.25])), {}


@case(make=_signal, category="opaque", tags=("convolve",))
def smooth_signal(x, kernel):
    return np.convolve(x, kernel, mode="same"), np.convolve(x, kernel, mode="valid")


@case(make=arr(50), category="opaque", tags=("histogram",))
def value_histogram(x):
    counts, edges = np.histogram(x, bins=8, range=(-3, 3))
    return counts, edges


def _labels(rng):
    return (rng.integers(0, 7, 30),), {}


@case(make=_labels, category="opaque", tags=("unique", "return_counts", "int"))
def label_frequencies(labels):
    values, counts = np.unique(labels, return_counts=True)
    return values, counts


def _sorted_and_queries(rng):
    return (np.sort(rng.random(20)), rng.random(6)), {}


@case(make=_sorted_and_queries, category="opaque", tags=("searchsorted", "digitize"))
def bucket_queries(edges, q):
    return np.searchsorted(edges, q), np.digitize(q, edges[::4])


@case(make=arr(4, 6), category="opaque", tags=("cumsum_axis", "cumprod"))
def cumulative_both_axes(X):
    return np.cumsum(X, axis=1), np.cumsum(X, axis=0), np.cumprod(1 + 0.1 * X, axis=1)


@case(make=arr(3, 4), category="opaque", tags=("pad",))
def pad_image(img):
    return np.pad(img, 1, mode="constant"), np.pad(img, ((0, 0), (2, 1)), mode="edge")


@case(make=arr(5, 5), category="opaque", tags=("roll", "diff"))
def roll_and_diff(X):
    return np.roll(X, 1, axis=0) - X, np.diff(X, axis=1), np.diff(X[0], n=2)


def _two_small(rng):
    return (rng.standard_normal((2, 2)), rng.standard_normal((3, 2))), {}


@case(make=_two_small, category="opaque", tags=("kron", "outer"))
def kron_product(A, B):
    return np.kron(A, B), np.outer(A.ravel(), B[0])


@case(make=arr(5, 5), category="opaque", tags=("tril", "triu", "trace"))
def triangular_parts(A):
    return np.tril(A), np.triu(A, k=1), np.trace(A)


def _system(rng):
    A = rng.standard_normal((5, 5)) + 5 * np.eye(5)
    return (A, rng.standard_normal(5)), {}


@case(make=_system, category="opaque", tags=("linalg.solve", "linalg.inv", "linalg.det"))
def solve_and_invert(A, b):
    x = np.linalg.solve(A, b)
    return x, np.linalg.inv(A) @ b, np.linalg.det(A)


@case(make=arr(9, 3), category="opaque", tags=("median", "percentile"))
def robust_stats(X):
    return np.median(X, axis=0), np.percentile(X, [10, 90], axis=0)


def _interp(rng):
    xp = np.sort(rng.random(10))
    return (rng.random(7), xp, np.sin(xp * 6)), {}


@case(make=_interp, category="opaque", tags=("interp",))
def resample(x, xp, fp):
    return np.interp(x, xp, fp)


def _poly(rng):
    x = np.linspace(-1, 1, 12)
    return (x, 2 * x**2 - x + rng.standard_normal(12) * 0.1), {}


@case(make=_poly, category="opaque", tags=("polyfit", "polyval"))
def quadratic_fit(x, y):
    coef = np.polyfit(x, y, 2)
    return coef, np.polyval(coef, x)


@case(make=arr(10), category="opaque", tags=("argsort", "bincount", "int"))
def rank_and_count(x):
    ranks = np.argsort(np.argsort(x))
    return ranks, np.bincount(ranks % 3)


@case(make=arr(16), category="opaque", tags=("fft.rfft", "complex"))
def power_spectrum(x):
    spec = np.fft.rfft(x)
    return np.abs(spec) ** 2, spec


def _scatter(rng):
    return (np.zeros(5), rng.integers(0, 5, 12), rng.random(12)), {}


@case(make=_scatter, category="opaque", tags=("ufunc.at", "inplace", "duplicates"))
def scatter_add(acc, idx, vals):
    np.add.at(acc, idx, vals)
    return acc.sum()


@case(make=arr(12), category="opaque", tags=("gradient", "trapezoid"))
def derivative_and_area(y):
    dy = np.gradient(y, 0.1)
    return dy, np.trapezoid(y, dx=0.1)


def _vec3(rng):
    return (rng.standard_normal((4, 3)), rng.standard_normal((4, 3))), {}


@case(make=_vec3, category="opaque", tags=("cross", "linalg.norm"))
def triangle_normals(a, b):
    n = np.cross(a, b)
    return n / np.linalg.norm(n, axis=-1)[:, None]


@case(make=arr(8, 3), category="opaque", tags=("corrcoef", "cov"))
def correlations(X):
    return np.corrcoef(X, rowvar=False), np.cov(X.T)


@case(make=arr(4), category="opaque", tags=("meshgrid", "triu_indices"))
def grid_pairs(x):
    X, Y = np.meshgrid(x, x)
    iu = np.triu_indices(len(x), k=1)
    return (X - Y)[iu]
