"""Preflight: start each model of a run config once and send it the kinds of requests the run will send.

    nphe4v preflight CONFIG [--tiny] [--json FILE]

For every model of the config: resolve its registry entry (cluster/models.yaml: backend, architecture),
start one replica, send one request per *probe* the config's benchmarks will send, and check the answer
envelope (status ok, text, token usage) and that the prompt plus the run's `max_tokens` fits the entry's
`max_model_len`. Probes: `text` (full_text_only prompts, text-only models), `1` (one figure), `2` (GraphVerse
paired tasks), `recognition` (a figure with the full description, NPHardEval4V's recognition experiment).

* vllm models: the real weights in a Ray actor (`cluster.pipeline.ModelActor`, its placement group from
  `cluster.replicas`), or with `tiny=True` the tiny random-weight build of the entry's architecture
  (`cluster.tiny_models`) in this process, one engine at a time; entries whose tiny options are identical
  (e.g. four InternVL checkpoints with the same limits) share one engine start. An architecture this vLLM
  cannot serve fails with the registry's reason (`no_tiny_build`).
* transformers models (architectures this vLLM lacks, `cluster.backends.transformers_engine`): the same, with
  the transformers replica instead of a vLLM engine (`--tiny`: the tiny build of the entry's architecture).
* litellm models: one cheap request (a few tokens) when the key is set; `skipped: no key` otherwise.
* baselines: `skipped` (nothing to start).

`preflight()` returns `PreflightRow`s (model | backend | architecture | images tested | status | reason);
`status` is ok, fail or skipped. A run with `preflight: true` calls `failed_models()` first and leaves out
the models that failed (one line each) while the others run.
"""

from __future__ import annotations

import asyncio
import gc
import hashlib
import io
import json
import os
import tempfile
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel

from cluster.config import ModelSpec, RunConfig

Status = Literal["ok", "fail", "skipped"]
PROBE_MAX_TOKENS = 8  # new tokens a probe asks for: the envelope, not the answer, is what is checked
API_PROBE_MAX_TOKENS = 5
LOCAL_BACKENDS = ("vllm", "transformers")  # backends whose replicas load weights (the others call APIs or nothing)
COLUMNS = ("model", "backend", "architecture", "images_tested", "status", "reason")


class PreflightRow(BaseModel):
    model: str
    backend: str
    architecture: str
    images_tested: str
    status: Status
    reason: str = ""
    seconds: float = 0.0


# ---------------------------------------------------------------------------------------------- probes
def probes_for(cfg: RunConfig, spec: ModelSpec) -> list[str]:
    """The request shapes `cfg`'s benchmarks send to `spec`: text, 1, 2 (images) and recognition."""
    if spec.text_only:
        return ["text"]
    out: list[str] = []
    for d in cfg.datasets:  # e.g. GraphVerse's single-graph and paired tasks: 1 and 2 figures
        rec = d.bench().recognition_settings(cfg.options_for(d.bench()))
        out += d.bench().probes(cfg.prompt_modes, rec is not None and rec.enabled)
    # no filtering by the model's image limit: a run sending 2 figures to a 1-image model is a finding
    order = ["text", "1", "2", "recognition"]
    return [p for p in order if p in out]


def _png(seed: int, size: tuple[int, int] = (1024, 768)) -> bytes:
    """A graph-like figure (nodes, edges, labels) of a benchmark picture's size; the same bytes every time."""
    import random

    from PIL import Image, ImageDraw

    rng = random.Random(seed)
    im = Image.new("RGB", size, "white")
    draw = ImageDraw.Draw(im)
    nodes = [(rng.randint(60, size[0] - 60), rng.randint(60, size[1] - 60)) for _ in range(8)]
    for i, a in enumerate(nodes):
        for b in nodes[i + 1:]:
            if rng.random() < 0.35:
                draw.line([a, b], fill="black", width=3)
    for i, (x, y) in enumerate(nodes):
        draw.ellipse([x - 28, y - 28, x + 28, y + 28], fill="lightblue", outline="black", width=3)
        draw.text((x - 4, y - 6), str(i), fill="black")
    buf = io.BytesIO()
    im.save(buf, format="PNG", optimize=False)
    return buf.getvalue()


