"""Rescore a finished run with another judge and/or a judge repeat: `nphe4v judge` under the name the
`ray job submit` recipe uses (`python jobs/judge_rerun.py --help` lists the options; docs/judge.md).

Locally:      python jobs/judge_rerun.py --run RUN_DIR --judge MODEL [--repeat K]     (= nphe4v judge RUN_DIR ...)
On a cluster: ray job submit --address http://HEAD:8265 --working-dir . -- python jobs/judge_rerun.py \\
                  --run /shared/runs/demo --judge gemini-3-flash

Every refusal is one line, `judge_rerun: error: ...`, exit status 2 (1 for I/O failures).
"""

import sys
from pathlib import Path

# Under `ray job submit --working-dir .` the uploaded tree is the cwd; make its packages win.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from nphe4v_cli.judge_rerun import script  # noqa: E402

# `main(argv)` / `cli(argv)`: the exit status, every failure one line (tests and scripts call these)
main = cli = script

if __name__ == "__main__":
    sys.exit(script())
