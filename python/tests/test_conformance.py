"""Python boxes on conformance cases of the C-box corpus: the outputs of
the Python versions of the boxes equal the native (C) runs' expected
outputs as multisets, at 1 and 2 workers, and with the boxes placed on
node processes (2 and 4 nodes over shared memory)."""

import os
import re

import pytest

import snet
import boxes_conformance

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
CASES = os.path.join(ROOT, "tests", "conformance", "c")

# Each case: the boxes, and the program with placements for N nodes
# ({last} is node N-1): every box call runs in a node process.
PLACED = {
    "feedback-box": "box halve((<n>, <c>) -> (<n>, <c>));\n"
                    "net fb connect (halve @ {last}) \\ {{<n>}} if <n > 1>;",
    "flow-inherit": "box inc((a) -> (b));\nbox twice((b) -> (c));\n"
                    "net flow connect (inc @ 1) .. [{{b}} -> {{b, <mid>}}] .. (twice @ {last});",
    "gen-split": None,  # the case's own program, `gen` placed below
    "gen-star": None,
    "gen-sync": None,
}


def multiset(records):
    return sorted(repr(sorted(r.items())) for r in records)


def program(case, nodes):
    text = open(os.path.join(CASES, case, "prog.snet"), encoding="utf-8").read()
    if nodes == 1:
        return text
    last = nodes - 1
    if PLACED[case]:
        return PLACED[case].format(last=last)
    if case == "gen-split":
        # 4 nodes: each <k> (0..3) on its own node; 2: all on node 1.
        return text.replace("(gen ! <k>)", "(gen !@ <k>)" if nodes == 4 else "((gen @ 1) ! <k>)")
    if case == "gen-star":
        return text.replace("(st * {<done>})", f"((st @ {last}) * {{<done>}})")
    if case == "gen-sync":
        return text.replace("(ga | gb | gc | gd)", f"(ga @ 1 | gb @ {last} | gc | gd @ {last})")
    raise AssertionError(case)


def run_case(case, workers, nodes):
    net = snet.Network.from_source(program(case, nodes), name=f"{case}/prog.snet")
    missing = net.add_boxes(boxes_conformance)
    assert missing == []
    inp = snet.read_xml(os.path.join(CASES, case, "input.xml"))
    expected = snet.read_xml(os.path.join(CASES, case, "expected.xml"))
    out = list(net.run(inp, workers=workers, nodes=nodes))
    assert len(out) == len(expected)
    assert multiset(out) == multiset(expected)


@pytest.mark.parametrize("workers", [1, 2])
@pytest.mark.parametrize("case", sorted(PLACED))
def test_one_node(case, workers):
    run_case(case, workers, 1)


@pytest.mark.parametrize("nodes", [2, 4])
@pytest.mark.parametrize("case", sorted(PLACED))
def test_shm_nodes(case, nodes):
    run_case(case, 1, nodes)


def test_placed_programs_place_something():
    for case in PLACED:
        assert re.search(r"@", program(case, 4)), case
