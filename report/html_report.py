"""The run report: one self-contained HTML file, a Markdown summary, a CSV per table, an SVG + PNG per figure.

``build_report(run_dirs, html_path, md_path=None, csv_dir=None)`` reads one or more run folders (the same
models on several dataset versions, or several runs side by side) and writes:

* ``html_path`` — every table (sortable by clicking a header), every figure as inline SVG, what the runs lack,
  and a sample browser (filter by version, model, task, level, prompt mode, variant/edit and verdict; each
  sample shows its rebuilt prompt, image thumbnails, raw response, parsed answer, gold, verdict, reason and,
  when present, judge labels and a composite model's trace). The file loads nothing from the network: no
  external script, style, font or image. Filters can be preset from the URL: ``report.html#model=m&verdict=wrong``.
* ``<html stem>_figures/<name>.svg|.png`` next to the HTML;
* ``csv_dir`` (default ``<html stem>_tables/`` next to the HTML) — one CSV per table;
* ``md_path`` (optional) — a Markdown summary with the main tables.

Everything a model wrote (responses, parsed answers, reasons, traces, model names) is untrusted: it is only
ever inserted HTML-escaped, or as JSON with ``<``, ``>`` and ``&`` escaped inside a non-executed
``<script type="application/json">`` block and then written into the page with ``textContent``.
"""

from __future__ import annotations

import base64
import hashlib
import html
import io
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import polars as pl
from PIL import Image

from nphe4v.core.records import KEY_COLUMNS
from nphe4v.core.schema import PROMPT_MODES, RECOGNITION_MODE
from nphe4v.core.secrets import redact, redact_frame
from nphe4v.metrics import POOLED
from report import analysis, figures

DEFAULT_SAMPLES_PER_GROUP = 4
DEFAULT_MAX_IMAGES = 120
DEFAULT_THUMB_PX = 480
DEFAULT_MAX_CHARS = 2000
BROWSER_TEXT_BUDGET = 3_000_000
"""Characters of model text the whole browser may show: with many rows each text is cut shorter."""
MIN_CHARS = 200
MAX_DETAIL_ROWS = 1000
"""Rows of a secondary table (inside <details>) shown in the page; the CSV holds them all."""
TRUNCATION_MARK = "… [truncated: {shown:,} of {total:,} characters shown; the full text is in the run's Parquet]"
# columns of the browser that hold free text of any length (model output, verifier reasons, traces)
LONG_TEXT_COLUMNS = ("raw_response", "parsed_answer", "reason", "error", "trace")
OUTCOME_ORDER = ("wrong", "parse_error", "model_error", "infra_error", "correct", "recognition")
NO_VARIANT = "-"
FILTER_KEYS: tuple[tuple[str, str], ...] = (
    ("version", "version"), ("model", "model"), ("task", "task"), ("level", "level"), ("mode", "prompt mode"),
    ("variant", "variant / edit"), ("verdict", "verdict"),
)


@dataclass
class ReportResult:
    html: Path | None
    markdown: Path | None
    csvs: list[Path] = field(default_factory=list)
    figures: list[Path] = field(default_factory=list)
    missing: pl.DataFrame | None = None
    n_samples_shown: int = 0


@dataclass
class Tables:
    board: pl.DataFrame
    tasks: pl.DataFrame
    profile: pl.DataFrame
    heat: pl.DataFrame
    ablation: pl.DataFrame
    llm: pl.DataFrame
    consistency: pl.DataFrame
    missing: pl.DataFrame
    graphverse: dict[str, pl.DataFrame]
    text_only: set[str]
    judged: dict[str, pl.DataFrame] = field(default_factory=dict)  # analysis.graphverse_judged
    judge_csvs: dict[str, pl.DataFrame] = field(default_factory=dict)  # analysis.judge_csvs
    consistency_summary: pl.DataFrame | None = None  # analysis.consistency_summary (Appendix B)
    failures: dict[str, pl.DataFrame] = field(default_factory=dict)  # analysis.failure_categories (§5.3)
    open_closed: pl.DataFrame | None = None  # analysis.open_closed (Figure 4), with --group-by open_closed
    gv_families: pl.DataFrame | None = None  # analysis.graphverse_families (GraphVerse Table 2)


GROUP_BY = ("none", "open_closed")


def compute_tables(run_dirs: Sequence[str | Path], df: pl.DataFrame, *, n_boot: int, seed: int,
                   lvlm_mode: str, group_by: str = "none") -> Tables:
    board = analysis.leaderboard(df, n_boot=n_boot, seed=seed)
    tasks = analysis.per_task(df, n_boot=n_boot, seed=seed)
    text_only = analysis.text_only_models(list(run_dirs))
    consistency = analysis.version_consistency(df, board=board, tasks_table=tasks)
    judged = analysis.graphverse_judged(list(run_dirs), df)
    return Tables(
        board=board,
        tasks=tasks,
        profile=analysis.class_profile(df, board=board),
        heat=analysis.heatmap_table(df),
        ablation=analysis.prompt_mode_ablation(df, board=board),
        llm=analysis.lvlm_vs_llm(df, lvlm_mode=lvlm_mode, text_only=text_only, board=board),
        consistency=consistency,
        missing=analysis.missing_parts(list(run_dirs)),
        graphverse=analysis.graphverse(df),
        text_only=text_only,
        judged=judged,
        judge_csvs=analysis.judge_csvs(list(run_dirs)),
        consistency_summary=analysis.consistency_summary(consistency),
        failures=analysis.failure_categories(list(run_dirs), df),
        open_closed=analysis.open_closed(board) if group_by == "open_closed" else None,
        gv_families=analysis.graphverse_families(df, judged),
    )


# --------------------------------------------------------------------------------------------------------
# Formatting
# --------------------------------------------------------------------------------------------------------


def esc(v: Any) -> str:
    return html.escape("" if v is None else str(v), quote=True)


def fmt(v: Any, digits: int = 3) -> str:
    if v is None:
        return "—"
    if isinstance(v, bool):
        return "yes" if v else ""
    if isinstance(v, float):
        return f"{v:.{digits}f}"
    return str(v)


def fmt_ci(v: Any, lo: Any, hi: Any) -> str:
    if v is None:
        return "—"
    if lo is None or hi is None:
        return fmt(v)
    return f"{fmt(v)} [{fmt(lo)}, {fmt(hi)}]"


def json_for_script(obj: Any) -> str:
    """JSON safe inside <script type="application/json">: no "<", ">" or "&" survives literally."""
    s = json.dumps(obj, ensure_ascii=False, sort_keys=True)
    return s.replace("&", "\\u0026").replace("<", "\\u003c").replace(">", "\\u003e")


