"""Small real run folders for the explorer tests: graded by `cluster.grading` (no Ray), judged by the rule
scorer, with a hostile model name and hostile responses."""

from __future__ import annotations

import json
from pathlib import Path
from urllib.parse import urlencode

import polars as pl

XSS = '<script>alert("pwned")</script><img src=x onerror=alert(1)>'
XSS_MODEL = '<script>alert("model")</script>'
MODELS = ("alpha", "beta")
# files an attacker might leave in a dataset folder: each sets a marker (and would steal the page token) if run
HOSTILE_SVG = (b'<svg xmlns="http://www.w3.org/2000/svg" width="40" height="40" onload="document.title=\'PWNED\'">'
               b"<script>localStorage.setItem('svg_ran', document.body ? document.body.dataset.token : '1');"
               b"document.title = 'PWNED';</script><rect width='40' height='40'/></svg>")
HOSTILE_HTML = b"<!doctype html><html><body><script>localStorage.setItem('html_ran', '1')</script></body></html>"


def _off_by_one(answer: dict) -> dict:
    """The gold answer with every number one higher: well formed, and wrong."""
    return {k: (v + 1 if isinstance(v, int | float) and not isinstance(v, bool) else v) for k, v in answer.items()}


def _responses(ds, path: Path, modes: list[str]) -> None:
    """alpha answers the gold; beta: the gold on half of GraphVerse, else a wrong number (NPHardEval4V
    level 1, the other GraphVerse half) or unparsable hostile prose (level 2); its reasoning is hostile."""
    from evalcore.prompting import format_response

    lines = []
    for i, inst in enumerate(ds.instances):
        for mode in modes:
            for model in MODELS:
                gv = inst.benchmark == "graphverse"
                if model == "alpha" or (gv and i % 2 == 0):
                    text = format_response(inst.gold.answer, reasoning=f"{model}: {XSS} I checked every node.")
                elif gv or inst.level == 1:
                    text = format_response(_off_by_one(inst.gold.answer), reasoning=f"{XSS} close enough")
                else:
                    text = f"I think {XSS} is the answer"
                lines.append({"model": model, "instance_id": inst.instance_id, "prompt_mode": mode,
                              "response": text})
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))


def _hostile_copy(run: Path, bench: str) -> None:
    """beta's rows again under a model name no config would accept (the sink's folder name is its slug)."""
    from evalcore.shards import slug

    files = sorted((run / "samples" / bench / "beta").glob("*.parquet"))
    df = pl.read_parquet(files).with_columns(model=pl.lit(XSS_MODEL))
    out = run / "samples" / bench / slug(XSS_MODEL)
    out.mkdir(parents=True)
    df.write_parquet(out / "part-00000000000000000001-hostile.parquet")


def build_explorer_runs(root: Path) -> tuple[Path, Path]:
    """(NPHardEval4V run, GraphVerse run) under root."""
    from cluster.config import JudgeConfig
    from cluster.grading import grade_file
    from cluster.judge_stage import run_judge_stage
    from evalcore.dataset import load_dataset
    from gie.dataset import generate_split
    from nphe4v.generate import generate_version

    np_ds, gv_ds = root / "np", root / "gv"
    generate_version(np_ds, version="xv", seed=5, per_level=1, tasks=["SPP", "BSP"], levels=[1, 2], workers=1)
    generate_split(gv_ds, "testmini", 0, limit=6, workers=0)
    runs = []
    for ds_dir, modes, bench in ((np_ds, ["figure+limited_text", "full_text_only"], "nphardeval4v"),
                                 (gv_ds, ["vision"], "graphverse")):
        resp = root / f"{bench}.jsonl"
        _responses(load_dataset(ds_dir, check_images=False), resp, modes)
        run = root / f"run-{bench}"
        grade_file(ds_dir, resp, run)
        _hostile_copy(run, bench)
        runs.append(run)
    run_judge_stage(runs[1], None, JudgeConfig(model="rule-based", executor="local", progress=False))
    return runs[0], runs[1]


def image_url(run_label: str, path: str, version: str = "graphverse-testmini") -> str:
    """The explorer's URL of a file `path` in a GraphVerse run's dataset folder."""
    return "/image?" + urlencode({"run": run_label, "benchmark": "graphverse", "version": version, "path": path})
