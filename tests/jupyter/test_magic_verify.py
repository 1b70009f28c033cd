"""``%%tffunction --verify``: the functions a cell makes check their traces against the cell's
Python run eagerly (``kernel_ext/engine/verify.py``)."""

from __future__ import annotations

import numpy as np
import pytest

import kernel_ext as kx
from kernel_ext.backends import tiering
from kernel_ext.ir import OpKind
from kernel_ext.ir.interpreter import LOWER


def _broken_flip(node):
    """FLIP's lowering with one wrong bit: the last element's lowest mantissa bit flipped."""

    def run(x):
        out = np.array(np.flip(x, axis=node.params.get("axis")), copy=True)
        flat = out.reshape(-1).view(np.uint64)
        flat[-1] ^= np.uint64(1)
        return out

    return run


def _assert_same(a, b):
    assert tiering.same(a, b), (a, b)


def test_magic_verify_flag_makes_verified_functions(cells, monkeypatch):
    cells.run("%%tffunction --no-widget --verify\ndef twice(x):\n    return np.flip(x) * 2.0\n")
    twice = cells.ns["twice"]
    x = np.arange(3.0)
    _assert_same(twice(x), np.flip(x) * 2.0)
    assert twice.concrete_functions[0].verifier.eager_runs == 1
    monkeypatch.setitem(LOWER, OpKind.FLIP, _broken_flip)
    with pytest.raises(kx.errors.VerificationError):
        twice(np.arange(4.0))  # a new trace, with the broken rule
    cells.run("%%tffunction --no-widget\ndef plain(x):\n    return x\n")
    cells.ns["plain"](x)
    assert cells.ns["plain"].concrete_functions[0].verifier is None


def test_magic_verify_flag_on_a_cell_function(cells, monkeypatch):
    monkeypatch.setitem(LOWER, OpKind.FLIP, _broken_flip)
    cells.ns["x"] = np.arange(3.0)
    error = cells.error("%%tffunction --no-widget --verify rev\nnp.flip(x) * 2.0\n")
    assert isinstance(error, kx.errors.VerificationError) and "'rev'" in str(error)
    _assert_same(error.eager_result[-1], np.flip(np.arange(3.0)) * 2.0)
