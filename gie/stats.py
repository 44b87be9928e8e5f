"""Statistics of a GraphVerse dataset folder: our analogues of the paper's Tables 5/6 (instances per task
x edit), Table 7 (node ranges per task) and a per-source breakdown.

    .venv/bin/python -m gie.stats DATASET_DIR
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import polars as pl

from evalcore.dataset import INSTANCES
from gie.catalogue import EDIT_KINDS, TASK_NAMES


def _rows(dataset_dir: Path) -> pl.DataFrame:
    frame = pl.read_parquet(Path(dataset_dir) / INSTANCES)
    rows = []
    for r in frame.iter_rows(named=True):
        if r["benchmark"] != "graphverse":
            continue
        data = json.loads(r["data"])
        meta = json.loads(r["meta"])
        graphs = data["graphs"]
        asked = data["asked"]
        rows.append({
            "task": r["task"],
            "level": meta.get("level", str(r["level"])),
            "edit": data["edit"]["kind"],
            "paired_mode": meta.get("paired_mode"),
            "source": data["source"]["name"],
            "scenario": data["scenario"],
            "images": len(graphs),
            # nodes of the logical graph(s) before the edit (a composed graph counts both parts)
            "nodes": sum(len(g["nodes"]) for g in graphs),
            "edges": sum(len(g["edges"]) for g in graphs),
            "asked_nodes": sum(len(a["nodes"]) for a in asked),
            "asked_edges": sum(len(a["edges"]) for a in asked),
            "gold_value": r["gold_value"],
        })
    return pl.DataFrame(rows, schema={
        "task": pl.String, "level": pl.String, "edit": pl.String, "paired_mode": pl.String, "source": pl.String,
        "scenario": pl.String, "images": pl.Int64, "nodes": pl.Int64, "edges": pl.Int64,
        "asked_nodes": pl.Int64, "asked_edges": pl.Int64, "gold_value": pl.Float64,
    })


def _task_order(df: pl.DataFrame) -> pl.Expr:
    return pl.col("task").replace_strict({t: i for i, t in enumerate(TASK_NAMES)}, default=99,
                                         return_dtype=pl.Int64)


def stats(dataset_dir: str | Path, *, show: bool = True) -> dict[str, pl.DataFrame]:
    """{"task_edit": Table 5/6 analogue, "node_ranges": Table 7 analogue, "sources": per source}."""
    df = _rows(Path(dataset_dir))
    edits = [e for e in EDIT_KINDS if e in set(df["edit"].to_list())]
    counts = (
        df.group_by("task", "edit").len()
        .pivot(on="edit", index="task", values="len")
        .fill_null(0)
    )
    for e in edits:
        if e not in counts.columns:
            counts = counts.with_columns(pl.lit(0, dtype=pl.UInt32).alias(e))
    counts = (
        counts.select("task", *edits)
        .with_columns(pl.sum_horizontal(*edits).alias("total"))
        .sort(_task_order(counts))
    )
    total_row = counts.select(pl.lit("all").alias("task"), *[pl.col(c).sum() for c in [*edits, "total"]])
    counts = pl.concat([counts, total_row.cast(counts.schema)])
    ranges = (
        df.group_by("task", "level")
        .agg(
            pl.len().alias("n"),
            pl.col("nodes").min().alias("nodes_min"),
            pl.col("nodes").max().alias("nodes_max"),
            pl.col("nodes").mean().round(1).alias("nodes_mean"),
            pl.col("edges").min().alias("edges_min"),
            pl.col("edges").max().alias("edges_max"),
            pl.col("asked_nodes").min().alias("asked_nodes_min"),
            pl.col("asked_nodes").max().alias("asked_nodes_max"),
            pl.col("gold_value").mean().round(2).alias("gold_mean"),
        )
        .sort(_task_order(df.group_by("task", "level").len()), "level")
    )
    sources = (
        df.group_by("source", "scenario")
        .agg(
            pl.len().alias("n"),
            pl.col("task").unique().sort().str.join(",").alias("tasks"),
            pl.col("nodes").min().alias("nodes_min"),
            pl.col("nodes").max().alias("nodes_max"),
        )
        .sort("n", descending=True)
    )
    out = {"task_edit": counts, "node_ranges": ranges, "sources": sources}
    if show:
        with pl.Config(tbl_rows=100, tbl_cols=20, tbl_width_chars=160):
            print("Instances per task x edit (Table 5/6 analogue)")
            print(counts)
            print("Node and edge ranges per task and level, summed over the rendered graphs (Table 7 analogue)")
            print(ranges)
            print("Instances per graph source")
            print(sources)
    return out


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: python -m gie.stats DATASET_DIR")
    stats(sys.argv[1])
