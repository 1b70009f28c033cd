"""Corpus: neural-network layers, forward and backward, in the style of course assignments.

Affine/ReLU/softmax layers with their gradients, batch norm with running statistics in a
parameter dict, naive and im2col convolutions, max pooling, dropout, an RNN step, and
optimizer updates that change the weights and the optimizer's config dict in place.
"""

import numpy as np

from .harness import case


def _affine(rng):
    x = rng.standard_normal((4, 2, 3))
    w = rng.standard_normal((6, 5))
    b = rng.standard_normal(5)
    return (x, w, b), {}


@case(make=_affine, category="nn", tags=("reshape", "cache_tuple"))
def affine_forward(x, w, b):
    out = x.reshape(x.shape[0], -1).dot(w) + b
    cache = (x, w, b)
    return out, cache


def _affine_back(rng):
    x = rng.standard_normal((4, 2, 3))
    w = rng.standard_normal((6, 5))
    b = rng.standard_normal(5)
    return (rng.standard_normal((4, 5)), (x, w, b)), {}


@case(make=_affine_back, category="nn", tags=("tuple_unpack", "reshape", "backward"))
def affine_backward(dout, cache):
    x, w, b = cache
    dx = dout.dot(w.T).reshape(x.shape)
    dw = x.reshape(x.shape[0], -1).T.dot(dout)
    db = np.sum(dout, axis=0)
    return dx, dw, db


def _relu_back(rng):
    return (rng.standard_normal((5, 6)), rng.standard_normal((5, 6))), {}


@case(make=_relu_back, category="nn", tags=("copy", "mask_assign", "backward"))
def relu_backward(dout, x):
    dx = dout.copy()
    dx[x <= 0] = 0
    return dx


def _scores(rng):
    return (rng.standard_normal((6, 4)) * 3, rng.integers(0, 4, 6)), {}


@case(make=_scores, category="nn", tags=("softmax", "cross_entropy", "fancy_index", "backward"))
def softmax_loss(x, y):
    shifted = x - np.max(x, axis=1, keepdims=True)
    Z = np.sum(np.exp(shifted), axis=1, keepdims=True)
    log_probs = shifted - np.log(Z)
    probs = np.exp(log_probs)
    N = x.shape[0]
    loss = -np.sum(log_probs[np.arange(N), y]) / N
    dx = probs.copy()
    dx[np.arange(N), y] -= 1
    dx /= N
    return loss, dx


@case(make=_scores, category="nn", tags=("svm_loss", "fancy_index", "backward"))
def svm_loss(x, y):
    N = x.shape[0]
    correct = x[np.arange(N), y]
    margins = np.maximum(0, x - correct[:, np.newaxis] + 1.0)
    margins[np.arange(N), y] = 0
    loss = np.sum(margins) / N
    num_pos = np.sum(margins > 0, axis=1)
    dx = np.zeros_like(x)
    dx[margins > 0] = 1
    dx[np.arange(N), y] -= num_pos
    dx /= N
    return loss, dx


def _bn(mode):
    def make(rng):
        x = rng.standard_normal((8, 3)) * 2 + 1
        gamma, beta = rng.random(3) + 0.5, rng.standard_normal(3)
        bn_param = {
            "mode": mode,
            "eps": 1e-5,
            "momentum": 0.9,
            "running_mean": rng.standard_normal(3) * 0.1,
            "running_var": np.ones(3),
        }
        return (x, gamma, beta, bn_param), {}

    return make


def batchnorm_forward(x, gamma, beta, bn_param):
    mode = bn_param["mode"]
    eps = bn_param.get("eps", 1e-5)
    momentum = bn_param.get("momentum", 0.9)
    D = x.shape[1]
    running_mean = bn_param.get("running_mean", np.zeros(D, dtype=x.dtype))
    running_var = bn_param.get("running_var", np.zeros(D, dtype=x.dtype))
    if mode == "train":
        sample_mean = x.mean(axis=0)
        sample_var = x.var(axis=0)
        x_hat = (x - sample_mean) / np.sqrt(sample_var + eps)
        out = gamma * x_hat + beta
        cache = (x_hat, gamma, sample_var + eps)
        running_mean = momentum * running_mean + (1 - momentum) * sample_mean
        running_var = momentum * running_var + (1 - momentum) * sample_var
    elif mode == "test":
        out = gamma * (x - running_mean) / np.sqrt(running_var + eps) + beta
        cache = None
    else:
        raise ValueError('Invalid forward batchnorm mode "%s"' % mode)
    bn_param["running_mean"] = running_mean
    bn_param["running_var"] = running_var
    return out, cache


