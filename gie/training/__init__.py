"""Training with GraphVerse (the paper's §5.3 and Appendix E): the GRPO reward of Appendix E.4 and a strict
verifier reward (`reward`), a reference solution per instance written from the exact solver's certificate
(`reference`), and the SFT / TRL / verl exports with the paper's ablation filters (`export`).

Every verdict here is the benchmark's own: the final answer is read by `evalcore.extract` and the task's
parser and graded by the task's exact verifier (`gie/tasks/<task>.py`), as a live run's score stage grades it.
"""
