"""Interval estimates shared by both benchmarks' metrics and the report.

``wilson_interval`` is the one Wilson score interval of the project. Convention:

* two-sided 95 % by default (``z = Z95``);
* the bounds are **fractions** of the proportion ``k / n`` (in [0, 1]); a caller that shows percent
  multiplies by 100;
* ``k = 0`` gives exactly 0 as the lower bound and ``k = n`` exactly 1 as the upper bound (the closed form
  would leave 1e-17 crumbs there);
* ``n = 0`` has no interval: ``None`` (the expression form: null). A caller that needs another stand-in
  (GraphVerse's ``gie.metrics.wilson`` shows the whole range) substitutes it itself.

``wilson_interval_exprs`` is the same interval as Polars expressions over count columns, for tables.
"""

from __future__ import annotations

import math

import polars as pl

Z95 = 1.959963984540054
"""Two-sided 95 % standard normal quantile."""


def wilson_interval(k: float, n: float, z: float = Z95) -> tuple[float, float] | None:
    """Wilson score interval of the proportion ``k / n`` as fractions (``lo``, ``hi``); None when n <= 0."""
    if n <= 0:
        return None
    p = k / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(max(0.0, p * (1 - p) / n + z * z / (4 * n * n))) / denom
    lo = 0.0 if k <= 0 else max(0.0, centre - half)
    hi = 1.0 if k >= n else min(1.0, centre + half)
    return lo, hi


def wilson_interval_exprs(k: str | pl.Expr, n: str | pl.Expr, z: float = Z95) -> tuple[pl.Expr, pl.Expr]:
    """``wilson_interval`` of the count columns (or expressions) ``k`` and ``n`` as two unnamed expressions
    (lower, upper), fractions, null where n <= 0."""
    kk = pl.col(k) if isinstance(k, str) else k
    nc = pl.col(n) if isinstance(n, str) else n
    nn = nc.cast(pl.Float64)
    p = kk.cast(pl.Float64) / nn
    z2 = z * z
    denom = 1 + z2 / nn
    centre = (p + z2 / (2 * nn)) / denom
    half = z * (p * (1 - p) / nn + z2 / (4 * nn * nn)).clip(lower_bound=0.0).sqrt() / denom
    ok = nc > 0
    lo = pl.when(kk <= 0).then(0.0).otherwise((centre - half).clip(lower_bound=0.0))
    hi = pl.when(kk >= nc).then(1.0).otherwise((centre + half).clip(upper_bound=1.0))
    return pl.when(ok).then(lo).otherwise(None), pl.when(ok).then(hi).otherwise(None)
