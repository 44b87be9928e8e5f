"""Secrets are redacted by value as well as by name, everywhere a run writes.

Unit level: `evalcore.secrets.redact` on text, on configs and on Polars frames (its vectorised pre-filter is
cross-checked against the plain per-cell function), secret files, the log filter. End to end: a real
`eval_all` (a baseline and a litellm model on a fake provider over loopback HTTP, plus an LLM judge on the
same provider) whose provider echoes every key it receives, in answers and in error messages; every file of
the run folder and the command's stdout/stderr are then searched for each key.
"""

from __future__ import annotations

import json
import logging
import os
import re
import secrets as pysecrets
import subprocess
import sys
from pathlib import Path
from urllib.parse import quote

import polars as pl
import pytest
from conftest import PROJECT
from fake_provider import FakeProvider
from hypothesis import given, settings
from hypothesis import strategies as st

from evalcore import secrets

# runtime-made values: no key below is key-shaped (sk-...), so only redaction by value can catch them
ENV_KEY = "EnvKey" + pysecrets.token_hex(10)
URL_KEY = "UrlKey" + pysecrets.token_hex(10)
HDR_KEY = "HdrKey" + pysecrets.token_hex(10)
FILE_KEY = "FileKey" + pysecrets.token_hex(10)
ENV = "NPHE4V_SECRETS_TEST_KEY"


@pytest.fixture(autouse=True)
def _env(monkeypatch):
    monkeypatch.setenv(ENV, ENV_KEY)


# ------------------------------------------------------------------------------------------------ text


@pytest.mark.parametrize(
    ("text", "secret"),
    [
        (f"GET http://h:8000/v1/chat?api_key={URL_KEY}&x=1", URL_KEY),
        (f"https://generativelanguage.googleapis.com/v1beta/models/m:generate?key={URL_KEY}", URL_KEY),
        (f"wss://h/stream?foo=1&access_token={URL_KEY}", URL_KEY),
        (f"https://blob/x?sv=2024&sig={URL_KEY}", URL_KEY),
        (f"a&amp;token={URL_KEY}&amp;b=2", URL_KEY),  # HTML-escaped URL in a report
        (f"Authorization: Bearer {HDR_KEY}", HDR_KEY),
        (f"authorization: Basic {HDR_KEY}", HDR_KEY),
        (f'{{"x-api-key": "{HDR_KEY}"}}', HDR_KEY),
        (f"headers={{'api-key': '{HDR_KEY}'}}", HDR_KEY),  # Azure
        (f"litellm.acompletion(model=m, api_key='{HDR_KEY}')", HDR_KEY),
        (f'\\"Authorization\\": \\"Bearer {HDR_KEY}\\"', HDR_KEY),  # JSON inside JSON (judge raw outputs)
        (f"the provider said: invalid key {ENV_KEY}.", ENV_KEY),  # by value, from api_key_env's variable
        (f"Bearer {HDR_KEY}", HDR_KEY),
        ("key sk-live-abcdef123456 in prose", "sk-live-abcdef123456"),  # key-shaped, value unknown
    ],
    # ids without the random keys: every pytest-xdist worker must collect the same test names
    ids=lambda v: re.sub(r"(EnvKey|UrlKey|HdrKey)[0-9a-f]{20}", r"<\1>", str(v)),
)
def test_secret_in_text_is_removed(text, secret):
    secrets.register_env(ENV)
    clean = secrets.redact(text)
    assert secret not in clean and secrets.REDACTED in clean


@pytest.mark.parametrize(
    "text",
    [
        "max_tokens=1024 and a token budget of 512",
        "api_key_env: OPENAI_API_KEY",
        '{"api_key_env": "MY_KEY", "max_tokens": 4096, "prompt_tokens": 12}',
        "the bearer of bad news; Basic reasoning; Token counts",
        "http://127.0.0.1:8000/v1?max_tokens=5&page=2",
        "Authorization header missing",
        "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==",
        "<answer>AIza is not a key</answer> task-0123456789 desk-lamp",
    ],
)
def test_harmless_text_is_kept(text):
    assert secrets.redact(text) == text


