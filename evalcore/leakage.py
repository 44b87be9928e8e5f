"""How well surface statistics alone predict a decision answer: the yardstick of decision-instance generators.

A decision task leaks when something computable without solving (sizes, densities, the threshold against the
instance's size) tells YES from NO. Two measures, both over whole generated datasets:

- `best_threshold_accuracy`: the best single-feature rule "YES iff value <= t" (or > t), over every t;
- `loo_logistic_accuracy`: leave-one-out accuracy of an L2-regularised logistic regression on all features
  together (standardised), fitted exactly by Newton's method (IRLS) for every left-out instance.

Both count the constant answer too, so label imbalance is a leak as well.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def best_threshold_accuracy(values: Sequence[float], labels: Sequence[bool]) -> float:
    """Accuracy of the best rule "YES iff value <= t" or "YES iff value > t" over every t (a t beyond the range
    is the constant answer)."""
    n = len(values)
    pairs = sorted(zip(values, labels, strict=True))
    yes_total = sum(bool(y) for y in labels)
    best = max(yes_total, n - yes_total)
    yes_below = 0
    for i, (v, y) in enumerate(pairs):
        yes_below += bool(y)
        if i + 1 < n and pairs[i + 1][0] == v:
            continue  # a threshold cannot split equal values
        below = i + 1
        le_rule = yes_below + (n - below - (yes_total - yes_below))
        best = max(best, le_rule, n - le_rule)
    return best / n


def _standardise(x: np.ndarray) -> np.ndarray:
    """Columns scaled to mean 0, sd 1; constant columns (e.g. the node count within a level) dropped."""
    sd = x.std(axis=0)
    keep = sd > 1e-12
    return (x[:, keep] - x[:, keep].mean(axis=0)) / sd[keep]


def _fit(x: np.ndarray, y: np.ndarray, w: np.ndarray, beta: np.ndarray, l2: float) -> np.ndarray:
    """Newton's method on the weighted L2-regularised logistic loss (intercept column 0 not penalised)."""
    pen = np.full(x.shape[1], l2)
    pen[0] = 0.0
    for _ in range(50):
        p = 1.0 / (1.0 + np.exp(-(x @ beta)))
        grad = x.T @ (w * (p - y)) + pen * beta
        hess = (x * (w * p * (1 - p))[:, None]).T @ x + np.diag(pen) + 1e-9 * np.eye(len(beta))
        step = np.linalg.solve(hess, grad)
        beta = beta - step
        if np.max(np.abs(step)) < 1e-8:
            break
    return beta


def loo_logistic_accuracy(features: Sequence[Sequence[float]], labels: Sequence[bool], l2: float = 1.0) -> float:
    """Leave-one-out accuracy of logistic regression on all the (standardised) features. Each left-out fit is
    exact (Newton from the all-data solution, a few iterations on a p x p system)."""
    y = np.asarray(labels, dtype=np.float64)
    x = np.asarray(features, dtype=np.float64)
    x = np.hstack([np.ones((len(y), 1)), _standardise(x)])
    full = _fit(x, y, np.ones(len(y)), np.zeros(x.shape[1]), l2)
    right = 0
    for i in range(len(y)):
        w = np.ones(len(y))
        w[i] = 0.0
        beta = _fit(x, y, w, full, l2)
        right += (x[i] @ beta > 0) == (y[i] > 0.5)
    return right / len(y)
