"""`prompts: paper`: the NPHardEval4V authors' prompts, assembled as their runners assemble them.

The text is read, never executed, from the pinned upstream files (`nphe4v.upstream_assets`):

* the prompt pieces (intro, question, output content, output format with its answer keys, the figure-only
  sentence) from the `<task>Prompts` dicts of `Open/prompts.py` (open-weights models) or `Prompts/prompts.py`
  (= `Close/prompts.py`, API models), parsed with `ast`;
* the data rendering -- how the instance is written after the pieces (a header, one line per datum, the
  closing sentence of the figure+full_text mode, an `Answer:` cue) -- from the open-model runner of the task
  (`Open/run/run_*.py`, function `run_opensource_<TASK>`): its string-building statements are read with `ast`
  into a recipe of pieces, literal strings, inline data slots and per-datum line templates.

This module holds no authors' text: only which dict and runner belong to which task, and, per task, which
instance values fill the runner's placeholders (`PaperInputs`). The instance values are ours (our generated
data); where the runners feed a broken value, the change is listed in `CHANGES` and docs/deviations.md.
"""

from __future__ import annotations

import ast
import re
import string
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal

from evalcore.schema import ImageRef, Prompt

PAPER_TEMPLATE_VERSION = "nphardeval4v-paper-61e8020"
PromptFile = Literal["open", "api"]
PROMPT_FILES: dict[PromptFile, str] = {"open": "Open/prompts.py", "api": "Prompts/prompts.py"}

# task -> (name of its dict in the prompt files, runner file, runner function)
TASK_SOURCES: dict[str, tuple[str, str, str]] = {
    "BSP": ("bspPrompts", "Open/run/run_p_BSP.py", "run_opensource_BSP"),
    "EDP": ("edpPrompts", "Open/run/run_p_EDP.py", "run_opensource_EDP"),
    "SPP": ("sppPrompts", "Open/run/run_p_SPP.py", "run_opensource_SPP"),
    "KSP": ("kspPrompts", "Open/run/run_cmp_KSP.py", "run_opensource_KSP"),
    "TSP-D": ("tsp_dPrompts", "Open/run/run_cmp_TSP_D.py", "run_opensource_TSP_D"),
    "GCP-D": ("gcp_dPrompts", "Open/run/run_cmp_GCP_D.py", "run_opensource_GCP_D"),
    "TSP": ("tspPrompts", "Open/run/run_hard_TSP.py", "run_opensource_TSP"),
    "GCP": ("gcpPrompts", "Open/run/run_hard_GCP.py", "run_opensource_GCP"),
    "MSP": ("mspPrompts", "Open/run/run_hard_MSP.py", "run_opensource_MSP"),
}

# Every place where `prompts: paper` departs from what the original code sends, with why (docs/deviations.md
# repeats them). Keys: task or "*".
CHANGES: dict[str, str] = {
    "*": "one assembly for every kind of model: the open-model runner's (Open/run), with the pieces of the prompt "
         "file of the model's kind; the API runners (Close/run_*) drop data in several tasks (SPP edges and MSP "
         "data in figure+full_text, EDP's strings in every mode, TSP-D's limit in figure+limited_text)",
    "*limited": "figure+limited_text: the runner's pieces (intro, question, output content, format) and the prompt "
                "file's own figure-only sentence instead of the data; the committed limited-text runners differ "
                "per model (BSP keeps its array, EDP and TSP-D drop the question)",
    "*text_only": "full_text_only: the figure+full_text text without its closing sentence (which says the "
                  "picture carries data) and with no image; the original sent a blank white picture",
    "EDP": "full-text modes send the question with both strings, as the open runner does (the API runners' "
           "missing strings are not reproduced); figure+limited_text leaves the question out as the papers' "
           "limited-text runner did, so the strings are only in the figure (that mode's definition)",
    "SPP": "start and end are the instance's own endpoints: node 0 and node n-1 by default, the original's first "
           "and last node (a dataset generated with endpoints='chosen' names others); the Kosmos-2 `<grounding>` "
           "prefix is not sent",
    "MSP": "the question gets the number of participants: the runner passes the whole participants dict, "
           "whose repr was printed inside the sentence",
}


