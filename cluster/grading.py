"""`nphe4v grade`: score responses produced elsewhere (JSON lines) exactly as a live run scores them."""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from cluster.config import MODEL_NAME_PATTERN
from cluster.pot_stage import PotSettings, run_pot
from evalcore import benchmarks
from evalcore.benchmark import AssetsMissing
from evalcore.benchmarks import task_for
from evalcore.dataset import load_dataset
from evalcore.hashing import sha256_file, sha256_json
from evalcore.prompting import POT_MODE, build_prompt, build_recognition_prompt
from evalcore.provenance import git_sha, package_versions
from evalcore.schema import (
    PROMPT_MODES,
    RECOGNITION_MODE,
    ModelRequest,
    ModelResponse,
    SampleKey,
    SamplingParams,
)
from evalcore.scoring import score_sample
from evalcore.shards import storage_error


class GradeError(ValueError):
    """A responses file that cannot be graded; one line naming file, line and field."""


# A live run's repeats and recognition asks are small counts; a huge value is a mistake, not a sample.
MAX_REPEAT = 1_000_000


class ResponseLine(BaseModel):
    # strict: `repeat: true`, `"1"` or `1.5` are mistakes, not the sample 1; other keys of the line are the
    # user's own (an export's `sampling`, notes) and are ignored
    model_config = ConfigDict(extra="ignore", strict=True)

    model: str = Field(pattern=MODEL_NAME_PATTERN)
    instance_id: str
    prompt_mode: str
    response: str = Field(description="the model's text; \"\" for a model that answered nothing")
    repeat: int = Field(0, ge=0, le=MAX_REPEAT)
    variant: str = ""
    # the text the recognition question showed, when it was another instance (mismatched control)
    text_instance_id: str | None = None
    # the prompt set the response answered, as `nphe4v export` writes it: a `prompts: paper` template
    # (`nphardeval4v-paper-<commit>-open|api`) rebuilds the papers' prompt; anything else, or none, ours
    template_version: str | None = None


def grade_file(dataset_dir: Path, responses: Path, out: Path, pot: PotSettings | None = None,
               prompt_assets: str | None = None) -> tuple[int, int]:
    """Grade a responses file into a run folder, holding the folder's lock for the whole write. PoT lines'
    programs run in the sandbox `pot` describes (strict isolation by default), checked before anything runs.
    Lines answering the papers' prompts (their `template_version`) are graded against those prompts, read as a
    run reads them (`prompt_assets`, NPHE4V_PROMPT_ASSETS, or the cache, downloading once)."""
    from cluster.run import RunFolderError, check_out_folder
    from cluster.runlock import run_lock

    ds = load_dataset(dataset_dir)
    by_id = ds.by_id()
    lines = _read_lines_or_fail(responses, by_id)
    paper = _paper_prompt_set(benchmarks.get(ds.manifest.benchmark), lines, responses, prompt_assets)
    pot = pot or PotSettings()
    if any(line.prompt_mode == POT_MODE for line in lines):
        _check_pot(responses, pot)
    run_id = "grade-" + sha256_json([ds.manifest.dataset_sha256, sha256_file(responses)])[:12]
    try:
        check_out_folder(out)
    except RunFolderError as e:
        raise GradeError(str(e)) from None
    _check_folder(out, run_id, locked=False)  # before the lock file is made in someone else's folder
    with run_lock(out, f"grade {responses}"):
        _check_folder(out, run_id, locked=True)
        return _grade_locked(ds, by_id, lines, responses, out, run_id, pot, paper)


def _paper_kind(bench: Any, line: ResponseLine) -> str | None:
    """The prompt file kind (e.g. "open" or "api") of a line that answered a `prompts: paper` prompt of `bench`
    (the dataset's Benchmark), else None."""
    if not bench.paper_prompts or line.prompt_mode not in PROMPT_MODES:
        return None
    return bench.paper_template_kind(line.template_version or "")


def _paper_prompt_set(bench: Any, lines: list[ResponseLine], responses: Path, prompt_assets: str | None) -> Any:
    """The papers' prompt files when a line answered them, checked before anything is written."""
    wanted = [(n, kind) for n, line in enumerate(lines, start=1) if (kind := _paper_kind(bench, line)) is not None]
    if not wanted:
        return None
    kinds = bench.paper_prompt_kinds
    for n, kind in wanted:
        if kind not in kinds:
            raise GradeError(f"{responses}: response {n}: field template_version: unknown prompt file kind {kind!r} "
                             f"(expected {' or '.join(kinds)})")
    try:
        return bench.load_paper_prompts(prompt_assets)
    except AssetsMissing as e:
        raise GradeError(f"{responses}: lines answer the papers' prompts: {e}") from None


