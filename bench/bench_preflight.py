"""The full preflight sweep of both paper configs with the tiny builds (`nphe4v preflight CONFIG --tiny`),
one config after the other in one process (one vLLM engine at a time); prints each table, the share of vLLM
entries that pass, the same for the open-weight entries as a whole (vLLM and transformers backends: the models
vLLM 0.32 lacks run on transformers), and the wall and CPU time of each config.

    python bench/bench_preflight.py [--json OUT.json] [CONFIG ...]

Default configs: configs/paper-graphverse.yaml and configs/paper-nphardeval4v.yaml. Target (issue 33):
>= 80 % of each config's open-weight entries ok, every other entry with its reason.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEFAULT = ["configs/paper-graphverse.yaml", "configs/paper-nphardeval4v.yaml"]


def _cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    c = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime + c.ru_utime + c.ru_stime


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("configs", nargs="*", default=DEFAULT)
    p.add_argument("--json", help="write every config's rows and timings here")
    p.add_argument("--tiny-root", default="data/models/tiny")
    args = p.parse_args()
    os.environ.setdefault("VLLM_LOGGING_LEVEL", "ERROR")
    sys.path.insert(0, str(ROOT))
    os.chdir(ROOT)
    from cluster.config_file import load_config
    from cluster.preflight import preflight, rows_json, summary, table

    report = {}
    for path in args.configs:
        cfg = load_config(path)
        t0, c0 = time.perf_counter(), _cpu()
        rows = preflight(cfg, tiny=True, tiny_root=args.tiny_root)
        wall, cpu = time.perf_counter() - t0, _cpu() - c0
        vllm = [r for r in rows if r.backend == "vllm"]
        ok = sum(r.status == "ok" for r in vllm)
        local = [r for r in rows if r.backend in ("vllm", "transformers")]
        local_ok = sum(r.status == "ok" for r in local)
        print(f"\n== {path}\n{table(rows)}\n{summary(rows)}")
        print(f"wall {wall:.0f} s, CPU {cpu:.0f} s ({len(vllm)} vLLM entries, {ok} ok; {len(local)} open-weight "
              f"entries, {local_ok} ok: {'meets' if local and local_ok >= 0.8 * len(local) else 'below'} the 80 % "
              "target)")
        report[path] = {"rows": rows_json(rows), "wall_s": round(wall, 1), "cpu_s": round(cpu, 1),
                        "vllm_entries": len(vllm), "vllm_ok": ok, "open_weight_entries": len(local),
                        "open_weight_ok": local_ok}
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
