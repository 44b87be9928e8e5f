"""The GRPO reward of the paper's Appendix E.4, and a strict verifier reward beside it.

E.4 reward = thinking + format + content, clipped to [0, 1] and rounded to 2 decimals:

* thinking (0 .. `thinking_max` = 0.25): grows linearly with the reasoning's informative length (words of its
  distinct sentences) and is full at `full_thinking_words`; `verbose_penalty` (0.05) is taken off when the
  whole completion is longer than `verbose_words` (excessively verbose).
* format (`format_reward` = 0.20): the final answer follows the task's answer format, i.e. the benchmark can
  read it: `evalcore.extract` finds it and the task's parser accepts it (the same two steps a live run's
  score stage takes). Otherwise the thinking reward keeps only `unformatted_thinking_keep` of itself and the
  content is not evaluated.
* content (0, or `content_value` = 0.30 .. `content_exact` = 0.55): only an answer the task's exact verifier
  grades correct earns content. `content_exact` when the answer also carries the complete certificate (the
  set, path, tour, colouring, cycle or mapping, valid and agreeing with any value it states: the paper's exact
  set match); `content_value` when only the value / keyword is right (a value-scored task, SD / DIAM / GED /
  MCS, answered without a valid witness, or a stated size that contradicts the answer's own witness).

Property (tested in tests/test_training_reward.py, enforced for every config by `RewardConfig`):

* what may raise the reward: a correct answer (content), a readable answer (format), and up to
  `thinking_max` for longer reasoning;
* what must not: padding the reasoning or the completion raises it by at most `thinking_max` (repeated
  sentences count once, and past `verbose_words` the penalty applies); no padding lifts a wrong answer to a
  correct one's reward, because `content_value > thinking_max`: any correct answer, even without reasoning,
  scores above any wrong answer with any reasoning. Restating the format example, repeating the answer,
  several answer blocks (the last complete one decides, as in the benchmark) and listing every node earn
  content only where the benchmark itself grades the answer correct.

The strict reward is 1.0 iff the exact verifier says correct, else 0.0.

Both are exposed in TRL's reward-function signature (`graphverse_reward(completions, **kwargs)`, reading the
`ground_truth` column; completions as strings or as conversational message lists) and verl's
(`compute_score(data_source, solution_str, ground_truth, extra_info=None)`). The ground truth is the JSON
string `ground_truth_json(instance)`: task, the graph(s) the question is asked on, the query and the gold.
"""

# No `from __future__ import annotations` here: verl loads `custom_reward_function.path` by executing this file
# under a generated name that it does not put in `sys.modules`, and `@dataclass` looks a class's module up
# there to read string annotations (AttributeError on None). With annotations evaluated, the file loads that
# way too (tests/test_training_reward.py loads it with verl's loader); forward references are quoted.
import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Literal

import networkx as nx
from pydantic import BaseModel, ConfigDict, Field, model_validator

from evalcore.extract import MAX_INPUT_CHARS, extract_final_answer, extract_final_answer_text
from evalcore.hashing import canonical_json
from evalcore.schema import Gold, Instance, ParseError, Verdict
from gie.catalogue import CATALOGUE, VALUE_SCORED
from gie.graphs import from_node_link
from gie.tasks import get_config

DATA_SOURCE = "graphverse"
Tier = Literal["exact", "value", "none"]


