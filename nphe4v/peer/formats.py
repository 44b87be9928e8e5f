"""The published data's layout and what reading it yields: task folders and file names per task, levels,
`PeerRecord` (one instance, data in our task data model) and `PeerFormatError`."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

PeerKind = Literal["nphardeval", "nphardeval4v"]
TaskName = Literal["BSP", "EDP", "SPP", "KSP", "TSP-D", "GCP-D", "TSP", "GCP", "MSP"]
CompareStatus = Literal["equal", "ours_better", "theirs_not_comparable", "MISMATCH"]
# our task name -> the peer's folder name (same in every version)
TASK_FOLDERS: dict[str, str] = {
    "BSP": "BSP",
    "EDP": "EDP",
    "SPP": "SPP",
    "KSP": "KSP",
    "TSP-D": "TSP_Decision",
    "GCP-D": "GCP_Decision",
    "TSP": "TSP",
    "GCP": "GCP",
    "MSP": "MSP",
}
JSON_FILES: dict[str, str] = {
    "BSP": "bsp_instances.json",
    "EDP": "edp_instances.json",
    "SPP": "spp_instances.json",
    "KSP": "ksp_instances.json",
    "MSP": "msp_instances.json",
}
ANSWER_FILES: dict[str, str] = {
    "BSP": "bsp_answers.json",
    "EDP": "edp_answers.json",
    "SPP": "spp_answers.json",
    "KSP": "ksp_answers.json",
    "TSP-D": "tsp_d_answers.json",
    "GCP-D": "gcp_d_answers.json",
    "TSP": "tsp_answers.json",
    "GCP": "gcp_answers.json",
}
LEVELS = range(1, 11)
PER_LEVEL = 10


class PeerFormatError(ValueError):
    """A peer file does not have the documented format. The message is one line naming the file."""


class PeerRecord(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    task: TaskName
    level: int = Field(ge=1, le=10)
    peer_index: int = Field(ge=0)
    data: dict[str, Any]
    source_file: str
    meta: dict[str, Any] = Field(default_factory=dict)


class PeerRecords(list[PeerRecord]):
    """The records read by `read_peer`, plus the warnings (skipped task folders) it collected."""

    def __init__(self, records: Iterable[PeerRecord] = (), warnings: Iterable[str] = ()) -> None:
        super().__init__(records)
        self.warnings: list[str] = list(warnings)

    def by_task(self, task: str) -> list[PeerRecord]:
        return [r for r in self if r.task == task]