@pytest.mark.parametrize("header", ["Authorization: Bearer ", '"Authorization": "Bearer ', "x-api-key: ",
                                    "Authorization: Basic ", "api_key=", "'api_key': '", "Bearer "])
def test_redacting_redacted_text_changes_nothing(header):
    """Text is redacted more than once (a record, then its log line, then the report): the marker stays the
    marker (it once grew a bracket per pass: `Bearer [REDACTED]]]]`), and a key after it is still removed."""
    once = secrets.redact(f"{header}sk-live-abcdef123456 rest")
    assert "sk-live" not in once and secrets.REDACTED in once
    assert secrets.redact(once) == once and secrets.redact(secrets.redact(once)) == once
    assert secrets.redact(f"{header}{secrets.REDACTED}") == f"{header}{secrets.REDACTED}"
    assert "]]" not in secrets.redact(secrets.redact(f"{header}{secrets.REDACTED}"))


def test_secret_found_by_shape_in_a_config_is_then_removed_by_value():
    secret = "Learned" + pysecrets.token_hex(8)
    # free text teaches nothing (a shape there may be a false positive) ...
    assert secrets.redact(f"http://h/v1?api_key={secret}") == f"http://h/v1?api_key={secrets.REDACTED}"
    assert secrets.redact(f"echo: {secret}.") == f"echo: {secret}."
    # ... a config does: its api_base's key is then caught wherever it is echoed
    assert secrets.redact({"api_base": f"http://h/v1?api_key={secret}"}) == {
        "api_base": f"http://h/v1?api_key={secrets.REDACTED}"}
    assert secrets.redact(f"echo: {secret}.") == f"echo: {secrets.REDACTED}."
    # a key echoed URL-encoded as well as plain
    odd = "Odd+Key/" + pysecrets.token_hex(6)
    secrets.register_secret(odd)
    assert secrets.redact(f"u={quote(odd, safe='')} p={odd}") == f"u={secrets.REDACTED} p={secrets.REDACTED}"


def test_secret_files_and_registry_variables(tmp_path, monkeypatch):
    f = tmp_path / "key.txt"
    f.write_text(FILE_KEY + "\n")
    monkeypatch.delenv("NPHE4V_FILEONLY_KEY", raising=False)
    monkeypatch.setenv("NPHE4V_FILEONLY_KEY_FILE", str(f))
    assert secrets.get_key("openai", "NPHE4V_FILEONLY_KEY") == FILE_KEY  # <VAR>_FILE stands in for <VAR>
    secrets.require_key("m", "openai", "NPHE4V_FILEONLY_KEY")
    monkeypatch.setenv("OTHER_SERVICE_API_KEY_FILE", str(f))
    assert FILE_KEY not in secrets.redact(f"x {FILE_KEY} y")
    # every api_key_env of the registry counts, even one without a secret-like suffix
    assert {"OPENAI_API_KEY", "PALM_API_KEY", "GEMINI_API_KEY"} <= secrets.known_env_names()
    monkeypatch.setenv("OPENAI_API_KEY", "Openai" + pysecrets.token_hex(8))
    assert os.environ["OPENAI_API_KEY"] not in secrets.redact("k=" + os.environ["OPENAI_API_KEY"])


# ------------------------------------------------------------------------------------------------ configs


