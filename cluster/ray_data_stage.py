"""The vLLM model stage on Ray Data LLM (`ray.data.llm.build_processor` with a `vLLMEngineProcessorConfig`):
the measured alternative to the hand-written stage (`cluster.scheduler` + `cluster.actor_pool` + `ModelActor`
hosting `cluster.backends.vllm_engine.VLLMBackend`). A model runs on it with `options.model_stage: ray-data`.

The same stage contract: the model's planned requests in (resume included: the plan leaves out what the
run's sink already holds), one response per request out, scored by the same `score_batch` tasks and
written by the same sink. The same prompts too: the chat template applied by the model's tokenizer with
the images in vLLM's `multimodal_data` and their manifest hashes as multimodal uuids, what vLLM's renderer
builds for the hand-written stage (`bench/bench_model_stage.py` compares the prompt token counts).

What Ray Data LLM's own preparation stages cannot do against the installed vLLM (0.32), and what is done
instead: its multimodal stage imports `vllm.entrypoints.chat_utils`, a module vLLM 0.32 no longer has
(`ModuleNotFoundError`), so the chat-template, tokenize, multimodal and detokenize stages are off and a
`preprocess` map of ours renders each request (image hash check, decode, chat template). On a 2-CPU
machine every map stage asks for a fraction of a CPU, and the engine's placement group for `{"CPU": n}`
(the model's `num_cpus`): with Ray Data's defaults (1 CPU per map actor) the engine stage never gets
its CPU and the run waits forever.

Statuses: an image missing or not matching its hash -> `infra_error` (the row still travels, with a
one-token placeholder prompt, because a Ray Data row cannot leave the pipeline early); a row the engine
refuses -> `model_error` (`should_continue_on_error`); the whole dataset failing (the engine cannot start,
its actor dies past Ray Data's retries) -> `infra_error` for every request not yet written.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Iterator
from typing import Any

from cluster.backends.vllm_engine import _conversation, engine_kwargs, model_path, parse_options

RAY_DATA = "ray-data"
ACTORS = "actors"
CPU_ENV = ("VLLM_CPU_KVCACHE_SPACE", "VLLM_CPU_OMP_THREADS_BIND", "VLLM_CPU_NUM_OF_RESERVED_CPU")
MAP_CPUS = 0.1  # each preparation map task: a fraction, so that the engine stage gets its CPU on small nodes


def uses_ray_data(backend: str, options: dict[str, Any]) -> bool:
    return backend == "vllm" and options.get("model_stage", ACTORS) == RAY_DATA


@functools.lru_cache(maxsize=4)
def _tokenizer(model: str) -> Any:
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(model)


def engine_row(tok: Any, conv: list[dict[str, Any]], chat_template: str | None) -> dict[str, Any]:
    """A chat as the engine stage takes it: the chat template applied to the text parts (an image part
    becomes the template's image placeholder), the decoded images and their uuids (the content hashes)."""
    (msg,) = conv
    parts = [{"type": "image"} if p["type"] == "image_pil" else p for p in msg["content"]]
    images = [p for p in msg["content"] if p["type"] == "image_pil"]
    text = tok.apply_chat_template([{"role": "user", "content": parts}], tokenize=False,
                                   add_generation_prompt=True, chat_template=chat_template)
    row: dict[str, Any] = {"prompt": text, "tokenization_kwargs": {"add_special_tokens": False}}
    if images:
        row["multimodal_data"] = {"image": [p["image_pil"] for p in images]}
        row["multimodal_uuids"] = {"image": [p["uuid"] for p in images]}
    return row


def _prepare(model: str, chat_template: str | None, max_images: int) -> Callable[[dict[str, Any]], dict[str, Any]]:
    def prepare(row: dict[str, Any]) -> dict[str, Any]:
        from evalcore.schema import ModelRequest

        req = ModelRequest.model_validate_json(row["request"])
        conv, err = _conversation(req, max_images, for_vllm=True)
        sampling = {"temperature": req.sampling.temperature, "max_tokens": req.sampling.max_tokens,
                    "seed": req.sampling.seed}
        if conv is None:  # answered here; the row still has to pass the engine (one token)
            return {"i": row["i"], "early": err.model_dump_json() if err else "", "prompt": ".",
                    "sampling_params": {"max_tokens": 1, "temperature": 0.0}}
        return {"i": row["i"], "early": "", "sampling_params": sampling,
                **engine_row(_tokenizer(model), conv, chat_template)}

    return prepare


def _finish(row: dict[str, Any]) -> dict[str, Any]:
    from evalcore.schema import ModelResponse, Usage

    if row.get("early"):
        resp = ModelResponse.model_validate_json(row["early"])
    elif row.get("__inference_error__"):
        resp = ModelResponse(text=None, status="model_error", error=str(row["__inference_error__"])[:300])
    else:
        # Ray Data LLM's own per-row figure: from entering the engine wrapper to the final output
        latency = row.get("time_taken_llm") or 0.0
        resp = ModelResponse(
            text=row.get("generated_text") or "", status="ok",
            usage=Usage(prompt_tokens=int(row.get("num_input_tokens") or 0),
                        completion_tokens=int(row.get("num_generated_tokens") or 0)),
            latency_s=max(0.0, float(latency or 0.0)))
    return {"i": row["i"], "response": resp.model_dump_json()}


def processor(name: str, options: dict[str, Any], *, num_cpus: float, batch_size: int,
              max_inflight: int) -> Any:
    """The Ray Data LLM processor of one vllm model: one engine replica of `num_cpus` CPUs (`num_gpus`
    would go in the same bundle on a GPU node), batches of `batch_size`, `max_inflight` batches per replica."""
    from ray.data.llm import build_processor, vLLMEngineProcessorConfig

    parsed = parse_options(name, options)
    model = model_path(options)
    from cluster.backends.vllm_cpu import set_cpu_env_defaults

    on_cpu = set_cpu_env_defaults()
    kw = engine_kwargs(options, on_cpu)
    if int(kw.get("tensor_parallel_size", 1)) == 1:
        kw.setdefault("distributed_executor_backend", "uni")  # as the hand-written stage: no worker process
    # the engine's actor does not run our backend code: the CPU settings travel as its environment
    env = {k: os.environ[k] for k in CPU_ENV if k in os.environ} if on_cpu else {}
    template = options.get("chat_template")
    off = {"enabled": False}
    config = vLLMEngineProcessorConfig(
        model_source=model, engine_kwargs=kw, batch_size=batch_size, concurrency=1,
        max_concurrent_batches=max_inflight,
        placement_group_config={"bundles": [{"CPU": max(1, int(num_cpus))}]} if on_cpu else None,
        chat_template_stage=off, tokenize_stage=off, detokenize_stage=off, prepare_multimodal_stage=off,
        should_continue_on_error=True, log_engine_metrics=False,
        runtime_env={"env_vars": env} if env else None,
    )
    return build_processor(
        config, preprocess=_prepare(model, template, parsed.image_limit()), postprocess=_finish,
        preprocess_map_kwargs={"num_cpus": MAP_CPUS}, postprocess_map_kwargs={"num_cpus": MAP_CPUS},
    )


def responses(name: str, options: dict[str, Any], requests: list[Any], *, num_cpus: float = 1,
              batch_size: int = 64, max_inflight: int = 4) -> Iterator[tuple[int, Any]]:
    """(index in `requests`, ModelResponse) as the processor yields them (not in order)."""
    import ray

    from evalcore.schema import ModelResponse

    proc = processor(name, options, num_cpus=num_cpus, batch_size=batch_size, max_inflight=max_inflight)
    rows = [{"i": i, "request": r.model_dump_json()} for i, r in enumerate(requests)]
    ds = proc(ray.data.from_items(rows, override_num_blocks=max(1, len(rows) // batch_size)))
    for row in ds.iter_rows():
        yield int(row["i"]), ModelResponse.model_validate_json(row["response"])


def run_model(cfg: Any, model: Any, datasets: list[Any], versions: list[str], run_id: str, sink: Any,
              score: Any, write: Callable[[list[Any]], None], fail: Callable[[int, list[Any], str], None]) -> int:
    """The model's unfinished samples over every dataset through the Ray Data LLM processor, dataset after
    dataset; each processor output chunk of `batch_size` rows is scored by `score` (a Ray remote function:
    `cluster.pipeline.score_batch`) and handed to `write`. A processor that fails ends the dataset's
    remaining requests through `fail(dataset index, items, message)`. Returns the requests sent."""
    import ray

    from cluster.actor_pool import first_line
    from cluster.plan import plan_batches

    sent = 0
    by_ids = [ds.by_id() for ds in datasets]
    for d in range(len(datasets)):
        items = [w for _, batch in plan_batches(cfg, model, [datasets[d]], [versions[d]], sink.is_done)
                 for w in batch]
        if not items:
            continue
        sent += len(items)
        done: set[int] = set()
        pending: list[Any] = []

        def drain(limit: int, pending: list[Any] = pending) -> None:
            while len(pending) > limit:
                write(ray.get(pending.pop(0)))

        chunk: list[tuple[int, Any]] = []
        try:
            for i, resp in responses(model.name, model.options, [w.request for w in items],
                                     num_cpus=model.num_cpus, batch_size=model.batch_size,
                                     max_inflight=cfg.max_inflight_batches):
                chunk.append((i, resp))
                if len(chunk) >= model.batch_size:
                    pending.append(_score(score, run_id, versions[d], by_ids[d], items, chunk))
                    done.update(i for i, _ in chunk)
                    chunk = []
                    drain(cfg.max_inflight_batches)
            if chunk:
                pending.append(_score(score, run_id, versions[d], by_ids[d], items, chunk))
                done.update(i for i, _ in chunk)
            drain(0)
        except Exception as e:  # the processor failed: what it did not answer is infra_error
            drain(0)
            fail(d, [w for i, w in enumerate(items) if i not in done], f"ray-data stage: {first_line(e)}")
    return sent


def _score(score: Any, run_id: str, version: str, by_id: dict[str, Any], items: list[Any],
           chunk: list[tuple[int, Any]]) -> Any:
    reqs = [items[i].request for i, _ in chunk]
    insts = [by_id[items[i].instance_id] for i, _ in chunk]
    return score.remote(run_id, version, insts, reqs, [r for _, r in chunk])