def html_table(df: pl.DataFrame, ci: Sequence[str] = (), hide: Sequence[str] = (), table_id: str = "",
               caption: str = "", digits: int = 3, max_rows: int | None = None, csv_name: str = "") -> str:
    """A sortable table; a column c in ``ci`` shows ``c [c_lo, c_hi]`` and the bound columns are not shown.
    ``max_rows``: show only the first rows, with a note pointing at the CSV that holds them all."""
    if df.is_empty():
        return '<p class="empty">No rows.</p>'
    more = ""
    if max_rows is not None and df.height > max_rows:
        more = (f'<p class="note">First {max_rows:,} of {df.height:,} rows shown; all of them are in '
                f"<code>{esc(csv_name or 'the CSV tables')}</code>.</p>")
        df = df.head(max_rows)
    bound = {f"{c}_{s}" for c in ci for s in ("lo", "hi")}
    cols = [c for c in df.columns if c not in bound and c not in hide]
    tid = f' id="{esc(table_id)}"' if table_id else ""
    out = [f'<table class="sortable"{tid}>']
    if caption:
        out.append(f"<caption>{esc(caption)}</caption>")
    out.append("<thead><tr>" + "".join(
        f'<th title="click to sort">{esc(c)}{" <small>[95% CI]</small>" if c in ci else ""}</th>' for c in cols
    ) + "</tr></thead><tbody>")
    for row in df.iter_rows(named=True):
        cells = []
        for c in cols:
            v = row[c]
            sort = "" if v is None else (f"{v:.9g}" if isinstance(v, float) else str(v))
            num = isinstance(v, int | float) and not isinstance(v, bool)
            cls = ' class="num"' if num else ""
            if c in ci and v is not None:
                lo, hi = row.get(f"{c}_lo"), row.get(f"{c}_hi")
                text = esc(fmt(v, digits))
                if lo is not None and hi is not None:
                    text += f' <span class="ci">[{esc(fmt(lo, digits))}, {esc(fmt(hi, digits))}]</span>'
                cells.append(f'<td{cls} data-v="{esc(sort)}">{text}</td>')
            else:
                cells.append(f'<td{cls} data-v="{esc(sort)}">{esc(fmt(v, digits))}</td>')
        out.append("<tr>" + "".join(cells) + "</tr>")
    out.append("</tbody></table>")
    return "\n".join(out) + more


def md_table(df: pl.DataFrame, ci: Sequence[str] = (), hide: Sequence[str] = ()) -> str:
    if df.is_empty():
        return "_No rows._\n"
    bound = {f"{c}_{s}" for c in ci for s in ("lo", "hi")}
    cols = [c for c in df.columns if c not in bound and c not in hide]

    def cell(row: dict, c: str) -> str:
        v = row[c]
        s = fmt_ci(v, row.get(f"{c}_lo"), row.get(f"{c}_hi")) if c in ci else fmt(v)
        return s.replace("|", "\\|").replace("\n", " ")

    lines = ["| " + " | ".join(c + (" [95% CI]" if c in ci else "") for c in cols) + " |",
             "|" + "|".join("---" for _ in cols) + "|"]
    for row in df.iter_rows(named=True):
        lines.append("| " + " | ".join(cell(row, c) for c in cols) + " |")
    return "\n".join(lines) + "\n"


def _drop_single_version(df: pl.DataFrame) -> pl.DataFrame:
    if "version" in df.columns and df["version"].n_unique() <= 1:
        return df.drop("version")
    return df


def _inline_svg(canvas: figures.Canvas) -> str:
    # inline SVG in HTML needs no namespace declaration; dropping it keeps the page free of URLs
    return canvas.svg().replace(' xmlns="http://www.w3.org/2000/svg"', "", 1)


# --------------------------------------------------------------------------------------------------------
# Sample browser
# --------------------------------------------------------------------------------------------------------


def _outcome(row: dict) -> str:
    if row["status"] != "ok":
        return str(row["status"])
    return str(row["verdict"] or "parse_error")


def select_samples(df: pl.DataFrame, per_group: int = DEFAULT_SAMPLES_PER_GROUP) -> pl.DataFrame:
    """At most ``per_group`` samples per (benchmark, version, model, task), deterministic and varied: the group's
    rows are split by outcome (wrong, parse_error, model_error, infra_error, correct; recognition asks apart)
    and taken round-robin across those categories, each category in a fixed pseudo-random order (sha256 of
    the sample key without the model)."""
    if df.is_empty() or per_group <= 0:
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
    rows = rows.with_columns(
        _rank=pl.col("_h").rank("ordinal").over(["benchmark", "version", "model", "task", "_cat"]),
        _co=pl.col("_cat").replace_strict(order, default=len(order), return_dtype=pl.Int64),
    ).sort("benchmark", "version", "model", "task", "_rank", "_co", "_h")
    picked = rows.with_columns(_n=pl.int_range(pl.len()).over(["benchmark", "version", "model", "task"])).filter(
        pl.col("_n") < per_group
    )
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


class _DatasetIndex:
    """Per (run, benchmark, version): the dataset, its task texts and recognition partners (for prompts)."""

    def __init__(self, runs: Sequence[analysis.Run]) -> None:
        self.by_key: dict[tuple[str, str, str], tuple[Any, dict[str, Any]]] = {}
        for run in runs:
            seed = int(((run.config.get("sampling") or {}).get("seed")) or 0)
            for entry, ds in analysis.run_datasets(run):
                if ds is None:
                    continue
                self.by_key[(run.label, str(entry.get("benchmark")), str(entry.get("version")))] = (
                    ds, {"seed": seed, "partners": None, "texts": {}, "by_id": ds.by_id()}
                )

    def get(self, run: str, bench: str, version: str) -> tuple[Any, dict[str, Any]] | None:
        hit = self.by_key.get((run, bench, version))
        if hit is None:  # the same dataset version referenced by another run
            for (_r, b, v), val in self.by_key.items():
                if (b, v) == (bench, version):
                    return val
        return hit

    @staticmethod
    def text(ds: Any, info: dict[str, Any], iid: str):
        from nphe4v.core.benchmarks import task_for

        if iid not in info["texts"]:
            inst = info["by_id"][iid]
            spec = task_for(inst.benchmark, inst.task)
            info["texts"][iid] = spec.text(spec.load(inst.data))
        return info["texts"][iid]


