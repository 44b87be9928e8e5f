"""Does a dataset depend on the CPU? Generates the same version and seed once per OpenBLAS kernel set (each in a
new process with OPENBLAS_CORETYPE, so its LAPACK runs the kernels another CPU would get) and prints each
dataset's hash, its CPU time, and whether all agree; exit status 1 when they do not.

    PYTHONPATH=. .venv/bin/python bench/bench_cpu_kernels.py [--benchmark nphardeval4v|graphverse]
        [--seed 2026] [--per-level 10] [--limit N] [--kernels Prescott,Haswell,Zen,SkylakeX]

Up to GENERATOR_REVISION 2026-12-05a, GCP-D's pair walk broke ties between equal eigenvalues by the noise of the
kernel (docs/deviations.md, "Same bytes on every CPU"): the full default version (seed 2026) then differed in all
60 GCP-D instances of levels 5-10 between the Zen kernel and an AVX-512 machine's. A kernel the CPU lacks (AVX-512
ones on an AVX2 machine) is skipped by OpenBLAS, which then runs its own choice; numpy builds on another BLAS (MKL,
Accelerate) ignore the variable, and every row is then the machine's own kernels.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

_CHILD = """
import sys, time
from pathlib import Path
sys.path.insert(0, sys.argv[1])
from evalcore.dataset import load_dataset
bench, out, seed, per_level, limit = sys.argv[2], Path(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]), sys.argv[6]
t = time.process_time()
if bench == "nphardeval4v":
    from nphe4v.generate import generate_version
    generate_version(out, version="nphardeval4v-v1", seed=seed, per_level=per_level, workers=1)
else:
    from gie.dataset import generate_split
    generate_split(out, "testmini", seed, limit=int(limit) if limit != "none" else None, workers=0)
print(load_dataset(out, check_images=False).manifest.dataset_sha256, round(time.process_time() - t, 1))
"""


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--benchmark", choices=["nphardeval4v", "graphverse"], default="nphardeval4v")
    ap.add_argument("--seed", type=int, default=2026)
    ap.add_argument("--per-level", type=int, default=10, help="NPHardEval4V instances per task and level")
    ap.add_argument("--limit", type=int, default=None, help="GraphVerse instances (default: the whole testmini)")
    ap.add_argument("--kernels", default="native,Prescott,Haswell,Zen,SkylakeX",
                    help="OpenBLAS core types; 'native' leaves the choice to the CPU")
    args = ap.parse_args()
    hashes = {}
    with tempfile.TemporaryDirectory() as tmp:
        for k in args.kernels.split(","):
            env = {**os.environ}
            env.pop("OPENBLAS_CORETYPE", None)
            if k != "native":
                env["OPENBLAS_CORETYPE"] = k
            t0 = time.perf_counter()
            out = subprocess.run([sys.executable, "-c", _CHILD, str(ROOT), args.benchmark, str(Path(tmp) / k),
                                  str(args.seed), str(args.per_level), str(args.limit or "none")],
                                 env=env, capture_output=True, text=True, check=True)
            sha, cpu = out.stdout.split()[-2:]
            hashes[k] = sha
            print(f"{k:10} {sha[:16]}  {cpu} CPU s  {time.perf_counter() - t0:.1f} s wall", flush=True)
    same = len(set(hashes.values())) == 1
    print("all kernels give the same dataset" if same else "DIFFERENT datasets for the same version and seed")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