def _check_pot(responses: Path, pot: PotSettings) -> None:
    from evalcore.sandbox import SandboxUnavailable, check_isolation

    try:
        check_isolation(pot.isolation)  # type: ignore[arg-type]
    except SandboxUnavailable as e:
        weaker = " (or opt into the weaker sandbox by name: --pot-isolation rlimits-only)" \
            if pot.isolation == "strict" else ""
        raise GradeError(f"{responses}: field prompt_mode: {POT_MODE!r} lines need the {pot.isolation} sandbox, "
                         f"which cannot run here: {e.reason}{weaker}"
                         ) from None


def _check_folder(out: Path, run_id: str, *, locked: bool) -> None:
    from cluster.runlock import foreign_files

    mpath = out / "manifest.json"
    if mpath.exists():
        try:
            prev = json.loads(mpath.read_text()).get("run_id")
        except (ValueError, AttributeError):
            prev = None
        if prev != run_id:
            raise GradeError(f"{mpath}: field run_id: folder holds run {prev!r}; choose another --out")
    elif foreign_files(out, locked=locked):
        raise GradeError(f"{out}: folder is not empty and holds no run manifest; choose another --out")


def _grade_locked(ds: Any, by_id: dict[str, Any], lines: list[ResponseLine], responses: Path, out: Path,
                  run_id: str, pot: PotSettings, paper: Any = None) -> tuple[int, int]:
    from evalcore.records import SampleSink

    sink = SampleSink(out)
    bench = benchmarks.get(ds.manifest.benchmark)
    work = []
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
        elif paper is not None and (kind := _paper_kind(bench, line)) is not None:
            prompt = bench.build_paper_prompt(paper, inst, line.prompt_mode, kind)
        else:
            prompt = build_prompt(texts[tid], line.prompt_mode, inst.images)  # type: ignore[arg-type]
        key = SampleKey(
            model=line.model, benchmark=inst.benchmark, instance_id=inst.instance_id,
            variant=line.variant, prompt_mode=line.prompt_mode, repeat=line.repeat,
        )
        req = ModelRequest(key=key, task=inst.task, level=inst.level, prompt=prompt, sampling=SamplingParams())
        work.append((inst, req, ModelResponse(text=line.response, status="ok")))
    # PoT programs run here, in process, `pot.workers` at a time (a grading is one machine's job, not a run's)
    outcomes = run_pot([w[1] for w in work], [w[2] for w in work], pot)
    records = [score_sample(run_id, ds.manifest.version, inst, req, resp, outcome)
               for (inst, req, resp), outcome in zip(work, outcomes, strict=True)]
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
    try:
        tmp.write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n")
        os.replace(tmp, out / "manifest.json")
    except OSError as e:  # the samples are on disk: a rerun writes the manifest; no temporary left behind
        tmp.unlink(missing_ok=True)
        raise (storage_error(e, out / "manifest.json") or e) from None
    return len(records), new


def _read_lines(path: Path, by_id: dict[str, Any]) -> list[ResponseLine]:
    """Parse and validate every line as a live run would key it; the first problem is one line of error.

    Rule for duplicates: a sample key (model, instance, variant, prompt mode, repeat) may appear once; a
    second line with the same key is refused, naming both lines, whatever its response.
    """
    _check_regular(path)
    out = []
    seen: dict[tuple[str, str, str, str, int], int] = {}
    with open(path, "rb") as f:
        for n, raw_bytes in enumerate(iter(lambda: f.readline(MAX_LINE_BYTES + 1), b""), start=1):
            if len(raw_bytes) > MAX_LINE_BYTES:  # read in bounded pieces: one endless line is not held whole
                raise GradeError(f"{path}:{n}: line longer than the cap of {MAX_LINE_BYTES} bytes")
            try:
                raw = raw_bytes.decode("utf-8")
            except UnicodeDecodeError as e:
                raise GradeError(f"{path}:{n}: not UTF-8 (byte {e.start} of the line)") from None
            if not raw.strip():
                continue
            line = _parse_line(path, n, raw)
            try:
                line = _as_live_run(line, by_id)
            except ValueError as e:
                raise GradeError(f"{path}:{n}: {e}") from None
            key = (line.model, line.instance_id, line.variant, line.prompt_mode, line.repeat)
            if key in seen:
                raise GradeError(f"{path}:{n}: duplicate of line {seen[key]} (same model, instance_id, variant, "
                                 "prompt_mode and repeat); each sample may appear once")
            seen[key] = n
            out.append(line)
    if not out:  # nothing graded is not a success: an empty export, a truncated copy, the wrong file
        raise GradeError(f"{path}: no response lines (the file is empty or blank)")
    return out


# A line holds one response (a backend keeps at most 1 MB of a response's text) and its key: a line past this
# is refused rather than read whole into memory.
MAX_LINE_BYTES = 16 << 20