def _rebuild(row: dict, index: _DatasetIndex) -> dict[str, Any]:
    """Prompt text, image files, gold for one sample, rebuilt from its dataset; notes say what could not be."""
    from nphe4v.core.prompting import VISION_MODE, build_prompt, build_recognition_prompt

    out: dict[str, Any] = {"prompt": None, "images": [], "gold": None, "note": ""}
    hit = index.get(row["run"], row["benchmark"], row["version"])
    if hit is None:
        out["note"] = "dataset not found: prompt, images and gold unavailable"
        return out
    ds, info = hit
    inst = info["by_id"].get(row["instance_id"])
    if inst is None:
        out["note"] = f"instance {row['instance_id']} not in the dataset"
        return out
    try:
        if row["prompt_mode"] == RECOGNITION_MODE:
            text_id = inst.instance_id
            if row["variant"] == "mismatch":
                if info["partners"] is None:
                    from nphe4v.recognition import mismatch_partners

                    info["partners"] = mismatch_partners(ds, info["seed"])
                text_id = info["partners"].get(inst.instance_id, inst.instance_id)
            prompt = build_recognition_prompt(_DatasetIndex.text(ds, info, text_id), inst.images)
            out["gold"] = ("YES: the figure and the text show the same instance" if row["variant"] == "match"
                           else f"NO: the text describes another instance ({text_id})")
        else:
            mode = row["prompt_mode"]
            prompt = build_prompt(_DatasetIndex.text(ds, info, inst.instance_id),
                                  mode if mode in (*PROMPT_MODES, VISION_MODE) else VISION_MODE, inst.images)
            gold = json.dumps(inst.gold.answer, ensure_ascii=False, sort_keys=True)
            out["gold"] = gold + ("" if inst.gold.value is None else f"  (optimal value {inst.gold.value:g})")
    except Exception as e:  # a task that cannot rebuild its text must not sink the whole report
        out["note"] = f"prompt not rebuilt ({type(e).__name__}: {e})"
        return out
    out["prompt"] = prompt.text
    out["images"] = [(ds.root / ref.path, ref.sha256) for ref in prompt.images]
    sent = row.get("prompt_sha256") or ""
    if sent and hashlib.sha256(prompt.text.encode()).hexdigest() != sent:
        out["note"] = "the rebuilt prompt differs from the one sent (prompt_sha256 mismatch: template changed?)"
    return out


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


def _judgment_html(j: dict[str, Any]) -> str:
    """A judge-service judgment (judge.schema): VGR-Score, judge identity and the step labels, all escaped
    (claims and errors are model/judge text)."""
    score = j.get("vgr_score")
    ident = f"{j.get('judge')} · {j.get('judge_template')} · repeat {j.get('judge_repeat', 0)}"
    head = (f'<div class="fld"><b>VGR-Score</b> <span class="vgr">{esc(fmt(score, 1))}</span> '
            f'<b>judge</b> <span class="judge-id">{esc(ident)}</span>')
    if j.get("status") != "ok":
        head += f' <span class="v v-wrong">{esc(j.get("status"))}: {esc(j.get("error"))}</span>'
    head += "</div>"
    try:
        steps = json.loads(j.get("steps") or "[]")
    except (json.JSONDecodeError, TypeError):
        steps = None
    if not isinstance(steps, list):
        return head + _pre("judge steps", j.get("steps"))
    if not steps:
        return head + '<p class="note">no reasoning steps extracted (VGR-Score = final-answer match)</p>'
    items = []
    for s in steps:
        if not isinstance(s, dict):
            items.append(f"<li>{esc(s)}</li>")
            continue
        ok = bool(s.get("correct"))
        label = "correct" if ok else str(s.get("error_type") or "unlabelled")
        items.append(f'<li class="{"st-ok" if ok else "st-bad"}"><span class="st-label">{esc(label)}</span> '
                     f'{esc(s.get("claim"))}</li>')
    return head + f'<div class="fld"><b>judge steps</b><ol class="steps">{"".join(items)}</ol></div>'


def truncate(text: str | None, total: int | None, max_chars: int) -> str | None:
    """``text`` (already at most ``max_chars`` long, or longer) cut to ``max_chars`` with a visible marker
    naming the full length ``total`` when anything was cut."""
    if text is None:
        return None
    total = len(text) if total is None else total
    if total <= max_chars:
        return text
    return text[:max_chars] + TRUNCATION_MARK.format(shown=max_chars, total=total)


def _pre(label: str, text: Any, cls: str = "") -> str:
    if text is None or text == "":
        return ""
    return f'<div class="fld"><b>{esc(label)}</b><pre class="{cls}">{esc(text)}</pre></div>'


