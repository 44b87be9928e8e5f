"""The report's figures from its tables, for the HTML report (inline SVG, SVG + PNG files) and the explorer
(its /figures page): one place decides which figures a set of runs has."""

from __future__ import annotations

from collections.abc import Sequence

import polars as pl

from report import figures

CAPTIONS: dict[str, str] = {
    "radar": "RA, ER and AA on P, NP-complete and NP-hard tasks, prompt modes pooled (Figure 4).",
    "heatmap_reasoning": "Reasoning per task and level (Figures 7 and 9). Hover a cell for its value, interval "
                         "and count.",
    "heatmap_recognition": "Recognition per task and level. Grey: no recognition data (RA counts as 1 in the "
                           "metrics).",
    "heatmap_accuracy": "correct / n per level; Wilson interval in the tooltip.",
    "prompt_mode_ablation": "AA_All per prompt mode with bootstrap intervals (Figure 8).",
    "lvlm_vs_llm": "AA and ER per complexity class; 'mean' rows average the kind's models (Figure 6).",
    "graphverse_edits": "GraphVerse accuracy per image edit (Wilson intervals).",
    "graphverse_failure_modes": "GraphVerse failure-mode shares of incorrect responses per model (Figure 3).",
}


def figure_set(*, profile: pl.DataFrame | None = None, heat: pl.DataFrame | None = None,
               ablation: pl.DataFrame | None = None, llm: pl.DataFrame | None = None,
               gv_by_edit: pl.DataFrame | None = None, failure_modes: pl.DataFrame | None = None,
               groups: Sequence[tuple[str, Sequence[str]]] | None = None) -> dict[str, figures.Canvas]:
    """Every figure whose table is given, by name (the keys of ``CAPTIONS``, in that order).
    The NPHardEval4V figures need ``profile``, ``heat``, ``ablation`` and ``llm`` together (the report's
    tables: ``report.report_tables``); ``groups`` picks the radar's panels (``figures.radar``)."""
    figs: dict[str, figures.Canvas] = {}
    if profile is not None and heat is not None and ablation is not None and llm is not None:
        figs["radar"] = figures.radar(profile, groups=groups)
        figs["heatmap_reasoning"] = figures.heatmap(
            heat, "wa", "Reasoning per task and level (wa = A'·RA·ER, prompt modes pooled)")
        figs["heatmap_accuracy"] = figures.heatmap(
            heat, "accuracy", "Raw accuracy per task and level (correct / n, prompt modes pooled)",
            lo="acc_lo", hi="acc_hi")
        figs["heatmap_recognition"] = figures.heatmap(
            heat, "RA", "Recognition accuracy per task and level", lo="RA_lo", hi="RA_hi", count="n_rec")
        figs["prompt_mode_ablation"] = figures.ablation_bars(ablation)
        figs["lvlm_vs_llm"] = figures.lvlm_llm_bars(llm)
    if gv_by_edit is not None:
        figs["graphverse_edits"] = figures.edit_bars(gv_by_edit)
    if failure_modes is not None:
        figs["graphverse_failure_modes"] = figures.failure_mode_bars(failure_modes)
    return figs