# Pieces figure+limited_text leaves out, as the papers' limited-text runners did, where the piece carries data the
# figure shows (EDP's question holds both strings). TSP-D's runner also dropped its question there, but the
# distance limit is in no picture of theirs: that omission was a bug and is not reproduced.
LIMITED_DROPS: dict[str, tuple[str, ...]] = {"EDP": ("Initial_question",)}


class PaperPromptError(ValueError):
    """An asset file that does not have the expected shape; one line naming the file and what is missing."""


@dataclass(frozen=True)
class PaperInputs:
    """What the original runner fills into the text for one instance.

    `fields`: the keyword arguments of the runner's `.format(...)` calls on the pieces (named by the prompt
    files' placeholders); `slots`: values the runner writes inline after the pieces (BSP: the sorted array),
    already as the runner writes them; `rows`: per data loop of the runner, one tuple of positional values per
    line, in the order of the runner's placeholders.
    """

    fields: dict[str, Any]
    slots: tuple[str, ...] = ()
    rows: tuple[tuple[tuple[Any, ...], ...], ...] = ()


# ---------------------------------------------------------------------------------------------------------
# Reading the files (ast only)

def _const_str(node: ast.AST, names: dict[str, str], where: str) -> str:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.Name) and node.id in names:
        return names[node.id]
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        return _const_str(node.left, names, where) + _const_str(node.right, names, where)
    raise PaperPromptError(f"{where}: a value that is not a string literal ({ast.dump(node)[:60]})")


def read_prompt_dicts(source: str, where: str) -> dict[str, dict[str, str]]:
    """Module-level `NAME = "..."` constants and `name = {"Key": "...", ...}` dicts of a prompt file."""
    tree = ast.parse(source, filename=where)
    names: dict[str, str] = {}
    dicts: dict[str, dict[str, str]] = {}
    for stmt in tree.body:
        if not (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name)):
            continue
        name = stmt.targets[0].id
        if isinstance(stmt.value, ast.Dict):
            d: dict[str, str] = {}
            for k, v in zip(stmt.value.keys, stmt.value.values, strict=True):
                if isinstance(k, ast.Constant) and isinstance(k.value, str):
                    d[k.value] = _const_str(v, names, f"{where}: {name}[{k.value!r}]")
            dicts[name] = d
        else:
            try:
                names[name] = _const_str(stmt.value, names, where)
            except PaperPromptError:
                continue
    return dicts


@dataclass(frozen=True)
class Seg:
    kind: Literal["piece", "const", "slot", "rows", "tail"]
    text: str = ""  # const/tail: the literal; piece: the dict key; rows: the line template ({} fields)
    format_keys: tuple[str, ...] = ()  # piece: the runner's .format keywords
    suffix: str = ""  # rows: what the runner appends to each line
    arity: int = 0  # rows: placeholders per line


@dataclass(frozen=True)
class Recipe:
    segs: tuple[Seg, ...]
    where: str

    def last_piece(self) -> int:
        return max(i for i, s in enumerate(self.segs) if s.kind == "piece")


def _flatten_add(node: ast.AST) -> list[ast.AST]:
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        return _flatten_add(node.left) + _flatten_add(node.right)
    return [node]


def _piece_key(node: ast.AST) -> tuple[str, tuple[str, ...]] | None:
    """p['Key'] -> (Key, ()); p['Key'].format(a=..., b=...) -> (Key, (a, b))."""
    keys: tuple[str, ...] = ()
    if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "format"
            and not node.args):
        keys = tuple(k.arg for k in node.keywords if k.arg is not None)
        node = node.func.value
    if (isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name) and node.value.id == "p"
            and isinstance(node.slice, ast.Constant) and isinstance(node.slice.value, str)):
        return node.slice.value, keys
    return None