def test_config_keeps_harmless_fields_and_blanks_secret_ones():
    name = "NPHE4V_CFG_ONLY_VAR"
    os.environ[name] = "CfgVar" + pysecrets.token_hex(8)
    try:
        cfg = {
            "sampling": {"temperature": 0.0, "max_tokens": 1024, "seed": 0},
            "models": [{
                "name": "m", "backend": "litellm",
                "options": {
                    "model": "openai/x", "api_key_env": name, "max_concurrency": 4,
                    "api_base": f"http://h/v1?api_key={URL_KEY}",
                    "extra": {"extra_headers": {"X-Custom-Auth": HDR_KEY, "X-Team": "vision", "api-key": "k1234567"},
                              "api_key": "Inline" + pysecrets.token_hex(6)},
                },
            }],
            "judge": {"model": "openai/j", "options": {"api_key_env": "NPHE4V_JUDGE_VAR", "max_tokens": 256}},
        }
        out = secrets.redact(cfg)
        opts = out["models"][0]["options"]
        assert out["sampling"] == cfg["sampling"]
        assert opts["api_key_env"] == name and opts["max_concurrency"] == 4 and opts["model"] == "openai/x"
        assert opts["api_base"] == f"http://h/v1?api_key={secrets.REDACTED}"
        assert opts["extra"]["extra_headers"] == {"X-Custom-Auth": "<redacted>", "X-Team": "vision",
                                                  "api-key": "<redacted>"}
        assert opts["extra"]["api_key"] == "<redacted>"
        assert out["judge"]["options"] == {"api_key_env": "NPHE4V_JUDGE_VAR", "max_tokens": 256}
        # the config taught the redactor its secrets, and the value behind the variable its api_key_env names
        leaked = f"{URL_KEY} {HDR_KEY} {cfg['models'][0]['options']['extra']['api_key']} {os.environ[name]}"
        assert secrets.redact(leaked) == " ".join([secrets.REDACTED] * 4)
    finally:
        del os.environ[name]


def test_processes_that_write_learn_their_own_options(monkeypatch):
    """The judge driver (judge_rerun too) and the model actors learn keys inline in their options."""
    from cluster.backends.litellm_api import LiteLLMBackend
    from cluster.judge_work import resolve_spec

    judge_key, model_key = "JudgeUrl" + pysecrets.token_hex(8), "ModelHdr" + pysecrets.token_hex(8)
    resolve_spec("openai/j", {"api_base": f"http://127.0.0.1:9/v1?key={judge_key}", "api_key_env": ENV})
    LiteLLMBackend("m", {"model": "openai/m", "api_key_env": ENV, "limiter": "local",
                         "extra": {"extra_headers": {"X-Api-Key": model_key}}})
    assert secrets.redact(f"{judge_key} {model_key}") == f"{secrets.REDACTED} {secrets.REDACTED}"


def test_secret_field_names():
    for name in ("api_key", "apiKey", "x-api-key", "Authorization", "X-Custom-Auth", "access_token", "client_secret",
                 "password", "key", "Cookie"):
        assert secrets.is_secret_field(name), name
    for name in ("api_key_env", "max_tokens", "prompt_tokens", "completion_tokens", "key_id", "keyword", "tokens",
                 "author", "secret_file", "model", "api_base"):
        assert not secrets.is_secret_field(name), name


# ------------------------------------------------------------------------------------------------ frames


_pieces = st.sampled_from([
    "ok ", "answer: 3", "?api_key=", "&token=", "key=", "Authorization: ", "Bearer ", "x-api-key: ", "sk-",
    "abcdefgh12", ENV_KEY, "max_tokens=5", "api_key_env", "\n", "{\"", "\":\"", "AIza", "hf_", "=", "&", "?",
    "task", "_", "é", "-", "0123456789abcdefghijklmnopqrstuvwxyz", "ghp_", "gsk_", "xai-", " ", "BEARER ",
])
_texts = st.one_of(st.none(), st.lists(_pieces, max_size=8).map("".join), st.text(max_size=40))


@settings(max_examples=400, deadline=None)
@given(st.lists(st.tuples(_texts, _texts), min_size=1, max_size=12))
def test_redact_frame_equals_redact_per_cell(rows):
    secrets.register_env(ENV)
    frame = pl.DataFrame({"model": [f"m{i}" for i in range(len(rows))], "a": [r[0] for r in rows],
                          "b": [r[1] for r in rows], "n": list(range(len(rows)))},
                         schema={"model": pl.String, "a": pl.String, "b": pl.String, "n": pl.Int64})
    got = secrets.redact_frame(frame, keep=("model",))
    want = [(None if a is None else secrets.redact(a), None if b is None else secrets.redact(b)) for a, b in rows]
    assert list(zip(got["a"].to_list(), got["b"].to_list(), strict=True)) == want
    assert got["model"].to_list() == frame["model"].to_list() and got["n"].to_list() == frame["n"].to_list()


