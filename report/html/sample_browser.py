"""The report's sample browser: a few samples per (version, model, task) with their rebuilt prompt,
thumbnails, response, verdict and judge labels, filterable in the page. Long texts are cut to a shared
character budget; everything a model wrote is escaped (report/templates/sample_browser.html.j2, autoescaped) or
embedded as inert JSON."""

from __future__ import annotations

import base64
import hashlib
import io
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import polars as pl
from markupsafe import Markup
from PIL import Image

from evalcore.records import KEY_COLUMNS
from evalcore.schema import RECOGNITION_MODE
from report import analysis
from report.html.format import fmt, json_for_script
from report.html.templating import report_environment
from report.sample_rebuild import DatasetIndex, rebuild_sample

DEFAULT_SAMPLES_PER_GROUP = 4
DEFAULT_MAX_ROWS = 600
"""Rows the whole browser may hold, whatever the number of models: the page stays small; `nphe4v view` has the rest."""
DEFAULT_MAX_IMAGES = 120
DEFAULT_THUMB_PX = 480
DEFAULT_MAX_CHARS = 2000
BROWSER_TEXT_BUDGET = 3_000_000
"""Characters of model text the whole browser may show: with many rows each text is cut shorter."""
MIN_CHARS = 200
TRUNCATION_MARK = "… [truncated: {shown:,} of {total:,} characters shown; the full text is in the run's Parquet]"
# columns of the browser that hold free text of any length (model output, verifier reasons, traces)
LONG_TEXT_COLUMNS = ("raw_response", "parsed_answer", "reason", "error", "trace")
OUTCOME_ORDER = ("wrong", "parse_error", "model_error", "infra_error", "correct", "recognition")
NO_VARIANT = "-"
FILTER_KEYS: tuple[tuple[str, str], ...] = (
    ("version", "version"), ("model", "model"), ("task", "task"), ("level", "level"), ("mode", "prompt mode"),
    ("variant", "variant / edit"), ("verdict", "verdict"),
)


def _outcome(row: dict) -> str:
    if row["status"] != "ok":
        return str(row["status"])
    return str(row["verdict"] or "parse_error")


def select_samples(df: pl.DataFrame, per_group: int = DEFAULT_SAMPLES_PER_GROUP,
                   max_rows: int = DEFAULT_MAX_ROWS) -> pl.DataFrame:
    """At most ``per_group`` samples per (benchmark, version, model, task) and ``max_rows`` in all, deterministic,
    varied and stratified: a group's rows are split by outcome (wrong, parse_error, model_error, infra_error,
    correct; recognition asks apart) and taken round-robin across those categories, each category in a fixed
    pseudo-random order (sha256 of the sample key without the model). The total cap then takes the i-th row of
    every (benchmark, version, task, outcome) stratum before any stratum's (i+1)-th, models rotating through
    each stratum, so that a run of many models keeps every task and outcome, and a spread of models, in view."""
    if df.is_empty() or per_group <= 0 or max_rows <= 0:
        return df.head(0).with_columns(outcome=pl.lit(None, pl.String))
    # the model is not part of the hash: every model ranks the same instances first, so models line up
    # (and share image thumbnails) wherever their outcomes agree
    key = pl.concat_str([pl.col(c).cast(pl.String) for c in ("version", "benchmark", "instance_id", "variant",
                                                              "prompt_mode", "repeat")], separator="|")
    rows = df.with_columns(
        outcome=pl.when(pl.col("status") != "ok").then(pl.col("status"))
        .otherwise(pl.col("verdict").fill_null("parse_error")),
        _cat=pl.when(pl.col("prompt_mode") == RECOGNITION_MODE).then(pl.lit("recognition"))
        .when(pl.col("status") != "ok").then(pl.col("status"))
        .otherwise(pl.col("verdict").fill_null("parse_error")),
        _k=key,
    )
    # one sha256 per distinct key (models share keys), not per row
    keys = rows.select(pl.col("_k").unique())
    keys = keys.with_columns(_h=pl.Series([hashlib.sha256(k.encode()).hexdigest() for k in keys["_k"].to_list()],
                                          dtype=pl.String))
    rows = rows.join(keys, on="_k", how="left", maintain_order="left").drop("_k")
    order = {c: i for i, c in enumerate(OUTCOME_ORDER)}
    group = ["benchmark", "version", "model", "task"]
    rows = rows.with_columns(
        _rank=pl.col("_h").rank("ordinal").over([*group, "_cat"]),
        _co=pl.col("_cat").replace_strict(order, default=len(order), return_dtype=pl.Int64),
    ).sort(*group, "_rank", "_co", "_h")
    picked = rows.with_columns(_n=pl.int_range(pl.len()).over(group)).filter(pl.col("_n") < per_group)
    if picked.height > max_rows:
        # the i-th row of every (benchmark, task, outcome) stratum before any stratum's (i+1)-th, so the cap keeps
        # every task and outcome in view; inside a stratum the groups' first picks of that outcome come first,
        # models in an order that differs per stratum (sha256 of model + stratum), so models rotate
        strat = ["benchmark", "version", "task", "_cat"]
        mh = pl.concat_str([pl.col(c).cast(pl.String) for c in ("model", *strat)], separator="|")
        mkeys = picked.select(_m=mh.unique())
        mkeys = mkeys.with_columns(_mh=pl.Series([hashlib.sha256(k.encode()).hexdigest()
                                                  for k in mkeys["_m"].to_list()], dtype=pl.String))
        picked = (picked.with_columns(_m=mh).join(mkeys, on="_m", how="left", maintain_order="left")
                  .sort("_rank", "_mh").with_columns(_s=pl.int_range(pl.len()).over(strat))
                  .sort("_s", "benchmark", "version", "task", "_co", "_mh").head(max_rows)
                  .sort(*group, "_n").drop("_m", "_mh", "_s"))
    return picked.drop("_cat", "_h", "_rank", "_co", "_n")