case(
    make=_bn("train"),
    category="nn",
    tags=("batchnorm", "dict_setitem", "python_str_if"),
    name="batchnorm_train",
)(batchnorm_forward)


def batchnorm_test(x, gamma, beta, bn_param):
    out, _ = batchnorm_forward(x, gamma, beta, bn_param)
    return out


case(make=_bn("test"), category="nn", tags=("batchnorm", "python_str_if", "nested_call"))(
    batchnorm_test
)


def _bn_back(rng):
    x_hat = rng.standard_normal((8, 3))
    return (rng.standard_normal((8, 3)), (x_hat, rng.random(3) + 0.5, rng.random(3) + 0.1)), {}


@case(make=_bn_back, category="nn", tags=("batchnorm", "backward", "tuple_unpack"))
def batchnorm_backward_alt(dout, cache):
    x_hat, gamma, var_eps = cache
    N = dout.shape[0]
    dbeta = dout.sum(axis=0)
    dgamma = np.sum(dout * x_hat, axis=0)
    dxhat = dout * gamma
    dx = (N * dxhat - dxhat.sum(axis=0) - x_hat * np.sum(dxhat * x_hat, axis=0)) / (
        N * np.sqrt(var_eps)
    )
    return dx, dgamma, dbeta


def _conv(rng):
    x = rng.standard_normal((2, 2, 6, 6))
    w = rng.standard_normal((3, 2, 3, 3))
    b = rng.standard_normal(3)
    return (x, w, b, {"stride": 1, "pad": 1}), {}


@case(make=_conv, category="nn", tags=("conv", "nested_loop", "pad", "index_assign"))
def conv_forward_naive(x, w, b, conv_param):
    stride, pad = conv_param["stride"], conv_param["pad"]
    N, C, H, W = x.shape
    F, _, HH, WW = w.shape
    H_out = 1 + (H + 2 * pad - HH) // stride
    W_out = 1 + (W + 2 * pad - WW) // stride
    xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)), mode="constant")
    out = np.zeros((N, F, H_out, W_out))
    for n in range(N):
        for f in range(F):
            for i in range(H_out):
                for j in range(W_out):
                    window = xp[n, :, i * stride : i * stride + HH, j * stride : j * stride + WW]
                    out[n, f, i, j] = np.sum(window * w[f]) + b[f]
    return out


def im2col(x, kh, kw):
    N, C, H, W = x.shape
    oh, ow = H - kh + 1, W - kw + 1
    cols = np.empty((C * kh * kw, N * oh * ow))
    row = 0
    for c in range(C):
        for di in range(kh):
            for dj in range(kw):
                cols[row] = x[:, c, di : di + oh, dj : dj + ow].reshape(-1)
                row += 1
    return cols


def _conv_valid(rng):
    return (rng.standard_normal((2, 3, 5, 5)), rng.standard_normal((4, 3, 2, 2))), {}


@case(make=_conv_valid, category="nn", tags=("conv", "im2col", "empty", "transpose"))
def conv_im2col(x, w):
    N, _, H, W = x.shape
    F, C, kh, kw = w.shape
    cols = im2col(x, kh, kw)
    out = w.reshape(F, -1) @ cols
    return out.reshape(F, N, H - kh + 1, W - kw + 1).transpose(1, 0, 2, 3)


def _pool(rng):
    return (rng.standard_normal((2, 3, 4, 4)),), {}