def _template(node: ast.AST, where: str) -> tuple[str, int]:
    """A line template with positional {} fields: "...".format(a, b) or f"...{a}...{b}"."""
    if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "format"
            and isinstance(node.func.value, ast.Constant) and isinstance(node.func.value.value, str)):
        tmpl = node.func.value.value
        n = sum(1 for _, fname, _, _ in string.Formatter().parse(tmpl) if fname is not None)
        if n != len(node.args) or node.keywords:
            raise PaperPromptError(f"{where}: a line template whose fields do not match its arguments")
        return tmpl, n
    if isinstance(node, ast.JoinedStr):
        out, n = [], 0
        for v in node.values:
            if isinstance(v, ast.Constant):
                out.append(str(v.value).replace("{", "{{").replace("}", "}}"))
            elif isinstance(v, ast.FormattedValue):
                conv = "" if v.conversion == -1 else "!" + chr(v.conversion)
                spec = ""
                if v.format_spec is not None:
                    spec = ":" + _const_str(v.format_spec.values[0], {}, where) if (
                        isinstance(v.format_spec, ast.JoinedStr) and len(v.format_spec.values) == 1) else ""
                out.append("{" + conv + spec + "}")
                n += 1
        return "".join(out), n
    raise PaperPromptError(f"{where}: a data line that is neither a .format template nor an f-string")


_CUE = re.compile(r"\s*\w+:\s*")


def _is_model_branch(test: ast.AST) -> bool:
    return "MODEL" in ast.unparse(test)


def _walk(stmts: list[ast.stmt], segs: list[Seg], where: str) -> None:
    for st in stmts:
        if isinstance(st, ast.If) and _is_model_branch(st.test):
            # per-model branches: the general open-model branch (the one naming llava), not Kosmos-2's
            branch: list[ast.stmt] | None = None
            node: ast.stmt | None = st
            while isinstance(node, ast.If):
                if "'llava'" in ast.unparse(node.test):
                    branch = node.body
                    break
                node = node.orelse[0] if len(node.orelse) == 1 else None
            if branch is not None:
                _walk(branch, segs, where)
            continue
        if isinstance(st, ast.Assign) and len(st.targets) == 1 and isinstance(st.targets[0], ast.Name):
            if st.targets[0].id == "prompt_text":
                segs.clear()
                for part in _flatten_add(st.value):
                    pk = _piece_key(part)
                    if pk is not None:
                        segs.append(Seg("piece", pk[0], format_keys=pk[1]))
                    elif isinstance(part, ast.Constant) and isinstance(part.value, str):
                        segs.append(Seg("const", part.value))
                    else:
                        segs.append(Seg("slot"))
            continue
        if isinstance(st, ast.AugAssign) and isinstance(st.target, ast.Name) and st.target.id == "prompt_text":
            if isinstance(st.value, ast.Constant) and isinstance(st.value.value, str):
                segs.append(Seg("tail", st.value.value))
            continue
        if isinstance(st, ast.For | ast.If):
            tmpl: tuple[str, int] | None = None
            suffix: str | None = None
            for sub in ast.walk(st):
                if (isinstance(sub, ast.Assign) and len(sub.targets) == 1 and isinstance(sub.targets[0], ast.Name)
                        and sub.targets[0].id == "this_line"):
                    tmpl = _template(sub.value, where)
                if (isinstance(sub, ast.AugAssign) and isinstance(sub.target, ast.Name)
                        and sub.target.id == "prompt_text"):
                    parts = _flatten_add(sub.value)
                    if (len(parts) == 2 and isinstance(parts[0], ast.Name) and parts[0].id == "this_line"
                            and isinstance(parts[1], ast.Constant)):
                        suffix = str(parts[1].value)
            if tmpl is not None and suffix is not None:
                segs.append(Seg("rows", tmpl[0], suffix=suffix, arity=tmpl[1]))


def read_recipe(source: str, function: str, where: str) -> Recipe:
    tree = ast.parse(source, filename=where)
    fn = next((n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == function), None)
    if fn is None:
        raise PaperPromptError(f"{where}: no function {function}")
    loop = next((n for n in fn.body if isinstance(n, ast.For)), None)
    if loop is None:
        raise PaperPromptError(f"{where}: {function} has no loop over the instances")
    segs: list[Seg] = []
    _walk(loop.body, segs, f"{where}: {function}")
    if not any(s.kind == "piece" for s in segs):
        raise PaperPromptError(f"{where}: {function} builds no prompt from the prompt dict")
    return Recipe(tuple(segs), f"{where}: {function}")


