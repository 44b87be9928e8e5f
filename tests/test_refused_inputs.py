"""The table of refused inputs: each bad input (a YAML file, a command-line path, a `grade` responses line) ends
in exactly one error line naming the file (and line or field) and the cause, with exit code 2 and nothing
written. One row per input; the fragment is what the line must contain.

Other tables of refused inputs: tests/test_run_inputs.py (config fields, grade keying), tests/test_registry.py
(registry references), tests/test_registry_models.py (backend options).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cluster.config import (
    MAX_REPEATS,
    MAX_YAML_BYTES,
    MAX_YAML_VALUES,
    ConfigError,
    DatasetSpec,
    read_yaml_mapping,
)
from cluster.run import dataset_path
from nphe4v_cli.app import app
from nphe4v_cli.eval_all import main as eval_all

runner = CliRunner()
OK_MODELS = "models: [{name: oracle}]\n"
OK_DATASET = "datasets: [{generate: {version: v, per_level: 1, tasks: [BSP], levels: [1]}}]\n"
UNCREATABLE = Path("/proc/nphe4v-test-no-such-folder")  # mkdir fails here whatever the user (even root)


def bomb(depth: int = 9, width: int = 10) -> str:
    """The "billion laughs": each level lists the previous one `width` times (width**depth values)."""
    lines = [f"l0: &l0 [{', '.join(['lol'] * width)}]"]
    for i in range(1, depth):
        lines.append(f"l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * width)}]")
    return "\n".join(lines) + "\n"


def write(tmp: Path, name: str, data: str | bytes) -> Path:
    p = tmp / name
    p.write_bytes(data if isinstance(data, bytes) else data.encode())
    return p


def grade_line(**kw) -> str:
    base = {"model": "m", "instance_id": "bsp-L01-000", "prompt_mode": "full_text_only", "response": "x"}
    return json.dumps({**base, **kw})


# (id, entry point, argv from (tmp_path, small_dataset), expected fragment of the one error line; {tmp} and
# {file} are filled in). Entry points: "eval_all" (jobs/eval_all.py) or "cli" (the nphe4v command).
Row = tuple[str, str, Callable[[Path, Path], list[str]], str]


def cfg_argv(text: str | bytes, *extra: str) -> Callable[[Path, Path], list[str]]:
    def argv(tmp: Path, _ds: Path) -> list[str]:
        return ["--config", str(write(tmp, "c.yaml", text)), "--out", str(tmp / "run"),
                "--data-root", str(tmp / "data"), *[e.format(tmp=tmp) for e in extra]]
    return argv


def grade_argv(data: str | bytes) -> Callable[[Path, Path], list[str]]:
    def argv(tmp: Path, ds: Path) -> list[str]:
        return ["grade", "--dataset", str(ds), "--responses", str(write(tmp, "r.jsonl", data)),
                "--out", str(tmp / "run")]
    return argv


ROWS: list[Row] = [
    # --- YAML: one reader (cluster.config.read_yaml_mapping) for run configs and the registry
    ("yaml alias bomb", "eval_all", cfg_argv(OK_DATASET + OK_MODELS + bomb()),
     f"c.yaml: line 7: invalid YAML (aliases expand to more than {MAX_YAML_VALUES} values)"),
    ("yaml alias bomb in options.extra", "eval_all", cfg_argv(
        OK_DATASET + bomb(depth=4) + "models: [{name: g, backend: litellm, options: {model: hosted_vllm/x, "
        "extra: {a: [*l3, *l3, *l3, *l3, *l3, *l3, *l3, *l3, *l3, *l3, *l3, *l3, *l3, *l3, *l3, *l3, *l3, *l3, "
        "*l3, *l3, *l3, *l3, *l3, *l3, *l3, *l3, *l3, *l3, *l3, *l3, *l3, *l3, *l3, *l3, *l3, *l3, *l3, *l3, "
        "*l3, *l3, *l3, *l3, *l3, *l3, *l3, *l3, *l3, *l3, *l3, *l3, *l3, *l3, *l3, *l3, *l3, *l3, *l3, *l3, "
        "*l3, *l3, *l3, *l3, *l3, *l3, *l3, *l3, *l3, *l3, *l3, *l3, *l3, *l3, *l3, *l3, *l3, *l3, *l3, *l3, "
        "*l3, *l3, *l3, *l3, *l3, *l3, *l3, *l3, *l3, *l3, *l3, *l3, *l3, *l3, *l3, *l3, *l3, *l3, *l3, *l3, "
        "*l3, *l3, *l3, *l3, *l3, *l3, *l3, *l3, *l3, *l3, *l3, *l3, *l3, *l3, *l3, *l3, *l3, *l3, *l3, *l3, "
        "*l3]}}}]\n"),
     "invalid YAML (aliases expand to more than"),
    ("yaml alias to itself", "eval_all", cfg_argv(OK_DATASET + OK_MODELS + "x: &a [1, *a]\n"),
     "c.yaml: line 3: invalid YAML (an alias refers to itself)"),
    ("yaml duplicate top-level key", "eval_all", cfg_argv(OK_DATASET + OK_MODELS + OK_MODELS),
     "c.yaml: line 3: invalid YAML (duplicate key 'models')"),
    ("yaml duplicate nested key", "eval_all", cfg_argv(
        "datasets: [{generate: {version: v, seed: 1, seed: 2}}]\n" + OK_MODELS),
     "c.yaml: line 1: invalid YAML (duplicate key 'seed')"),
    ("yaml nested too deeply", "eval_all", cfg_argv(OK_DATASET + OK_MODELS + "x: " + "[" * 5000 + "]" * 5000),
     "c.yaml: invalid YAML (nested too deeply)"),
    ("config not UTF-8", "eval_all", cfg_argv(b"name: \xff\xfe\n"), "c.yaml: not UTF-8 text (byte 6)"),
    ("config top level a list", "eval_all", cfg_argv("- 1\n"), "c.yaml: top level must be a mapping"),
    ("graphverse-only field on nphardeval4v", "eval_all", cfg_argv(
        "datasets: [{generate: {version: v, split: testmini}}]\n" + OK_MODELS),
     "generate.split is not used by nphardeval4v (it takes per_level, tasks, levels)"),
    ("nphardeval4v-only field on graphverse", "eval_all", cfg_argv(
        "datasets: [{benchmark: graphverse, generate: {version: graphverse-testmini, per_level: 3}}]\n" + OK_MODELS),
     "generate.per_level is not used by graphverse (it takes split, limit, sources)"),
    # --- command-line paths
    ("--config a folder", "eval_all", lambda tmp, _ds: ["--config", str(tmp), "--plan"],
     "{tmp}: is a folder, not a config file"),
    ("--config missing", "eval_all", lambda tmp, _ds: ["--config", str(tmp / "nope.yaml"), "--plan"],
     "nope.yaml: config file not found"),
    ("--data-root a file", "eval_all", cfg_argv(OK_DATASET + OK_MODELS, "--data-root", "{tmp}/c.yaml"),
     "c.yaml: --data-root is a file, not a folder"),
    ("--data-root under a file (plan)", "eval_all",
     cfg_argv(OK_DATASET + OK_MODELS, "--data-root", "{tmp}/c.yaml/data", "--plan"),
     "--data-root's parent {tmp}/c.yaml is a file, not a folder"),
    ("--data-root uncreatable", "eval_all", cfg_argv(OK_DATASET + OK_MODELS, "--data-root", str(UNCREATABLE)),
     f"cannot create the dataset cache folder (--data-root {UNCREATABLE})"),
    ("--out under a file", "eval_all", cfg_argv(OK_DATASET + OK_MODELS, "--out", "{tmp}/c.yaml/run"),
     "--out's parent {tmp}/c.yaml is a file"),
    ("generate --out under a file", "cli",
     lambda tmp, _ds: ["generate", "--out", str(write(tmp, "f", "x") / "d"), "--per-level", "1"],
     "--out's parent {tmp}/f is a file"),
    ("generate --out uncreatable", "cli",
     lambda tmp, _ds: ["generate", "--out", str(UNCREATABLE / "d"), "--per-level", "1", "--tasks", "BSP"],
     f"{UNCREATABLE}: No such file or directory (writing --out {UNCREATABLE}/d)"),
    ("grade --responses a folder", "cli",
     lambda tmp, ds: ["grade", "--dataset", str(ds), "--responses", str(tmp), "--out", str(tmp / "run")],
     "{tmp}: is a folder, not a responses file"),
    ("grade --out under a file", "cli",
     lambda tmp, ds: ["grade", "--dataset", str(ds), "--responses", str(write(tmp, "r.jsonl", grade_line())),
                      "--out", str(tmp / "r.jsonl" / "run")],
     "--out's parent {tmp}/r.jsonl is a file"),
    # --- grade: responses lines
    ("grade null response", "cli", grade_argv(grade_line() + "\n" + grade_line(repeat=1, response=None)),
     "r.jsonl:2: field response: null (not filled in)"),
    ("grade missing response", "cli", grade_argv(json.dumps({"model": "m", "instance_id": "bsp-L01-000",
                                                             "prompt_mode": "full_text_only"})),
     "r.jsonl:1: field response: Field required"),
    ("grade duplicate JSON key", "cli",
     grade_argv(grade_line() + "\n" + grade_line(repeat=1)[:-1] + ', "response": "y"}'),
     "r.jsonl:2: invalid JSON (duplicate key 'response')"),
    ("grade duplicate nested JSON key", "cli", grade_argv(grade_line()[:-1] + ', "notes": {"a": 1, "a": 2}}'),
     "r.jsonl:1: invalid JSON (duplicate key 'a')"),
    ("grade invalid UTF-8", "cli", grade_argv(grade_line().encode() + b"\n" +
                                               grade_line(repeat=1).encode().replace(b'"x"', b'"\xc3\x28"')),
     "r.jsonl:2: not UTF-8 (byte"),
    ("grade repeat true", "cli", grade_argv(grade_line(repeat=True)), "r.jsonl:1: field repeat: Input should be"),
    ("grade repeat string", "cli", grade_argv(grade_line(repeat="1")), "r.jsonl:1: field repeat: Input should be"),
    ("grade repeat float", "cli", grade_argv(grade_line(repeat=1.5)), "r.jsonl:1: field repeat: Input should be"),
    ("grade repeat 1.0", "cli", grade_argv(grade_line(repeat=1.0)), "r.jsonl:1: field repeat: Input should be"),
    ("grade response not a string", "cli", grade_argv(grade_line(response=5)),
     "r.jsonl:1: field response: Input should be a valid string"),
    ("grade line not an object", "cli", grade_argv("[1, 2]\n"), "r.jsonl:1: field (line)"),
    ("grade invalid JSON", "cli", grade_argv('{"model": '), "r.jsonl:1: invalid JSON (Expecting value"),
    ("grade JSON nested too deeply", "cli", grade_argv("[" * 100_000 + "]" * 100_000),
     "r.jsonl:1: invalid JSON (nested too deeply)"),
    # --- files that are not regular files, or too large, refused before reading (a FIFO would block, a
    # device never ends); sizes and counts with a cap named in the line
    ("config a FIFO", "eval_all", lambda tmp, _ds: ["--config", str(fifo(tmp / "f.yaml")), "--plan"],
     "f.yaml: is a FIFO, not a config file"),
    ("config a link to /dev/zero", "eval_all", lambda tmp, _ds: ["--config", str(link(tmp / "z.yaml", "/dev/zero")),
                                                                "--plan"],
     "z.yaml: is a device, not a config file"),
    ("config over the size cap", "eval_all", cfg_argv(OK_DATASET + OK_MODELS + "#" * MAX_YAML_BYTES),
     f"c.yaml: config file is {MAX_YAML_BYTES + len(OK_DATASET + OK_MODELS)} bytes, more than the cap of "
     f"{MAX_YAML_BYTES} bytes"),
    ("config of too many plain values", "eval_all", cfg_argv(OK_DATASET + OK_MODELS + "x: [" + "1," * MAX_YAML_VALUES
                                                             + "1]\n"),
     f"c.yaml: line 3: invalid YAML (more than {MAX_YAML_VALUES} values)"),
    ("config integer of 5000 digits", "eval_all", cfg_argv(OK_DATASET + OK_MODELS + "repeats: " + "9" * 5000),
     "c.yaml: line 3: invalid YAML (an integer of 5000 characters (too large))"),
    ("repeats past the cap", "eval_all", cfg_argv(OK_DATASET + OK_MODELS + "repeats: 1000000000000", "--plan"),
     f"field repeats: Input should be less than or equal to {MAX_REPEATS}"),
    ("repeats negative", "eval_all", cfg_argv(OK_DATASET + OK_MODELS + "repeats: -1", "--plan"),
     "field repeats: Input should be greater than or equal to 1"),
    ("recognition asks past the cap", "eval_all", cfg_argv(OK_DATASET + OK_MODELS + "recognition: {asks: 100000}"),
     f"field recognition.asks: Input should be less than or equal to {MAX_REPEATS}"),
    ("temperature NaN", "eval_all", cfg_argv(OK_DATASET + OK_MODELS + "sampling: {temperature: .nan}", "--plan"),
     "field sampling.temperature: Input should be a finite number"),
    ("max_tokens past the cap", "eval_all", cfg_argv(OK_DATASET + OK_MODELS + "sampling: {max_tokens: 10000000000}"),
     "field sampling.max_tokens: Input should be less than or equal to 1000000"),
    ("pot timeout infinite", "eval_all", cfg_argv(OK_DATASET + OK_MODELS + "pot_timeout_s: .inf", "--plan"),
     "field pot_timeout_s: Input should be a finite number"),
    ("seed past 64 bits", "eval_all", cfg_argv(
        "datasets: [{generate: {version: v, seed: 18446744073709551616}}]\n" + OK_MODELS, "--plan"),
     "field datasets.0.generate.seed: Input should be less than or equal to 9223372036854775807"),
    ("num_cpus infinite", "eval_all", cfg_argv(OK_DATASET + "models: [{name: oracle, num_cpus: .inf}]\n", "--plan"),
     "field models.0: num_cpus: Input should be a finite number"),
    ("replicas past the cap", "eval_all", cfg_argv(OK_DATASET + "models: [{name: oracle, replicas: 1000000}]\n"),
     "replicas must be 1..1024"),
    ("baseline latency infinite", "eval_all", cfg_argv(
        OK_DATASET + "models: [{name: oracle, options: {latency_s: .inf}}]\n", "--plan"),
     "options.latency_s: None is not a number of seconds in 0..600"),  # .inf reads back as null
    ("litellm timeout infinite (plan)", "eval_all", cfg_argv(
        OK_DATASET + "models: [{name: g, backend: litellm, options: {model: openai/x, timeout_s: .inf}}]\n", "--plan"),
     "field models: model 'g': options.timeout_s: Input should be a finite number"),
    ("litellm attempts past the cap (plan)", "eval_all", cfg_argv(
        OK_DATASET + "models: [{name: g, backend: litellm, options: {model: openai/x, max_attempts: 100000}}]\n",
        "--plan"),
     "options.max_attempts: Input should be less than or equal to 100"),
    ("unknown backend option (plan)", "eval_all", cfg_argv(
        OK_DATASET + "models: [{name: g, backend: litellm, options: {model: openai/x, bogus: 1}}]\n", "--plan"),
     "field models: model 'g': options.bogus: Extra inputs are not permitted"),
    ("judge timeout infinite (plan)", "eval_all", cfg_argv(
        OK_DATASET + OK_MODELS + "judge: {model: openai/x, options: {timeout_s: .inf}}\n", "--plan"),
     "field judge.options.timeout_s: Input should be a finite number"),
    ("missing API key (plan)", "eval_all", cfg_argv(
        OK_DATASET + "models: [{name: g, backend: litellm, options: {model: openai/x, "
        "api_key_env: NPHE4V_TEST_NO_SUCH_KEY}}]\n", "--plan"),
     "API key missing: set the environment variable NPHE4V_TEST_NO_SUCH_KEY (a run would refuse to start)"),
    # --- names the file system refuses, a loop of links, a name past its cap
    ("--out name too long", "eval_all", cfg_argv(OK_DATASET + OK_MODELS, "--out", "{tmp}/" + "b" * 300),
     "--out: File name too long; choose another --out"),
    ("--out a file (plan)", "eval_all", cfg_argv(OK_DATASET + OK_MODELS, "--out", "{tmp}/c.yaml", "--plan"),
     "c.yaml: --out is a file, not a folder; choose another --out"),
    ("--out name too long (plan)", "eval_all", cfg_argv(OK_DATASET + OK_MODELS, "--out", "{tmp}/" + "b" * 300,
                                                        "--plan"),
     "--out: File name too long; choose another --out"),
    ("run name past the cap", "eval_all", cfg_argv(OK_DATASET + OK_MODELS + "name: " + "n" * 201, "--plan"),
     "field name: String should have at most 200 characters"),
    ("config a loop of links", "eval_all", lambda tmp, _ds: ["--config", str(loop(tmp)), "--plan"],
     "a.yaml: cannot read the config file: Too many levels of symbolic links"),
    ("report of a name too long", "cli", lambda tmp, _ds: ["report", str(tmp / ("c" * 300))], "File name too long"),
    ("view of a name too long", "cli", lambda tmp, _ds: ["view", str(tmp / ("c" * 300))], "File name too long"),
    ("report --n-boot past the cap", "cli", lambda tmp, _ds: ["report", str(tmp), "--n-boot", "1000000000"],
     "--n-boot 1000000000: must be 0..100000"),
    ("report --thumb-px past the cap", "cli", lambda tmp, _ds: ["report", str(tmp), "--thumb-px", "99999999"],
     "--thumb-px 99999999: must be 8..4096"),
    ("view --n-boot past the cap", "cli", lambda tmp, _ds: ["view", str(tmp), "--n-boot", "1000000000"],
     "--n-boot 1000000000: must be 0..100000"),
    # --- generate: an option the benchmark does not use is refused, never ignored
    ("generate graphverse --tasks", "cli", lambda tmp, _ds: ["generate", "--benchmark", "graphverse", "--tasks",
                                                             "GED,MCS", "--out", str(tmp / "gv")],
     "--tasks is not used by --benchmark graphverse (it takes split, limit, sources)"),
    ("generate graphverse --per-level", "cli", lambda tmp, _ds: ["generate", "--benchmark", "graphverse",
                                                                 "--per-level", "3", "--out", str(tmp / "gv")],
     "--per-level is not used by --benchmark graphverse"),
    ("generate graphverse --version of another split", "cli",
     lambda tmp, _ds: ["generate", "--benchmark", "graphverse", "--split", "train", "--version", "graphverse-testmini",
                       "--out", str(tmp / "gv")],
     "--version 'graphverse-testmini': a GraphVerse dataset of these settings is named graphverse-train; leave "
     "--version out"),
    ("generate --set a key the benchmark lacks", "cli", lambda tmp, _ds: ["generate", "--set", "split=train",
                                                                         "--out", str(tmp / "n")],
     "--set split is not used by --benchmark nphardeval4v (it takes per_level, tasks, levels)"),
    ("generate --set a bad value", "cli", lambda tmp, _ds: ["generate", "--benchmark", "graphverse", "--set",
                                                           "limit=[1]", "--out", str(tmp / "gv")],
     "--set limit=[1]: Input should be a valid integer"),
    ("generate --per-level past the cap", "cli",
     lambda tmp, _ds: ["generate", "--per-level", "1000000", "--out", str(tmp / "n")], "--per-level 1000000: must be 1..1000"),
    ("generate --seed past 64 bits", "cli",
     lambda tmp, _ds: ["generate", "--seed", str(2**64), "--out", str(tmp / "n")], "must be 0..9223372036854775807"),
    ("generate nphardeval4v --split", "cli", lambda tmp, _ds: ["generate", "--split", "train", "--out", str(tmp / "n")],
     "--split is not used by --benchmark nphardeval4v"),
    ("grade dataset manifest not UTF-8", "cli", lambda tmp, ds: ["grade", "--dataset", str(damaged(tmp, ds, b"\xff{")),
                                                                  "--responses", str(write(tmp, "r.jsonl", grade_line())),
                                                                  "--out", str(tmp / "run")],
     "d/manifest.json: field (top level): Invalid JSON"),
    ("grade dataset manifest a FIFO", "cli", lambda tmp, ds: ["grade", "--dataset", str(damaged(tmp, ds, None)),
                                                               "--responses", str(write(tmp, "r.jsonl", grade_line())),
                                                               "--out", str(tmp / "run")],
     "d/manifest.json: not a regular file"),
    ("grade line past the cap", "cli", grade_argv(grade_line() + "\n" + grade_line(repeat=1, response="x" * (16 << 20))),
     f"r.jsonl:2: line longer than the cap of {16 << 20} bytes"),
    ("grade empty responses", "cli", grade_argv(""), "r.jsonl: no response lines (the file is empty or blank)"),
    ("grade blank responses", "cli", grade_argv("\n  \n\n"), "r.jsonl: no response lines"),
    ("grade responses a FIFO", "cli",
     lambda tmp, ds: ["grade", "--dataset", str(ds), "--responses", str(fifo(tmp / "r.jsonl")), "--out",
                      str(tmp / "run")],
     "r.jsonl: is a FIFO, not a responses file"),
    ("grade responses a link to /dev/zero", "cli",
     lambda tmp, ds: ["grade", "--dataset", str(ds), "--responses", str(link(tmp / "r.jsonl", "/dev/zero")),
                      "--out", str(tmp / "run")],
     "r.jsonl: is a device, not a responses file"),
    ("grade repeat of 5000 digits", "cli", grade_argv(grade_line()[:-1] + ', "repeat": ' + "9" * 5000 + "}"),
     "r.jsonl:1: invalid JSON (Exceeds the limit (4300 digits)"),
]


def fifo(path: Path) -> Path:
    import os

    os.mkfifo(path)
    return path


def damaged(tmp: Path, ds: Path, manifest: bytes | None) -> Path:
    """A copy of the dataset whose manifest is `manifest` (None: a FIFO)."""
    import shutil

    d = tmp / "d"
    shutil.copytree(ds, d)
    (d / "manifest.json").unlink()
    if manifest is None:
        fifo(d / "manifest.json")
    else:
        (d / "manifest.json").write_bytes(manifest)
    return d


def loop(tmp: Path) -> Path:
    (tmp / "a.yaml").symlink_to(tmp / "b.yaml")
    (tmp / "b.yaml").symlink_to(tmp / "a.yaml")
    return tmp / "a.yaml"


def link(path: Path, to: str) -> Path:
    path.symlink_to(to)
    return path


@pytest.fixture(scope="module")
def tiny_dataset(tmp_path_factory) -> Path:
    from nphe4v.generate import generate_version

    out = tmp_path_factory.mktemp("ds") / "tiny"
    generate_version(out, version="tiny", seed=1, per_level=1, tasks=["BSP"], levels=[1], workers=1)
    return out


@pytest.mark.parametrize("name, entry, argv, expected", ROWS, ids=[r[0] for r in ROWS])
def test_refused_input_is_one_line(name, entry, argv, expected, tmp_path, tiny_dataset, capsys):
    if UNCREATABLE.parent == Path("/proc") and not Path("/proc").is_dir() and "uncreatable" in name:
        pytest.skip("needs /proc")
    args = argv(tmp_path, tiny_dataset)
    t0 = time.monotonic()
    if entry == "eval_all":
        rc = eval_all(args)
        cap = capsys.readouterr()
        err, out = cap.err, cap.out
    else:
        r = runner.invoke(app, args)
        rc, err, out = r.exit_code, r.output, ""
        assert r.exception is None or isinstance(r.exception, SystemExit), repr(r.exception)
    assert time.monotonic() - t0 < 60, "refused quickly (no exponential work before the refusal)"
    # progress lines ([generate ...], the explorer's "reading the runs") are not error lines
    lines = [ln for ln in err.splitlines() if ln.strip() and not ln.startswith(("[generate", "reading the runs"))]
    assert rc == 2 and len(lines) == 1, (rc, err)
    assert "Traceback" not in err + out
    want = expected.format(tmp=tmp_path)
    assert want in lines[0], (want, lines[0])
    assert not (tmp_path / "run").exists() and not (tmp_path / "data").exists()


def test_a_fine_config_with_shared_anchors_and_merges_still_reads(tmp_path):
    p = write(tmp_path, "ok.yaml", "base: &b {temperature: 0.0, max_tokens: 64}\n"
                                   "sampling:\n  <<: *b\n  max_tokens: 128\nother: [*b, *b]\n")
    raw = read_yaml_mapping(p, str(p))
    assert raw["sampling"] == {"temperature": 0.0, "max_tokens": 128}  # a merge may be overridden
    assert raw["other"] == [raw["base"], raw["base"]]


def test_the_registry_reads_through_the_strict_reader():
    from cluster.registry import DEFAULT_PATH, load_registry

    load_registry()  # reads through the same strict reader
    with pytest.raises(ConfigError, match="duplicate key"):
        read_yaml_mapping(write_tmp(DEFAULT_PATH.read_text() + "version: 1\n"), "models.yaml")


def write_tmp(text: str) -> Path:
    import tempfile

    f = tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False)
    f.write(text)
    f.close()
    return Path(f.name)


# --- the dataset cache key is computed on the normalised spec ---------------------------------------------------


@pytest.mark.parametrize("benchmark, implicit, explicit", [
    ("graphverse", {"version": "graphverse-testmini", "seed": 2026},
     {"version": "graphverse-testmini", "seed": 2026, "split": "testmini"}),
    ("graphverse", {"version": "graphverse-testmini", "seed": 2026, "limit": 51},
     {"version": "graphverse-testmini", "seed": 2026, "limit": 51, "split": "testmini", "sources": {}}),
    ("graphverse", {"version": "graphverse-full", "seed": 1}, {"version": "mine", "seed": 1, "split": "full"}),
    ("nphardeval4v", {"version": "v", "seed": 3, "per_level": 2},
     {"version": "v", "seed": 3, "per_level": 2, "levels": list(range(10, 0, -1)),
      "tasks": ["TSP", "SPP", "MSP", "KSP", "GCP", "EDP", "BSP", "GCP-D", "TSP-D", "SPP"]}),
])
def test_defaults_written_out_or_not_share_one_cache_folder(tmp_path, benchmark, implicit, explicit):
    a = DatasetSpec(benchmark=benchmark, generate=dict(**implicit))
    b = DatasetSpec(benchmark=benchmark, generate=dict(**explicit))
    assert dataset_path(a, tmp_path) == dataset_path(b, tmp_path)


def test_cache_folders_of_configs_that_leave_defaults_implicit_keep_their_names(tmp_path):
    """The normalisation is the form these specs already had: the shipped configs' cached datasets stay put
    within a generator revision (the pins move when `GENERATOR_REVISION` does: tests/test_generator_revision.py)."""
    spec = DatasetSpec(benchmark="graphverse", generate=dict(version="graphverse-testmini", seed=2026))
    assert dataset_path(spec, tmp_path).name == "graphverse-testmini-seed2026-d8dffec5b1d2"
    demo = DatasetSpec(benchmark="graphverse",
                       generate=dict(version="graphverse-testmini", seed=2026, limit=51))
    assert dataset_path(demo, tmp_path).name == "graphverse-testmini-seed2026-limit51-2a8f4542d853"
    paper = DatasetSpec(generate=dict(version="paper-2026", seed=2026, per_level=10))
    assert dataset_path(paper, tmp_path).name == "paper-2026-seed2026-n10-36ebba8cde56"
    # different datasets still differ
    other = [dict(version="graphverse-testmini", seed=2027), dict(version="graphverse-full", seed=2026),
             dict(version="graphverse-testmini", seed=2026, limit=5)]
    names = {dataset_path(DatasetSpec(benchmark="graphverse", generate=g), tmp_path).name for g in other}
    assert len(names) == 3 and dataset_path(spec, tmp_path).name not in names
