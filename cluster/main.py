"""Entry point behind `python jobs/eval_all.py` and `nphe4v run`: parse flags, run, print the leaderboard."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="eval_all", description="Evaluate models on NPHardEval4V on Ray.")
    p.add_argument("--config", default="configs/demo.yaml", help="run config YAML")
    p.add_argument("--dataset", help="existing dataset folder (overrides the config's datasets)")
    p.add_argument("--models", help="comma-separated subset of the config's models")
    p.add_argument("--out", help="run folder (overrides the config's `out`)")
    p.add_argument("--data-root", default="data", help="where generated datasets are cached")
    p.add_argument("--no-html", action="store_true", help="skip the HTML/Markdown report (tables still written)")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    from cluster.config import ConfigError, DatasetSpec, load_config
    from cluster.run import RunFolderError, execute
    from nphe4v.dataset import DatasetError

    args = parse_args(argv)
    try:
        cfg = load_config(args.config, {"out": args.out})
        if args.dataset:
            if not Path(args.dataset, "manifest.json").is_file():
                raise DatasetError(f"{args.dataset}/manifest.json: not found (--dataset must be a dataset folder)")
            cfg.datasets = [DatasetSpec(path=args.dataset)]
        if args.models:
            wanted = [m.strip() for m in args.models.split(",") if m.strip()]
            known = {m.name: m for m in cfg.models}
            unknown = [m for m in wanted if m not in known]
            if unknown:
                raise ConfigError(f"{args.config}: field models: unknown model {unknown[0]!r} "
                                  f"(config has {', '.join(known)})")
            cfg.models = [known[m] for m in wanted]
        out = execute(cfg, data_root=Path(args.data_root))
    except (ConfigError, DatasetError, RunFolderError) as e:
        msg = str(e)
        if isinstance(e, ConfigError) and not msg.startswith(str(args.config)):
            msg = f"{args.config}: {msg}"
        print(f"error: {msg}", file=sys.stderr)
        return 2
    from nphe4v.report import print_summaries

    paths = print_summaries(out)
    if not args.no_html:
        from nphe4v.html_report import build_report

        res = build_report([out], out / "report.html", out / "report.md")
        paths += [p for p in (res.html, res.markdown) if p]
    print("report: " + ", ".join(map(str, paths)) + f"\nsamples: {out}/samples/\nmanifest: {out}/manifest.json")
    return 0