PROBE_TEXT = (
    "The figure shows an undirected weighted graph. Find the shortest path from node 0 to node 7 and its total "
    "weight. Think step by step, then give the final answer inside <final_answer></final_answer> as "
    "{'Path': '0->...->7', 'TotalDistance': 'N'}."
)
# the recognition question: a figure beside the full text description of an instance (a long prompt)
RECOGNITION_TEXT = (
    "You are given a figure and the following text description of a problem.\n<description>\n"
    + "\n".join(f"The edge between node {i % 8} and node {(i * 3 + 1) % 8} has weight {(i * 7) % 19 + 1}."
                for i in range(40))
    + "\n</description>\nDoes the figure show exactly the same instance as the description? Reply YES or NO first."
)


def probe_files() -> dict[str, bytes]:
    return {f"preflight-{i}.png": _png(i) for i in (1, 2)}


def probe_requests(model: str, probes: Iterable[str], image_root: str) -> list[Any]:
    """One ModelRequest per probe, images referring to `probe_files()` written in `image_root`."""
    from PIL import Image

    from evalcore.schema import ImageRef, ModelRequest, Prompt, SampleKey, SamplingParams

    refs = []
    for name, data in probe_files().items():
        with Image.open(io.BytesIO(data)) as im:
            w, h = im.size
        refs.append(ImageRef(path=name, sha256=hashlib.sha256(data).hexdigest(), width=w, height=h))
    out = []
    for p in probes:
        images = () if p == "text" else tuple(refs[: 2 if p == "2" else 1])
        text = RECOGNITION_TEXT if p == "recognition" else PROBE_TEXT
        out.append(ModelRequest(
            key=SampleKey(model=model, benchmark="preflight", instance_id=p, variant="", prompt_mode=p, repeat=0),
            task="preflight", level=0,
            prompt=Prompt(text=text, images=images, template_version="preflight-v1"),
            sampling=SamplingParams(temperature=0.0, max_tokens=PROBE_MAX_TOKENS, seed=0),
            image_root=image_root,
        ))
    return out


def write_probe_files(folder: str | Path) -> str:
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    for name, data in probe_files().items():
        (folder / name).write_bytes(data)
    return str(folder)


def check_responses(probes: list[str], responses: list[Any], max_model_len: int | None,
                    run_max_tokens: int) -> str | None:
    """None when every probe came back well-formed and fits; else the first problem, one line."""
    tokens: dict[str, int] = {}
    for p, r in zip(probes, responses, strict=True):
        label = "text-only" if p == "text" else ("recognition" if p == "recognition" else f"{p}-image")
        if r.status != "ok" or r.text is None:
            return f"{label} request: {r.status}: {r.error or 'no text'}"
        if r.usage.prompt_tokens <= 0 or r.usage.completion_tokens <= 0:
            return f"{label} request: no token usage in the answer"
        tokens[p] = r.usage.prompt_tokens
        if max_model_len and r.usage.prompt_tokens + run_max_tokens > max_model_len:
            return (f"{label} request: prompt {r.usage.prompt_tokens} + max_tokens {run_max_tokens} tokens "
                    f"> max_model_len {max_model_len}")
    # a figure the chat template or processor dropped would leave the prompt as long as the text alone
    if "1" in tokens and "text" in tokens and tokens["1"] <= tokens["text"]:
        return f"1-image prompt ({tokens['1']} tokens) not longer than text-only ({tokens['text']}): image dropped"
    if "2" in tokens and "1" in tokens and tokens["2"] <= tokens["1"]:
        return f"2-image prompt ({tokens['2']} tokens) not longer than 1-image ({tokens['1']}): image dropped"
    return None


def run_max_tokens(cfg: RunConfig, spec: ModelSpec) -> int:
    return int((spec.options.get("request_args") or {}).get("max_tokens") or cfg.sampling.max_tokens)


# ---------------------------------------------------------------------------------------------- entries
def registry_entries() -> dict[str, Any]:
    from cluster.registry import load_registry

    return load_registry().by_name


