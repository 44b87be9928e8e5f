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

from collections.abc import Sequence
from pathlib import Path

import polars as pl

from evalcore.records import KEY_COLUMNS
from evalcore.secrets import redact, redact_frame
from evalcore.shards import writing
from report import analysis
from report.comparisons import Comparisons
from report.html.format import fmt, json_for_script, md_table
from report.html.markdown import render_markdown
from report.html.page import render_page, runs_table
from report.html.sample_browser import (
    BROWSER_TEXT_BUDGET,
    DEFAULT_MAX_CHARS,
    DEFAULT_MAX_IMAGES,
    DEFAULT_SAMPLES_PER_GROUP,
    DEFAULT_THUMB_PX,
    TRUNCATION_MARK,
    sample_browser,
    select_samples,
    truncate,
)
from report.html.section_view import section_figures
from report.html.self_contained import self_contained_violations
from report.html.tables import html_table
from report.model_groups import ModelCatalogue
from report.report_tables import GROUP_BY, ReportResult, Tables, compute_tables
from report.runs import as_paths

__all__ = [
    "BROWSER_TEXT_BUDGET", "DEFAULT_MAX_CHARS", "DEFAULT_MAX_IMAGES", "DEFAULT_SAMPLES_PER_GROUP", "DEFAULT_THUMB_PX",
    "GROUP_BY", "TRUNCATION_MARK", "ReportResult", "Tables", "build_report", "compute_tables", "fmt", "html_table",
    "json_for_script", "md_table", "sample_browser", "select_samples", "self_contained_violations", "truncate",
]


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
    catalogue: ModelCatalogue | None = None,
    comparisons: Comparisons | None = None,
) -> ReportResult:
    """Write the report of ``run_dirs`` (see the module docstring); returns the paths written and the
    missing-parts table. ``groups`` = [(name, [model, ...]), ...] picks the radar panels (default: the
    benchmark's, e.g. models in order, four per panel; ``group_by="open_closed"``: one panel per model access,
    and the closed-vs-open table of Figure 4). ``catalogue``: the model registry's entries by name (``report.model_groups``; the caller's,
since the registry lives above the report), for the open / closed grouping and GraphVerse's model families;
without it every model is "unregistered". ``comparisons``: which arm is the baseline of which in GraphVerse's
improvement tables (``gie.comparisons``; default: each model's PoT against its direct inference). The output is deterministic for the same inputs (no timestamps of its own)."""
    paths = as_paths(run_dirs)
    runs = analysis.load_runs(paths)
    # responses, errors and traces are read for the browser's rows only: a run's full text can be gigabytes
    df = analysis.samples(paths, light=True)
    if group_by not in GROUP_BY:
        raise ValueError(f"group_by: {group_by!r} is not one of {', '.join(GROUP_BY)}")
    t = compute_tables(paths, df, n_boot=n_boot, seed=seed, lvlm_mode=lvlm_mode, group_by=group_by,
                       catalogue=catalogue, comparisons=comparisons)
    html_path = Path(html_path) if html_path else None
    md_path = Path(md_path) if md_path else None
    anchor = html_path or md_path
    if csv_dir is None and anchor is not None:
        csv_dir = anchor.with_name(anchor.stem + "_tables")
    result = ReportResult(html=html_path, markdown=md_path, missing=t.missing)

    # ---- figures
    # the benchmarks' own figure specs, drawn (``groups``: the caller's radar panels)
    figs = section_figures(t.sections, groups)
    if anchor is not None:
        fig_dir = anchor.with_name(anchor.stem + "_figures")
        for name, canvas in figs.items():
            with writing(fig_dir / f"{name}.svg"):  # a full disk: one line naming the file
                result.figures.extend(canvas.save(fig_dir / name))

    # ---- CSVs
    tables: dict[str, pl.DataFrame] = {
        "runs": runs_table(runs),
        "missing_parts": t.missing,
        **{name: frame for sec in t.sections for name, frame in sec.csvs.items()},
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
        with writing(csv_dir, "creating"):
            csv_dir.mkdir(parents=True, exist_ok=True)
        for name, frame in tables.items():
            p = csv_dir / f"{name}.csv"
            with writing(p):
                redact_frame(frame).write_csv(p, float_precision=6)
            result.csvs.append(p)

    title = title or "nphe4v report: " + ", ".join(r.label for r in runs)
    if html_path is not None:
        write_whole(html_path, redact(render_page(title, runs, t, figs, browser_html, samples_per_group)))
    if md_path is not None:
        write_whole(md_path, redact(render_markdown(title, runs, t, result, html_path)))
    return result


def write_whole(path: Path, text: str) -> None:
    """Write beside and rename: a disk that fills mid-write leaves the previous report whole (and no
    temporary), and the failure is one line naming the file (`StorageError`)."""
    tmp = path.with_name(f".{path.name}.tmp")
    with writing(path):
        path.parent.mkdir(parents=True, exist_ok=True)
        try:
            tmp.write_text(text)
            tmp.replace(path)
        except BaseException:
            tmp.unlink(missing_ok=True)
            raise