def sample_browser(df: pl.DataFrame, runs: Sequence[analysis.Run], judge: pl.DataFrame | None, *,
                   per_group: int, max_images: int, thumb_px: int,
                   max_chars: int = DEFAULT_MAX_CHARS) -> tuple[str, pl.DataFrame]:
    """The sample browser: at most ``per_group`` rows per (benchmark, version, model, task); every long text
    cut to ``max_chars`` characters (``truncate``), or shorter when the rows times ``max_chars`` would exceed
    ``BROWSER_TEXT_BUDGET`` (never below ``MIN_CHARS``). Long-text columns missing from ``df`` (a light load) are
    read for the picked rows only (``analysis.long_texts``)."""
    picked = select_samples(df, per_group)
    # the page stays bounded however many models and tasks the runs hold
    max_chars = max(MIN_CHARS, min(max_chars, BROWSER_TEXT_BUDGET // max(1, picked.height)))
    if not picked.is_empty():
        picked = _with_long_texts(picked, runs, max_chars)
    if picked.is_empty():
        return '<p class="empty">No samples in these runs.</p>', picked
    index = _DatasetIndex(runs)
    assets = _Assets(max_images, thumb_px)
    jl = _judge_lookup(judge)
    values: dict[str, list[str]] = {k: [] for k, _ in FILTER_KEYS}
    body = []
    for row in picked.iter_rows(named=True):
        variant = row["variant"] or NO_VARIANT
        attrs = {
            "version": row["version"], "model": row["model"], "task": row["task"], "level": str(row["level"]),
            "mode": row["prompt_mode"], "variant": variant, "verdict": row["outcome"],
        }
        for k, v in attrs.items():
            if v not in values[k]:
                values[k].append(v)
        rb = _rebuild(row, index)
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
        judge_html = ""
        jkey = f"{row.get('run_id')}|{key}"
        if jkey in jl:
            judge_html = _judgment_html(jl[jkey])
        elif key in jl:
            judge_html = _pre("judge", json.dumps(jl[key], ensure_ascii=False, sort_keys=True, default=str))
        details = "".join([
            f'<div class="fld"><b>prompt</b><pre class="prompt" data-prompt="{esc(pkey)}"></pre></div>'
            if pkey else "",
            f'<div class="imgs" data-images="{esc(",".join(ikeys))}"></div>' if ikeys else "",
            f'<p class="note">{missing_imgs} image(s) not embedded (image limit reached or file missing)</p>'
            if missing_imgs else "",
            f'<p class="note">{esc(rb["note"])}</p>' if rb["note"] else "",
            _pre("raw response", _cut(row, "raw_response", max_chars)),
            _pre("parsed answer", _cut(row, "parsed_answer", max_chars)),
            _pre("gold", truncate(rb["gold"], None, max_chars)),
            _pre("reason", _cut(row, "reason", max_chars)),
            _pre("error", _cut(row, "error", max_chars)),
            judge_html,
            _pre("trace", _cut(row, "trace", max_chars)),
        ])
        data = " ".join(f'data-{k}="{esc(v)}"' for k, v in attrs.items())
        body.append(
            f'<tr class="sb-row" {data}>'
            f"<td>{esc(row['model'])}</td><td>{esc(row['version'])}</td><td>{esc(row['task'])}</td>"
            f'<td class="num">{row["level"]}</td><td>{esc(row["instance_id"])}</td><td>{esc(row["prompt_mode"])}</td>'
            f"<td>{esc(variant)}</td><td>{row['repeat']}</td>"
            f'<td><span class="v v-{esc(row["outcome"])}">{esc(row["outcome"])}</span></td>'
            f"<td><details><summary>show</summary>{details}</details></td></tr>"
        )
    selects = []
    for k, label in FILTER_KEYS:
        vals = values[k]
        if k == "level":
            vals = sorted(vals, key=int)
        opts = '<option value="">all</option>' + "".join(f'<option value="{esc(v)}">{esc(v)}</option>' for v in vals)
        selects.append(f'<label>{esc(label)} <select id="f-{k}" data-key="{k}">{opts}</select></label>')
    note = (f"<p class='note'>At most {per_group} samples per model and task (varied by outcome); texts cut "
            f"to {max_chars:,} characters (the full text is in the run's Parquet); "
            f"{len(assets.images)} distinct images embedded as thumbnails of at most {thumb_px}px"
            + (f", {assets.skipped} left out by the limit of {max_images}" if assets.skipped else "")
            + ". The URL fragment keeps the filter, e.g. <code>#model=NAME&amp;verdict=wrong</code>; "
            "<code>&amp;open=3</code> also opens the first three matching samples.</p>")
    html_out = "\n".join([
        note,
        '<div class="filters">' + "".join(selects) + ' <span id="sb-count"></span></div>',
        '<table id="sb-table" class="samples"><thead><tr><th>model</th><th>version</th><th>task</th><th>level</th>'
        "<th>instance</th><th>prompt mode</th><th>variant</th><th>repeat</th><th>verdict</th><th>details</th>"
        "</tr></thead><tbody>",
        *body,
        "</tbody></table>",
        f'<script type="application/json" id="sb-prompts">{json_for_script(assets.prompts)}</script>',
        f'<script type="application/json" id="sb-images">{json_for_script(assets.images)}</script>',
    ])
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


# --------------------------------------------------------------------------------------------------------
# Page
# --------------------------------------------------------------------------------------------------------

CSS = """
body{font-family:Helvetica,Arial,sans-serif;margin:0 auto;max-width:1500px;padding:0 24px 60px;color:#222}
h1{font-size:24px;margin:24px 0 8px} h2{font-size:19px;margin:34px 0 8px;border-bottom:2px solid #ddd}
h3{font-size:15px;margin:20px 0 6px}
nav a{margin-right:14px} .note,.empty{color:#666;font-size:13px} .empty{font-style:italic}
table{border-collapse:collapse;font-size:12.5px;margin:8px 0} caption{text-align:left;font-weight:bold;padding:4px 0}
th,td{border:1px solid #ddd;padding:3px 7px;text-align:left;vertical-align:top}
th{background:#f3f3f3;cursor:pointer;white-space:nowrap} td.num{text-align:right;white-space:nowrap}
.ci{color:#777;font-size:11px} .fig{overflow-x:auto;margin:8px 0}
.missing{background:#fff6e0;border:1px solid #f0c36d;padding:8px 14px} .ok{background:#eef8ee;padding:8px 14px}
.filters label{margin-right:12px;font-size:13px} .filters select{max-width:220px}
pre{white-space:pre-wrap;word-break:break-word;background:#f7f7f7;padding:6px;max-height:360px;overflow:auto;
font-size:12px;margin:2px 0 8px}
.samples td{font-size:12px} .samples details{min-width:300px;max-width:820px} .imgs img{max-width:100%;margin:4px 0;
border:1px solid #ddd}
.v{padding:1px 6px;border-radius:3px;font-size:11px} .v-correct{background:#d9f2d9} .v-wrong{background:#f8d7d7}
.v-parse_error{background:#f5e6c8} .v-model_error,.v-infra_error{background:#ddd}
.steps{font-size:12px;margin:2px 0 8px;padding-left:22px} .st-label{font-size:11px;padding:0 5px;border-radius:3px}
.st-ok .st-label{background:#d9f2d9} .st-bad .st-label{background:#f8d7d7} .vgr{font-weight:bold}
"""

JS = r"""
(function(){
  function cellValue(td){var v=td.getAttribute('data-v');return v===null?td.textContent:v;}
  document.querySelectorAll('table.sortable').forEach(function(t){
    t.querySelectorAll('th').forEach(function(th,i){
      th.addEventListener('click',function(){
        var tb=t.tBodies[0],rows=Array.prototype.slice.call(tb.rows),asc=th.getAttribute('data-dir')!=='asc';
        t.querySelectorAll('th').forEach(function(h){h.removeAttribute('data-dir');});
        th.setAttribute('data-dir',asc?'asc':'desc');
        rows.sort(function(a,b){
          var x=cellValue(a.cells[i]),y=cellValue(b.cells[i]),nx=parseFloat(x),ny=parseFloat(y),r;
          if(x===''&&y!=='')return 1; if(y===''&&x!=='')return -1;
          r=(!isNaN(nx)&&!isNaN(ny))?nx-ny:x.localeCompare(y);
          return asc?r:-r;});
        rows.forEach(function(r){tb.appendChild(r);});
      });
    });
  });
  var table=document.getElementById('sb-table'); if(!table)return;
  var prompts=JSON.parse(document.getElementById('sb-prompts').textContent);
  var images=JSON.parse(document.getElementById('sb-images').textContent);
  var rows=Array.prototype.slice.call(table.tBodies[0].rows);
  var selects=Array.prototype.slice.call(document.querySelectorAll('.filters select'));
  var count=document.getElementById('sb-count');
  function apply(){
    var f={},shown=0;
    selects.forEach(function(s){if(s.value)f[s.getAttribute('data-key')]=s.value;});
    rows.forEach(function(r){
      var ok=Object.keys(f).every(function(k){return r.getAttribute('data-'+k)===f[k];});
      r.hidden=!ok; if(ok)shown++;});
    count.textContent=shown+' of '+rows.length+' samples shown';
    return f;
  }
  function fromHash(){
    var p=new URLSearchParams(location.hash.replace(/^#/,''));
    selects.forEach(function(s){
      var v=p.get(s.getAttribute('data-key'))||'';
      if(v&&!Array.prototype.some.call(s.options,function(o){return o.value===v;})){
        var o=document.createElement('option');o.value=v;o.textContent=v;s.appendChild(o);}
      s.value=v;});
    apply();
    var n=parseInt(p.get('open')||'0',10);
    if(n>0)rows.filter(function(r){return !r.hidden;}).slice(0,n).forEach(function(r){
      var d=r.querySelector('details'); if(d)d.open=true;});
  }
  selects.forEach(function(s){s.addEventListener('change',function(){
    var f=apply(),p=new URLSearchParams();
    Object.keys(f).forEach(function(k){p.set(k,f[k]);});
    history.replaceState(null,'','#'+p.toString());});});
  window.addEventListener('hashchange',fromHash);
  table.addEventListener('toggle',function(e){
    var d=e.target; if(!d.open||d.getAttribute('data-filled'))return; d.setAttribute('data-filled','1');
    d.querySelectorAll('pre[data-prompt]').forEach(function(pre){pre.textContent=prompts[pre.getAttribute('data-prompt')]||'';});
    d.querySelectorAll('div[data-images]').forEach(function(div){
      div.getAttribute('data-images').split(',').forEach(function(k){
        if(!images[k])return; var img=document.createElement('img'); img.src=images[k]; img.alt='instance image';
        div.appendChild(img);});});
  },true);
  fromHash();
})();
"""


def _section(anchor: str, title: str, body: str) -> str:
    return f'<section id="{anchor}"><h2>{esc(title)}</h2>\n{body}\n</section>'


def _runs_table(runs: Sequence[analysis.Run]) -> pl.DataFrame:
    rows = []
    for r in runs:
        m = r.manifest or {}
        cfg = r.config
        rows.append({
            "run": r.label,
            "folder": str(r.path),
            "status": r.status,
            "created_at": str(m.get("created_at") or ""),
            "finished_at": str(m.get("finished_at") or ""),
            "git_sha": str(m.get("git_sha") or "")[:12],
            "datasets": ", ".join(f"{d.get('benchmark')}:{d.get('version')}" for d in m.get("datasets") or []),
            "models": ", ".join(str(x.get("name")) for x in cfg.get("models") or []),
            "prompt_modes": ", ".join(cfg.get("prompt_modes") or []),
        })
    schema = {k: pl.String for k in ("run", "folder", "status", "created_at", "finished_at", "git_sha", "datasets",
                                     "models", "prompt_modes")}
    return pl.DataFrame(rows, schema=schema)


def _board_view(board: pl.DataFrame, pooled: bool) -> pl.DataFrame:
    b = board.filter((pl.col("prompt_mode") == POOLED) if pooled else (pl.col("prompt_mode") != POOLED))
    if pooled:
        b = b.sort("version", pl.col("AA_All").fill_null(-1.0), "model", descending=[False, True, False]).drop(
            "prompt_mode")
    return _drop_single_version(b.drop("parsable", "correct", "recognised", "n_control", "false_yes"))


_BOARD_CI = ("ER", "RA", "RA_corrected", "AA_P", "AA_NPC", "AA_NPH", "AA_All")


def _ablation_wide(ablation: pl.DataFrame) -> pl.DataFrame:
    if ablation.is_empty():
        return ablation
    wide = ablation.select("version", "model", "prompt_mode", "AA_All").pivot(
        on="prompt_mode", index=["version", "model"], values="AA_All"
    )
    best = ablation.filter(pl.col("best")).select("version", "model", pl.col("prompt_mode").alias("best_mode"))
    modes = [m for m in PROMPT_MODES if m in wide.columns]
    return _drop_single_version(wide.join(best, on=["version", "model"], how="left").select(
        "version", "model", *modes, "best_mode").sort("version", "model"))


def build_report(
    run_dirs: str | Path | Sequence[str | Path],
    html_path: str | Path | None,
    md_path: str | Path | None = None,
    csv_dir: str | Path | None = None,
    *,
    samples_per_group: int = DEFAULT_SAMPLES_PER_GROUP,
    max_images: int = DEFAULT_MAX_IMAGES,
    thumb_px: int = DEFAULT_THUMB_PX,
    n_boot: int = analysis.DEFAULT_BOOT,
    seed: int = analysis.DEFAULT_SEED,
    lvlm_mode: str = analysis.DEFAULT_LVLM_MODE,
    groups: Sequence[tuple[str, Sequence[str]]] | None = None,
    title: str | None = None,
    group_by: str = "none",
    max_chars: int = DEFAULT_MAX_CHARS,
) -> ReportResult:
    """Write the report of ``run_dirs`` (see the module docstring); returns the paths written and the
    missing-parts table. ``groups`` = [(name, [model, ...]), ...] picks the radar panels (default: models in
    order, four per panel; ``group_by="open_closed"``: one panel per model access, and the closed-vs-open table
    of Figure 4). The output is deterministic for the same inputs (no timestamps of its own)."""
    paths = analysis._as_paths(run_dirs)
    runs = analysis.load_runs(paths)
    # responses, errors and traces are read for the browser's rows only: a run's full text can be gigabytes
    df = analysis.samples(paths, light=True)
    if group_by not in GROUP_BY:
        raise ValueError(f"group_by: {group_by!r} is not one of {', '.join(GROUP_BY)}")
    t = compute_tables(paths, df, n_boot=n_boot, seed=seed, lvlm_mode=lvlm_mode, group_by=group_by)
    if groups is None and group_by == "open_closed" and not t.profile.is_empty():
        versions = sorted(t.profile["version"].unique().to_list())
        groups = [(access, [figures.series_label(m, v, len(versions)) for m in models for v in versions])
                  for access, models in analysis.access_groups(t.board)]
    html_path = Path(html_path) if html_path else None
    md_path = Path(md_path) if md_path else None
    anchor = html_path or md_path
    if csv_dir is None and anchor is not None:
        csv_dir = anchor.with_name(anchor.stem + "_tables")
    result = ReportResult(html=html_path, markdown=md_path, missing=t.missing)

    # ---- figures
    nph_present = not t.board.is_empty()
    figs: dict[str, figures.Canvas] = {}
    if nph_present:
        figs["radar"] = figures.radar(t.profile, groups=groups)
        figs["heatmap_reasoning"] = figures.heatmap(
            t.heat, "wa", "Reasoning per task and level (wa = A'·RA·ER, prompt modes pooled)")
        figs["heatmap_accuracy"] = figures.heatmap(
            t.heat, "accuracy", "Raw accuracy per task and level (correct / n, prompt modes pooled)",
            lo="acc_lo", hi="acc_hi")
        figs["heatmap_recognition"] = figures.heatmap(
            t.heat, "RA", "Recognition accuracy per task and level", lo="RA_lo", hi="RA_hi", count="n_rec")
        figs["prompt_mode_ablation"] = figures.ablation_bars(t.ablation)
        figs["lvlm_vs_llm"] = figures.lvlm_llm_bars(t.llm)
    if t.graphverse:
        figs["graphverse_edits"] = figures.edit_bars(t.graphverse["by_edit"])
    if t.judged:
        figs["graphverse_failure_modes"] = figures.failure_mode_bars(t.judged["failure_modes"])
    if anchor is not None:
        fig_dir = anchor.with_name(anchor.stem + "_figures")
        for name, canvas in figs.items():
            result.figures.extend(canvas.save(fig_dir / name))

    # ---- CSVs
    tables: dict[str, pl.DataFrame] = {
        "runs": _runs_table(runs),
        "missing_parts": t.missing,
        "leaderboard": t.board,
        "per_task": t.tasks,
        "class_profile": t.profile,
        "heatmap": t.heat,
        "prompt_mode_ablation": t.ablation,
        "lvlm_vs_llm": t.llm,
        "version_consistency": t.consistency,
        **({"consistency_summary": t.consistency_summary} if t.consistency_summary is not None else {}),
        **({"open_closed": t.open_closed} if t.open_closed is not None else {}),
        **{f"failures_{k}": v for k, v in t.failures.items()},
        **({"graphverse_families": t.gv_families} if t.gv_families is not None and t.gv_families.height else {}),
        **{f"graphverse_{k}": v for k, v in t.graphverse.items()},
        **{f"graphverse_{k}": v for k, v in t.judged.items()},
        **t.judge_csvs,
    }
    browser_html, picked = "", None
    if html_path is not None:
        browser_html, picked = sample_browser(
            df, runs, analysis.judge_table(paths), per_group=samples_per_group, max_images=max_images,
            thumb_px=thumb_px, max_chars=max_chars)
        result.n_samples_shown = picked.height
        keep = [c for c in ("run", "version", *KEY_COLUMNS, "task", "level", "outcome", "verdict", "reason")
                if c in picked.columns]
        tables["sample_browser"] = picked.select(list(dict.fromkeys(keep)))
    if csv_dir is not None:
        csv_dir = Path(csv_dir)
        csv_dir.mkdir(parents=True, exist_ok=True)
        for name, frame in tables.items():
            p = csv_dir / f"{name}.csv"
            redact_frame(frame).write_csv(p, float_precision=6)
            result.csvs.append(p)

    title = title or "nphe4v report: " + ", ".join(r.label for r in runs)
    if html_path is not None:
        html_path.parent.mkdir(parents=True, exist_ok=True)
        html_path.write_text(redact(_html(title, runs, t, figs, browser_html, samples_per_group)))
    if md_path is not None:
        md_path.parent.mkdir(parents=True, exist_ok=True)
        md_path.write_text(redact(_markdown(title, runs, t, result, html_path)))
    return result


def _missing_html(missing: pl.DataFrame) -> str:
    if missing.is_empty():
        return '<p class="ok">Nothing missing: every configured model, prompt mode and recognition ask has its ' \
               "samples, no infra errors, and every run finished.</p>"
    items = "".join(f"<li><b>{esc(r['run'])}</b>: {esc(r['detail'])}</li>" for r in missing.iter_rows(named=True))
    return f'<div class="missing"><p><b>This report covers partial results.</b> Missing:</p><ul>{items}</ul></div>'


def _fig_html(figs: dict[str, figures.Canvas], name: str, caption: str) -> str:
    if name not in figs:
        return ""
    return f'<figure class="fig" id="fig-{name}">{_inline_svg(figs[name])}<figcaption class="note">' \
           f"{esc(caption)}</figcaption></figure>"


def _html(title: str, runs: Sequence[analysis.Run], t: Tables, figs: dict[str, figures.Canvas],
          browser_html: str, per_group: int) -> str:
    nph = not t.board.is_empty()
    no_nph = '<p class="empty">No NPHardEval4V samples in these runs.</p>'
    sec = []
    sec.append(_section("runs", "Runs", html_table(_runs_table(runs), table_id="runs-table")))
    sec.append(_section("missing", "Missing parts", _missing_html(t.missing)))
    lb_body = no_nph
    if nph:
        lb_body = "\n".join([
            "<p class='note'>All prompt modes pooled, as in the paper. RA: the paper's rule (YES in at least 3 of "
            "the 5 asks; an unparsable ask is not a YES); RA_var: the variance of the asks' outcomes, mean over "
            "instances; RA_corrected: RA minus the false-YES rate on mismatched controls (not in the paper). "
            "ER and RA: Wilson 95% intervals of the "
            "pooled counts; RA_corrected and AA: percentile bootstrap over instances (resampled within each task "
            "and level, fixed seed). n = answer questions (infra errors excluded), n_rec = instances with "
            "recognition data (RA = 1 without).</p>",
            html_table(_board_view(t.board, True), ci=_BOARD_CI, table_id="leaderboard"),
            "<details><summary>Per prompt mode</summary>",
            html_table(_board_view(t.board, False), ci=_BOARD_CI, table_id="leaderboard-modes"),
            "</details>",
        ])
    sec.append(_section("leaderboard", "Leaderboard", lb_body))
    if nph:
        sec.append(_section("classes", "By complexity class (Figure 4)", "\n".join([
            _fig_html(figs, "radar", "RA, ER and AA on P, NP-complete and NP-hard tasks, prompt modes pooled."
                      + (" One panel per model access (closed, open, builtin)." if t.open_closed is not None
                         else "")),
            _open_closed_html(t.open_closed),
            html_table(_drop_single_version(t.profile), ci=("AA", "ER", "RA"), table_id="class-profile"),
        ])))
        sec.append(_section("heatmaps", "Per task and level (Figures 7 and 9)", "\n".join([
            _fig_html(figs, "heatmap_reasoning", "Hover a cell for its value, interval and count."),
            _fig_html(figs, "heatmap_recognition", "Grey: no recognition data (RA counts as 1 in the metrics)."),
            "<details><summary>Raw accuracy heatmap and the full table</summary>",
            _fig_html(figs, "heatmap_accuracy", "correct / n per level; Wilson interval in the tooltip."),
            html_table(_drop_single_version(t.heat), ci=("accuracy", "RA"), hide=("acc_lo", "acc_hi"),
                       table_id="heatmap-table", max_rows=MAX_DETAIL_ROWS, csv_name="heatmap.csv"),
            "</details>",
        ])))
        sec.append(_section("ablation", "Prompt-mode ablation (Figure 8)", "\n".join([
            _fig_html(figs, "prompt_mode_ablation", "AA_All per prompt mode with bootstrap intervals."),
            html_table(_ablation_wide(t.ablation), table_id="ablation-wide", caption="AA_All by prompt mode"),
            "<details><summary>Details</summary>",
            html_table(_drop_single_version(t.ablation), ci=("AA_All", "ER"), table_id="ablation"),
            "</details>",
        ])))
        llm_note = ("<p class='note'>No text-only LLM in these runs (set <code>text_only: true</code> on a model "
                    "to run it on full_text_only); only LVLMs are shown.</p>" if not t.text_only else
                    f"<p class='note'>Text-only LLMs: {esc(', '.join(sorted(t.text_only)))}.</p>")
        sec.append(_section("lvlm-llm", "LVLMs vs text-only LLMs (Figure 6)", "\n".join([
            llm_note,
            _fig_html(figs, "lvlm_vs_llm", "AA and ER per complexity class; 'mean' rows average the kind's models."),
            html_table(_drop_single_version(t.llm), ci=("AA", "ER"), table_id="lvlm-llm"),
        ])))
        versions = t.board["version"].n_unique()
        vc_note = ("<p class='note'>These runs hold one dataset version: min = mean = max and no variance. "
                   "Report several runs of the same models on different versions to measure consistency.</p>"
                   if versions <= 1 else
                   f"<p class='note'>{versions} versions. AA per model and task (prompt modes pooled); "
                   "variance with ddof = 1.</p>")
        vc_table = html_table(t.consistency, table_id="version-consistency")
        if versions <= 1:
            vc_table = f"<details><summary>Per model and task</summary>{vc_table}</details>"
        summary = ("<h3>Appendix B summary</h3><p class='note'>Variance of AA across versions per (model, task), "
                   "then its minimum, mean and maximum over all points (the paper: 135 points, min 0.0, mean "
                   f"0.01167, max 0.11029); near zero = below {analysis.NEAR_ZERO_VARIANCE:g}.</p>"
                   + html_table(t.consistency_summary, digits=5, table_id="consistency-summary")
                   if t.consistency_summary is not None else "")
        sec.append(_section("versions", "Version consistency", vc_note + summary + vc_table))
        sec.append(_section("failures", "Failure analysis (§5.3)", _failures_html(t.failures)))
        sec.append(_section("per-task", "Per task", "<details><summary>AA per model, task and prompt mode</summary>"
                            + html_table(_drop_single_version(t.tasks), ci=("AA", "ER"), table_id="per-task",
                                         max_rows=MAX_DETAIL_ROWS, csv_name="per_task.csv")
                            + "</details>"))
    gv = t.graphverse
    if gv:
        gv_body = "\n".join([
            _fig_html(figs, "graphverse_edits", "Accuracy per image edit (Wilson intervals)."),
            "<h3>Accuracy per model and task (%)</h3>", html_table(gv["acc_table"], digits=1, table_id="gv-acc"),
            "<h3>With counts and Wilson intervals (%)</h3>",
            html_table(gv["accuracy"], digits=1, ci=("acc",), hide=("ci_low", "ci_high"), table_id="gv-accuracy"),
            "<h3>Per edit</h3>", html_table(gv["by_edit"], digits=1, table_id="gv-edit"),
            "<h3>Single vs paired images</h3>", html_table(gv["single_vs_paired"], digits=1, table_id="gv-paired"),
            "<h3>Poly vs NP-hard</h3>", html_table(gv["poly_vs_nph"], digits=3, table_id="gv-poly"),
            "<h3>Model families (Table 2)</h3>",
            "<p class='note'>Per family (cluster/models.yaml <code>family</code>, else the leading letters of the "
            "title): the mean over its models of each model's mean Acc / VGR-S (%) on Poly and on NP-hard tasks; "
            "drop = (Poly − NPH) / Poly. VGR-S is blank until the judge has run.</p>",
            html_table(t.gv_families if t.gv_families is not None else pl.DataFrame(), digits=3,
                       table_id="gv-families"),
            _judge_html(t, figs),
        ])
    else:
        gv_body = '<p class="empty">No GraphVerse samples in these runs.</p>'
    sec.append(_section("graphverse", "GraphVerse", gv_body))
    sec.append(_section("samples", "Sample browser", browser_html))
    nav = " ".join(f'<a href="#{a}">{esc(n)}</a>' for a, n in (
        ("missing", "missing"), ("leaderboard", "leaderboard"), ("classes", "classes"), ("heatmaps", "heatmaps"),
        ("ablation", "prompt modes"), ("lvlm-llm", "LVLM vs LLM"), ("versions", "versions"), ("failures", "failures"),
        ("graphverse", "GraphVerse"), ("samples", "samples")))
    return "\n".join([
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        # nothing may load from anywhere: only inline styles, inline scripts and data: images
        '<meta http-equiv="Content-Security-Policy" content="default-src \'none\'; '
        "img-src data:; style-src 'unsafe-inline'; script-src 'unsafe-inline'\">",
        f"<title>{esc(title)}</title><style>{CSS}</style></head><body>",
        f"<h1>{esc(title)}</h1>",
        f"<nav>{nav}</nav>",
        *sec,
        f"<script>{JS}</script>",
        "</body></html>",
        "",
    ])


def _open_closed_html(table: pl.DataFrame | None) -> str:
    if table is None:
        return ("<p class='note'>Closed vs open models: <code>nphe4v report --group-by open_closed</code> "
                "(model access from cluster/models.yaml).</p>")
    return ("<h3>Closed vs open models</h3><p class='note'>Plain means over each group's models (pooled prompt "
            "modes); access from cluster/models.yaml, <i>unregistered</i> for models it does not list.</p>"
            + html_table(_drop_single_version(table), table_id="open-closed"))


def _failures_html(failures: dict[str, pl.DataFrame]) -> str:
    if not failures:
        return '<p class="empty">No NPHardEval4V answer samples.</p>'
    note = ("<p class='note'>Every answer that is not correct (infra errors excluded), in the first category that "
            "applies: unparsable; perception error (names an item, node, city, vertex, meeting, slot or position "
            "the instance does not have); wrong decision (TSP-D, GCP-D); feasible but suboptimal; infeasible (any "
            "other wrong answer). Shares are of the failures.</p>")
    return "\n".join([
        note, html_table(failures["by_model"], table_id="failures"),
        "<details><summary>Per model and task</summary>",
        html_table(failures["by_model_task"], table_id="failures-task", max_rows=MAX_DETAIL_ROWS,
                   csv_name="failures_by_model_task.csv"), "</details>",
    ])


_NO_JUDGE = ("The judge has not been run on these runs: no VGR-Score, no failure modes. Run the judge stage "
             "(cluster run with a judge) or <code>jobs/judge_rerun.py --run RUN_DIR</code>.")
_JUDGE_CSV_TITLES = (
    ("judge_deltas", "Judge robustness (Table 10: VGR of each setting − the default judge)",
     "jobs/judge_rerun.py --run RUN_DIR --judge JUDGE [--repeat K]"),
    ("human_agreement", "Human agreement (Table 9: human − judge VGR)",
     "jobs/judge_rerun.py --run RUN_DIR --human CSV"),
)


def _judge_html(t: Tables, figs: dict[str, figures.Canvas]) -> str:
    """The judge part of the GraphVerse section (Table 1 with VGR-S, per edit, Figure 3, agreement)."""
    if not t.judged:
        return f'<h3>VGR-Score</h3><p class="empty">{_NO_JUDGE}</p>'
    j = t.judged
    out = [
        "<h3>Acc and VGR-S per model and task (%, Table 1)</h3>",
        "<p class='note'>Each cell: Acc / VGR-S (default judge, repeat 0), ↑ where VGR-S is above Acc, ↓ below, "
        "no arrow when equal at one decimal; n = samples behind Acc / samples the judge scored. All = every "
        "sample of the model.</p>",
        html_table(j["acc_vgr_wide"], table_id="gv-acc-vgr"),
        "<details><summary>As a long table</summary>",
        html_table(j["acc_vgr"], digits=1, table_id="gv-acc-vgr-long"), "</details>",
        "<h3>Acc and VGR-S per edit (%)</h3>", html_table(j["edit_vgr"], digits=1, table_id="gv-edit-vgr"),
        "<h3>Failure modes of incorrect responses (Figure 3)</h3>",
        "<p class='note'>Share of incorrect responses by the type of their first wrong step; unattributed = "
        "no wrong step labelled (e.g. no steps extracted). Shares sum to 1 per model.</p>",
        _fig_html(figs, "graphverse_failure_modes", "Failure-mode shares per model."),
        html_table(j["failure_modes"], digits=3, table_id="gv-failure-modes"),
    ]
    for name, title, how in _JUDGE_CSV_TITLES:
        out.append(f"<h3>{esc(title)}</h3>")
        if name in t.judge_csvs:
            out.append(html_table(t.judge_csvs[name], digits=2, table_id=f"gv-{name.replace('_', '-')}"))
        else:
            out.append(f'<p class="empty">Not run yet ({esc(name)}.csv absent): <code>{esc(how)}</code>.</p>')
    return "\n".join(out)


def _markdown(title: str, runs: Sequence[analysis.Run], t: Tables, result: ReportResult,
              html_path: Path | None) -> str:
    out = [f"# {title}", ""]
    out += ["## Runs", "", md_table(_runs_table(runs).drop("folder")), ""]
    out += ["## Missing parts", ""]
    if t.missing.is_empty():
        out += ["Nothing missing.", ""]
    else:
        out += [f"- **{r['run']}**: {r['detail']}" for r in t.missing.iter_rows(named=True)] + [""]
    out += ["## Leaderboard (prompt modes pooled)", ""]
    if t.board.is_empty():
        out += ["No NPHardEval4V samples in these runs.", ""]
    else:
        view = _board_view(t.board, True).drop("n_instances")
        out += ["ER, RA: Wilson 95% intervals; RA_corrected, AA: instance bootstrap. n = answer questions, "
                "n_rec = instances with recognition data.", "", md_table(view, ci=_BOARD_CI), ""]
        out += ["## Prompt-mode ablation (AA_All)", "", md_table(_ablation_wide(t.ablation)), ""]
        llm = t.llm.filter(pl.col("model") == "mean") if not t.llm.is_empty() else t.llm
        out += ["## LVLMs vs text-only LLMs (means per kind)", ""]
        if not t.text_only:
            out += ["No text-only LLM in these runs.", ""]
        out += [md_table(_drop_single_version(llm).drop("AA_lo", "AA_hi", "ER_lo", "ER_hi")), ""]
        out += ["## Version consistency (AA_All)", ""]
        vc = t.consistency.filter(pl.col("task") == "All").drop("complexity")
        out += [md_table(vc), ""]
        if t.consistency_summary is not None:
            out += ["### Appendix B summary (variance of AA across versions)", "", md_table(t.consistency_summary),
                    ""]
        if t.open_closed is not None:
            out += ["## Closed vs open models (Figure 4)", "", md_table(_drop_single_version(t.open_closed)), ""]
        if t.failures:
            out += ["## Failure analysis (§5.3)", "", md_table(t.failures["by_model"]), ""]
    out += ["## GraphVerse", ""]
    if t.graphverse:
        out += [md_table(t.graphverse["acc_table"]), "", md_table(t.graphverse["poly_vs_nph"]), ""]
        if t.gv_families is not None and t.gv_families.height:
            out += ["### Model families (Table 2)", "", md_table(t.gv_families), ""]
        if t.judged:
            out += ["### Acc / VGR-S per model and task (%)", "",
                    "↑ VGR-S above Acc, ↓ below; n = samples behind Acc / samples scored by the judge.", "",
                    md_table(t.judged["acc_vgr_wide"]), "",
                    "### Acc and VGR-S per edit (%)", "", md_table(t.judged["edit_vgr"]), "",
                    "### Failure modes of incorrect responses (shares)", "", md_table(t.judged["failure_modes"]), ""]
            for name, ttl, how in _JUDGE_CSV_TITLES:
                out += [f"### {ttl}", ""]
                out += [md_table(t.judge_csvs[name]), ""] if name in t.judge_csvs else \
                    [f"Not run yet (`{name}.csv` absent): `{how}`.", ""]
        else:
            out += [_NO_JUDGE.replace("<code>", "`").replace("</code>", "`"), ""]
    else:
        out += ["No GraphVerse samples in these runs.", ""]
    out += ["## Files", ""]
    if html_path is not None:
        out.append(f"- HTML report: `{html_path.name}`")
    out += [f"- table: `{p.parent.name}/{p.name}`" for p in result.csvs]
    out += [f"- figure: `{p.parent.name}/{p.name}`" for p in result.figures]
    return "\n".join(out) + "\n"


class _LoadScanner(HTMLParser):
    """Collects everything in a page that would make a browser fetch a resource."""

    URL_ATTRS = {"src", "href", "xlink:href", "action", "poster", "srcset", "data", "formaction", "background"}

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.found: list[str] = []
        self._in_style = False

    def _css(self, text: str) -> None:
        self.found += re.findall(r"""url\(\s*["']?(?!data:|#)([^)"']+)""", text, flags=re.I)
        self.found += ["@import"] * len(re.findall(r"@import", text, flags=re.I))

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in ("iframe", "object", "embed", "base"):
            self.found.append(f"<{tag}>")
        if tag == "style":
            self._in_style = True
        for name, value in attrs:
            value = (value or "").strip()
            if name in self.URL_ATTRS and value and not value.startswith(("data:", "#")):
                self.found.append(f"{tag}[{name}]={value}")
            if name == "style":
                self._css(value)

    def handle_endtag(self, tag: str) -> None:
        if tag == "style":
            self._in_style = False

    def handle_data(self, data: str) -> None:
        if self._in_style:
            self._css(data)


def self_contained_violations(text: str) -> list[str]:
    """Tags and attributes that would make the page load something (a src/href/url() to anything but a data:
    URI or a fragment, <iframe>/<object>/<embed>/<base>, CSS @import); the report must have none. Text
    content, however hostile, is not markup and is not reported."""
    scanner = _LoadScanner()
    scanner.feed(text)
    scanner.close()
    return scanner.found
