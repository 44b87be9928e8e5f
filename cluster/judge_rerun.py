"""What `nphe4v judge RUN` (and `python jobs/judge_rerun.py --run RUN`, the same typer command) does: rescore a
finished run with another judge and/or a judge repeat; write the agreement and failure-mode tables.

No argument parsing here: the command line is `nphe4v_cli.judge_command`'s. Every expected refusal is a
`UsageError` (one line, exit status 2), raised before any judging.

* `judge`: `rule-based`, a registry name (cluster/models.yaml: an API model, or an open-weights vLLM model served
  by the run's own kind of model replica, `cluster.judge_stage`) or a litellm model string (e.g.
  openai/gpt-5.1, hosted_vllm/NAME with `api_base`). `repeat` K asks for judge repeat index K (0 = the first
  run of that judge; the cache makes rerunning an index free).
* With `api_base` (a local OpenAI-compatible server, docs/vllm-cpu.md) the judge's output is bounded by
  LOCAL_DEFAULTS unless `options` / `max_tokens` say otherwise: small models under a JSON grammar tend to
  run to max_tokens, so an unbounded default means minutes per judgment on a CPU.
* Writes, under OUT (default RUN_DIR): judgments/ (per-sample Parquet), judge_deltas.csv (GraphVerse Table 10
  shape: this judge/repeat − the default judge, per model and task), judge_agreement.csv (this judge vs the
  baseline: diff, |diff|, Pearson r, final-answer agreement per task), failure_modes.csv (GraphVerse Figure 3:
  per model, the first failing step's type over incorrect responses), and with `human` (a CSV, or a run
  folder holding the explorer's annotations/) human_agreement.csv (GraphVerse Table 9 shape: human − judge).
* The baseline ("default") is the run's default judge (RUN_DIR/judgments/manifest.json), or `baseline`.
* `card` also runs the judge card of this judge (judge.card) over the run's judged instances and records
  it in OUT/judge_cards/<judge>/, where the report and the explorer find the grade they show beside VGR-S.
"""

from __future__ import annotations

import json
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

# Bounds for a judge on a local server (--api-base), each overridable with --options.
LOCAL_DEFAULTS: dict[str, object] = {"max_tokens": 1024, "max_steps": 8, "max_claim_chars": 80,
                                     "max_malformed": 2, "timeout_s": 300.0, "max_concurrency": 4}


class UsageError(Exception):
    """A bad argument or input: reported as one line, exit status 2."""


@dataclass(frozen=True)
class RerunArgs:
    """The judge command's options (`nphe4v judge --help`)."""

    run: str
    judge: str | None = None
    repeat: int = 0
    out: str | None = None
    options: str = "{}"
    api_base: str | None = None
    max_tokens: int | None = None
    baseline: str | None = None
    human: str | None = None
    local: bool = False
    actors: int = 2
    cache: str | None = None
    no_progress: bool = False
    card: bool = False
    card_limit: int | None = None


def check_args(args: RerunArgs) -> dict[str, Any]:
    """Every argument checked before any work, each problem one line (UsageError); returns --options parsed."""
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
    if args.judge is not None and not args.judge.strip():
        raise UsageError("--judge: empty")
    if args.baseline is not None:
        parse_judge(args.baseline)
    for flag, value in (("--out", args.out), ("--cache", args.cache)):
        if value is not None and Path(value).exists() and not Path(value).is_dir():
            raise UsageError(f"{flag}: {value} is a file, expected a folder")
    if args.human is not None and not Path(args.human).exists():
        raise UsageError(f"--human: {args.human}: no such file or folder")
    if args.api_base is not None and not args.api_base.startswith(("http://", "https://")):
        raise UsageError(f"--api-base: {args.api_base!r} is not an http(s) URL")
    return options


def parse_judge(s: str) -> tuple[str, int]:
    """`JUDGE[@REPEAT]` (the --baseline value) as (judge, repeat)."""
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


def judge_options(args: RerunArgs, options: dict[str, Any]) -> dict[str, object]:
    """JudgeSpec options: LOCAL_DEFAULTS under a local endpoint, then --options, then the flags."""
    out: dict[str, object] = dict(LOCAL_DEFAULTS) if args.api_base else {}
    out.update(options)
    if args.api_base:
        out["api_base"] = args.api_base
    if args.max_tokens is not None:
        out["max_tokens"] = args.max_tokens
    return out


def _check_judge(judge: str, options: dict[str, object], models: list[Any]) -> None:
    """Resolve the judge now: an unknown name, a bad option or a missing API key is one line, before work."""
    from pydantic import ValidationError

    from cluster.judge_work import judge_replica, resolve_spec
    from evalcore import secrets
    from evalcore.validation import first_error

    try:
        spec = resolve_spec(judge, options, models)
        replica = judge_replica(judge, models)
    except ValidationError as e:
        loc, msg = first_error(e)
        raise UsageError(f"--options: {loc}: {msg}") from None
    except ValueError as e:  # a model of the run that cannot judge
        raise UsageError(f"--judge: {e}") from None
    if spec.is_rule or replica is not None:  # a judge on this cluster's vLLM replicas needs no key
        return
    if "/" not in spec.model:
        raise UsageError(f"--judge: {judge!r} is neither 'rule-based', a registry name (cluster/models.yaml) "
                         "nor a litellm model string (provider/model)")
    try:
        spec.template_obj()
        secrets.require_key(spec.model, secrets.provider_of(spec.model), spec.api_key_env)
    except (OSError, ValueError, KeyError, RuntimeError) as e:
        raise UsageError(f"--judge {judge}: {' '.join(str(e).split())}") from None


