"""The stratified instance bootstrap every benchmark's intervals use: per replicate and (task, level) stratum,
as many instances drawn with replacement as the stratum holds (the same draw for every model and prompt mode,
so models stay comparable), and percentile bounds over the replicates. ``numpy.random.default_rng(seed)``
fixes the draws: same inputs and seed, same bounds."""

from __future__ import annotations

import warnings

import numpy as np
import polars as pl


def instance_draws(instances: pl.DataFrame, n_boot: int, seed: int) -> pl.DataFrame:
    """For replicate ``b`` and each (task, level) stratum of k instances (columns task, level, instance_id; ids
    sorted), k ids drawn with replacement. Columns: b, instance_id (drawn), pos (draw position in the stratum)."""
    inst = instances.select("task", "level", "instance_id").unique().sort("task", "level", "instance_id")
    rng = np.random.default_rng(seed)
    bs, ids_out, pos = [], [], []
    for _key, grp in inst.group_by(["task", "level"], maintain_order=True):
        ids = np.array(grp["instance_id"].to_list(), dtype=object)
        k = len(ids)
        idx = rng.integers(0, k, size=(n_boot, k))
        bs.append(np.repeat(np.arange(n_boot, dtype=np.int64), k))
        pos.append(np.tile(np.arange(k, dtype=np.int64), n_boot))
        ids_out.append(ids[idx.ravel()])
    if not bs:
        return pl.DataFrame(schema={"b": pl.Int64, "instance_id": pl.String, "pos": pl.Int64})
    return pl.DataFrame({
        "b": np.concatenate(bs),
        "instance_id": pl.Series(np.concatenate(ids_out).tolist(), dtype=pl.String),
        "pos": np.concatenate(pos),
    })


def percentile_bounds(x: np.ndarray) -> tuple[list[float | None], list[float | None]]:
    """2.5 % and 97.5 % percentiles (linear interpolation) over the replicates (axis 1) of each row of ``x``,
    NaNs skipped."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        q = np.nanquantile(x, [0.025, 0.975], axis=1, method="linear") if x.size else np.zeros((2, 0))
    return ([None if np.isnan(v) else float(v) for v in q[0]], [None if np.isnan(v) else float(v) for v in q[1]])
