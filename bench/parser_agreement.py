"""Where our tolerant parse and the papers' parse of the same NPHardEval4V answers disagree, in a run folder.

Prints, per model: answer samples, and the cross table of `verdict` (ours) against `verdict_paper` (the papers'
rule, `nphe4v.paper_parse`), then the disagreeing samples counted by task and by the papers' parse error
kind, then up to --show examples. Runs written before `verdict_paper` existed can be re-scored first with
--rescore (it re-parses `raw_response` with both rules; the dataset is read from the run manifest). Usage:

    PYTHONPATH=$PWD python bench/parser_agreement.py RUN_DIR [--rescore] [--show 5]
"""

from __future__ import annotations

import argparse
from pathlib import Path

import polars as pl

from evalcore.dataset import load_dataset
from evalcore.schema import ParseError
from nphe4v.paper_parse import extract_paper_answer
from nphe4v.scoring import score_answer_paper
from report.analysis import load_runs, read_run_samples


def _rescore(run_dir: Path, df: pl.DataFrame) -> pl.DataFrame:
    run = load_runs(run_dir)[0]
    paths = [d.get("path") for d in (run.manifest or {}).get("datasets") or [] if d.get("benchmark") == "nphardeval4v"]
    by_id = {i.instance_id: i for p in paths if p for i in load_dataset(p).instances}
    verdicts = []
    for row in df.iter_rows(named=True):
        inst = by_id.get(row["instance_id"])
        ok = inst is not None and row["status"] == "ok"
        verdicts.append(score_answer_paper(inst, row["raw_response"])[0] if ok else
                        ("parse_error" if row["status"] == "model_error" else None))
    return df.with_columns(verdict_paper=pl.Series(verdicts, dtype=pl.String))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("run_dir", type=Path)
    ap.add_argument("--rescore", action="store_true", help="re-parse raw_response with the papers' rule")
    ap.add_argument("--show", type=int, default=3, help="examples of disagreement per model")
    args = ap.parse_args()
    df = read_run_samples(args.run_dir).filter(
        pl.col("benchmark") == "nphardeval4v", pl.col("prompt_mode") != "recognition",
        pl.col("status") != "infra_error")
    if args.rescore:
        df = _rescore(args.run_dir, df)
    pl.Config.set_tbl_rows(60)
    for (model,), part in df.group_by(["model"], maintain_order=True):
        differ = part.filter(pl.col("verdict") != pl.col("verdict_paper"))
        print(f"\n== {model}: {part.height} answers, {differ.height} disagree "
              f"({part['verdict_paper'].null_count()} without a papers' verdict)")
        print(part.group_by("verdict", "verdict_paper").len().sort("verdict", "verdict_paper"))
        if differ.height:
            print(differ.group_by("task", "verdict", "verdict_paper").len().sort("task", "verdict"))
            kinds = [
                err.kind if isinstance(err := extract_paper_answer(t), ParseError) else "parsed"
                for t in differ["raw_response"].to_list()
            ]
            print(pl.DataFrame({"papers_parse": kinds}).group_by("papers_parse").len().sort("len", descending=True))
            for row in differ.head(args.show).iter_rows(named=True):
                print(f"-- {row['task']} {row['instance_id']} ours={row['verdict']} papers={row['verdict_paper']}: "
                      f"{(row['raw_response'] or '')[:200]!r}")


if __name__ == "__main__":
    main()
