"""`nphe4v grade`: score responses produced elsewhere (JSON lines) exactly as a live run scores them."""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from nphe4v.benchmarks import task_for
from nphe4v.core.hashing import sha256_file, sha256_json
from nphe4v.core.prompting import build_prompt, build_recognition_prompt
from nphe4v.core.schema import (
    PROMPT_MODES,
    RECOGNITION_MODE,
    ModelRequest,
    ModelResponse,
    SampleKey,
    SamplingParams,
)
from nphe4v.dataset import load_dataset
from nphe4v.provenance import git_sha, package_versions
from nphe4v.scoring import score_sample


class GradeError(ValueError):
    """A responses file that cannot be graded; one line naming file, line and field."""


class ResponseLine(BaseModel):
    model_config = ConfigDict(extra="ignore")

    model: str
    instance_id: str
    prompt_mode: str
    response: str | None
    repeat: int = 0
    variant: str = ""
    # the text the recognition question showed, when it was another instance (mismatched control)
    text_instance_id: str | None = None


def grade_file(dataset_dir: Path, responses: Path, out: Path) -> tuple[int, int]:
    from cluster.sink import SampleSink

    ds = load_dataset(dataset_dir)
    by_id = ds.by_id()
    lines = _read_lines(responses, by_id)
    run_id = "grade-" + sha256_json([ds.manifest.dataset_sha256, sha256_file(responses)])[:12]
    mpath = out / "manifest.json"
    if mpath.exists():
        prev = json.loads(mpath.read_text()).get("run_id")
        if prev != run_id:
            raise GradeError(f"{mpath}: field run_id: folder holds run {prev!r}; choose another --out")
    out.mkdir(parents=True, exist_ok=True)
    sink = SampleSink(out)
    records = []
    texts: dict[str, Any] = {}
    for line in lines:
        inst = by_id[line.instance_id]
        spec = task_for(inst.benchmark, inst.task)
        tid = line.text_instance_id or line.instance_id
        if tid not in texts:
            src = by_id[tid]
            texts[tid] = spec.text(spec.load(src.data))
        if line.prompt_mode == RECOGNITION_MODE:
            prompt = build_recognition_prompt(texts[tid], inst.images)
        else:
            prompt = build_prompt(texts[tid], line.prompt_mode, inst.images)  # type: ignore[arg-type]
        key = SampleKey(
            model=line.model, benchmark=inst.benchmark, instance_id=inst.instance_id,
            variant=line.variant, prompt_mode=line.prompt_mode, repeat=line.repeat,
        )
        req = ModelRequest(key=key, task=inst.task, level=inst.level, prompt=prompt, sampling=SamplingParams())
        resp = ModelResponse(text=line.response, status="ok" if line.response is not None else "model_error",
                             error=None if line.response is not None else "no response")
        records.append(score_sample(run_id, ds.manifest.version, inst, req, resp))
    new = sink.add(records)
    sink.flush()
    manifest = {
        "run_id": run_id,
        "status": "complete",
        "kind": "grade",
        "created_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "git_sha": git_sha(),
        "package_versions": package_versions(),
        "responses_file": str(responses),
        "responses_sha256": sha256_file(responses),
        "datasets": [{"benchmark": ds.manifest.benchmark, "version": ds.manifest.version,
                      "path": str(ds.root.resolve()), "dataset_sha256": ds.manifest.dataset_sha256}],
    }
    tmp = out / ".manifest.json.tmp"
    tmp.write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n")
    os.replace(tmp, mpath)
    return len(records), new


def _read_lines(path: Path, by_id: dict[str, Any]) -> list[ResponseLine]:
    if not path.is_file():
        raise GradeError(f"{path}: responses file not found")
    out = []
    with open(path, encoding="utf-8", errors="replace") as f:
        for n, raw in enumerate(f, start=1):
            if not raw.strip():
                continue
            try:
                line = ResponseLine.model_validate_json(raw)
            except ValidationError as e:
                err = e.errors()[0]
                field = ".".join(map(str, err["loc"])) or "(line)"
                raise GradeError(f"{path}:{n}: field {field}: {err['msg']}") from None
            if line.instance_id not in by_id:
                raise GradeError(f"{path}:{n}: field instance_id: {line.instance_id!r} is not in the dataset")
            if line.text_instance_id is not None and line.text_instance_id not in by_id:
                raise GradeError(f"{path}:{n}: field text_instance_id: {line.text_instance_id!r} is not in the dataset")
            if line.prompt_mode not in (*PROMPT_MODES, RECOGNITION_MODE):
                raise GradeError(f"{path}:{n}: field prompt_mode: {line.prompt_mode!r} is not one of "
                                 f"{', '.join((*PROMPT_MODES, RECOGNITION_MODE))}")
            if line.prompt_mode == RECOGNITION_MODE and line.variant not in ("match", "mismatch"):
                raise GradeError(f"{path}:{n}: field variant: recognition lines need 'match' or 'mismatch'")
            out.append(line)
    return out