class RewardConfig(BaseModel):
    """The constants of the E.4 reward. The paper gives the ranges (thinking 0-0.25, penalty 0.05, format 0.20,
    content 0.30-0.55); the length scale, the verbosity limit and the deduction are ours (docs/deviations.md)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    thinking_max: float = Field(0.25, ge=0, le=1)
    # informative reasoning words (distinct sentences) at which the thinking reward is full
    full_thinking_words: int = Field(50, ge=1)
    # completion words beyond which the completion is excessively verbose
    verbose_words: int = Field(1500, ge=1)
    verbose_penalty: float = Field(0.05, ge=0, le=1)
    format_reward: float = Field(0.20, ge=0, le=1)
    # share of the thinking reward kept when the final answer is not in the task's format
    unformatted_thinking_keep: float = Field(0.5, ge=0, le=1)
    content_exact: float = Field(0.55, ge=0, le=1)
    content_value: float = Field(0.30, ge=0, le=1)

    @model_validator(mode="after")
    def _property(self) -> "RewardConfig":
        if self.content_value <= self.thinking_max:
            raise ValueError(f"content_value {self.content_value} must exceed thinking_max {self.thinking_max}: "
                             "otherwise padded reasoning could lift a wrong answer above a correct one")
        if self.content_exact < self.content_value:
            raise ValueError("content_exact must not be below content_value")
        if self.verbose_words <= self.full_thinking_words:
            raise ValueError("verbose_words must exceed full_thinking_words")
        return self

    @property
    def maximum(self) -> float:
        return round(min(1.0, self.thinking_max + self.format_reward + self.content_exact), 2)


DEFAULT = RewardConfig()


# ------------------------------------------------------------------------------------------------ ground truth


class GroundTruth(BaseModel):
    """What the reward needs of an instance: the task, the graph(s) asked on (node-link), the query, the gold."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    task: str
    asked: list[dict[str, Any]]
    query: dict[str, Any] = {}
    gold: Gold
    instance_id: str = ""

    @model_validator(mode="after")
    def _known(self) -> "GroundTruth":
        if self.task not in CATALOGUE:
            raise ValueError(f"task {self.task!r} is not a GraphVerse task ({', '.join(CATALOGUE)})")
        return self


def ground_truth(instance: Instance) -> GroundTruth:
    if instance.benchmark != "graphverse":
        raise ValueError(f"{instance.instance_id}: benchmark {instance.benchmark!r}, expected graphverse")
    return GroundTruth(task=instance.task, asked=instance.data["asked"], query=instance.data.get("query") or {},
                       gold=instance.gold, instance_id=instance.instance_id)


def ground_truth_json(instance: Instance) -> str:
    """The `ground_truth` column of the exports: one JSON string (the same type for every task)."""
    return canonical_json(ground_truth(instance).model_dump(mode="json"))


@dataclass(frozen=True)
class _Truth:
    task: str
    graphs: tuple[nx.Graph, ...]
    query: dict[str, Any]
    gold: Gold


@lru_cache(maxsize=512)
def _truth_from_json(text: str) -> _Truth:
    # A GRPO group scores several completions of one prompt: the graphs are built once per ground truth.
    try:
        gt = GroundTruth.model_validate_json(text)
    except ValueError as e:
        raise ValueError(f"ground_truth: not a GraphVerse ground truth ({str(e).splitlines()[0]})") from None
    return _Truth(gt.task, tuple(from_node_link(a) for a in gt.asked), gt.query, gt.gold)


def _truth(value: Any) -> _Truth:
    if isinstance(value, GroundTruth):
        value = canonical_json(value.model_dump(mode="json"))
    elif isinstance(value, dict):
        value = canonical_json(value)
    if not isinstance(value, str):
        raise ValueError(f"ground_truth: expected the export's JSON string, got {type(value).__name__}")
    return _truth_from_json(value)


# ------------------------------------------------------------------------------------------------ grading


@dataclass(frozen=True)
class Graded:
    """The benchmark's reading of a completion: the parse error, or the canonical answer and its verdict."""

    error: ParseError | None
    verdict: Verdict | None
    tier: Tier

    @property
    def correct(self) -> bool:
        return self.verdict is not None and self.verdict.verdict == "correct"


def grade(text: str, truth: Any) -> Graded:
    """Extract, parse and verify as the score stage does (`evalcore.scoring.score_answer`), on the ground truth."""
    t = _truth(truth)
    cfg = get_config(t.task)
    extracted = extract_final_answer_text(text) if cfg.bare is not None else extract_final_answer(text)
    if isinstance(extracted, ParseError):
        return Graded(extracted, None, "none")
    canonical = cfg.parse_answer(extracted)
    if isinstance(canonical, ParseError):
        return Graded(canonical, None, "none")
    verdict = cfg.verify_answer(list(t.graphs), t.query, t.gold, canonical)
    return Graded(None, verdict, _tier(t, verdict))


