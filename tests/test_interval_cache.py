"""The leaderboard's bootstrap bounds kept next to the run (`report.interval_cache`, issue 20.2): computed once,
read back while the samples are unchanged, recomputed when a shard changes, written atomically, kept in memory
when the run folder cannot be written; and the bootstrap's model chunks change no bound."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import polars as pl
import pytest
from explorer_runs import build_explorer_runs

from nphe4v import bootstrap
from nphe4v import report_tables as nt
from nphe4v.bootstrap import AA_COLUMNS
from report import analysis
from report.explorer.store import Store
from report.interval_cache import CACHE_DIR, PREFIX, IntervalCache

BOOT_BOUNDS = [f"{c}_{s}" for c in ("RA_corrected", *AA_COLUMNS) for s in ("lo", "hi")]  # the board's

N_BOOT = 40
KEYS = ["version", "model", "prompt_mode"]


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> tuple[Path, Path]:
    return build_explorer_runs(tmp_path_factory.mktemp("ivcache"))


@pytest.fixture()
def run(built, tmp_path) -> Path:
    dst = tmp_path / "run"
    shutil.copytree(built[0], dst)
    return dst


def _bounds(board: pl.DataFrame) -> pl.DataFrame:
    return board.select(*KEYS, *BOOT_BOUNDS).sort(KEYS)


def _cache_files(run: Path) -> list[Path]:
    return sorted((run / CACHE_DIR).glob(f"{PREFIX}*.parquet"))


def test_bounds_are_the_reports_and_are_read_back_while_the_samples_are_unchanged(run) -> None:
    want = _bounds(nt.leaderboard(analysis.frame_of([run]), n_boot=N_BOOT))
    assert want.select(pl.col("AA_All_lo").is_not_null().sum()).item() > 0
    first = Store([run], n_boot=N_BOOT)
    assert _bounds(first.boards()["mode"].table).equals(want)
    files = _cache_files(run)
    assert len(files) == 1 and not list((run / CACHE_DIR).glob(".tmp-*"))
    # a second server reads the file: a bound written there by hand is what it shows
    planted = pl.read_parquet(files[0]).with_columns(AA_All_lo=pl.lit(-7.0))
    planted.write_parquet(files[0])
    second = Store([run], n_boot=N_BOOT)
    assert second.boards()["mode"].table["AA_All_lo"].drop_nulls().unique().to_list() == [-7.0]
    # a different number of draws is another key
    assert IntervalCache([run], N_BOOT + 1, nt.DEFAULT_SEED).path != files[0]


def test_a_changed_shard_recomputes_and_replaces_the_old_file(run) -> None:
    Store([run], n_boot=N_BOOT).boards()
    old = _cache_files(run)
    shard = sorted(run.glob("samples/*/*/*.parquet"))[0]
    df = pl.read_parquet(shard)
    df.head(df.height - 1).write_parquet(shard)  # one sample fewer
    board = Store([run], n_boot=N_BOOT).boards()["mode"].table
    assert _bounds(board).equals(_bounds(nt.leaderboard(analysis.frame_of([run]), n_boot=N_BOOT)))
    new = _cache_files(run)
    assert len(new) == 1 and new != old


def test_an_unwritable_run_folder_keeps_the_bounds_in_memory(run) -> None:
    (run / CACHE_DIR).write_text("not a folder")  # mkdir and every write below it fail
    store = Store([run], n_boot=N_BOOT)
    assert _bounds(store.boards()["mode"].table).equals(_bounds(nt.leaderboard(analysis.frame_of([run]), n_boot=N_BOOT)))
    assert (run / CACHE_DIR).read_text() == "not a folder"
    assert not [p for p in run.iterdir() if p.name.startswith(".tmp-")]


def test_a_run_still_running_gets_no_cache_file(run) -> None:
    manifest = json.loads((run / "manifest.json").read_text())
    (run / "manifest.json").write_text(json.dumps({**manifest, "status": "running"}))
    store = Store([run], n_boot=N_BOOT)
    assert _bounds(store.boards()["mode"].table).equals(_bounds(nt.leaderboard(analysis.frame_of([run]), n_boot=N_BOOT)))
    assert not (run / CACHE_DIR).exists()


def test_background_bounds_arrive_after_the_quick_board(run) -> None:
    store = Store([run], n_boot=N_BOOT, background_intervals=True)
    store.warm()
    assert store.wait_intervals(timeout=120)
    assert _bounds(store.boards()["mode"].table).equals(_bounds(nt.leaderboard(analysis.frame_of([run]), n_boot=N_BOOT)))
    assert store.interval_error is None


def test_model_chunks_change_no_bound(built, monkeypatch) -> None:
    df = analysis.samples(list(built), light=True)
    whole = nt.leaderboard(analysis.frame_of(df), n_boot=N_BOOT)
    bootstrap._BOOT_CACHE.clear()
    monkeypatch.setattr(bootstrap, "_MODEL_CHUNK", 1)
    one_by_one = nt.leaderboard(analysis.frame_of(df), n_boot=N_BOOT)
    bootstrap._BOOT_CACHE.clear()
    assert one_by_one.equals(whole)
