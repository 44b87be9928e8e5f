"""Fit the threshold of TSP-D's `threshold_rule="median_given_surface"` (the default until issue 31; the default
is now "at_optimum", which needs no calibration: T = the optimum +- 0.005): per number of cities, the median optimum given the distance matrix's surface
statistics (optimum / hull perimeter, linear quantile regression on tspd.model_terms, tau = 0.5, exact optima by Held-Karp). Prints the MEDIAN_MODEL table of
nphe4v/tasks/tspd.py, which holds the printed numbers (datasets must not depend on a fit's last bits).

    PYTHONPATH=. python bench/calibrate_tspd_threshold.py [instances_per_level]   (3000: a few minutes)

The calibration seeds ("tspd-calibration-...") are disjoint from the seeds bench/bench_decision_leaks.py
measures the leak on.
"""

from __future__ import annotations

import random
import sys

import numpy as np
from scipy import sparse
from scipy.optimize import linprog

from evalcore.graph_solvers import held_karp
from nphe4v.tasks.tspd import KNOT_BINS, model_terms, non_convex_cities, params, surface_stats


def median_fit(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Least absolute deviations: min sum |y - x b| as an LP (b free, residual = u+ - u-)."""
    rows, cols = x.shape
    cost = np.concatenate([np.zeros(cols), np.ones(2 * rows)])
    eq = sparse.hstack([sparse.csr_matrix(x), sparse.identity(rows), -sparse.identity(rows)], format="csr")
    bounds = [(None, None)] * cols + [(0, None)] * (2 * rows)
    res = linprog(cost, A_eq=eq, b_eq=y, bounds=bounds, method="highs")
    if not res.success:
        raise RuntimeError(res.message)
    return res.x[:cols]


def knots(pred: np.ndarray, y: np.ndarray, bins: int = KNOT_BINS) -> list[tuple[float, float]]:
    """The median ratio within each of `bins` equal-count bins of the linear prediction, at the bin's median
    prediction: a piecewise-linear map from prediction to conditional median (what the linear form misses,
    e.g. at 4 cities, where every tour is at least the hull and the linear median dips below it)."""
    order = np.argsort(pred, kind="stable")
    out = []
    for chunk in np.array_split(order, bins):
        out.append((float(f"{np.median(pred[chunk]):.6g}"), float(f"{np.median(y[chunk]):.6g}")))
    return out


def main(per_level: int = 3000) -> None:
    models, maps = [], []
    for level in range(1, 11):
        n = params(level)["num_cities"]
        xs, ys = [], []
        for i in range(per_level):
            coords, dist = non_convex_cities(n, random.Random(f"tspd-calibration-{n}-{i}"))
            stats = surface_stats(dist, coords)
            xs.append(model_terms(stats))
            ys.append(held_karp(dist)[0] / stats["hull"])
        x, y = np.array(xs), np.array(ys)
        # Scale the columns for the LP, then back to the raw statistics.
        scale = np.abs(x).max(axis=0)
        coef = median_fit(x / scale, y) / scale
        # 6 significant digits; LP round-off below 1e-9 is zero
        rounded = [float(f"{c:.6g}") if abs(c) > 1e-9 else 0.0 for c in coef]
        pred = x @ np.array(rounded)
        table = knots(pred, y)
        final = np.interp(pred, [k[0] for k in table], [k[1] for k in table])
        print(f"# {n} cities: share opt <= T on the calibration set: linear {np.mean(y <= pred):.3f}, "
              f"mapped {np.mean(y <= final):.3f}", flush=True)
        models.append(f"    {n}: ({', '.join(repr(c) for c in rounded)}),")
        maps.append(f"    {n}: ({', '.join(f'({a!r}, {b!r})' for a, b in table)}),")
    print("MEDIAN_MODEL: dict[int, tuple[float, ...]] = {", *models, "}", sep="\n")
    print("MEDIAN_MAP: dict[int, tuple[tuple[float, float], ...]] = {", *maps, "}", sep="\n")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 3000)
