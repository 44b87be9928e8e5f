"""What `nphe4v run` and `python jobs/eval_all.py` (the same typer command, `nphe4v_cli.app`) do: run a config,
print the leaderboard and the report's paths. No argument parsing here: the command line is `nphe4v_cli`'s."""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from pathlib import Path

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")


@dataclass(frozen=True)
class RunArgs:
    """The run command's options (`nphe4v run --help`)."""

    config: str = "configs/demo.yaml"
    dataset: str | None = None
    models: str | None = None
    out: str | None = None
    data_root: str = "data"
    no_html: bool = False
    plan: bool = False


def main(args: RunArgs) -> int:
    from cluster import interrupts

    interrupts.install()
    try:
        return _main(args)
    except KeyboardInterrupt as e:
        # before the run folder was touched (config, preflight, dataset generation)
        print("interrupted; 0 samples kept; rerun the same command to resume", file=sys.stderr)
        return interrupts.exit_code(e)


def _main(args: RunArgs) -> int:
    from cluster.config import ConfigError, DatasetSpec
    from cluster.config_file import load_config
    from cluster.run import RunFolderError, RunInterrupted, check_folder_path, check_out_folder, execute
    from cluster.runlock import RunLockError, printable
    from evalcore.dataset import DatasetError
    from evalcore.shards import ShardError, StorageError

    try:
        cfg = load_config(args.config, {"out": args.out})
        if args.dataset:
            # lexists never raises (a name too long is "not found"); one that exists is read by load_dataset
            if not os.path.lexists(Path(args.dataset, "manifest.json")):
                raise DatasetError(f"{args.dataset}/manifest.json: not found (--dataset must be a dataset folder)")
            cfg.datasets = [DatasetSpec(path=args.dataset)]
        if args.models:
            wanted = [m.strip() for m in args.models.split(",") if m.strip()]
            if not wanted:
                raise ConfigError(f"{args.config}: --models {args.models!r} names no model")
            known = {m.name: m for m in cfg.models}
            unknown = [m for m in wanted if m not in known]
            if unknown:
                raise ConfigError(f"{args.config}: field models: unknown model {unknown[0]!r} "
                                  f"(config has {', '.join(known)})")
            cfg.models = [known[m] for m in wanted]
        check_folder_path(Path(args.data_root), "--data-root")
        check_out_folder(Path(cfg.out))  # as a run would, before --plan too (a file, a name too long)
        check_config_options(cfg)  # a bad option is refused by a run and by --plan alike, never listed
        if args.plan:
            import json

            from cluster.run_plan import resolve_plan

            plan = resolve_plan(cfg, Path(args.data_root))
            print(json.dumps(plan, indent=2))
            refused = plan_refusals(plan)
            if refused:  # the plan is printed for what it tells; its status says a run would not start
                print(f"error: {printable(f'{args.config}: {refused[0]}')} (a run would refuse to start"
                      + (f"; {len(refused) - 1} more in the plan)" if len(refused) > 1 else ")"), file=sys.stderr)
                return 2
            return 0
        if cfg.preflight:
            cfg.models = preflight_first(cfg)
        paths: list[Path] = []
        out = execute(cfg, data_root=Path(args.data_root), then=lambda o: paths.extend(_reports(o, args.no_html)))
    except RunInterrupted as e:
        if e.cluster_gone:
            # the head is lost: ray.shutdown (here or at exit) would wait on it, then Ray's C++ client would end
            # the process with its own line; what finished is saved, so leave now with the project's line
            print(str(e), file=sys.stderr, flush=True)
            sys.stdout.flush()
            os._exit(e.exit_code)
        _stop_ray()
        print(str(e), file=sys.stderr)
        return e.exit_code
    except (ConfigError, DatasetError, RunFolderError, RunLockError, ShardError, StorageError) as e:
        _stop_ray()
        msg = str(e)
        if isinstance(e, ConfigError) and not msg.startswith(str(args.config)):
            msg = f"{args.config}: {msg}"
        print(f"error: {printable(msg)}", file=sys.stderr)
        return 2
    print("report: " + ", ".join(map(str, paths)) + f"\nsamples: {out}/samples/\nmanifest: {out}/manifest.json")
    return 0


def preflight_first(cfg) -> list:
    """`preflight: true`: start each model once (cluster.preflight, on the run's Ray) and keep the models
    that passed; each one left out is one line on stderr. None left: a ConfigError."""
    from cluster.config import ConfigError
    from cluster.preflight import preflight
    from cluster.run import init_ray
    from cluster.runlock import printable

    if any(m.backend in ("vllm", "transformers") for m in cfg.models):
        init_ray(cfg)
    rows = {r.model: r for r in preflight(cfg)}
    kept = []
    for m in cfg.models:
        r = rows[m.name]
        if r.status == "fail":
            print(printable(f"preflight: model {m.name} refused: {r.reason}"), file=sys.stderr)
        else:
            kept.append(m)
    if not kept:
        raise ConfigError("preflight: every model failed; nothing to run")
    return kept


def check_config_options(cfg: object) -> None:
    """Every model's backend options and the judge's, validated as a run validates them (API keys aside):
    one ConfigError line for the first bad one."""
    from pydantic import ValidationError

    from cluster.backends.factory import check_options
    from cluster.config import ConfigError, RunConfig
    from evalcore.validation import first_error

    assert isinstance(cfg, RunConfig)
    for m in cfg.models:
        try:
            check_options(m.backend, m.name, m.options, keys=False)
        except ValueError as e:
            raise ConfigError(f"field models: {e}") from None
    if cfg.judge.enabled:
        from cluster.judge_work import resolve_spec

        try:
            resolve_spec(cfg.judge.model, cfg.judge.options, cfg.models)
        except ValidationError as e:
            loc, msg = first_error(e)
            raise ConfigError(f"field judge.options{'.' + loc if loc else ''}: {msg}") from None
        except (TypeError, ValueError) as e:
            raise ConfigError(f"field judge: {' '.join(str(e).split())[:200]}") from None


def plan_refusals(plan: dict) -> list[str]:
    """What in a resolved plan would stop a run before any work (one line each): a missing API key, a dataset
    folder that is not what its spec asks for, a PoT sandbox that cannot run here."""
    out = list(plan.get("missing_api_keys") or [])
    out += [d["mismatch"] for d in plan.get("datasets", []) if d.get("mismatch")]
    pot = plan.get("pot") or {}
    if pot.get("problem"):
        out.append(pot["problem"])
    return out


def _stop_ray() -> None:
    """Shut this driver's Ray down before the run's last line: Ray's core threads log the tasks an interrupt
    or a failure cut short (to stderr, from C++), and the user's last line must be ours, not theirs."""
    if "ray" not in sys.modules:
        return
    import contextlib

    import ray

    with contextlib.suppress(Exception):
        if ray.is_initialized():
            ray.shutdown()


def _reports(out: Path, no_html: bool) -> list[Path]:
    from report.summaries import print_summaries

    paths = list(print_summaries(out))
    if not no_html:
        from cluster.registry import load_registry
        from report.html_report import build_report

        try:  # the report groups models by the registry's access and family; a broken registry costs only that
            catalogue = load_registry().by_name
        except Exception:
            catalogue = None
        res = build_report([out], out / "report.html", out / "report.md", catalogue=catalogue)
        paths += [p for p in (res.html, res.markdown) if p]
    return paths
