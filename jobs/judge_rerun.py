"""Rescore a finished run with another judge and/or a judge repeat; agreement and failure-mode tables.

    python jobs/judge_rerun.py --run RUN_DIR --judge MODEL [--repeat K] [--out DIR]
                               [--options JSON] [--api-base URL] [--baseline JUDGE[@REPEAT]]
                               [--human CSV] [--local] [--actors N]

* `--judge`: `rule-based`, a registry name (cluster/models.yaml, e.g. gemini-3-flash) or a litellm model
  string (e.g. openai/gpt-5.1, hosted_vllm/NAME with --api-base). `--repeat K` asks for judge repeat
  index K (0 = the first run of that judge; the cache makes rerunning an index free).
* Writes, under OUT (default RUN_DIR): judgments/ (per-sample Parquet), judge_deltas.csv (seed Table 10
  shape: this judge/repeat − the default judge, per task), judge_agreement.csv (this judge vs the
  baseline: diff, |diff|, Pearson r, final-answer agreement per task), failure_modes.csv (seed Figure 3:
  per model, the first failing step's type over incorrect responses), and with --human CSV
  human_agreement.csv (seed Table 9 shape: human − judge per task and model).
* The baseline ("default") is the run's default judge (RUN_DIR/judgments/manifest.json), or --baseline.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

import polars as pl  # noqa: E402

from cluster.judge_stage import JudgeConfig, print_stats, resolve_spec, run_judge_stage  # noqa: E402
from judge import agreement, failure_modes  # noqa: E402
from judge.vgr import default_judge, read_judgments, select  # noqa: E402


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--run", required=True, help="finished run folder (holds manifest.json and samples/)")
    p.add_argument("--judge", default=None, help="judge model (default: the run's default judge)")
    p.add_argument("--repeat", type=int, default=0, help="judge repeat index (0 = first run of the judge)")
    p.add_argument("--out", default=None, help="output folder (default: RUN_DIR)")
    p.add_argument("--options", default="{}", help="JudgeSpec fields as JSON, e.g. '{\"max_concurrency\": 4}'")
    p.add_argument("--api-base", default=None, help="endpoint for OpenAI-compatible servers")
    p.add_argument("--baseline", default=None, help="baseline judge[@repeat] (default: the run's default)")
    p.add_argument("--human", default=None, help="CSV of human VGR scores (model, instance_id, human_vgr)")
    p.add_argument("--local", action="store_true", help="judge in this process instead of a Ray actor pool")
    p.add_argument("--actors", type=int, default=2)
    p.add_argument("--cache", default=None, help="judgment cache folder (default RUN_DIR/judge_cache)")
    return p.parse_args(argv)


def _parse_judge(s: str) -> tuple[str, int]:
    if "@" in s:
        name, rep = s.rsplit("@", 1)
        return name, int(rep)
    return s, 0


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    run = Path(args.run)
    if not (run / "manifest.json").exists():
        print(f"{run}/manifest.json: not a run folder", file=sys.stderr)
        return 2
    out = Path(args.out) if args.out else run
    out.mkdir(parents=True, exist_ok=True)
    from contextlib import ExitStack

    from cluster.runlock import RunLockError, run_lock

    # one writer per run folder: held until main returns (the stack's locks are released with its frame)
    locks = ExitStack()
    try:
        for folder in dict.fromkeys((run.resolve(), out.resolve())):
            locks.enter_context(run_lock(folder, "judge_rerun"))
    except RunLockError as e:
        locks.close()
        print(f"error: {e}", file=sys.stderr)
        return 2
    existing = read_judgments(run, out) if out != run else read_judgments(run)
    base_ident = default_judge(run, existing)
    judge = args.judge or (base_ident[0] if base_ident else "rule-based")
    options = json.loads(args.options)
    if args.api_base:
        options["api_base"] = args.api_base
    cfg = JudgeConfig(model=judge, options=options, repeat=args.repeat, actors=args.actors,
                      executor="local" if args.local else "ray", cache_dir=args.cache)
    stats = run_judge_stage(run, None, cfg, out_dir=out, set_default=(out == run and base_ident is None))
    print_stats(stats)

    js = read_judgments(run, out) if out != run else read_judgments(run)
    if args.baseline:
        bname, brep = _parse_judge(args.baseline)
        bspec = resolve_spec(bname)
        btemplate = None if not bspec.is_rule else "rule-v1"
        base = (bspec.identity, btemplate, brep)
    elif base_ident is not None:
        base = (base_ident[0], base_ident[1], 0)
    else:
        base = (stats.judge, stats.template, 0)
    this = (stats.judge, stats.template, stats.judge_repeat)

    settings = []
    if this != base:
        label = "repeat" if this[0] == base[0] else "alternative"
        settings.append((label, this[0], this[1], this[2]))
    deltas = agreement.judge_deltas(js, base, settings)
    deltas.write_csv(out / "judge_deltas.csv")
    agreement.compare(js, base, this).write_csv(out / "judge_agreement.csv")
    # rule-based vs this LLM judge: the standing cross-check, when the run has rule judgments
    if stats.judge != "rule-based" and not select(js, "rule-based").is_empty():
        agreement.compare(js, ("rule-based", None, 0), this).write_csv(out / "judge_agreement_rule.csv")
    failure_modes.by_response(select(js, this[0], this[1], this[2])).write_csv(out / "failure_modes.csv")
    failure_modes.by_step(select(js, this[0], this[1], this[2])).write_csv(out / "failure_modes_steps.csv")
    if args.human:
        human = agreement.read_human_csv(args.human)
        agreement.human_agreement(human, js, base).write_csv(out / "human_agreement.csv")
    with pl.Config(tbl_rows=40, tbl_cols=12):
        print(deltas)
    print(f"wrote {out}/judge_deltas.csv, judge_agreement.csv, failure_modes.csv"
          + (", human_agreement.csv" if args.human else ""), file=sys.stderr)
    if stats.judge_errors:
        print(f"{stats.judge_errors} judgments ended as judge_error (recorded, not scored)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
