"""Hard means hard for the asked graph (issue 18, item 6): a focus or recolour question is asked on part
of its drawing (the highlighted group, the recoloured side), and at the hard level that part meets the
level's node range of `gie.catalogue`; edited questions at either level are never degenerate (a clique, a
one-node MIS / MVC). Checked on a stratified testmini-like sample: the first row of every task x edit x
level cell of the focus and recolour edits, generated exactly as `generate_split` would. The exhaustive
check over a whole testmini is `bench/audit_graphverse_edits.py --edits focus,recolor`."""

from __future__ import annotations

import networkx as nx
import pytest

from evalcore.schema import Gold
from gie.catalogue import TASK_EDITS, TASK_NAMES
from gie.dataset import generate_one, plan
from gie.graphs import from_node_link
from gie.levels import LEVELS
from gie.tasks import get_config, get_task
from gie.tasks.construction import degenerate, edited_question_problem
from gie.tasks.sampling import asked_range, drawing_range

SEED = 17
CELLS = [(t, e) for t in TASK_NAMES for e in ("focus", "recolor") if e in TASK_EDITS[t]]


def _first_jobs(task: str, edit: str) -> list:
    jobs = {}
    for job in plan("testmini", SEED):
        if job.task == task and job.edit == edit and job.level not in jobs:
            jobs[job.level] = job
    return [jobs[lv] for lv in LEVELS if lv in jobs]


@pytest.mark.parametrize(("task", "edit"), CELLS)
def test_edited_questions_meet_the_level_range(task: str, edit: str) -> None:
    cfg = get_config(task)
    jobs = _first_jobs(task, edit)
    assert {j.level for j in jobs} == set(LEVELS), "every task x edit cell is half easy, half hard"
    for job in jobs:
        inst, _ = generate_one(SEED, job)
        data = get_task(task).load(inst.data)
        assert edited_question_problem(cfg, data, job.level) is None, (inst.instance_id, data.edit)
        asked = data.asked_graphs()
        drawn = [from_node_link(g) for g in data.graphs]
        if job.level == "hard":
            lo = asked_range(cfg, "hard").lo
            assert all(asked[i].number_of_nodes() >= lo for i in data.edit["targets"]), inst.instance_id
            # the drawing holds the asked graph and more, within the level's maximum
            assert all(g.number_of_nodes() <= drawing_range(cfg, "hard", edit).hi for g in drawn)


def test_hard_drawings_leave_room_for_the_asked_graph() -> None:
    for task in TASK_NAMES:
        cfg = get_config(task)
        for edit in ("focus", "recolor"):
            if edit not in TASK_EDITS[task]:
                continue
            asked, drawn = asked_range(cfg, "hard"), drawing_range(cfg, "hard", edit)
            assert asked.lo < drawn.lo <= drawn.hi <= asked.hi, (task, edit, asked, drawn)
        # plain rows keep the catalogue's range
        assert drawing_range(cfg, "hard", "none") == cfg.node_range("hard")


def test_degenerate_questions_are_recognised() -> None:
    mis, mcp = get_config("MIS"), get_config("MCP")
    k4 = nx.complete_graph(["AAA", "BBB", "CCC", "DDD"])
    path = nx.path_graph(["AAA", "BBB", "CCC", "DDD"])
    star = nx.star_graph(["AAA", "BBB", "CCC", "DDD"])
    assert degenerate(mcp, [k4], Gold(answer={}, value=4.0))  # the whole graph is the clique
    assert not degenerate(mcp, [path], Gold(answer={}, value=2.0))
    assert not degenerate(mis, [star], Gold(answer={}, value=3.0))  # a star's MIS is its 3 leaves
    assert degenerate(mis, [k4], Gold(answer={}, value=1.0))
    assert degenerate(get_config("MVC"), [star], Gold(answer={}, value=1.0))  # one centre covers a star
    # TSP is asked on a complete graph by design
    assert not degenerate(get_config("TSP"), [k4], Gold(answer={}, value=10.0))
