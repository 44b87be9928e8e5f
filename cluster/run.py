"""One run end to end: resolve datasets, start or join Ray, run every model, write the manifest."""

from __future__ import annotations

import json
import os
import sys
import time
from dataclasses import asdict
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from cluster.config import ConfigError, DatasetSpec, RunConfig
from cluster.secrets import redact
from cluster.sink import SampleSink, read_samples
from nphe4v.core.hashing import sha256_json
from nphe4v.dataset import Dataset, DatasetError, generate_version, load_dataset
from nphe4v.progress import Bar
from nphe4v.provenance import git_sha, package_versions

RUN_MANIFEST = "manifest.json"


class RunFolderError(ValueError):
    """The output folder holds a different run; nothing is overwritten."""


def resolve_dataset(spec: DatasetSpec, data_root: Path) -> Dataset:
    if spec.path and Path(spec.path, "manifest.json").exists():
        return load_dataset(spec.path)
    if spec.generate is None:
        raise DatasetError(f"{spec.path}/manifest.json: dataset not found and no `generate` section to make it")
    g = spec.generate
    if spec.benchmark == "graphverse":
        return _graphverse_dataset(spec, data_root)
    path = Path(spec.path) if spec.path else data_root / spec.benchmark / f"{g.version}-seed{g.seed}-n{g.per_level}"
    if (path / "manifest.json").exists():
        ds = load_dataset(path)
        if (ds.manifest.version, ds.manifest.seed, ds.manifest.per_level) != (g.version, g.seed, g.per_level):
            raise DatasetError(f"{path}/manifest.json: holds version {ds.manifest.version!r} seed {ds.manifest.seed}, "
                               f"config asks for {g.version!r} seed {g.seed}")
        return ds
    total = len(g.tasks or range(9)) * len(g.levels or range(10)) * g.per_level
    with Bar(f"generate {g.version}", total) as bar:
        generate_version(
            path, version=g.version, seed=g.seed, per_level=g.per_level, tasks=g.tasks,
            levels=g.levels or tuple(range(1, 11)), progress=lambda done, _t: bar.advance(done - bar.done),
        )
    return load_dataset(path)


def _graphverse_dataset(spec: DatasetSpec, data_root: Path) -> Dataset:
    from gie.dataset import generate_split

    g = spec.generate
    assert g is not None
    split = g.split or g.version.removeprefix("graphverse-")
    if split not in ("full", "testmini", "train"):
        raise ConfigError(f"dataset graphverse: field generate.split: {split!r} is not full, testmini or train")
    name = f"graphverse-{split}-seed{g.seed}" + (f"-limit{g.limit}" if g.limit else "")
    path = Path(spec.path) if spec.path else data_root / "graphverse" / name
    if (path / "manifest.json").exists():
        ds = load_dataset(path)
        want = (f"graphverse-{split}", g.seed, g.limit)
        have = (ds.manifest.version, ds.manifest.seed, ds.manifest.extra.get("limit"))
        if have != want:
            raise DatasetError(f"{path}/manifest.json: holds {have}, config asks for {want}")
        return ds
    with Bar(f"generate graphverse-{split}", 1) as bar:
        def progress(done: int, total: int) -> None:
            bar.total = total
            bar.advance(done - bar.done)

        generate_split(path, split, g.seed, limit=g.limit, progress=progress)
    return load_dataset(path)


def preflight_models(cfg: RunConfig) -> None:
    """Fail before any work on what would fail later: a missing API key, a bad backend option."""
    from cluster.backends.litellm_api import preflight

    def check(name: str, backend: str, options: dict[str, Any]) -> None:
        if backend == "litellm":
            try:
                preflight(name, options)
            except ValueError as e:
                raise ConfigError(f"model {name}: {e}") from None
        elif backend == "caption-chain":
            for part in ("captioner", "solver"):
                sub = options.get(part, {})
                check(sub.get("name", f"{name}:{part}"), sub.get("backend", "baseline"), sub.get("options", {}))

    for m in cfg.models:
        check(m.name, m.backend, m.options)
    from cluster.replicas import check_fits, gpus_per_replica

    if any(gpus_per_replica(m) >= 1 for m in cfg.models):
        init_ray(cfg)  # the cluster's nodes decide whether a replica fits
        for m in cfg.models:
            try:
                check_fits(m)
            except ValueError as e:
                raise ConfigError(str(e)) from None


def run_fingerprint(cfg: RunConfig, datasets: list[Dataset]) -> str:
    return sha256_json([cfg.fingerprint_fields(), [d.manifest.dataset_sha256 for d in datasets]])