def _tier(t: _Truth, v: Verdict) -> Tier:
    if v.verdict != "correct":
        return "none"
    if v.witness_valid is False or v.value_consistent is False:
        return "value"
    if t.task in VALUE_SCORED and v.witness_valid is not True and _gold_has_witness(t.gold):
        return "value"  # the number is right, the path / mapping that establishes it is missing
    return "exact"


def _gold_has_witness(gold: Gold) -> bool:
    return any(isinstance(v, list | dict) and len(v) > 0 for v in gold.answer.values())


# ------------------------------------------------------------------------------------------------ thinking

_REASONING = re.compile(r"<\s*(reasoning|think|thinking)\s*>(.*?)(?:<\s*/\s*\1\s*>|$)", re.I | re.S)
_FINAL_BLOCK = re.compile(r"<\s*final[\s_-]?answer\s*>.*?(?:<\s*/\s*final[\s_-]?answer\s*>|$)", re.I | re.S)
_TAG = re.compile(r"<\s*/?\s*[A-Za-z_][\w-]{0,30}\s*>")
_SENTENCE = re.compile(r"[^\n.!?;]+")
_WS = re.compile(r"\s+")


def reasoning_text(text: str) -> str:
    """The reasoning: the `<reasoning>` / `<think>` blocks when there are any, else the completion without its
    final-answer blocks."""
    text = text[:MAX_INPUT_CHARS]
    blocks = [m.group(2) for m in _REASONING.finditer(text)]
    body = "\n".join(blocks) if blocks else _FINAL_BLOCK.sub("\n", text)
    return _TAG.sub(" ", body)


def informative_words(reasoning: str, cap: int | None = None) -> int:
    """Words of the reasoning's distinct sentences: a sentence repeated counts once, so repetition is no length.
    Counting stops at `cap` (the thinking reward is full there), which bounds the work on a padded text."""
    seen: set[str] = set()
    words = 0
    for m in _SENTENCE.finditer(reasoning):
        norm = _WS.sub(" ", m.group()).strip().casefold()
        if norm and norm not in seen:
            seen.add(norm)
            words += len(norm.split(" "))
            if cap is not None and words >= cap:
                break
    return words


def thinking_reward(text: str, config: RewardConfig = DEFAULT) -> float:
    words = informative_words(reasoning_text(text), cap=config.full_thinking_words)
    grow = config.thinking_max * min(1.0, words / config.full_thinking_words)
    verbose = len(text[:MAX_INPUT_CHARS].split()) > config.verbose_words or len(text) > MAX_INPUT_CHARS
    return max(0.0, grow - (config.verbose_penalty if verbose else 0.0))


# ------------------------------------------------------------------------------------------------ the reward


@dataclass(frozen=True)
class Reward:
    thinking: float
    format: float
    content: float
    total: float
    correct: bool
    tier: Tier
    reason: str

    def as_dict(self) -> dict[str, Any]:
        return {"score": self.total, "thinking": self.thinking, "format": self.format, "content": self.content,
                "correct": float(self.correct), "tier": self.tier, "reason": self.reason}


def reward(text: str, truth: Any, config: RewardConfig = DEFAULT) -> Reward:
    """The E.4 reward of one completion (text) against its ground truth (the export's JSON string)."""
    g = grade(text, truth)
    thinking = thinking_reward(text, config)
    if g.error is not None:
        kept = thinking * config.unformatted_thinking_keep
        return Reward(kept, 0.0, 0.0, _clip(kept), False, "none", f"format: {g.error.kind}: {g.error.detail}"[:300])
    content = {"exact": config.content_exact, "value": config.content_value, "none": 0.0}[g.tier]
    total = _clip(thinking + config.format_reward + content)
    reason = g.verdict.reason if g.verdict is not None else ""
    return Reward(thinking, config.format_reward, content, total, g.correct, g.tier, reason[:300])


