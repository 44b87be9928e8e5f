"""Rescore a finished run with another judge and/or a judge repeat; agreement and failure-mode tables.

    python jobs/judge_rerun.py --run RUN_DIR --judge MODEL [--repeat K] [--out DIR]
                               [--options JSON] [--api-base URL] [--max-tokens N] [--baseline JUDGE[@REPEAT]]
                               [--human CSV|RUN_DIR] [--local] [--actors N] [--cache DIR] [--no-progress]
                               [--card [--card-limit N]]

* `--judge`: `rule-based`, a registry name (cluster/models.yaml, e.g. gemini-3-flash) or a litellm model
  string (e.g. openai/gpt-5.1, hosted_vllm/NAME with --api-base). `--repeat K` asks for judge repeat
  index K (0 = the first run of that judge; the cache makes rerunning an index free).
* With `--api-base` (a local OpenAI-compatible server, docs/vllm-cpu.md) the judge's output is bounded by
  LOCAL_DEFAULTS unless --options / --max-tokens say otherwise: small models under a JSON grammar tend to
  run to max_tokens, so an unbounded default means minutes per judgment on a CPU.
* Writes, under OUT (default RUN_DIR): judgments/ (per-sample Parquet), judge_deltas.csv (seed Table 10
  shape: this judge/repeat − the default judge, per model and task), judge_agreement.csv (this judge vs the
  baseline: diff, |diff|, Pearson r, final-answer agreement per task), failure_modes.csv (seed Figure 3:
  per model, the first failing step's type over incorrect responses), and with --human CSV (or a run
  folder holding the explorer's annotations/) human_agreement.csv (seed Table 9 shape: human − judge per task and model).
* The baseline ("default") is the run's default judge (RUN_DIR/judgments/manifest.json), or --baseline.
* `--card` also runs the judge card of this judge (judge.card) over the run's GraphVerse instances and records
  it in OUT/judge_cards/<judge>/, where the report and the explorer find the grade they show beside VGR-S.
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

from cluster.config import JudgeConfig  # noqa: E402
from cluster.judge_stage import print_stats, run_judge_stage  # noqa: E402
from cluster.judge_work import resolve_spec  # noqa: E402
from evalcore.validation import first_error  # noqa: E402
from judge import agreement, failure_modes  # noqa: E402
from judge.rule_scorer import RULE_VERSION  # noqa: E402
from judge.vgr import default_judge, read_judgments, select  # noqa: E402

# Bounds for a judge on a local server (--api-base), each overridable with --options.
LOCAL_DEFAULTS: dict[str, object] = {"max_tokens": 1024, "max_steps": 8, "max_claim_chars": 80,
                                     "max_malformed": 2, "timeout_s": 300.0, "max_concurrency": 4}


class UsageError(Exception):
    """A bad argument or input: reported as one line, exit status 2."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        raise UsageError(message)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = _Parser(description=__doc__.split("\n\n")[0])
    p.add_argument("--run", required=True, help="finished run folder (holds manifest.json and samples/)")
    p.add_argument("--judge", default=None, help="judge model (default: the run's default judge)")
    p.add_argument("--repeat", type=int, default=0, help="judge repeat index (0 = first run of the judge)")
    p.add_argument("--out", default=None, help="output folder (default: RUN_DIR)")
    p.add_argument("--options", default="{}", help="JudgeSpec fields as JSON, e.g. '{\"max_concurrency\": 4}'")
    p.add_argument("--api-base", default=None, help="endpoint for OpenAI-compatible servers (applies LOCAL_DEFAULTS)")
    p.add_argument("--max-tokens", type=int, default=None, help="judge output budget per call")
    p.add_argument("--baseline", default=None, help="baseline judge[@repeat] (default: the run's default)")
    p.add_argument("--human", default=None, help="CSV of human VGR scores (model, instance_id, human_vgr), or a "
                   "run folder whose annotations/ `nphe4v view --annotate` wrote")
    p.add_argument("--local", action="store_true", help="judge in this process instead of a Ray actor pool")
    p.add_argument("--actors", type=int, default=2)
    p.add_argument("--cache", default=None, help="judgment cache folder (default RUN_DIR/judge_cache)")
    p.add_argument("--no-progress", action="store_true", help="no progress lines on stderr")
    p.add_argument("--card", action="store_true", help="also run the judge card (nphe4v judge-card) with this "
                   "judge over the run's GraphVerse instances; recorded under OUT/judge_cards/ for the report")
    p.add_argument("--card-limit", type=int, default=None, help="the card over the first N instances only")
    args = p.parse_args(argv)
    _check_args(args)
    return args


