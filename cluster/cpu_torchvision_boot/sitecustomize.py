# Only on PYTHONPATH when cluster/cpu_torchvision.py put it there: child processes of a process that
# enabled the CPU torchvision overlay (e.g. vLLM's model-inspection subprocess) get the same import hook.
import os

if os.environ.get("NPHE4V_CPU_TORCHVISION"):
    import nphe4v_torchvision_hook

    nphe4v_torchvision_hook.install(os.environ["NPHE4V_CPU_TORCHVISION"])