def main(args: RerunArgs) -> int:
    """Rescore the run; raises UsageError (and OSError, ValueError, storage errors) for the caller to print."""
    from contextlib import ExitStack

    import polars as pl

    from cluster.config import JudgeConfig
    from cluster.judge_stage import print_stats, run_judge_stage
    from cluster.judge_work import models_of, resolve_spec
    from cluster.runlock import RunLockError, run_lock
    from evalcore.shards import StorageError
    from judge import agreement, failure_modes
    from judge.rule_scorer import RULE_VERSION
    from judge.vgr import default_judge, read_judgments, select

    options_given = check_args(args)
    run = Path(args.run)
    if not (run / "manifest.json").exists():
        raise UsageError(f"{run}/manifest.json: not a run folder")
    out = Path(args.out) if args.out else run

    # one writer per run folder: held until main returns
    with ExitStack() as locks:
        def hold(folder: Path) -> None:
            try:
                locks.enter_context(run_lock(folder.resolve(), "judge_rerun"))
            except (RunLockError, StorageError) as e:  # held by another, or a read-only / full file system
                raise UsageError(str(e)) from None

        hold(run)
        human = _human(Path(args.human)) if args.human else None  # read before any judging: a bad file costs nothing
        existing = read_judgments(run, out) if out != run else read_judgments(run)
        base_ident = default_judge(run, existing)
        judge = args.judge or (base_ident[0] if base_ident else "rule-based")
        options = judge_options(args, options_given)
        models = models_of(run)  # the run's own models, which --judge may name
        _check_judge(judge, options, models)
        if not _has_judged_samples(run):
            raise UsageError(f"{run}: no {' or '.join(_judged_titles())} samples to judge")
        if base_ident is None:
            print(f"{run} has no judgments yet: judging with {judge}, which becomes the baseline", file=sys.stderr)
        out.mkdir(parents=True, exist_ok=True)
        if out.resolve() != run.resolve():
            hold(out)
        cfg = JudgeConfig(model=judge, options=options, repeat=args.repeat, actors=args.actors,
                          executor="local" if args.local else "ray", cache_dir=args.cache,
                          progress=not args.no_progress)
        stats = run_judge_stage(run, None, cfg, out_dir=out, set_default=(out == run and base_ident is None),
                                models=models)
        print_stats(stats)

        js = read_judgments(run, out) if out != run else read_judgments(run)
        if args.baseline:
            bname, brep = parse_judge(args.baseline)
            bspec = resolve_spec(bname, None, models)
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
            _record_card(run, out, judge, options, args.card_limit, models)
    return 0


def _record_card(run: Path, out: Path, judge: str, options: dict[str, object], limit: int | None,
                 models: list[Any]) -> None:
    """The judge card of this judge over the run's judged instances, where the report looks it up
    (report.judge_cards: OUT/judge_cards/<judge>/judge_card.json); prints its grade line."""
    from cluster.judge_card import run_card
    from cluster.judge_work import instances_of, resolve_spec
    from report.judge_cards import card_path

    instances = sorted(instances_of(run, None).values(), key=lambda i: i.instance_id)
    if limit:
        instances = instances[:limit]
    ident = resolve_spec(judge, options, models).identity
    dest = card_path(out, ident).parent
    card = run_card(instances, judge, dest, options=options, dataset=str(run), models=models)
    print(card.grade)
    print(f"wrote {dest}/judge_card.json, card.csv, card.md, card.png", file=sys.stderr)


def _human(path: Path) -> Any:
    """Human scores from a CSV or from the explorer's annotation files of a run folder."""
    from judge import agreement

    if path.is_file():
        return agreement.read_human_csv(path)
    from report.explorer.annotations import annotations_dir, human_scores

    human = human_scores(path)
    if human.is_empty():
        raise UsageError(f"--human: {annotations_dir(path) if path.name != 'annotations' else path}: "
                         "no annotations (score some with `nphe4v view RUN_DIR --annotate`)")
    return human


def _judged_titles() -> list[str]:
    from cluster.judge_work import judged_benchmarks
    from evalcore import benchmarks

    return [benchmarks.get(n).title for n in judged_benchmarks()] or ["judged-benchmark"]


def _has_judged_samples(run: Path) -> bool:
    """Whether the run has samples of a benchmark the judge scores (`Benchmark.judged`)."""
    import polars as pl

    from cluster.judge_work import judged_benchmarks
    from evalcore.records import read_samples

    try:
        samples = read_samples(run)
    except (OSError, ValueError, pl.exceptions.PolarsError) as e:
        raise UsageError(f"{run}/samples: unreadable ({' '.join(str(e).split())[:200]})") from None
    return not samples.is_empty() and not samples.filter(pl.col("benchmark").is_in(judged_benchmarks())).is_empty()