class _Assets:
    """Prompts and thumbnails, each stored once and referenced by key from the sample rows."""

    def __init__(self, max_images: int, thumb_px: int) -> None:
        self.prompts: dict[str, str] = {}
        self.images: dict[str, str] = {}
        self.max_images = max_images
        self.thumb_px = thumb_px
        self.skipped = 0

    def prompt(self, text: str) -> str:
        k = hashlib.sha256(text.encode()).hexdigest()[:16]
        self.prompts[k] = text
        return k

    def image(self, path: Path, sha: str) -> str | None:
        k = sha[:16]
        if k in self.images:
            return k
        if len(self.images) >= self.max_images or not path.is_file():
            self.skipped += 1
            return None
        with Image.open(path) as im:
            factor = max(im.size) // (2 * self.thumb_px)
            if im.mode not in ("RGB", "RGBA", "L", "LA"):  # reduce() works on these modes only
                im = im.convert("RGBA")
            if factor > 1:  # fast integer shrink first (before any conversion); the filter below finishes it
                im = im.reduce(factor)
            im = im.convert("RGB")
            im.thumbnail((self.thumb_px, self.thumb_px))
            # task figures are flat colours: a 64-colour palette keeps them sharp at a third of the bytes
            im = im.quantize(64, method=Image.Quantize.FASTOCTREE)
            buf = io.BytesIO()
            im.save(buf, format="PNG", compress_level=9)
        self.images[k] = "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode()
        return k


def _judge_lookup(judge: pl.DataFrame | None) -> dict[str, dict[str, Any]]:
    if judge is None or judge.is_empty() or not set(KEY_COLUMNS) <= set(judge.columns):
        return {}
    extra = [c for c in judge.columns if c not in KEY_COLUMNS]
    out = {}
    for r in judge.iter_rows(named=True):
        key = "|".join(str(r[c]) for c in KEY_COLUMNS)
        if "run_id" in r and "judge_template" in r:  # judge service rows: one lookup per run
            key = f"{r['run_id']}|{key}"
        out[key] = {c: r[c] for c in extra}
    return out


_JUDGMENT_FIELDS = ("judge", "judge_template", "vgr_score", "status", "steps")


def _checks(row: dict) -> str:
    """The stated value's consistency with the witness and the papers' parse, when the run recorded them."""
    parts = []
    if row.get("value_consistent") is not None:
        parts.append(f"stated value consistent with the witness: {'yes' if row['value_consistent'] else 'no'}")
    if row.get("verdict_paper") is not None:
        parts.append(f"papers' parse: {row['verdict_paper']}")
    return "; ".join(parts)


def _judgment_view(j: dict[str, Any]) -> dict[str, Any]:
    """A judge-service judgment (judge.schema) for the template: VGR-Score, judge identity and the step labels
    (claims and errors are model/judge text: the template escapes them). ``steps`` None: not a list (shown raw)."""
    try:
        steps = json.loads(j.get("steps") or "[]")
    except (json.JSONDecodeError, TypeError):
        steps = None
    view: dict[str, Any] = {
        "score": fmt(j.get("vgr_score"), 1),
        "ident": f"{j.get('judge')} · {j.get('judge_template')} · repeat {j.get('judge_repeat', 0)}",
        "error": f"{j.get('status')}: {j.get('error')}" if j.get("status") != "ok" else None,
        "steps": None, "raw_steps": j.get("steps"),
    }
    if isinstance(steps, list):
        view["steps"] = [{"plain": st} if not isinstance(st, dict) else
                         {"ok": bool(st.get("correct")), "claim": st.get("claim"),
                          "label": "correct" if st.get("correct") else str(st.get("error_type") or "unlabelled")}
                         for st in steps]
    return view


def truncate(text: str | None, total: int | None, max_chars: int) -> str | None:
    """``text`` (already at most ``max_chars`` long, or longer) cut to ``max_chars`` with a visible marker
    naming the full length ``total`` when anything was cut."""
    if text is None:
        return None
    total = len(text) if total is None else total
    if total <= max_chars:
        return text
    return text[:max_chars] + TRUNCATION_MARK.format(shown=max_chars, total=total)


