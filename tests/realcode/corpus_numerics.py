"""Corpus: numerical kernels and small simulations written the way scientists write them.

Stencils, prefix sums, decompositions and solvers with loops, power and Newton iterations, ODE
integrators, an n-body step, the heat equation, and Game of Life, Ising and SIR simulations.
"""

import numpy as np

from .harness import case


def field(*shape):
    return lambda rng: ((rng.standard_normal(shape),), {})


@case(make=field(9, 8), category="numerics", tags=("stencil", "slicing"))
def laplacian_5pt(u, h=0.5):
    lap = np.zeros_like(u)
    lap[1:-1, 1:-1] = (
        u[:-2, 1:-1] + u[2:, 1:-1] + u[1:-1, :-2] + u[1:-1, 2:] - 4 * u[1:-1, 1:-1]
    ) / h**2
    return lap


@case(make=field(16), category="numerics", tags=("prefix_sum", "python_loop", "copy"))
def hillis_steele_scan(x):
    y = x.copy()
    step = 1
    while step < len(y):
        shifted = np.zeros_like(y)
        shifted[step:] = y[:-step]
        y = y + shifted
        step *= 2
    return y


@case(make=field(6, 4), category="numerics", tags=("gram_schmidt", "qr", "python_loop"))
def gram_schmidt_qr(A):
    m, n = A.shape
    Q = np.zeros((m, n))
    R = np.zeros((n, n))
    for j in range(n):
        v = A[:, j].copy()
        for i in range(j):
            R[i, j] = Q[:, i] @ A[:, j]
            v -= R[i, j] * Q[:, i]
        R[j, j] = np.linalg.norm(v)
        Q[:, j] = v / R[j, j]
    return Q, R


def _sym(rng):
    M = rng.standard_normal((6, 6))
    return (M + M.T, rng.standard_normal(6)), {}


@case(make=_sym, category="numerics", tags=("power_iteration", "fixed_iterations"))
def power_iteration(A, v0, iters=30):
    v = v0 / np.linalg.norm(v0)
    for _ in range(iters):
        w = A @ v
        v = w / np.linalg.norm(w)
    return v @ A @ v, v


def _spd(rng):
    M = rng.standard_normal((6, 6))
    return (M @ M.T + np.eye(6), rng.standard_normal(6)), {}


@case(make=_spd, category="numerics", tags=("conjugate_gradient", "while_data_cond"))
def conjugate_gradient(A, b, tol=1e-10):
    x = np.zeros_like(b)
    r = b - A @ x
    p = r.copy()
    rs = r @ r
    k = 0
    while np.sqrt(rs) > tol and k < 50:
        Ap = A @ p
        alpha = rs / (p @ Ap)
        x = x + alpha * p
        r = r - alpha * Ap
        rs_new = r @ r
        p = r + (rs_new / rs) * p
        rs = rs_new
        k += 1
    return x


def _cubic(rng):
    return (rng.random(5) * 4 + 1,), {}


@case(make=_cubic, category="numerics", tags=("newton", "vectorized", "fixed_iterations"))
def newton_cube_root(a):
    x = np.ones_like(a)
    for _ in range(25):
        x = x - (x**3 - a) / (3 * x**2)
    return x


def _scalar(rng):
    return (np.float64(rng.random() * 3 + 1),), {}


@case(make=_scalar, category="numerics", tags=("newton", "while_data_cond", "numpy_scalar"))
def newton_root_scalar(c):
    # Solve x - cos(x) = c by Newton's method.
    x = c
    dx = 1.0
    while abs(dx) > 1e-12:
        dx = (x - np.cos(x) - c) / (1 + np.sin(x))
        x = x - dx
    return x


def decay(t, y, k=0.7):
    return -k * y + np.sin(t)


@case(
    make=lambda rng: ((rng.random(3) + 0.5, 0.05, 20), {}),
    category="numerics",
    tags=("ode", "euler", "python_loop", "function_call"),
)
def euler_integrate(y0, dt, n):
    y = y0.copy()
    t = 0.0
    for _ in range(n):
        y = y + dt * decay(t, y)
        t += dt
    return y


def oscillator(state):
    x, v = state
    return np.array([v, -x])


@case(
    make=lambda rng: ((rng.standard_normal(2), 0.1, 15), {}),
    category="numerics",
    tags=("ode", "rk4", "np_array_of_list", "tuple_unpack", "index_assign"),
)
def rk4_trajectory(y0, h, steps):
    traj = np.empty((steps + 1, 2))
    traj[0] = y0
    y = y0
    for i in range(steps):
        k1 = oscillator(y)
        k2 = oscillator(y + h / 2 * k1)
        k3 = oscillator(y + h / 2 * k2)
        k4 = oscillator(y + h * k3)
        y = y + h / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
        traj[i + 1] = y
    return traj