@dataclass
class PaperPromptSet:
    """The parsed prompt files and runner recipes of one asset folder."""

    root: Path
    dicts: dict[PromptFile, dict[str, dict[str, str]]] = field(default_factory=dict)
    recipes: dict[str, Recipe] = field(default_factory=dict)

    def pieces(self, task: str, kind: PromptFile) -> dict[str, str]:
        name = TASK_SOURCES[task][0]
        d = self.dicts[kind].get(name)
        if d is None:
            raise PaperPromptError(f"{self.root / PROMPT_FILES[kind]}: no dict {name} for {task}")
        return d


@lru_cache(maxsize=8)
def load_prompt_set(root: Path) -> PaperPromptSet:
    """Parse every file once per asset folder (the files are pinned by hash, so their content is fixed)."""
    ps = PaperPromptSet(root)
    for kind, rel in PROMPT_FILES.items():
        ps.dicts[kind] = read_prompt_dicts((root / rel).read_text(encoding="utf-8"), str(root / rel))
    for task, (_, rel, fn) in TASK_SOURCES.items():
        ps.recipes[task] = read_recipe((root / rel).read_text(encoding="utf-8"), fn, str(root / rel))
    return ps


# ---------------------------------------------------------------------------------------------------------
# Assembly

def _fill_piece(seg: Seg, pieces: dict[str, str], inputs: PaperInputs, where: str) -> str:
    if seg.text not in pieces:
        raise PaperPromptError(f"{where}: the prompt dict has no {seg.text!r}")
    text = pieces[seg.text]
    if not seg.format_keys:
        return text
    missing = [k for k in seg.format_keys if k not in inputs.fields]
    if missing:
        raise PaperPromptError(f"{where}: no value for {', '.join(missing)}")
    return text.format(**{k: inputs.fields[k] for k in seg.format_keys})


def paper_text(ps: PaperPromptSet, task: str, inputs: PaperInputs, mode: str, kind: PromptFile) -> str:
    recipe = ps.recipes[task]
    pieces = ps.pieces(task, kind)
    segs = list(recipe.segs)
    if mode == "figure+limited_text":
        keep = segs[: recipe.last_piece() + 1]
        for key in LIMITED_DROPS.get(task, ()):
            # the piece and the separator the runner wrote after it
            i = next((i for i, s in enumerate(keep) if s.kind == "piece" and s.text == key), None)
            if i is not None:
                del keep[i : i + (2 if i + 1 < len(keep) and keep[i + 1].kind == "const" else 1)]
        # the prompt file's own sentence for a figure that carries the data, then the runner's cue if any
        tail = [Seg("const", "\n"), Seg("piece", "Figure_only")]
        segs = keep + tail + [s for s in segs if s.kind == "tail" and _CUE.fullmatch(s.text)]
    elif mode == "full_text_only":
        segs = [s for s in segs if not (s.kind == "tail" and not _CUE.fullmatch(s.text))]
    out: list[str] = []
    slots = iter(inputs.slots)
    rows = iter(inputs.rows)
    for s in segs:
        if s.kind == "piece":
            out.append(_fill_piece(s, pieces, inputs, recipe.where))
        elif s.kind in ("const", "tail"):
            out.append(s.text)
        elif s.kind == "slot":
            value = next(slots, None)
            if value is None:
                raise PaperPromptError(f"{recipe.where}: {task} gives no value for an inline data slot")
            out.append(value)
        else:
            lines = next(rows, None)
            if lines is None:
                raise PaperPromptError(f"{recipe.where}: {task} gives no rows for a data loop")
            for values in lines:
                if len(values) != s.arity:
                    raise PaperPromptError(f"{recipe.where}: a line takes {s.arity} values, {task} gave "
                                           f"{len(values)}")
                out.append(s.text.format(*values) + s.suffix)
    return "".join(out)


def build_paper_prompt(ps: PaperPromptSet, task: str, inputs: PaperInputs, mode: str,
                       images: tuple[ImageRef, ...], kind: PromptFile) -> Prompt:
    return Prompt(
        text=paper_text(ps, task, inputs, mode, kind),
        images=() if mode == "full_text_only" else images,
        template_version=f"{PAPER_TEMPLATE_VERSION}-{kind}",
    )


_EXAMPLE_BLOCK = re.compile(r"<final_answer>(.*?)</final_answer>", re.DOTALL)