def test_redact_frame_key_columns_untouched():
    frame = pl.DataFrame({"model": [f"sk-model-{ENV_KEY}"], "raw_response": [f"echo {ENV_KEY}"]})
    secrets.register_env(ENV)
    out = secrets.redact_frame(frame, keep=("model",))
    assert out["model"][0] == frame["model"][0] and out["raw_response"][0] == f"echo {secrets.REDACTED}"


def test_report_redaction_changes_nothing_harmless(tmp_path, monkeypatch):
    """A report without secrets (embedded images, scripts, styles, hostile markup) is written byte for byte
    as without redaction: the patterns have no false positive there."""
    from test_report import build_runs

    import report.html_report as hr

    runs = build_runs(tmp_path / "runs")

    def build(d: Path) -> None:
        hr.build_report(list(runs), d / "report.html", d / "report.md", d / "csv", n_boot=50)

    build(tmp_path / "a")
    monkeypatch.setattr(hr, "redact", lambda text: text)
    monkeypatch.setattr(hr, "redact_frame", lambda frame: frame)
    build(tmp_path / "b")
    html = (tmp_path / "a" / "report.html").read_text()
    assert "data:image/png;base64," in html and "<script" in html
    files = sorted(p.relative_to(tmp_path / "a") for p in (tmp_path / "a").rglob("*") if p.is_file())
    assert len(files) > 5
    for f in files:
        assert (tmp_path / "a" / f).read_bytes() == (tmp_path / "b" / f).read_bytes(), f


# ------------------------------------------------------------------------------------------------ logs


def test_log_records_of_any_logger_are_redacted_at_the_root_handler(tmp_path):
    path = tmp_path / "run.log"
    handler = logging.FileHandler(path)
    root = logging.getLogger()
    root.addHandler(handler)
    try:
        secrets.install_log_redaction()
        secrets.register_env(ENV)
        logging.getLogger("some.library.child").warning("calling %s with %s", f"http://h?key={URL_KEY}", ENV_KEY)
        handler.flush()
    finally:
        root.removeHandler(handler)
        handler.close()
    text = path.read_text()
    assert "calling" in text and URL_KEY not in text and ENV_KEY not in text


# ------------------------------------------------------------------------------------------------ end to end


def _leaks(text: str, keys: list[str]) -> list[str]:
    return [k for k in keys if k in text or quote(k, safe="") in text]


def _scan_run(out: Path, keys: list[str]) -> tuple[list[str], int]:
    found, files = [], 0
    for path in sorted(p for p in out.rglob("*") if p.is_file()):
        files += 1
        if path.suffix == ".parquet":
            frame = pl.read_parquet(path)
            text = frame.select(pl.all().cast(pl.String)).write_csv()
        else:
            text = path.read_bytes().decode("utf-8", "replace")
        found += [f"{path.relative_to(out)}: {k[:10]}..." for k in _leaks(text, keys)]
    return found, files


