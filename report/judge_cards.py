"""Where a run's judge card is found, and the grade line the report and the explorer show beside VGR-S.

A card (`nphe4v judge-card`, `judge.card`) is recorded for a run by `nphe4v judge --card` under
RUN_DIR/judge_cards/<judge slug>/judge_card.json. The run's VGR columns are its default judge's
(`judge.vgr.default_judge`), so the line shown is that judge's card; without one the line says so and how to
make it, since a VGR-S without evidence of its judge's robustness should not look like one with it.
"""

from __future__ import annotations

import re
from pathlib import Path

import polars as pl

from judge.card import CARD_FILE, read_card

CARDS_DIR = "judge_cards"


def card_slug(judge: str) -> str:
    """A folder name for a judge identity (`openai/gpt-5.1` -> `openai_gpt-5.1`)."""
    return re.sub(r"[^A-Za-z0-9._-]+", "_", judge).strip("._") or "judge"


def card_path(run_dir: str | Path, judge: str) -> Path:
    return Path(run_dir) / CARDS_DIR / card_slug(judge) / CARD_FILE


def run_card_line(run_dir: str | Path) -> tuple[str, str] | None:
    """(default judge, grade line) of a run with judgments: the card's grade, or a line saying there is none.
    None when the run has no judgments."""
    from judge import vgr

    try:
        # the judgments' manifest names the default judge; without one, only the judge columns are read
        # (a large run's judgments are read once already, for its tables)
        d = vgr.read_manifest(run_dir).get("default")
        files = sorted(vgr.judgments_dir(run_dir).glob("**/*.parquet")) if not d else []
        ids = pl.DataFrame(schema={"judge": pl.String, "judge_template": pl.String}) if not files else \
            pl.scan_parquet(files, hive_partitioning=False).select("judge", "judge_template").unique().collect()
        ident = (d["judge"], d["judge_template"]) if d else vgr.default_judge(None, ids)
    except (OSError, ValueError, KeyError, TypeError, pl.exceptions.PolarsError):
        return None
    if ident is None:
        return None
    judge = ident[0]
    doc = read_card(card_path(run_dir, judge))
    if doc is None:
        return judge, (f"judge card: none for {judge} (nphe4v judge RUN_DIR --judge {judge} --card, "
                       "or nphe4v judge-card)")
    return judge, str(doc["grade"])


def card_lines(run_dirs: list[Path], labels: list[str]) -> pl.DataFrame | None:
    """Per run with judgments: run label, judge, grade line; None when no run has judgments."""
    rows = [(label, *line) for d, label in zip(run_dirs, labels, strict=True) if (line := run_card_line(d))]
    if not rows:
        return None
    return pl.DataFrame(rows, schema={"run": pl.String, "judge": pl.String, "grade": pl.String}, orient="row")
