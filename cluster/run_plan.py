"""`eval_all --plan`: what a config would do, as JSON, without doing any of it.

Nothing here starts Ray, generates a dataset, creates a folder or writes a file: datasets that exist are
read (read-only), the others are counted from their generation spec.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from cluster.config import ConfigError, DatasetSpec, ModelSpec, RunConfig
from cluster.run import dataset_path, dataset_spec_used, redact
from evalcore import benchmarks
from evalcore.dataset import Dataset, DatasetError, load_dataset


def resolve_plan(cfg: RunConfig, data_root: Path) -> dict[str, Any]:
    datasets = [_dataset_plan(s, data_root) for s in cfg.datasets]
    models = [_model_plan(cfg, m, datasets) for m in cfg.models]
    judge = _judge_plan(cfg)
    return {
        "name": cfg.name,
        "out": str(Path(cfg.out).resolve()),
        "out_exists": Path(cfg.out).exists(),
        "ray": {"address": cfg.ray.address or _env_address() or "local (a new private cluster)",
                "num_cpus": cfg.ray.num_cpus},
        "datasets": [{k: v for k, v in d.items() if not k.startswith("_")} for d in datasets],
        "models": models,
        "judge": judge,
        "total_samples": sum(m["samples"] for m in models),
        "prompts": _prompts_plan(cfg),
        **({"pot": _pot_plan(cfg)} if cfg.wants_pot() else {}),
        "missing_api_keys": [k for m in models for k in m["missing_api_keys"]] + judge["missing_api_keys"],
    }


def _prompts_plan(cfg: RunConfig) -> dict[str, Any]:
    """The prompt set and whether its files are at hand (looked up, never downloaded: --plan writes nothing)."""
    from cluster.plan import check_prompt_assets, prompt_set_label, wants_paper_prompts

    d: dict[str, Any] = {"set": prompt_set_label(cfg)}
    if wants_paper_prompts(cfg):
        missing = check_prompt_assets(cfg, download=False)
        d["assets"] = "ready" if missing is None else f"not yet cached (the run downloads them): {missing}"
    return d


def _env_address() -> str | None:
    import os

    return os.environ.get("RAY_ADDRESS")


def _dataset_plan(spec: DatasetSpec, data_root: Path) -> dict[str, Any]:
    path = dataset_path(spec, data_root) if spec.generate else Path(spec.path or "")
    d: dict[str, Any] = {"benchmark": spec.benchmark, "path": str(path.resolve()),
                         "exists": (path / "manifest.json").is_file()}
    if spec.generate:
        d["generate"] = spec.bench().canonical_generate(spec.generate)
    if d["exists"]:
        ds = load_dataset(path)
        d.update(instances=len(ds.instances), dataset_sha256=ds.manifest.dataset_sha256,
                 spec=dataset_spec_used(ds), _dataset=ds)
        if spec.generate:
            from cluster.run import check_dataset_matches

            try:
                check_dataset_matches(ds, spec)
            except DatasetError as e:
                d["mismatch"] = str(e)
        return d
    if spec.generate is None:
        raise DatasetError(f"{path}/manifest.json: dataset not found and no `generate` section to make it")
    g = spec.generate
    try:
        d["instances"] = spec.bench().planned_instances(g)
    except ValueError as e:  # a split the benchmark does not have
        raise ConfigError(str(e)) from None
    d["_per_level"] = getattr(g, "per_level", 1)  # recognition controls need two per task and level
    return d


def _count_samples(cfg: RunConfig, model: ModelSpec, d: dict[str, Any]) -> int:
    ds: Dataset | None = d.get("_dataset")
    if ds is not None:
        from cluster.plan import count_work

        return count_work(cfg, model, ds).planned
    n = d["instances"]
    bench = benchmarks.get(d["benchmark"])
    total = n * len(bench.prompt_modes(cfg.prompt_modes, model.modes_for(bench), model.text_only)) * cfg.repeats
    rec = bench.recognition_settings(cfg.options_for(bench)) if bench.recognition else None
    if rec is not None and rec.enabled and not model.text_only:
        # a mismatched control needs another instance of the same task and level
        pairs = 1 + (1 if rec.controls and d.get("_per_level", 1) >= 2 else 0)
        total += n * pairs * rec.asks
    return total


def _missing_keys(name: str, backend: str, options: dict[str, Any]) -> list[str]:
    """What would stop the model before any work: a missing API key or a bad backend option (one line each)."""
    from cluster.backends.factory import check_options

    try:
        check_options(backend, name, options)
    except ValueError as e:
        return [str(e)]
    return []


def _model_plan(cfg: RunConfig, m: ModelSpec, datasets: list[dict[str, Any]]) -> dict[str, Any]:
    per_dataset = {f"{d['benchmark']}:{d['path']}": _count_samples(cfg, m, d) for d in datasets}
    return {
        "name": m.name, "backend": m.backend, "replicas": m.replicas, "num_gpus": m.num_gpus,
        "num_cpus": m.num_cpus, "batch_size": m.batch_size, "text_only": m.text_only,
        **{k: v for o in m.benchmark_options.values() for k, v in o.model_dump(mode="json").items()},
        "options": redact(m.options), "samples_per_dataset": per_dataset,
        "samples": sum(per_dataset.values()), "missing_api_keys": _missing_keys(m.name, m.backend, m.options),
    }


def _pot_plan(cfg: RunConfig) -> dict[str, Any]:
    """The PoT sandbox a run would use, and the one line it would refuse to start with (None when it can)."""
    from cluster.run import pot_problem

    return {"isolation": cfg.pot_isolation, "timeout_s": cfg.pot_timeout_s, "workers": cfg.pot_workers,
            "problem": pot_problem(cfg)}


def _judge_plan(cfg: RunConfig) -> dict[str, Any]:
    j = cfg.judge
    out: dict[str, Any] = {"enabled": j.enabled, "model": j.model, "repeat": j.repeat, "executor": j.executor,
                           "options": redact(j.options), "missing_api_keys": []}
    if j.enabled and j.model != "rule-based":
        from evalcore import secrets

        try:
            from cluster.judge_work import judge_replica, resolve_spec

            spec = resolve_spec(j.model, j.options, cfg.models)
            if judge_replica(j.model, cfg.models) is None:  # a judge on a vLLM replica of the run needs no key
                secrets.require_key(f"judge {j.model}", secrets.provider_of(spec.model), spec.api_key_env)
        except (ValueError, AttributeError) as e:
            out["missing_api_keys"].append(str(e).splitlines()[0])
    return out
