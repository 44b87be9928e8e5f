"""Rough cost of serving a model, from the registry: replica load time and replica seconds per request.

The scheduler uses these only to order and size work (largest first, how many replicas shorten a model's
run); they never change what is computed. The `simulated` backend (bench/bench_schedule.py) takes them as its
ground truth, so the benchmark measures the scheduler against the same model of the hardware.

Assumptions (80 GB-class GPUs, bf16, vLLM continuous batching, ~1k tokens out per sample):
- load: 20 s fixed (process, CUDA graphs) + 1.2 s per billion parameters (weights from local disk);
- throughput: a replica serves one request per 0.04 s per billion parameters, tensor parallelism dividing
  that by tp^0.85 (communication eats part of the gain);
- the transformers backend (architectures vLLM lacks) decodes one request at a time, without continuous
  batching: ~1k tokens at ~10 ms of Python overhead per token plus ~1 ms per billion parameters per token (the
  weights read once per token, ~2 TB/s), i.e. 10 s + 1 s per billion parameters per request; load as vLLM's
  less the CUDA-graph capture (10 s fixed). So the scheduler gives such a model the replicas its sequential
  decoding needs instead of sizing it as a batched vLLM replica (~25x too cheap for a 7B model);
- API models: no load, `api_request_s` per request per concurrent slot; their rate limit bounds them instead.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

DEFAULT_PARAMS_B = 7.0
LOAD_FIXED_S = 20.0
LOAD_PER_B_S = 1.2
REQUEST_PER_B_S = 0.04
TP_EXPONENT = 0.85
API_REQUEST_S = 8.0
SEQUENTIAL_REQUEST_FIXED_S = 10.0
SEQUENTIAL_REQUEST_PER_B_S = 1.0
SEQUENTIAL_LOAD_FIXED_S = 10.0


@dataclass(frozen=True)
class Cost:
    load_s: float
    request_s: float  # replica seconds per request at steady throughput
    gpus: float  # per replica


def params_b(name: str, options: dict[str, Any]) -> float | None:
    """Parameters (billions): `options.params_b`, else the registry entry of that name, else None."""
    if options.get("params_b"):
        return float(options["params_b"])
    try:
        from cluster.registry import load_registry

        entry = load_registry().by_name.get(name)
    except Exception:  # a registry that does not load only loses the estimate
        return None
    return entry.params_b if entry is not None else None


def estimate(name: str, backend: str, gpus: float, options: dict[str, Any]) -> Cost:
    if backend == "baseline":
        return Cost(0.0, 1e-4, 0.0)
    if backend in ("litellm", "caption-chain"):
        conc = float(options.get("max_concurrency", 8) or 8)
        return Cost(0.0, API_REQUEST_S / conc, 0.0)
    p = params_b(name, options) or DEFAULT_PARAMS_B
    if backend == "transformers":  # one request at a time (cluster.backends.transformers_engine)
        return Cost(SEQUENTIAL_LOAD_FIXED_S + LOAD_PER_B_S * p,
                    SEQUENTIAL_REQUEST_FIXED_S + SEQUENTIAL_REQUEST_PER_B_S * p, gpus)
    tp = max(1.0, gpus)
    return Cost(LOAD_FIXED_S + LOAD_PER_B_S * p, REQUEST_PER_B_S * p / tp**TP_EXPONENT, gpus)