@lru_cache(maxsize=4096)
def format_examples(prompt_text: str) -> tuple[Any, ...]:
    """Every answer example inside the prompt's own `<final_answer>` tags, as text and, where it is one, as a
    Python literal (read with ast.literal_eval, never executed): what the scorer must not take for the model's
    answer when the model restates the format (the papers' examples are not placeholders in our sense)."""
    out: list[Any] = []
    for m in _EXAMPLE_BLOCK.finditer(prompt_text):
        body = m.group(1).strip()
        if not body:
            continue
        out.append(body)
        # the literal itself, and the first {...} of a body that explains it in words after the literal
        for candidate in dict.fromkeys((body, _first_braces(body))):
            if candidate:
                try:
                    out.append(ast.literal_eval(candidate))
                except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
                    pass
    return tuple(out)


def _first_braces(text: str) -> str:
    start = text.find("{")
    depth = 0
    for i in range(max(start, 0), len(text)):
        depth += {"{": 1, "}": -1}.get(text[i], 0)
        if start >= 0 and depth == 0:
            return text[start : i + 1]
    return ""


def prompt_file_for(backend: str) -> PromptFile:
    """The papers ran API models (GPT-4V, Gemini) with Prompts/prompts.py and open-weights ones with
    Open/prompts.py; `litellm` is this project's API backend, every other backend runs open weights."""
    return "api" if backend == "litellm" else "open"


# ---------------------------------------------------------------------------------------------------------
# Per task: our instance values in the runners' placeholders (structure only; no text)

def _num(x: float) -> float:
    # the runners print the floats read from the data files; ours print the same value without float noise
    return round(float(x), 6)


def _bsp(d: Any) -> PaperInputs:
    # the runner sorts the array before writing it (its position answer indexes the sorted array)
    return PaperInputs({"target_value": d.target}, slots=(", ".join(map(str, sorted(d.array))),))


def _edp(d: Any) -> PaperInputs:
    return PaperInputs({"string_a": d.string_a, "string_b": d.string_b})


def _spp(d: Any) -> PaperInputs:
    return PaperInputs({"start_node": d.start, "end_node": d.end},
                       rows=(tuple((e.u, e.v, e.weight) for e in d.edges),))


def _ksp(d: Any) -> PaperInputs:
    return PaperInputs({"knapsack_capacity": d.capacity},
                       rows=(tuple((it.id, it.weight, it.value) for it in d.items),))


def _pairs(dist: list[list[float]]) -> tuple[tuple[Any, ...], ...]:
    n = len(dist)
    return tuple((i, j, _num(dist[i][j])) for i in range(n) for j in range(n) if i < j)


def _tspd(d: Any) -> PaperInputs:
    return PaperInputs({"total_cities": d.num_cities, "distance_limit": _num(d.threshold)},
                       rows=(_pairs(d.distances),))


def _tsp(d: Any) -> PaperInputs:
    return PaperInputs({"total_cities": d.num_cities}, rows=(_pairs(d.distances),))


def _gcpd(d: Any) -> PaperInputs:
    return PaperInputs({"total_vertices": d.num_vertices, "number_of_colors": d.k},
                       rows=(tuple((u, v) for u, v in d.edges),))


def _gcp(d: Any) -> PaperInputs:
    k = d.k
    if k is None:
        # the runner takes the chromatic number from the data file's comment line; ours is computed exactly
        from nphe4v.tasks.gcp import TASK as GCP

        k = GCP.solve(d).value
    return PaperInputs({"max_vertices": d.num_vertices, "max_colors": int(k)},
                       rows=(tuple((u, v) for u, v in d.edges),))


def _msp(d: Any) -> PaperInputs:
    return PaperInputs(
        {"total_participants": len(d.participants), "total_timeslots": d.num_slots},
        rows=(tuple((m.id, m.duration) for m in d.meetings),
              tuple((p.id, list(p.available_slots), list(p.meetings)) for p in d.participants)),
    )


PAPER_INPUTS: dict[str, Callable[[Any], PaperInputs]] = {
    "BSP": _bsp, "EDP": _edp, "SPP": _spp, "KSP": _ksp, "TSP-D": _tspd, "GCP-D": _gcpd,
    "TSP": _tsp, "GCP": _gcp, "MSP": _msp,
}