def strict_reward(text: str, truth: Any) -> float:
    """1.0 iff the exact verifier grades the completion's final answer correct, else 0.0."""
    return 1.0 if grade(text, truth).correct else 0.0


def _clip(x: float) -> float:
    return round(min(1.0, max(0.0, x)), 2)


# ------------------------------------------------------------------------------------------------ trainer signatures


def completion_text(completion: Any) -> str:
    """A TRL completion as text: a string, or a conversational list of messages (the assistant turns' text;
    content may be a string or a list of parts with `text`)."""
    if isinstance(completion, str):
        return completion
    if isinstance(completion, dict):
        completion = [completion]
    if not isinstance(completion, list):
        raise ValueError(f"completion: expected a string or a list of messages, got {type(completion).__name__}")
    messages = [m for m in completion if isinstance(m, dict)]
    own = [m for m in messages if m.get("role", "assistant") == "assistant"] or messages
    parts: list[str] = []
    for m in own:
        content = m.get("content")
        if isinstance(content, str):
            parts.append(content)
        elif isinstance(content, list):
            parts.extend(p["text"] for p in content if isinstance(p, dict) and isinstance(p.get("text"), str))
    return "\n".join(parts)


def _truths(n: int, kwargs: dict[str, Any]) -> list[Any]:
    truths = kwargs.get("ground_truth")
    if truths is None:
        raise ValueError("reward: no `ground_truth` column (export with `nphe4v export --format trl`)")
    if len(truths) != n:
        raise ValueError(f"reward: {n} completions but {len(truths)} ground truths")
    return list(truths)


def graphverse_reward(completions: list[Any], **kwargs: Any) -> list[float]:
    """TRL reward function (GRPOTrainer `reward_funcs=[graphverse_reward]`): the E.4 reward per completion,
    reading the `ground_truth` column that TRL passes as a keyword argument."""
    truths = _truths(len(completions), kwargs)
    return [reward(completion_text(c), t).total for c, t in zip(completions, truths, strict=True)]


def graphverse_strict_reward(completions: list[Any], **kwargs: Any) -> list[float]:
    """TRL reward function: 1.0 iff the exact verifier says correct."""
    truths = _truths(len(completions), kwargs)
    return [strict_reward(completion_text(c), t) for c, t in zip(completions, truths, strict=True)]


def make_trl_reward(config: RewardConfig) -> Any:
    """A TRL reward function with other constants than the defaults."""

    def graphverse_reward_custom(completions: list[Any], **kwargs: Any) -> list[float]:
        truths = _truths(len(completions), kwargs)
        return [reward(completion_text(c), t, config).total for c, t in zip(completions, truths, strict=True)]

    return graphverse_reward_custom


def compute_score(data_source: str, solution_str: str, ground_truth: Any, extra_info: Any = None
                  ) -> dict[str, Any]:
    """verl's custom reward function (`custom_reward_function.path` = this file): the E.4 reward as `score`,
    with its parts and the strict verdict (`correct`) for verl's logs."""
    return reward(solution_str, _verl_truth(ground_truth)).as_dict()


def compute_score_strict(data_source: str, solution_str: str, ground_truth: Any, extra_info: Any = None) -> float:
    """verl's custom reward function for the strict verifier reward (`custom_reward_function.name`)."""
    return strict_reward(solution_str, _verl_truth(ground_truth))


def _verl_truth(ground_truth: Any) -> Any:
    # verl hands over reward_model["ground_truth"] as stored; a numpy string or bytes is still the JSON
    if isinstance(ground_truth, bytes):
        return ground_truth.decode()
    if not isinstance(ground_truth, str | dict | GroundTruth) and hasattr(ground_truth, "item"):
        return ground_truth.item()
    return ground_truth