def _bodies(rng):
    n = 5
    return (rng.standard_normal((n, 3)), rng.standard_normal((n, 3)) * 0.1, rng.random(n) + 0.5), {
        "dt": 0.01
    }


@case(make=_bodies, category="numerics", tags=("nbody", "broadcasting", "inplace"))
def nbody_step(pos, vel, mass, dt=0.01, soft=0.1):
    d = pos[None, :, :] - pos[:, None, :]
    inv_r3 = (np.sum(d**2, axis=-1) + soft**2) ** -1.5
    acc = np.einsum("ijk,ij,j->ik", d, inv_r3, mass)
    vel += acc * dt
    pos += vel * dt


@case(make=field(20), category="numerics", tags=("heat_equation", "stencil", "python_loop"))
def heat_equation_1d(u0, alpha=0.2, steps=40):
    u = u0.copy()
    for _ in range(steps):
        u[1:-1] = u[1:-1] + alpha * (u[2:] - 2 * u[1:-1] + u[:-2])
    return u


def _board(rng):
    return ((rng.random((10, 10)) < 0.3).astype(np.uint8), 3), {}


@case(make=_board, category="numerics", tags=("game_of_life", "roll", "simulation", "uint8"))
def life_generations(board, gens):
    for _ in range(gens):
        neigh = sum(
            np.roll(np.roll(board, i, 0), j, 1)
            for i in (-1, 0, 1)
            for j in (-1, 0, 1)
            if (i, j) != (0, 0)
        )
        board = ((neigh == 3) | ((board == 1) & (neigh == 2))).astype(np.uint8)
    return board


def _spins(rng):
    spins = np.where(rng.random((6, 6)) < 0.5, -1, 1)
    return (spins, 0.6, np.random.default_rng(int(rng.integers(2**31)))), {}


@case(
    make=_spins,
    category="numerics",
    tags=("ising", "metropolis", "generator", "data_if", "index_assign", "simulation"),
)
def ising_metropolis_sweep(spins, beta, rng):
    L = spins.shape[0]
    for _ in range(L * L):
        i, j = rng.integers(0, L, size=2)
        nb = spins[(i + 1) % L, j] + spins[i - 1, j] + spins[i, (j + 1) % L] + spins[i, j - 1]
        dE = 2 * spins[i, j] * nb
        if dE <= 0 or rng.random() < np.exp(-beta * dE):
            spins[i, j] = -spins[i, j]
    return spins.mean()


@case(
    make=lambda rng: ((np.array([0.99, 0.01, 0.0]) + rng.random(3) * 0.001, 0.3, 0.1), {}),
    category="numerics",
    tags=("sir", "ode", "tuple_unpack", "list_append", "simulation"),
)
def sir_model(y0, beta, gamma, days=30):
    S, I, R = y0
    history = []
    for _ in range(days):
        new_inf = beta * S * I
        new_rec = gamma * I
        S, I, R = S - new_inf, I + new_inf - new_rec, R + new_rec
        history.append((S, I, R))
    return np.array(history)


def _tri(rng):
    U = np.triu(rng.standard_normal((6, 6))) + 4 * np.eye(6)
    return (U, rng.standard_normal(6)), {}


@case(make=_tri, category="numerics", tags=("back_substitution", "reversed_range", "dot"))
def back_substitution(U, b):
    n = len(b)
    x = np.zeros(n)
    for i in reversed(range(n)):
        x[i] = (b[i] - U[i, i + 1 :] @ x[i + 1 :]) / U[i, i]
    return x


def _gs(rng):
    A = rng.standard_normal((5, 5))
    A += np.diag(np.abs(A).sum(axis=1) + 1)
    return (A, rng.standard_normal(5), np.zeros(5)), {}


@case(make=_gs, category="numerics", tags=("gauss_seidel", "inplace", "returns_none"))
def gauss_seidel(A, b, x, sweeps=10):
    n = len(b)
    for _ in range(sweeps):
        for i in range(n):
            s = A[i, :i] @ x[:i] + A[i, i + 1 :] @ x[i + 1 :]
            x[i] = (b[i] - s) / A[i, i]


@case(
    make=lambda rng: ((rng.standard_normal(5), rng.standard_normal(11)), {}),
    category="numerics",
    tags=("horner", "python_loop", "reversed"),
)
def horner_eval(coeffs, x):
    result = np.zeros_like(x)
    for c in reversed(coeffs):
        result = result * x + c
    return result


@case(
    make=field(30), category="numerics", tags=("random_walk", "simulation", "cumsum", "global_rng")
)
def random_walk_2d(drift):
    steps = np.random.standard_normal((30, 2)) + drift[:, None] * 0.01
    path = np.cumsum(steps, axis=0)
    return path, np.sqrt((path**2).sum(axis=1)).max()
