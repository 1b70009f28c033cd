"""Corpus: random numbers, from the global ``np.random`` state and from Generators passed in.

The harness seeds ``np.random`` identically before the eager and the traced call and makes a
fresh, identically seeded Generator for each side; every call must draw new numbers.
"""

import numpy as np

from .harness import case


def with_gen(*shape, scale=1.0):
    """Maker: one array of ``shape`` and a Generator seeded from the case's rng."""

    def make(rng):
        x = rng.standard_normal(shape) * scale
        return (x, np.random.default_rng(int(rng.integers(2**31)))), {}

    return make


def arr(*shape):
    return lambda rng: ((rng.standard_normal(shape),), {})


@case(
    make=lambda rng: ((rng.standard_normal((8, 5)), 0.5), {}),
    category="random",
    tags=("np.random.rand", "dropout", "global_rng"),
)
def dropout_global(x, p):
    mask = (np.random.rand(*x.shape) < p) / p
    return x * mask


@case(make=arr(20), category="random", tags=("np.random.randn", "global_rng"))
def add_gaussian_noise(x, sigma=0.1):
    return x + sigma * np.random.randn(*x.shape)


@case(make=with_gen(6, 6), category="random", tags=("generator.random", "dropout"))
def dropout_generator(x, rng):
    keep = 0.8
    mask = rng.random(x.shape) < keep
    return np.where(mask, x / keep, 0.0), mask


@case(make=with_gen(30), category="random", tags=("generator.normal",))
def jitter(signal, rng):
    return signal + rng.normal(0.0, 0.05, size=signal.shape)


@case(make=with_gen(12, 3), category="random", tags=("generator.choice", "fancy_index"))
def subsample_rows(X, rng):
    idx = rng.choice(X.shape[0], size=5, replace=False)
    return X[idx]


@case(make=with_gen(20, 2), category="random", tags=("generator.integers", "minibatch"))
def minibatch_mean(X, rng):
    batch = rng.integers(0, len(X), size=8)
    return X[batch].mean(axis=0)


@case(make=arr(10, 2), category="random", tags=("np.random.permutation", "global_rng"))
def shuffled_copy(X):
    perm = np.random.permutation(len(X))
    return X[perm], perm


@case(make=with_gen(9), category="random", tags=("generator.shuffle", "inplace"))
def shuffle_in_place(x, rng):
    rng.shuffle(x)
    return x[:3]


@case(
    make=lambda rng: ((rng.standard_normal(3), 25), {}),
    category="random",
    tags=("np.random.choice", "cumsum", "global_rng", "simulation"),
)
def random_walk_1d(start, n_steps):
    steps = np.random.choice([-1, 1], size=(n_steps, start.size))
    return start + np.cumsum(steps, axis=0)


def _gen_only(rng):
    return (np.random.default_rng(int(rng.integers(2**31))), 200), {}


@case(make=_gen_only, category="random", tags=("generator.uniform", "monte_carlo"))
def monte_carlo_pi(rng, n):
    pts = rng.uniform(-1.0, 1.0, size=(n, 2))
    inside = np.sum(pts**2, axis=1) <= 1.0
    return 4.0 * np.mean(inside)


@case(
    make=with_gen(15),
    category="random",
    tags=("generator.integers", "python_loop", "index_assign", "bootstrap"),
)
def bootstrap_means(x, rng, n_boot=6):
    means = np.empty(n_boot)
    for b in range(n_boot):
        sample = x[rng.integers(0, len(x), len(x))]
        means[b] = sample.mean()
    return means


@case(make=arr(4, 4), category="random", tags=("np.random.normal", "array_loc", "global_rng"))
def perturb_around(mu):
    return np.random.normal(loc=mu, scale=np.abs(mu) + 0.1)


@case(make=arr(5, 3), category="random", tags=("np.random.randn", "weight_init", "global_rng"))
def random_projection(x):
    W = np.random.randn(x.shape[1], 4) * 0.01
    b = np.zeros(4)
    return x @ W + b


@case(
    make=with_gen(10),
    category="random",
    tags=("generator.standard_normal", "generator.exponential"),
)
def heavy_tailed_noise(x, rng):
    z = rng.standard_normal(x.shape)
    scale = rng.exponential(1.0, size=x.shape)
    return x + z * np.sqrt(scale)


@case(make=arr(7), category="random", tags=("np.random.uniform", "array_bounds", "global_rng"))
def uniform_between(lo):
    hi = lo + 1.0 + np.abs(lo)
    return np.random.uniform(lo, hi)
