"""Programs with ``assert`` statements for ``test_checks.py``: kept out of test modules,
whose asserts pytest rewrites (the eager run would then raise pytest's message)."""

from __future__ import annotations

import numpy as np


def clip_checked(x, lo, hi):
    """Validation with an elif chain, messages made of traced values, and an assert."""
    if x.min() < lo:
        raise ValueError(f"x has {np.sum(x < lo)} values below {lo}, smallest {x.min():.3f}")
    elif x.max() > hi:
        worst = x.max()
        raise OverflowError("too large: " + f"{worst!r} > {hi}")
    assert x.sum() > 0.5, f"sum {x.sum()} too small"
    return np.clip(x, lo, hi) * 2


def doubled_finite(x):
    assert np.all(np.isfinite(x)), "x must be finite"
    return x * 2