def architecture_of(spec: ModelSpec, entries: dict[str, Any]) -> str:
    e = entries.get(spec.name)
    if spec.backend not in LOCAL_BACKENDS:
        return "-"
    if e is not None and getattr(e, "architecture", None):
        return e.architecture
    if spec.options.get("build_tiny"):
        return "Idefics3ForConditionalGeneration"
    cfg = Path(str(spec.options.get("model", ""))) / "config.json"
    if cfg.is_file():
        try:
            return (json.loads(cfg.read_text()).get("architectures") or ["unknown"])[0]
        except (OSError, ValueError):
            pass
    return "unknown"


def tiny_options(spec: ModelSpec, architecture: str, root: Path) -> dict[str, Any]:
    """The entry's vllm options with the model replaced by the tiny build of its architecture (one CPU
    replica: no tensor parallelism, no revision); the build's own engine arguments added."""
    from cluster.tiny_models import build_tiny, tiny_info

    path = build_tiny(architecture, root / architecture)
    opts = {k: v for k, v in spec.options.items() if k not in ("revision", "tensor_parallel_size", "build_tiny")}
    opts["model"] = str(path)
    if spec.backend == "transformers":  # no engine arguments: the folder is all it loads
        return opts
    opts["engine_kwargs"] = {**(opts.get("engine_kwargs") or {}), **tiny_info(path).get("engine", {})}
    return opts


# ---------------------------------------------------------------------------------------------- engines
def _cpu_engine_setup() -> None:
    """In-process engines on the CPU build: torchvision's Python half for the vision families, and vLLM's
    model-class inspection in this process (it spawns a whole Python per architecture otherwise, to keep
    CUDA out of the parent: there is no CUDA here)."""
    from cluster.backends.vllm_cpu import set_cpu_env_defaults
    from cluster.cpu_torchvision import enable

    if set_cpu_env_defaults():
        enable()
        import vllm.model_executor.models.registry as vllm_registry

        vllm_registry._run_in_subprocess = lambda fn: fn()
        _engine_cores_from_a_forkserver()


def _engine_cores_from_a_forkserver() -> None:
    """Start each engine core from one forkserver that has imported vLLM's engine once.

    The CPU build starts every engine core by spawn (a fresh Python that imports torch, transformers and
    vLLM: ~9 CPU s per engine on 2 cores) because forking this process, whose OpenMP pool the processor has
    already used, is unsafe. A forkserver is a clean process that never ran torch ops: forking it is safe, and
    a preflight boots one engine per model. It starts at the first engine's launch, after vLLM has set the
    platform's environment (LD_PRELOAD, thread counts), which every later child inherits unchanged."""
    import multiprocessing

    import vllm.v1.engine.utils as engine_utils

    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload(["vllm.v1.engine.core"])
    engine_utils.get_mp_context = lambda: ctx


def probe_in_process(name: str, options: dict[str, Any], probes: list[str], image_root: str,
                     timeout_s: float, backend_name: str = "vllm") -> tuple[list[Any] | None, str | None]:
    """Start the backend here (`VLLMBackend`, or `TransformersBackend` for backend_name transformers), send
    the probes, stop it. (responses, None) or (None, why it did not start)."""
    backend: Any
    if backend_name == "transformers":
        from cluster.backends.transformers_engine import TransformersBackend

        backend = TransformersBackend(options, name)
    else:
        from cluster.backends.vllm_engine import VLLMBackend

        backend = VLLMBackend(options, name)
    try:
        if not backend.ready.wait(timeout_s):
            return None, f"engine not ready in {timeout_s:g} s"
        if backend._start_error:
            return None, backend._start_error
        return asyncio.run(backend.generate(probe_requests(name, probes, image_root))), None
    finally:
        backend.close()
        del backend
        gc.collect()