def prepare_run_dir(out: Path, run_id: str) -> dict[str, Any] | None:
    """Return the existing manifest when resuming the same run; refuse a folder holding another one."""
    mpath = out / RUN_MANIFEST
    if not mpath.exists():
        if out.exists() and any(out.iterdir()):
            raise RunFolderError(f"{out}: folder is not empty and holds no run manifest; choose another --out")
        return None
    try:
        existing = json.loads(mpath.read_text())
    except json.JSONDecodeError as e:
        raise RunFolderError(f"{mpath}: unreadable run manifest ({e.msg} at line {e.lineno})") from None
    if existing.get("run_id") != run_id:
        raise RunFolderError(
            f"{mpath}: field run_id: folder holds run {existing.get('run_id')!r}, this config is run {run_id!r}; "
            "choose another --out"
        )
    return existing


def init_ray(cfg: RunConfig) -> None:
    import ray

    if ray.is_initialized():
        return
    os.environ.setdefault("RAY_DEDUP_LOGS", "0")
    if cfg.ray.address or os.environ.get("RAY_ADDRESS"):
        ray.init(address=cfg.ray.address or os.environ["RAY_ADDRESS"], log_to_driver=True)
    else:
        ray.init(num_cpus=cfg.ray.num_cpus or os.cpu_count(), include_dashboard=False, log_to_driver=True)


def execute(cfg: RunConfig, *, data_root: Path = Path("data")) -> Path:
    from cluster.pipeline import run_model

    out = Path(cfg.out).resolve()
    preflight_models(cfg)
    datasets = [resolve_dataset(s, data_root) for s in cfg.datasets]
    fingerprint = run_fingerprint(cfg, datasets)
    run_id = f"{cfg.name}-{fingerprint[:12]}"
    existing = prepare_run_dir(out, run_id)
    out.mkdir(parents=True, exist_ok=True)
    manifest: dict[str, Any] = {
        "run_id": run_id,
        "status": "running",
        "created_at": (existing or {}).get("created_at") or datetime.now(UTC).isoformat(timespec="seconds"),
        "git_sha": git_sha(),
        "package_versions": package_versions(),
        "config": redact(cfg.model_dump(mode="json")),
        "datasets": [
            {"benchmark": d.manifest.benchmark, "version": d.manifest.version, "seed": d.manifest.seed,
             "path": str(d.root.resolve()), "dataset_sha256": d.manifest.dataset_sha256}
            for d in datasets
        ],
        "attempts": (existing or {}).get("attempts", 0) + 1,
    }
    _write_manifest(out, manifest)
    sink = SampleSink(out)
    if sink.resumed:
        print(f"resuming {run_id}: {sink.resumed} samples already written", file=sys.stderr)
    stats = []
    t0 = time.monotonic()
    for ds in datasets:
        for model in cfg.models:
            s = run_model(cfg, model, ds, ds.manifest.version, run_id, sink, start_ray=lambda: init_ray(cfg))
            stats.append({"dataset": ds.manifest.version, **asdict(s)})
    sink.flush()
    from cluster.judge_stage import run_judge_stage

    judged = run_judge_stage(out, datasets, cfg.judge, start_ray=lambda: init_ray(cfg))
    manifest.update(
        judge=asdict(judged),
        status="complete",
        finished_at=datetime.now(UTC).isoformat(timespec="seconds"),
        seconds=round(time.monotonic() - t0, 3),
        models=stats,
        totals=_totals(out),
    )
    _write_manifest(out, manifest)
    return out


def _totals(out: Path) -> dict[str, Any]:
    import polars as pl

    df = read_samples(out)
    if df.is_empty():
        return {}
    agg = df.group_by("model").agg(
        samples=pl.len(),
        prompt_tokens=pl.col("prompt_tokens").sum(),
        completion_tokens=pl.col("completion_tokens").sum(),
        cost_usd=pl.col("cost_usd").sum(),
        infra_errors=(pl.col("status") == "infra_error").sum(),
    ).sort("model")
    return {r["model"]: {k: v for k, v in r.items() if k != "model"} for r in agg.iter_rows(named=True)}


def _write_manifest(out: Path, manifest: dict[str, Any]) -> None:
    tmp = out / f".{RUN_MANIFEST}.tmp"
    tmp.write_text(json.dumps(manifest, indent=2, sort_keys=True, default=str) + "\n")
    os.replace(tmp, out / RUN_MANIFEST)