def _check_regular(path: Path) -> None:
    """A responses file must be a regular file: a FIFO would block (or be read once and gone, while the grade
    hashes the file again), a device never ends. Looked at before opening; links are followed."""
    import stat

    try:
        st = path.stat()
    except FileNotFoundError:
        raise GradeError(f"{path}: responses file not found") from None
    if stat.S_ISDIR(st.st_mode):
        raise GradeError(f"{path}: is a folder, not a responses file")
    if not stat.S_ISREG(st.st_mode):
        kind = ("a FIFO" if stat.S_ISFIFO(st.st_mode) else "a socket" if stat.S_ISSOCK(st.st_mode)
                else "a device" if stat.S_ISCHR(st.st_mode) or stat.S_ISBLK(st.st_mode) else "not a regular file")
        raise GradeError(f"{path}: is {kind}, not a responses file (a regular file is required)")


def _read_lines_or_fail(path: Path, by_id: dict[str, Any]) -> list[ResponseLine]:
    try:
        return _read_lines(path, by_id)
    except OSError as e:
        raise GradeError(f"{path}: cannot read the responses file: {e.strerror or e}") from None


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    d: dict[str, Any] = {}
    for k, v in pairs:
        if k in d:
            raise ValueError(f"duplicate key {k!r}")
        d[k] = v
    return d


def _parse_line(path: Path, n: int, raw: str) -> ResponseLine:
    """One JSON line as a ResponseLine; JSON that a lenient reader would silently repair (a key given twice:
    which one counts?) or a field of the wrong type is one GradeError line naming file, line and field."""
    try:
        obj = json.loads(raw, object_pairs_hook=_unique_keys)
    except json.JSONDecodeError as e:
        raise GradeError(f"{path}:{n}: invalid JSON ({e.msg} at column {e.colno})") from None
    except ValueError as e:  # a duplicate key
        raise GradeError(f"{path}:{n}: invalid JSON ({e})") from None
    except RecursionError:
        raise GradeError(f"{path}:{n}: invalid JSON (nested too deeply)") from None
    if isinstance(obj, dict) and "response" in obj and obj["response"] is None:
        raise GradeError(f"{path}:{n}: field response: null (not filled in); give the model's text, \"\" for a "
                         "model that answered nothing")
    try:
        return ResponseLine.model_validate(obj)
    except ValidationError as e:
        err = e.errors()[0]
        field = ".".join(map(str, err["loc"])) or "(line)"
        raise GradeError(f"{path}:{n}: field {field}: {err['msg']}") from None


def _as_live_run(line: ResponseLine, by_id: dict[str, Any]) -> ResponseLine:
    """The line keyed exactly as a live run keys the same sample, or ValueError naming the field."""
    if line.instance_id not in by_id:
        raise ValueError(f"field instance_id: {line.instance_id!r} is not in the dataset")
    inst = by_id[line.instance_id]
    bench = benchmarks.get(inst.benchmark)
    if not bench.recognition:
        # a benchmark without recognition lines: its own prompt modes, and the variant its instance has (e.g.
        # GraphVerse's image edit)
        modes = bench.all_prompt_modes()
        if line.prompt_mode not in modes:
            raise ValueError(f"field prompt_mode: {line.prompt_mode!r}: {bench.title} samples use "
                             f"{' or '.join(map(repr, modes))}")
        variant = bench.variant(inst)
        if line.variant not in ("", variant):
            raise ValueError(f"field variant: {line.variant!r}: this instance's "
                             f"{bench.variant_name} is {variant!r}")
        if line.text_instance_id is not None:
            raise ValueError("field text_instance_id: only recognition lines (NPHardEval4V) show another text")
        return line.model_copy(update={"variant": variant})
    modes = (*bench.all_prompt_modes(), RECOGNITION_MODE)
    if line.prompt_mode not in modes:
        raise ValueError(f"field prompt_mode: {line.prompt_mode!r} is not one of {', '.join(modes)}")
    if line.prompt_mode != RECOGNITION_MODE:
        if line.variant:
            raise ValueError(f"field variant: {line.variant!r}: only recognition lines have a variant")
        if line.text_instance_id is not None:
            raise ValueError("field text_instance_id: only recognition lines show another instance's text")
        return line
    if line.variant not in ("match", "mismatch"):
        raise ValueError("field variant: recognition lines need 'match' or 'mismatch'")
    tid = line.text_instance_id
    if line.variant == "match":
        if tid not in (None, line.instance_id):
            raise ValueError("field text_instance_id: a 'match' line shows the instance's own text")
        return line
    if tid is None or tid == line.instance_id:
        raise ValueError("field text_instance_id: a 'mismatch' line names another instance whose text it showed")
    if tid not in by_id:
        raise ValueError(f"field text_instance_id: {tid!r} is not in the dataset")
    other = by_id[tid]
    if (other.benchmark, other.task, other.level) != (inst.benchmark, inst.task, inst.level):
        # a live run's control is another instance of the same task and level
        raise ValueError(f"field text_instance_id: {tid!r} is {other.task} level {other.level}, the instance is "
                         f"{inst.task} level {inst.level}; a control uses the same task and level")
    return line