@case(make=_pool, category="nn", tags=("max_pool", "nested_loop", "index_assign"))
def max_pool_naive(x, size=2):
    N, C, H, W = x.shape
    out = np.zeros((N, C, H // size, W // size))
    for i in range(H // size):
        for j in range(W // size):
            patch = x[:, :, i * size : (i + 1) * size, j * size : (j + 1) * size]
            out[:, :, i, j] = np.max(patch, axis=(2, 3))
    return out


def _dropout(rng):
    return (rng.standard_normal((5, 5)), {"p": 0.6, "mode": "train"}), {}


@case(make=_dropout, category="nn", tags=("dropout", "global_rng", "python_str_if"))
def dropout_forward(x, dropout_param):
    p, mode = dropout_param["p"], dropout_param["mode"]
    mask = None
    if mode == "train":
        mask = (np.random.rand(*x.shape) < p) / p
        out = x * mask
    else:
        out = x
    cache = (dropout_param, mask)
    return out.astype(x.dtype, copy=False), cache


def _rnn(rng):
    N, D, H = 3, 4, 5
    return (
        rng.standard_normal((N, D)),
        rng.standard_normal((N, H)),
        rng.standard_normal((D, H)) * 0.3,
        rng.standard_normal((H, H)) * 0.3,
        rng.standard_normal(H),
    ), {}


@case(make=_rnn, category="nn", tags=("rnn", "tanh", "backward"))
def rnn_step_forward_backward(x, prev_h, Wx, Wh, b):
    next_h = np.tanh(x @ Wx + prev_h @ Wh + b)
    dnext = np.ones_like(next_h)
    dtanh = dnext * (1 - next_h**2)
    dx = dtanh @ Wx.T
    dprev_h = dtanh @ Wh.T
    dWx = x.T @ dtanh
    dWh = prev_h.T @ dtanh
    db = dtanh.sum(axis=0)
    return next_h, (dx, dprev_h, dWx, dWh, db)


def _sgd_mom(rng):
    return (
        rng.standard_normal((4, 3)),
        rng.standard_normal((4, 3)),
        {"learning_rate": 0.1, "momentum": 0.9, "velocity": rng.standard_normal((4, 3))},
    ), {}


@case(make=_sgd_mom, category="nn", tags=("sgd_momentum", "augmented_assign", "dict_setitem"))
def sgd_momentum(w, dw, config):
    v = config.get("velocity", np.zeros_like(w))
    v = config["momentum"] * v - config["learning_rate"] * dw
    w += v
    config["velocity"] = v


def _adam(rng):
    shape = (3, 4)
    config = {
        "learning_rate": 1e-2,
        "beta1": 0.9,
        "beta2": 0.999,
        "epsilon": 1e-8,
        "m": np.zeros(shape),
        "v": np.zeros(shape),
        "t": 0,
    }
    return (rng.standard_normal(shape), rng.standard_normal(shape), config), {}


@case(
    make=_adam, category="nn", tags=("adam", "augmented_assign", "dict_setitem", "python_int_state")
)
def adam_update(w, dw, config):
    b1, b2, eps = config["beta1"], config["beta2"], config["epsilon"]
    config["t"] += 1
    config["m"] = b1 * config["m"] + (1 - b1) * dw
    config["v"] = b2 * config["v"] + (1 - b2) * dw**2
    mb = config["m"] / (1 - b1 ** config["t"])
    vb = config["v"] / (1 - b2 ** config["t"])
    w -= config["learning_rate"] * mb / (np.sqrt(vb) + eps)
    return w


def _two_layer(rng):
    params = {
        "W1": rng.standard_normal((4, 6)) * 0.5,
        "b1": np.zeros(6),
        "W2": rng.standard_normal((6, 3)) * 0.5,
        "b2": np.zeros(3),
    }
    return (rng.standard_normal((5, 4)), rng.integers(0, 3, 5), params), {"reg": 0.01}


@case(make=_two_layer, category="nn", tags=("two_layer_net", "softmax", "backward", "dict_result"))
def two_layer_loss(X, y, params, reg=0.0):
    W1, b1, W2, b2 = params["W1"], params["b1"], params["W2"], params["b2"]
    h = np.maximum(0, X @ W1 + b1)
    scores = h @ W2 + b2
    scores -= scores.max(axis=1, keepdims=True)
    p = np.exp(scores)
    p /= p.sum(axis=1, keepdims=True)
    n = X.shape[0]
    loss = -np.log(p[range(n), y]).mean() + 0.5 * reg * (np.sum(W1 * W1) + np.sum(W2 * W2))
    grads = {}
    dscores = p
    dscores[range(n), y] -= 1
    dscores /= n
    grads["W2"] = h.T @ dscores + reg * W2
    grads["b2"] = dscores.sum(axis=0)
    dh = dscores @ W2.T
    dh[h <= 0] = 0
    grads["W1"] = X.T @ dh + reg * W1
    grads["b1"] = dh.sum(axis=0)
    return loss, grads
