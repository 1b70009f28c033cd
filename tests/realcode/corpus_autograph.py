"""Corpus: Python control flow and builtins as real code writes them around arrays.

Iteration over arrays, ``enumerate``/``zip``, comprehensions, tuple unpacking, loops whose
condition becomes data dependent, ``break``/``continue``/early ``return`` on data, builtins on
traced values, recursion, and plain arrays meeting traced operands.
"""

import numpy as np

from .harness import case


def arr(*shape):
    return lambda rng: ((rng.standard_normal(shape),), {})


def _data_and_weights(rng):
    return (rng.standard_normal((6, 3)), rng.standard_normal(3)), {}


@case(make=_data_and_weights, category="autograph", tags=("for_over_array",))
def sum_weighted_rows(data, w):
    total = np.zeros(3)
    for row in data:
        total += row * w
    return total


@case(make=arr(5, 4), category="autograph", tags=("enumerate", "for_over_array"))
def index_weighted(X):
    out = np.zeros(X.shape[1])
    for i, row in enumerate(X):
        out = out + i * row
    return out


def _pairs(rng):
    return (rng.standard_normal((4, 3, 3)), rng.standard_normal((4, 3))), {}


@case(make=_pairs, category="autograph", tags=("zip", "for_over_array", "matmul"))
def apply_each(mats, vecs):
    acc = 0.0
    for M, v in zip(mats, vecs):
        acc = acc + v @ M @ v
    return acc


@case(make=arr(6, 5), category="autograph", tags=("list_comprehension", "np_array_of_list"))
def row_norms_listcomp(X):
    norms = [np.sqrt(np.sum(r * r)) for r in X]
    return np.array(norms)


@case(make=arr(10, 2), category="autograph", tags=("tuple_unpack", "transpose"))
def polar_radius(p):
    x0, y0 = p.T
    return np.hypot(x0, y0), np.arctan2(y0, x0)


def _positive(rng):
    return (rng.random(8) * 10 + 0.5,), {}


@case(make=_positive, category="autograph", tags=("while_python_to_traced", "newton"))
def babylonian_sqrt(a, tol=1e-10):
    x = a.copy()
    err = np.inf
    while err > tol:
        x = 0.5 * (x + a / x)
        err = np.max(np.abs(x * x - a))
    return x


@case(make=arr(12), category="autograph", tags=("range_loop", "data_break"))
def sum_until_large(x, thresh=1.0):
    acc = 0.0
    for i in range(len(x)):
        if x[i] > thresh:
            break
        acc += x[i]
    return acc


@case(make=arr(7), category="autograph", tags=("data_if",))
def orient_positive(x):
    if x.sum() > 0:
        y = x
    else:
        y = -x
    return y * 2


@case(
    make=arr(9),
    category="autograph",
    tags=("builtin_max", "builtin_min", "builtin_abs", "builtin_round", "builtin_len"),
)
def builtin_summary(x):
    hi = max(x.max(), 0.0)
    lo = min(x.min(), 0.0)
    spread = abs(x.sum())
    return hi - lo + spread / len(x), round(x.mean(), 3)


@case(make=arr(4, 3), category="autograph", tags=("builtin_sum", "builtin_any", "builtin_all"))
def builtin_sum_any_all(X):
    total = sum(X)
    flag = any(total > 1.0) or all(X[0] < 0)
    return total, flag


def rec(X, n):
    return X if n == 0 else rec(X + 1, n - 1)


@case(make=arr(3, 2), category="autograph", tags=("recursion",))
def recursive_increment(X):
    return rec(X, 4) * 2


@case(make=arr(5, 5), category="autograph", tags=("nested_loop", "continue", "data_continue"))
def offdiag_positive_sum(A):
    s = 0.0
    for i in range(A.shape[0]):
        for j in range(A.shape[1]):
            if i == j:
                continue
            if A[i, j] < 0:
                continue
            s = s + A[i, j]
    return s


@case(make=arr(3), category="autograph", tags=("plain_array_method", "plain_iadd_traced"))
def plain_arrays_meet_traced(t):
    v = np.array([1.0, 2.0, 3.0])
    d = v.dot(t)
    buf = np.zeros(3)
    buf += t
    buf *= v
    return d, buf


@case(make=arr(4), category="autograph", tags=("while_python_counter",))
def double_five_times(x):
    i = 0
    while i < 5:
        x = x * 2 - 1
        i += 1
    return x


def _maybe_nan(rng):
    x = rng.random(6)
    if rng.random() < 0.5:
        x[2] = np.nan
    return (x,), {}


@case(make=_maybe_nan, category="autograph", tags=("data_early_return", "isnan"))
def safe_normalize(x):
    if np.any(np.isnan(x)):
        return np.zeros_like(x)
    return x / x.sum()


@case(make=arr(5), category="autograph", tags=("data_ternary",))
def ternary_flip(x):
    y = x if x.mean() > 0 else -x
    return y + 1


def _param_dict(rng):
    return ({"w": rng.standard_normal(3), "b": rng.standard_normal(1)},), {}


@case(make=_param_dict, category="autograph", tags=("dict_comprehension", "generator_expr"))
def scaled_params_and_penalty(params):
    scaled = {k: v * 2 for k, v in params.items()}
    penalty = sum(np.sum(v * v) for v in params.values())
    return scaled, penalty


def _counted(rng):
    return (rng.standard_normal(8),), {}


@case(make=_counted, category="autograph", tags=("range_traced_bound", "argmax"))
def sum_before_peak(x):
    k = np.argmax(x)
    s = 0.0
    for i in range(k):
        s += x[i]
    return s


@case(make=arr(6), category="autograph", tags=("closure", "map", "list"))
def closure_map(x, scale=3.0):
    def f(v):
        return v * scale + 1

    parts = list(map(f, [x, x[::-1], x**2]))
    return np.stack(parts)


@case(make=arr(8), category="autograph", tags=("builtin_all", "for_over_array", "isfinite"))
def all_finite_then_mean(x):
    if all(np.isfinite(x)):
        return x.mean()
    return np.float64(0.0)


@case(make=arr(10), category="autograph", tags=("while_data_cond", "loop_carried"))
def count_halvings(x):
    n = 0
    m = np.max(np.abs(x))
    while m > 0.01:
        m = m / 2
        n += 1
    return n, m
