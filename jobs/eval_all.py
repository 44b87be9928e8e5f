"""Evaluate every configured model on every configured benchmark on Ray: `nphe4v run` under the name the
`ray job submit` recipe uses (`python jobs/eval_all.py --help` lists the options).

Locally:      python jobs/eval_all.py --config configs/demo.yaml
On a cluster: ray job submit --address http://HEAD:8265 --working-dir . -- python jobs/eval_all.py \\
                  --config configs/demo.yaml --out /shared/runs/demo
"""

import sys
from pathlib import Path

# Under `ray job submit --working-dir .` the uploaded tree is the cwd; make its packages win.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from nphe4v_cli.eval_all import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main())
