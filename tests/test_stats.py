"""The one Wilson score interval (evalcore.stats) against values computed by hand from the closed form."""

from __future__ import annotations

import polars as pl
import pytest

from evalcore.stats import Z95, wilson_interval, wilson_interval_exprs

# (k, n) -> (lo, hi), 95 %, fractions. 0/10: hi = z^2 / (n + z^2); 1/1: lo = 1 / (1 + z^2).
KNOWN = {
    (8, 10): (0.4902, 0.9433),
    (8, 12): (0.3906, 0.8619),
    (2, 4): (0.1500, 0.8500),
    (0, 10): (0.0, 0.2775),
    (10, 10): (0.7225, 1.0),
    (1, 1): (0.2065, 1.0),
    (50, 100): (0.4038, 0.5962),
}


@pytest.mark.parametrize(("kn", "bounds"), KNOWN.items())
def test_wilson_interval_known_values(kn, bounds) -> None:
    lo, hi = wilson_interval(*kn)
    assert (lo, hi) == (pytest.approx(bounds[0], abs=1e-4), pytest.approx(bounds[1], abs=1e-4))


def test_wilson_interval_edges() -> None:
    assert wilson_interval(0, 0) is None
    assert wilson_interval(0, 7)[0] == 0.0 and wilson_interval(7, 7)[1] == 1.0  # exact, not 1e-17 off
    assert wilson_interval(1, 1)[0] == pytest.approx(1 / (1 + Z95 * Z95))
    # a wider z widens the interval
    lo99, hi99 = wilson_interval(8, 10, z=2.5758)
    assert lo99 < 0.4902 and hi99 > 0.9433


def test_wilson_interval_exprs_match_the_scalar_form() -> None:
    pairs = [*KNOWN, (0, 0), (3, 17)]
    lo, hi = wilson_interval_exprs("k", "n")
    t = pl.DataFrame({"k": [k for k, _ in pairs], "n": [n for _, n in pairs]}).select(lo=lo, hi=hi)
    for (k, n), row in zip(pairs, t.iter_rows(named=True), strict=True):
        want = wilson_interval(k, n)
        if want is None:
            assert row == {"lo": None, "hi": None}
        else:
            assert (row["lo"], row["hi"]) == (pytest.approx(want[0], abs=1e-12), pytest.approx(want[1], abs=1e-12))