def _check_args(args: argparse.Namespace) -> None:
    """Every argument checked before any work, each problem one line (UsageError)."""
    if args.repeat < 0:
        raise UsageError(f"--repeat: {args.repeat} is negative (judge repeat indexes start at 0)")
    if args.card_limit is not None and args.card_limit < 1:
        raise UsageError(f"--card-limit: {args.card_limit}, at least 1")
    if args.actors < 1:
        raise UsageError(f"--actors: {args.actors}, at least 1")
    if args.max_tokens is not None and args.max_tokens < 16:
        raise UsageError(f"--max-tokens: {args.max_tokens}, at least 16")
    try:
        options = json.loads(args.options)
    except json.JSONDecodeError as e:
        raise UsageError(f"--options: not JSON ({e.msg} at char {e.pos})") from None
    if not isinstance(options, dict):
        raise UsageError(f"--options: a JSON object of judge settings, got {type(options).__name__}")
    args.options_dict = options
    if args.judge is not None and not args.judge.strip():
        raise UsageError("--judge: empty")
    if args.baseline is not None:
        _parse_judge(args.baseline)
    for flag, value in (("--out", args.out), ("--cache", args.cache)):
        if value is not None and Path(value).exists() and not Path(value).is_dir():
            raise UsageError(f"{flag}: {value} is a file, expected a folder")
    if args.human is not None and not Path(args.human).exists():
        raise UsageError(f"--human: {args.human}: no such file or folder")
    if args.api_base is not None and not args.api_base.startswith(("http://", "https://")):
        raise UsageError(f"--api-base: {args.api_base!r} is not an http(s) URL")


def _parse_judge(s: str) -> tuple[str, int]:
    name, rep = (s.rsplit("@", 1) + ["0"])[:2] if "@" in s else (s, "0")
    if not name.strip():
        raise UsageError(f"--baseline: {s!r} names no judge")
    try:
        k = int(rep)
    except ValueError:
        raise UsageError(f"--baseline: {s!r}: the repeat after @ must be an integer") from None
    if k < 0:
        raise UsageError(f"--baseline: {s!r}: negative repeat")
    return name, k


def judge_options(args: argparse.Namespace) -> dict[str, object]:
    """JudgeSpec options: LOCAL_DEFAULTS under a local endpoint, then --options, then the flags."""
    options: dict[str, object] = dict(LOCAL_DEFAULTS) if args.api_base else {}
    options.update(args.options_dict)
    if args.api_base:
        options["api_base"] = args.api_base
    if args.max_tokens is not None:
        options["max_tokens"] = args.max_tokens
    return options


