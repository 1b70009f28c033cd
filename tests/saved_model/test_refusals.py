"""What cannot be saved as data is refused at save time, naming the node, its line and the fix."""

from __future__ import annotations

import numpy as np
import pytest

import kernel_ext as kx

THIS_FILE = "test_refusals.py"


def _pad_with_nines(vector, pad_width, iaxis, kwargs):
    vector[: pad_width[0]] = 9
    vector[vector.size - pad_width[1] :] = 9


def test_a_python_callable_run_by_numpy_is_refused_with_its_node_line_and_fix(tmp_path):
    @kx.function(backend="numpy")
    def padded(x):
        return np.pad(x, 1, mode=_pad_with_nines)

    padded(np.ones((2, 2)))
    with pytest.raises(kx.saved_model.SaveError) as info:
        kx.saved_model.save(padded, tmp_path / "m")
    text = str(info.value)
    assert "numpy_call" in text and "_pad_with_nines" in text
    assert THIS_FILE in text and "np.pad(x, 1, mode=_pad_with_nines)" in text
    assert "Fix:" in text
    assert isinstance(info.value, ValueError)
    assert not (tmp_path / "m").exists()  # nothing written


def test_a_generator_argument_is_refused_naming_the_argument(tmp_path):
    @kx.function(backend="numpy")
    def noisy(x, rng):
        return x + rng.standard_normal(x.shape)

    noisy(np.zeros(3), np.random.default_rng(0))
    with pytest.raises(
        kx.saved_model.SaveError,
        match=r"argument 'rng' is a Generator object"
        r".*Fix: draw the random values outside",
    ):
        kx.saved_model.save(noisy, tmp_path / "m")


RNG = np.random.default_rng(3)


def test_a_captured_generator_is_refused_naming_its_line(tmp_path):
    @kx.function(backend="numpy")
    def jitter(x):
        return x + RNG.normal(0.0, 0.1, size=x.shape)

    jitter(np.zeros(4))
    with pytest.raises(kx.saved_model.SaveError) as info:
        kx.saved_model.save(jitter, tmp_path / "m")
    text = str(info.value)
    assert "random_call" in text and "Generator" in text
    assert THIS_FILE in text and "RNG.normal(0.0, 0.1, size=x.shape)" in text


def test_global_random_draws_are_saved_by_name_and_follow_the_global_seed(tmp_path):
    @kx.function(backend="numpy")
    def noisy(x):
        return x + np.random.rand(3)

    np.random.seed(5)
    expected = noisy(np.zeros(3))
    kx.saved_model.save(noisy, tmp_path / "m")
    loaded = kx.saved_model.load(tmp_path / "m", backend="numpy")
    np.random.seed(5)
    got = loaded.noisy(np.zeros(3))
    assert got.tobytes() == expected.tobytes()


def test_a_dataclass_result_is_refused_with_the_fix(tmp_path):
    from dataclasses import dataclass

    @dataclass
    class Stats:
        mean: object
        std: object

    @kx.function(backend="numpy")
    def stats(x):
        return Stats(x.mean(), x.std())

    stats(np.arange(5.0))
    with pytest.raises(kx.saved_model.SaveError, match=r"Stats dataclass.*Fix: return a dict"):
        kx.saved_model.save(stats, tmp_path / "m")


def test_a_namedtuple_result_comes_back_as_a_namedtuple_of_the_same_fields(tmp_path):
    from collections import namedtuple

    Pair = namedtuple("Pair", ["low", "high"])

    @kx.function(backend="numpy")
    def bounds(x):
        return Pair(x.min(), x.max())

    x = np.array([3.0, -1.0, 2.0])
    bounds(x)
    kx.saved_model.save(bounds, tmp_path / "m")
    got = kx.saved_model.load(tmp_path / "m", backend="numpy").bounds(x)
    assert type(got).__name__ == "Pair" and got._fields == ("low", "high")
    assert got == (np.float64(-1.0), np.float64(3.0))