def probe_on_ray(spec: ModelSpec, options: dict[str, Any], probes: list[str],
                 timeout_s: float) -> tuple[list[Any] | None, str | None]:
    """One replica as a run starts it (ModelActor in the replica's placement group); the probe images
    travel as bytes and are written on the actor's node."""
    import ray

    from cluster.replicas import actor_options, release

    opts = actor_options(spec, wait_s=timeout_s)
    actor = ray.remote(_ProbeActor).options(**opts).remote(spec.backend, spec.name, spec.baseline, options)
    try:
        try:
            ray.get(actor.ready.remote(), timeout=timeout_s)
        except Exception as e:  # a RayTaskError's cause is the actor's own one-line error
            return None, _first_line(getattr(e, "cause", None) or e)
        return ray.get(actor.probe.remote(probe_files(), probes), timeout=timeout_s), None
    finally:
        ray.kill(actor)
        release(opts)


class _ProbeActor:
    """A replica as `cluster.pipeline.ModelActor` hosts one (the backend built by `make_backend`, ready when
    its engine loaded), plus a probe method that writes the probe figures on the actor's own node."""

    def __init__(self, backend: str, name: str, baseline: str | None, options: dict[str, Any]) -> None:
        from cluster.backends.factory import make_backend

        self.name, self.error = name, None
        try:
            self.backend = make_backend(backend, name, baseline, options)
        except Exception as e:
            self.error = f"backend failed to start: {_first_line(e)}"

    def ready(self) -> bool:
        if self.error:
            raise RuntimeError(self.error)
        loaded = getattr(self.backend, "ready", None)
        if loaded is not None and hasattr(loaded, "wait"):
            loaded.wait()
        if getattr(self.backend, "_start_error", None):
            raise RuntimeError(self.backend._start_error)
        return True

    async def probe(self, files: dict[str, bytes], probes: list[str]) -> list[Any]:
        folder = tempfile.mkdtemp(prefix="nphe4v-preflight-")
        for fname, data in files.items():
            Path(folder, fname).write_bytes(data)
        return await self.backend.generate(probe_requests(self.name, probes, folder))


def probe_api(spec: ModelSpec, image_root: str) -> tuple[Status, str]:
    from cluster.backends.litellm_api import LiteLLMBackend, client_options

    env = client_options(spec.name, spec.options).api_key_env
    if env and not (os.environ.get(env) or os.environ.get(f"{env}_FILE")):
        return "skipped", f"no key ({env} not set)"
    req = probe_requests(spec.name, ["text"], image_root)[0]
    req = req.model_copy(update={"sampling": req.sampling.model_copy(update={"max_tokens": API_PROBE_MAX_TOKENS}),
                                 "prompt": req.prompt.model_copy(update={"text": "Reply with the word OK."})})
    try:
        (r,) = asyncio.run(LiteLLMBackend(spec.name, spec.options).generate([req]))
    except Exception as e:
        return "fail", _first_line(e)
    if r.status != "ok":
        return "fail", f"{r.status}: {r.error or 'no text'}"
    return "ok", ""


# ---------------------------------------------------------------------------------------------- driver
def preflight(cfg: RunConfig, *, tiny: bool = False, tiny_root: str | Path = "data/models/tiny",
              timeout_s: float = 900.0, use_ray: bool | None = None,
              progress: Callable[[PreflightRow], None] | None = None) -> list[PreflightRow]:
    """Check every model of `cfg` (see the module doc); one row per model, in the config's order."""
    entries = registry_entries()
    root = Path(tiny_root).resolve()
    image_root = write_probe_files(tempfile.mkdtemp(prefix="nphe4v-preflight-"))
    if use_ray is None:
        use_ray = not tiny
    if any(s.backend in LOCAL_BACKENDS for s in cfg.models):
        if tiny or not use_ray:
            if any(s.backend == "vllm" for s in cfg.models):
                _cpu_engine_setup()
        else:
            import ray

            from cluster.run import init_ray

            if not ray.is_initialized():
                init_ray(cfg)  # the config's cluster (ray.address), or a private local Ray
    shared: dict[str, tuple[list[str], list[Any] | None, str | None]] = {}  # tiny options -> outcome
    rows: list[PreflightRow] = []
    for spec in cfg.models:
        t0 = time.perf_counter()
        row = _check(cfg, spec, entries, tiny, root, image_root, timeout_s, use_ray, shared)
        row.seconds = round(time.perf_counter() - t0, 1)
        rows.append(row)
        if progress is not None:
            progress(row)
    return rows


