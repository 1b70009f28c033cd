"""Corpus: functions that mutate the Python dicts and lists they are given.

Running statistics stored in a parameter dict, caches appended to, nested model dicts updated
by an optimizer step, lists of arrays changed in place or rebound item by item.
"""

import numpy as np

from .harness import case


def _bn_state(rng):
    x = rng.standard_normal((16, 4)) * 2 + 3
    state = {"running_mean": np.zeros(4), "running_var": np.ones(4), "momentum": 0.9}
    return (x, state), {}


@case(make=_bn_state, category="containers", tags=("dict_setitem", "reduction"))
def update_running_stats(x, state):
    m = state["momentum"]
    mu = x.mean(axis=0)
    state["running_mean"] = m * state["running_mean"] + (1 - m) * mu
    state["running_var"] = m * state["running_var"] + (1 - m) * x.var(axis=0)
    return (x - mu) / np.sqrt(x.var(axis=0) + 1e-5)


def _cache_args(rng):
    return (rng.standard_normal((3, 5)), rng.standard_normal((5, 4)), []), {}


@case(make=_cache_args, category="containers", tags=("list_append",))
def forward_with_cache(x, w, cache):
    h = x @ w
    cache.append(x)
    cache.append(h)
    out = np.tanh(h)
    cache.append(out)
    return out


def _history(rng):
    hist = {"loss": [np.float64(1.0)], "grad_norm": []}
    return (rng.standard_normal(6), rng.standard_normal(6), hist), {}


@case(make=_history, category="containers", tags=("dict_of_lists", "list_append", "scalar"))
def log_step(pred, target, history):
    err = pred - target
    loss = np.mean(err**2)
    history["loss"].append(loss)
    history["grad_norm"].append(np.linalg.norm(2 * err / err.size))
    return loss


def _opt_state(rng):
    return (
        rng.standard_normal(5),
        rng.standard_normal(5),
        {"step": 0, "m": np.zeros(5), "lr": 0.1},
    ), {}


@case(make=_opt_state, category="containers", tags=("dict_setitem", "python_int_state"))
def momentum_step_counter(w, g, state):
    state["step"] += 1
    state["m"] = 0.9 * state["m"] + g
    w -= state["lr"] * state["m"]
    return state["step"]


def _weights_list(rng):
    return (
        [rng.standard_normal((3, 3)), rng.standard_normal(3), rng.standard_normal((3, 2))],
        0.5,
    ), {}


@case(make=_weights_list, category="containers", tags=("list_of_arrays", "augmented_assign"))
def decay_all(weights, factor):
    for w in weights:
        w *= factor


def _stats(rng):
    return (rng.standard_normal((4, 3)), {}), {}


@case(make=_stats, category="containers", tags=("setdefault", "augmented_assign"))
def accumulate_stats(batch, stats):
    stats.setdefault("sum", np.zeros(batch.shape[1]))
    stats.setdefault("count", 0)
    stats["sum"] += batch.sum(axis=0)
    stats["count"] += batch.shape[0]
    return stats["sum"] / stats["count"]


def _queue(rng):
    return ([rng.standard_normal(4) for _ in range(4)],), {}


@case(make=_queue, category="containers", tags=("list_pop", "list_append"))
def rotate_queue(queue):
    head = queue.pop(0)
    queue.append(head * 2)
    return head


def _model(rng):
    model = {
        "l1": {"W": rng.standard_normal((4, 3)), "b": np.zeros(3)},
        "l2": {"W": rng.standard_normal((3, 2)), "b": np.zeros(2)},
    }
    grads = {
        k: {p: rng.standard_normal(v.shape) for p, v in layer.items()} for k, layer in model.items()
    }
    return (model, grads), {"lr": 0.01}


@case(make=_model, category="containers", tags=("nested_dict", "augmented_assign", "kwargs"))
def sgd_nested(model, grads, lr=0.1):
    for name, layer in model.items():
        for p in layer:
            layer[p] -= lr * grads[name][p]


def _xs(rng):
    return ([rng.standard_normal(3) for _ in range(3)],), {}


@case(make=_xs, category="containers", tags=("list_setitem", "enumerate"))
def rescale_items(xs):
    for i, x in enumerate(xs):
        xs[i] = x * (i + 1)
    return len(xs)


def _summary(rng):
    return (rng.standard_normal((10, 2)), {"name": "batch"}), {}


@case(make=_summary, category="containers", tags=("dict_update",))
def summarize_into(x, out):
    out.update(mean=x.mean(axis=0), var=x.var(axis=0))
    out["n"] = len(x)


def _parts(rng):
    return (rng.standard_normal(12), [np.zeros(1)]), {}


@case(make=_parts, category="containers", tags=("list_extend", "split"))
def split_into(x, parts):
    parts.extend(np.split(x, 3))
    return [p.sum() for p in parts]


def _memo(rng):
    return (rng.standard_normal((4, 4)), {}), {}


@case(make=_memo, category="containers", tags=("dict_memo", "python_if"))
def cached_square(W, cache):
    if "W2" not in cache:
        cache["W2"] = W @ W
    return cache["W2"] + W


@case(
    make=lambda rng: ((rng.standard_normal(20),), {}), category="containers", tags=("returns_dict",)
)
def describe(x):
    return {"min": x.min(), "max": x.max(), "mean": x.mean(), "n_pos": int((x > 0).sum())}