@pytest.mark.slow(reason="a whole eval_all run of both benchmarks with the LLM judge against a fake provider")
def test_eval_all_writes_no_key_anywhere(tmp_path):
    from gie.dataset import generate_split
    from nphe4v.generate import generate_version

    generate_version(tmp_path / "np", version="sec", seed=3, per_level=1, tasks=["SPP", "GCP-D"], levels=[1],
                     workers=1)
    generate_split(tmp_path / "gv", "testmini", 0, limit=2, workers=0)
    keys = [ENV_KEY, URL_KEY, HDR_KEY]
    # the provider's first answer is a 400 quoting the key and the request (as some providers do)
    # the judge has its own provider: with the judge streaming beside the models, it could otherwise be the one
    # served the scripted 400
    with (FakeProvider(echo_secrets=True, script=["400key"], lifetime_s=600) as fp,
          FakeProvider(echo_secrets=True, lifetime_s=600) as fj):
        base = f"{fp.base_url}?api_key={URL_KEY}"
        options = {"model": "openai/fake-model", "api_base": base, "api_key_env": ENV, "max_attempts": 1,
                   "backoff_base_s": 0.01, "extra": {"extra_headers": {"X-Custom-Auth": HDR_KEY, "X-Trace": ENV_KEY}}}
        judge_opts = {"api_base": f"{fj.base_url}?api_key={URL_KEY}", "api_key_env": ENV, "max_malformed": 1, "max_attempts": 1,
                      "max_tokens": 64, "extra": {"extra_headers": {"X-Custom-Auth": HDR_KEY}}}
        cfg = {
            "name": "secrets",
            "datasets": [{"path": str(tmp_path / "np")}, {"benchmark": "graphverse", "path": str(tmp_path / "gv")}],
            "models": [{"name": "oracle"}, {"name": "fake-api", "backend": "litellm", "batch_size": 4,
                                            "options": options}],
            "prompt_modes": ["figure+limited_text"],
            "recognition": {"enabled": False},
            "sampling": {"temperature": 0.0, "max_tokens": 64, "seed": 0},
            "ray": {"num_cpus": 2},
            "judge": {"model": "openai/fake-judge", "options": judge_opts, "actors": 1},
        }
        cfg_path = tmp_path / "secrets.yaml"
        cfg_path.write_text(json.dumps(cfg))  # JSON is YAML
        out = tmp_path / "run"
        env = {**os.environ, ENV: ENV_KEY, "LITELLM_LOCAL_MODEL_COST_MAP": "True", "PYTHONPATH": str(PROJECT)}
        env.pop("RAY_ADDRESS", None)
        done = subprocess.run(
            [sys.executable, str(PROJECT / "jobs" / "eval_all.py"), "--config", str(cfg_path), "--out", str(out),
             "--data-root", str(tmp_path / "data")],
            cwd=tmp_path, capture_output=True, text=True, timeout=900, env=env,
        )
        hits = list(fp.hits) + list(fj.hits)
    assert done.returncode == 0, done.stderr[-3000:]

    # the keys did travel: in the query string, the bearer header and the custom headers, and came back
    assert hits and all(URL_KEY in h.path_qs and h.auth == f"Bearer {ENV_KEY}" for h in hits)
    assert all({k.lower(): v for k, v in h.headers.items()}.get("x-custom-auth") == HDR_KEY for h in hits)
    samples = pl.read_parquet(out / "samples" / "**" / "*.parquet")
    api = samples.filter(pl.col("model") == "fake-api")
    assert api.height == 2 + 2 and (api["status"] == "ok").sum() >= 2
    echoed = "\n".join(api["raw_response"].drop_nulls().to_list() + api["error"].drop_nulls().to_list())
    assert "[echo]" in echoed and "Incorrect API key provided: [REDACTED]" in echoed
    assert (out / "report.html").is_file()
    judged = pl.read_parquet(out / "judgments" / "**" / "*.parquet")
    llm = judged.filter(pl.col("judge") == "openai/fake-judge")
    assert llm.height > 0 and "[REDACTED]" in "".join(llm["raw_output"].drop_nulls().to_list())

    leaks, files = _scan_run(out, keys)
    assert files >= 8
    assert not leaks, leaks
    assert not _leaks(done.stdout + done.stderr, keys)

    # harmless fields keep their values
    manifest = json.loads((out / "manifest.json").read_text())
    m_opts = next(m for m in manifest["config"]["models"] if m["name"] == "fake-api")["options"]
    assert m_opts["api_key_env"] == ENV and m_opts["max_attempts"] == 1
    assert m_opts["api_base"] == f"{fp.base_url}?api_key=[REDACTED]"
    assert m_opts["extra"]["extra_headers"] == {"X-Custom-Auth": "<redacted>", "X-Trace": "[REDACTED]"}
    assert manifest["config"]["sampling"]["max_tokens"] == 64
    assert manifest["config"]["judge"]["options"]["max_tokens"] == 64