def _check(cfg: RunConfig, spec: ModelSpec, entries: dict[str, Any], tiny: bool, root: Path, image_root: str,
           timeout_s: float, use_ray: bool, shared: dict) -> PreflightRow:
    arch = architecture_of(spec, entries)

    def row(status: Status, reason: str = "", probes: list[str] | None = None) -> PreflightRow:
        return PreflightRow(model=spec.name, backend=spec.backend, architecture=arch,
                            images_tested=",".join(probes or []) or "-", status=status, reason=reason)

    if spec.backend == "baseline":
        return row("skipped", "built-in baseline: nothing to start")
    if spec.backend == "litellm":
        status, reason = probe_api(spec, image_root)
        return row(status, reason, ["text"] if status != "skipped" else [])
    if spec.backend not in LOCAL_BACKENDS:
        return row("skipped", f"backend {spec.backend}: not checked by preflight")
    probes = probes_for(cfg, spec)
    entry = entries.get(spec.name)
    blocked = getattr(entry, "no_tiny_build", None) if entry is not None else None
    options = dict(spec.options)
    if tiny:
        from cluster.tiny_models import BUILDERS

        if blocked:
            return row("fail", blocked)
        if arch not in BUILDERS:
            return row("fail", f"no tiny build for architecture {arch}")
        try:
            options = tiny_options(spec, arch, root)
        except Exception as e:
            return row("fail", f"tiny build of {arch} failed: {_first_line(e)}")
    key = json.dumps([options, probes], sort_keys=True, default=str)
    if tiny and key in shared:
        _, responses, err = shared[key]
    elif use_ray and not tiny:
        responses, err = probe_on_ray(spec, options, probes, timeout_s)
    else:
        responses, err = probe_in_process(spec.name, options, probes, image_root, timeout_s, spec.backend)
    if tiny:
        shared[key] = (probes, responses, err)
    if err is not None or responses is None:
        return row("fail", err or "no responses", probes)
    problem = check_responses(probes, responses, options.get("max_model_len"), run_max_tokens(cfg, spec))
    return row("fail" if problem else "ok", problem or "", probes)


def failed_models(rows: Iterable[PreflightRow]) -> dict[str, str]:
    return {r.model: r.reason for r in rows if r.status == "fail"}


def table(rows: list[PreflightRow]) -> str:
    head = ["model", "backend", "architecture", "images tested", "status", "reason"]
    body = [[r.model, r.backend, r.architecture, r.images_tested, r.status, r.reason] for r in rows]
    widths = [min(max(len(x[i]) for x in [head, *body]), 48 if i == 2 else 200) for i in range(len(head))]
    lines = [" | ".join(h.ljust(w) for h, w in zip(head, widths, strict=True)).rstrip()]
    lines.append("-+-".join("-" * w for w in widths))
    lines += [" | ".join(c.ljust(w) for c, w in zip(b, widths, strict=True)).rstrip() for b in body]
    return "\n".join(lines)


def summary(rows: list[PreflightRow]) -> str:
    counts = {s: sum(r.status == s for r in rows) for s in ("ok", "fail", "skipped")}
    parts = [f"{len(rows)} models: {counts['ok']} ok, {counts['fail']} fail, {counts['skipped']} skipped"]
    for backend in LOCAL_BACKENDS:  # the share that needs a replica to start, per backend
        mine = [r for r in rows if r.backend == backend]
        if backend == "vllm" or mine:
            ok = sum(r.status == "ok" for r in mine)
            share = f"{100 * ok / len(mine):.0f} %" if mine else "-"
            parts.append(f"{backend} entries ok: {ok}/{len(mine)} ({share})")
    return "; ".join(parts)


def rows_json(rows: list[PreflightRow]) -> list[dict[str, Any]]:
    return [r.model_dump(include=set(COLUMNS)) for r in rows]


def _first_line(e: BaseException) -> str:
    s = str(e).strip()
    return (s.splitlines()[0] if s else type(e).__name__)[:300]
