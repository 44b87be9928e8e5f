"""The model registry (cluster/models.yaml), its resolution to ModelSpecs, the paper configs and the cluster YAMLs."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from cluster.config import ConfigError, ModelSpec, RunConfig
from cluster.registry import RegistryError, expand_models, load_registry

ROOT = Path(__file__).resolve().parents[1]
CLUSTER = ROOT / "cluster"
PAPER_CONFIGS = ["configs/paper-nphardeval4v.yaml", "configs/paper-graphverse.yaml"]


@pytest.fixture(scope="module")
def reg():
    return load_registry()


def test_registry_loads_and_every_group_resolves(reg):
    assert reg.groups
    for group in reg.groups:
        specs = reg.resolve([group])
        assert specs and all(isinstance(s, ModelSpec) for s in specs)
        assert len({s.name for s in specs}) == len(specs)
    # every model belongs to at least one group
    grouped = {n for g in reg.groups for n in reg.names(g)}
    assert grouped == set(reg.by_name)


def test_paper_counts(reg):
    nph = reg.entries("nphardeval4v-paper")
    assert len(nph) >= 15 and not any(e.text_only for e in nph)
    assert len(reg.entries("nphardeval4v-v1-paper")) == 9
    llms = reg.entries("nphardeval4v-llms")
    assert len(llms) == 11 and all(e.text_only for e in llms)
    gv = reg.entries("graphverse-paper")
    assert len(gv) >= 19 and not any(e.text_only for e in gv)
    assert sum(e.access == "open" for e in gv) == 11 and sum(e.access == "closed" for e in gv) == 8
    text = reg.entries("graphverse-text-only")
    assert len(text) == 3 and all(e.text_only for e in text)
    judges = reg.names("judges")
    assert len(judges) >= 1 and judges[0] == reg.default_judge == "gpt-5.1"
    assert "gemini-3-flash" in judges
    assert reg.names("baselines") == ["oracle", "greedy", "random", "always-yes"]


def test_backend_fields(reg):
    for e in reg.models:
        spec = reg.spec(e)
        if e.backend == "litellm":
            assert e.api_key_env and e.model and "/" in e.model, e.name
            assert spec.options["api_key_env"] == e.api_key_env and spec.num_gpus == 0
        elif e.backend == "vllm":
            assert e.repo and "/" in e.repo and e.gpus_per_replica >= 1, e.name
            assert spec.options["model"] == e.repo and spec.options["revision"] == e.revision
            assert spec.options["tensor_parallel_size"] == e.gpus_per_replica == spec.num_gpus
            assert spec.options["limit_mm_per_prompt"] == {"image": 0 if e.text_only else e.max_images}
        elif e.backend == "transformers":  # one replica holds its GPUs itself (no tensor parallelism)
            assert e.repo and "/" in e.repo and e.gpus_per_replica == spec.num_gpus >= 1, e.name
            assert spec.options["model"] == e.repo and spec.options["revision"] == e.revision
            assert spec.options["max_images"] == (0 if e.text_only else e.max_images)
        else:
            assert spec.backend == "baseline" and spec.baseline == e.name
        assert e.paper or e.backend == "baseline", e.name
    # the GraphVerse MLLMs take the paired-image tasks
    assert all(e.max_images >= 2 for e in reg.entries("graphverse-paper"))


def test_chat_template_override_reaches_options(reg):
    spec = reg.resolve(["phi-2"])[0]
    assert "Instruct:" in spec.options["chat_template"]
    assert spec.text_only and spec.options["request_args"] == {"max_tokens": 512}


def test_unknown_name_is_one_line_with_suggestions(reg):
    with pytest.raises(ValueError) as e:
        reg.resolve(["qwen2.5-vl-27b"])
    msg = str(e.value)
    assert "\n" not in msg
    assert msg.startswith("cluster/models.yaml: unknown model or group 'qwen2.5-vl-27b'")
    assert "qwen2.5-vl-72b" in msg


def test_resolve_dedupes_in_order(reg):
    names = [s.name for s in reg.resolve(["judges", "graphverse-paper", "gpt-5.1"])]
    assert names[:2] == ["gpt-5.1", "gemini-3-flash"] and names.count("gemini-3-flash") == 1
    assert len(names) == 1 + 19


@pytest.mark.parametrize("path", PAPER_CONFIGS)
def test_paper_configs_validate(path):
    raw = yaml.safe_load((ROOT / path).read_text())
    cfg = RunConfig.model_validate(expand_models(raw, source=path))
    assert cfg.models and len({m.name for m in cfg.models}) == len(cfg.models)
    if "nphardeval4v" in path:
        ds = cfg.datasets[0]
        assert ds.benchmark == "nphardeval4v" and ds.generate.per_level == 10
        assert set(cfg.prompt_modes) == {"figure+limited_text", "full_text_only", "figure+full_text"}
        assert cfg.recognition.enabled
        assert sum(not m.text_only and m.backend != "baseline" for m in cfg.models) >= 15
        assert sum(m.text_only for m in cfg.models) == 11
    else:
        assert cfg.datasets[0].benchmark == "graphverse"
        assert cfg.datasets[0].generate.version in ("graphverse-testmini", "graphverse-full")
        assert sum(m.backend != "baseline" and not m.text_only for m in cfg.models) >= 19
        assert sum(m.text_only for m in cfg.models) == 3


def test_expand_models_shapes(reg):
    raw = {"models": [
        "baselines",
        {"use": "graphverse-paper", "exclude": ["kimi-k2.5"], "replicas": 2, "options": {"seed_offset": 1}},
        {"name": "gpt-4o", "batch_size": 8},
        {"name": "custom", "backend": "litellm", "options": {"model": "hosted_vllm/x"}},
        "oracle",  # already present: kept once
    ]}
    out = expand_models(raw, registry=reg)
    names = [m["name"] for m in out["models"]]
    assert names[:4] == ["oracle", "greedy", "random", "always-yes"]
    assert "kimi-k2.5" not in names and names.count("oracle") == 1
    assert names[-2:] == ["gpt-4o", "custom"]
    glm = next(m for m in out["models"] if m["name"] == "glm-4.6v")
    assert glm["replicas"] == 2 and glm["options"]["seed_offset"] == 1 and glm["options"]["model"] == "zai-org/GLM-4.6V"
    assert next(m for m in out["models"] if m["name"] == "gpt-4o")["batch_size"] == 8
    assert out["models"][-1] == raw["models"][3]
    assert raw["models"][0] == "baselines"  # input not mutated
    RunConfig.model_validate({"datasets": [{"path": "x"}], **out})


def test_expand_models_leaves_plain_configs_alone():
    raw = yaml.safe_load((ROOT / "configs/demo.yaml").read_text())
    assert expand_models(raw, registry=Path("/nonexistent/models.yaml")) is raw


@pytest.mark.parametrize("item, needle", [
    ({"use": "nope"}, "unknown model or group 'nope'"),
    ({"use": "o1", "backend": "vllm"}, "`backend` cannot be set"),
    ({"use": "o1", "replicas": 0}, "replicas"),
])
def test_expand_models_errors_are_one_config_line(reg, item, needle):
    with pytest.raises(ConfigError) as e:
        expand_models({"models": [{"name": "oracle", "backend": "baseline"}, item]}, registry=reg,
                      source="configs/x.yaml")
    msg = str(e.value)
    assert isinstance(e.value, RegistryError) and "\n" not in msg
    assert msg.startswith("configs/x.yaml: field models.1: ") and needle in msg


def test_broken_registry_is_one_line(tmp_path):
    good = yaml.safe_load((CLUSTER / "models.yaml").read_text())
    bad = dict(good, models=[*good["models"], {"name": "x", "title": "x", "backend": "vllm", "access": "open"}])
    p = tmp_path / "models.yaml"
    p.write_text(yaml.safe_dump(bad))
    with pytest.raises(RegistryError) as e:
        load_registry(p)
    assert "\n" not in str(e.value) and "models[x]" in str(e.value) and "repo" in str(e.value)
    bad = dict(good, groups={**good["groups"], "g": {"members": ["missing-model"]}})
    p.write_text(yaml.safe_dump(bad))
    with pytest.raises(RegistryError, match="unknown member 'missing-model'"):
        load_registry(p)


def test_cluster_yaml_files_parse():
    for p in sorted(CLUSTER.glob("*.yaml")):
        assert isinstance(yaml.safe_load(p.read_text()), dict), p.name
    launcher = yaml.safe_load((CLUSTER / "ray-cluster.yaml").read_text())
    assert launcher["head_node_type"] in launcher["available_node_types"]
    assert any("pip install -e '.[vllm]'" in c for c in launcher["setup_commands"])
    assert all("RAY_AUTH_MODE=token" in " ".join(launcher[k]) for k in ("head_start_ray_commands",
                                                                       "worker_start_ray_commands"))
    env = yaml.safe_load((CLUSTER / "runtime_env.yaml").read_text())
    assert env["working_dir"] == "." and env["env_vars"]["RAY_DEDUP_LOGS"] == "0"
    assert not any(k.endswith(("_KEY", "_TOKEN", "_SECRET")) for k in env["env_vars"])  # never secrets


def test_rayjob_manifest():
    job = yaml.safe_load((CLUSTER / "kuberay-rayjob.yaml").read_text())
    assert job["apiVersion"] == "ray.io/v1" and job["kind"] == "RayJob"
    spec = job["spec"]
    entry = spec["entrypoint"].split()
    assert entry[:2] == ["python", "jobs/eval_all.py"]
    assert entry[entry.index("--config") + 1] == "configs/paper-nphardeval4v.yaml"
    assert entry[entry.index("--out") + 1].startswith("/mnt/results/")
    assert (ROOT / entry[entry.index("--config") + 1]).is_file()
    runtime_env = yaml.safe_load(spec["runtimeEnvYAML"])
    assert runtime_env["working_dir"] and "env_vars" in runtime_env
    cluster = spec["rayClusterSpec"]
    assert cluster["authOptions"]["mode"] == "token"
    head = cluster["headGroupSpec"]["template"]["spec"]
    mounts = {m["mountPath"] for c in head["containers"] for m in c["volumeMounts"]}
    assert "/mnt/results" in mounts
    gpus = [int(c["resources"]["limits"]["nvidia.com/gpu"])
            for g in cluster["workerGroupSpecs"] for c in g["template"]["spec"]["containers"]]
    assert gpus and max(gpus) >= 8  # the largest replica (8 GPUs) fits one worker pod
    assert max(e.gpus_per_replica for e in load_registry().models) <= max(gpus)
    # keys come from a Secret, never literal values
    text = (CLUSTER / "kuberay-rayjob.yaml").read_text()
    assert "secretRef" in text and "sk-" not in text
