"""The recognition experiment's control pairs are the shared core's (`evalcore.recognition`): the cluster plans
them for every benchmark with `recognition = True`. Re-exported here for NPHardEval4V's own modules."""

from __future__ import annotations

from evalcore.recognition import control_gaps, mismatch_partners

__all__ = ["control_gaps", "mismatch_partners"]