def _check_judge(judge: str, options: dict[str, object]) -> None:
    """Resolve the judge now: an unknown name, a bad option or a missing API key is one line, before work."""
    from pydantic import ValidationError

    from evalcore import secrets

    try:
        spec = resolve_spec(judge, options)
    except ValidationError as e:
        loc, msg = first_error(e)
        raise UsageError(f"--options: {loc}: {msg}") from None
    if spec.is_rule:
        return
    if "/" not in spec.model:
        raise UsageError(f"--judge: {judge!r} is neither 'rule-based', a registry name (cluster/models.yaml) "
                         "nor a litellm model string (provider/model)")
    try:
        spec.template_obj()
        secrets.require_key(spec.model, secrets.provider_of(spec.model), spec.api_key_env)
    except (OSError, ValueError, KeyError, RuntimeError) as e:
        raise UsageError(f"--judge {judge}: {' '.join(str(e).split())}") from None


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    run = Path(args.run)
    if not (run / "manifest.json").exists():
        print(f"{run}/manifest.json: not a run folder", file=sys.stderr)
        return 2
    out = Path(args.out) if args.out else run
    from contextlib import ExitStack

    from cluster.runlock import RunLockError, run_lock

    # one writer per run folder: held until main returns (the stack's locks are released with its frame)
    locks = ExitStack()

    def hold(folder: Path) -> None:
        from evalcore.shards import StorageError

        try:
            locks.enter_context(run_lock(folder.resolve(), "judge_rerun"))
        except (RunLockError, StorageError) as e:  # held by another, or a read-only / full file system
            locks.close()
            raise UsageError(str(e)) from None

    hold(run)
    human = _human(Path(args.human)) if args.human else None  # read before any judging: a bad file costs nothing
    existing = read_judgments(run, out) if out != run else read_judgments(run)
    base_ident = default_judge(run, existing)
    judge = args.judge or (base_ident[0] if base_ident else "rule-based")
    options = judge_options(args)
    _check_judge(judge, options)
    if not _has_graphverse(run):
        raise UsageError(f"{run}: no GraphVerse samples to judge")
    if base_ident is None:
        print(f"{run} has no judgments yet: judging with {judge}, which becomes the baseline", file=sys.stderr)
    out.mkdir(parents=True, exist_ok=True)
    if out.resolve() != run.resolve():
        hold(out)
    cfg = JudgeConfig(model=judge, options=options, repeat=args.repeat, actors=args.actors,
                      executor="local" if args.local else "ray", cache_dir=args.cache,
                      progress=not args.no_progress)
    stats = run_judge_stage(run, None, cfg, out_dir=out, set_default=(out == run and base_ident is None))
    print_stats(stats)

    js = read_judgments(run, out) if out != run else read_judgments(run)
    if args.baseline:
        bname, brep = _parse_judge(args.baseline)
        bspec = resolve_spec(bname)
        btemplate = None if not bspec.is_rule else RULE_VERSION
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
    if human is not None:
        agreement.human_agreement(human, js, base).write_csv(out / "human_agreement.csv")
    with pl.Config(tbl_rows=60, tbl_cols=12):
        print(deltas)
    print(f"wrote {out}/judge_deltas.csv, judge_agreement.csv, failure_modes.csv"
          + (", human_agreement.csv" if args.human else ""), file=sys.stderr)
    if stats.judge_errors:
        print(f"{stats.judge_errors} judgments ended as judge_error (recorded, not scored)", file=sys.stderr)
    if args.card:
        _record_card(run, out, judge, options, args.card_limit)
    return 0


def _record_card(run: Path, out: Path, judge: str, options: dict[str, object], limit: int | None) -> None:
    """The judge card of this judge over the run's GraphVerse instances, where the report looks it up
    (report.judge_cards: OUT/judge_cards/<judge>/judge_card.json); prints its grade line."""
    from cluster.judge_card import run_card
    from cluster.judge_work import instances_of
    from report.judge_cards import card_path

    instances = sorted(instances_of(run, None).values(), key=lambda i: i.instance_id)
    if limit:
        instances = instances[:limit]
    ident = resolve_spec(judge, options).identity
    dest = card_path(out, ident).parent
    card = run_card(instances, judge, dest, options=options, dataset=str(run))
    print(card.grade)
    print(f"wrote {dest}/judge_card.json, card.csv, card.md, card.png", file=sys.stderr)


def _human(path: Path) -> pl.DataFrame:
    """Human scores from a CSV or from the explorer's annotation files of a run folder."""
    if path.is_file():
        return agreement.read_human_csv(path)
    from report.explorer.annotations import annotations_dir, human_scores

    human = human_scores(path)
    if human.is_empty():
        raise UsageError(f"--human: {annotations_dir(path) if path.name != 'annotations' else path}: "
                         "no annotations (score some with `nphe4v view RUN_DIR --annotate`)")
    return human


def _has_graphverse(run: Path) -> bool:
    from evalcore.records import read_samples

    try:
        samples = read_samples(run)
    except (OSError, ValueError, pl.exceptions.PolarsError) as e:
        raise UsageError(f"{run}/samples: unreadable ({' '.join(str(e).split())[:200]})") from None
    return not samples.is_empty() and not samples.filter(pl.col("benchmark") == "graphverse").is_empty()


def cli(argv: list[str] | None = None) -> int:
    """main() with every expected failure as one line on stderr (no traceback)."""
    try:
        return main(argv)
    except UsageError as e:
        print(f"judge_rerun: error: {e}", file=sys.stderr)
        return 2
    except (OSError, ValueError, pl.exceptions.PolarsError) as e:
        print(f"judge_rerun: error: {' '.join(str(e).split())[:500]}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("judge_rerun: interrupted; judgments written so far are kept; rerun to continue", file=sys.stderr)
        return 130
    except Exception as e:
        from evalcore.shards import StorageError

        if not isinstance(e, StorageError):  # a full or read-only disk while writing: one line naming the file
            raise
        print(f"judge_rerun: error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(cli())