def sample_browser(df: pl.DataFrame, runs: Sequence[analysis.Run], judge: pl.DataFrame | None, *,
                   per_group: int, max_images: int, thumb_px: int,
                   max_chars: int = DEFAULT_MAX_CHARS, max_rows: int = DEFAULT_MAX_ROWS) -> tuple[str, pl.DataFrame]:
    """The sample browser: at most ``per_group`` rows per (benchmark, version, model, task); every long text
    cut to ``max_chars`` characters (``truncate``), or shorter when the rows times ``max_chars`` would exceed
    ``BROWSER_TEXT_BUDGET`` (never below ``MIN_CHARS``). Long-text columns missing from ``df`` (a light load) are
    read for the picked rows only (``analysis.long_texts``)."""
    picked = select_samples(df, per_group, max_rows)
    # the page stays bounded however many models and tasks the runs hold
    max_chars = max(MIN_CHARS, min(max_chars, BROWSER_TEXT_BUDGET // max(1, picked.height)))
    if not picked.is_empty():
        picked = _with_long_texts(picked, runs, max_chars)
    if picked.is_empty():
        return '<p class="empty">No samples in these runs.</p>', picked
    index = DatasetIndex(runs)
    assets = _Assets(max_images, thumb_px)
    jl = _judge_lookup(judge)
    values: dict[str, list[str]] = {k: [] for k, _ in FILTER_KEYS}
    rows = []
    for row in picked.iter_rows(named=True):
        variant = row["variant"] or NO_VARIANT
        attrs = {
            "version": row["version"], "model": row["model"], "task": row["task"], "level": str(row["level"]),
            "mode": row["prompt_mode"], "variant": variant, "verdict": row["outcome"],
        }
        for k, v in attrs.items():
            if v not in values[k]:
                values[k].append(v)
        rb = rebuild_sample(row, index)
        pkey = assets.prompt(rb["prompt"]) if rb["prompt"] is not None else ""
        ikeys = []
        missing_imgs = 0
        for path, sha in rb["images"]:
            k = assets.image(path, sha)
            if k:
                ikeys.append(k)
            else:
                missing_imgs += 1
        key = "|".join(str(row[c]) for c in KEY_COLUMNS)
        jkey = f"{row.get('run_id')}|{key}"
        rows.append({
            "attrs": attrs, "model": row["model"], "version": row["version"], "task": row["task"],
            "level": row["level"], "instance_id": row["instance_id"], "prompt_mode": row["prompt_mode"],
            "variant": variant, "repeat": row["repeat"], "outcome": row["outcome"], "pkey": pkey, "ikeys": ikeys,
            "missing_imgs": missing_imgs, "note": rb["note"],
            "fields": [("raw response", _cut(row, "raw_response", max_chars)),
                       ("parsed answer", _cut(row, "parsed_answer", max_chars)), ("checks", _checks(row)),
                       ("gold", truncate(rb["gold"], None, max_chars)), ("reason", _cut(row, "reason", max_chars)),
                       ("error", _cut(row, "error", max_chars))],
            "judgment": _judgment_view(jl[jkey]) if jkey in jl else None,
            "judge_raw": json.dumps(jl[key], ensure_ascii=False, sort_keys=True, default=str)
            if jkey not in jl and key in jl else None,
            "trace": _cut(row, "trace", max_chars),
        })
    selects = [(k, label, sorted(values[k], key=int) if k == "level" else values[k]) for k, label in FILTER_KEYS]
    html_out = report_environment().get_template("sample_browser.html.j2").render(
        rows=rows, selects=selects, shown=picked.height, total=df.height, per_group=per_group, max_rows=max_rows,
        max_chars=max_chars, n_images=len(assets.images), thumb_px=thumb_px, skipped=assets.skipped,
        max_images=max_images, prompts_json=Markup(json_for_script(assets.prompts)),
        images_json=Markup(json_for_script(assets.images)))
    return html_out, picked


def _cut(row: dict, col: str, max_chars: int) -> str | None:
    return truncate(row.get(col), row.get(f"{col}_len"), max_chars)


def _with_long_texts(picked: pl.DataFrame, runs: Sequence[analysis.Run], max_chars: int) -> pl.DataFrame:
    """The picked rows with every long-text column cut to ``max_chars`` (+1, so that ``truncate`` knows a cut
    happened) and its full length as ``<col>_len``; columns absent from ``picked`` are read from the runs'
    Parquet for these rows only."""
    missing = [c for c in LONG_TEXT_COLUMNS if c not in picked.columns]
    present = [c for c in LONG_TEXT_COLUMNS if c in picked.columns]
    out = picked.with_columns(
        *[pl.col(c).str.len_chars().alias(f"{c}_len") for c in present],
        *[pl.col(c).str.slice(0, max_chars) for c in present],
    )
    if missing:
        texts = analysis.long_texts(runs, picked.select("run", "version", *KEY_COLUMNS), missing, max_chars)
        out = out.join(texts, on=["run", "version", *KEY_COLUMNS], how="left")
    for c in missing:
        if c not in out.columns:
            out = out.with_columns(pl.lit(None, pl.String).alias(c), pl.lit(None, pl.UInt32).alias(f"{c}_len"))
    return out
