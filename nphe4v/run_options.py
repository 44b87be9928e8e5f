"""NPHardEval4V's run-level settings (`Benchmark.run_options`): written at the top level of a run config
(`parser:`, `prompts:`, `prompt_assets:`, `recognition:`), validated there by `cluster.config.RunConfig`, which
takes these fields from the plug-in."""

from __future__ import annotations

import os
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from evalcore.recognition import RecognitionSpec


def default_prompts() -> str:
    """The papers' prompts unless the site says otherwise (NPHE4V_PROMPTS=rewritten: e.g. a machine that cannot
    have the authors' files; the run manifest records the set used)."""
    value = os.environ.get("NPHE4V_PROMPTS", "").strip() or "paper"
    if value not in ("paper", "rewritten"):
        raise ValueError(f"NPHE4V_PROMPTS={value!r}: expected paper or rewritten")
    return value


class NPHardEval4VRunOptions(BaseModel):
    """NPHardEval4V's settings of a run (keys at the top level of the run config)."""

    model_config = ConfigDict(extra="forbid")

    recognition: RecognitionSpec = Field(
        RecognitionSpec(), description="NPHardEval4V's recognition experiment (does the figure show the described "
        "instance?): its asks per pair, mismatched controls and temperature")
    parser: Literal["tolerant", "paper"] = Field(
        "tolerant", description="NPHardEval4V: which parse of an answer the headline ER/AA use; both are always "
        "computed (tolerant = our extractor and exact verifiers, paper = the original NPHardEval4V code's parsers and "
        "checkers, quirks included: nphe4v.paper_check, ER_paper/AA_paper)")
    prompts: Literal["paper", "rewritten"] = Field(
        default_factory=lambda: default_prompts(),
        description="NPHardEval4V prompt set: paper (the original repository's prompt text and data rendering, "
        "read from its pinned files: nphe4v.upstream_assets) or rewritten (this project's nphe4v-prompt-v3); "
        "default paper, or NPHE4V_PROMPTS where a site sets it (docs/deviations.md lists the differences)")
    prompt_assets: str | None = Field(
        None, description="a local checkout of the original NPHardEval4V repository at the pinned commit (offline "
        "clusters); without it the pinned files are downloaded once into the cache")
