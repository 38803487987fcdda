"""--trace and --profile from Python: the run writes the trace (Trace
Event Format JSON) and the profile (JSON) that `snet run --trace` and
`--profile-json` write, naming the Python boxes, on one node and with the
parts of node processes merged in."""

import json
import os
import subprocess
import sys

import pytest

import snet
import boxes_conformance

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
# `inc` in node process 1 (with 2 nodes), `twice` in node 0.
PROGRAM = ("box inc((a) -> (b));\nbox twice((b) -> (c));\n"
           "net flow connect (inc @ {last}) .. twice;")


def box_events(trace, name):
    """The trace's events of calls of box `name`, by node (pid)."""
    nodes = {}
    for e in trace:
        if e.get("name") == name and e.get("ph") == "X":
            nodes[e["pid"]] = nodes.get(e["pid"], 0) + 1
    return nodes


@pytest.mark.parametrize("nodes", [1, 2])
def test_trace_and_profile_name_the_python_boxes(tmp_path, nodes):
    net = snet.Network.from_source(PROGRAM.format(last=nodes - 1), name="flow.snet")
    net.add_boxes(boxes_conformance)
    t, p = tmp_path / "t.json", tmp_path / "p.json"
    outs = list(net.run(({"a": i} for i in range(8)), nodes=nodes, trace=t, profile=p))
    assert sorted(o["c"] for o in outs) == [2 * (i + 1) for i in range(8)]
    trace = json.loads(t.read_text())
    assert box_events(trace, "inc") == {nodes - 1: 8}
    assert box_events(trace, "twice") == {0: 8}
    profile = json.loads(p.read_text())
    assert [n["node"] for n in profile["nodes"]] == list(range(nodes))
    calls = {(n["node"], c["name"]): c["calls"] for n in profile["nodes"]
             for c in n["components"] if c["kind"] == "box"}
    assert calls[(nodes - 1, "inc")] == 8 and calls[(0, "twice")] == 8
    assert not any(f.name.startswith(("t.json.", "p.json.")) for f in tmp_path.iterdir())


def test_command_writes_trace_and_profile(tmp_path):
    prog = tmp_path / "flow.snet"
    prog.write_text(PROGRAM.format(last=1))
    inp = tmp_path / "in.xml"
    snet.write_xml(({"a": i} for i in range(3)), str(inp))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    done = subprocess.run(
        [sys.executable, "-m", "snet", "run", str(prog), "--boxes", "boxes_conformance",
         "-i", str(inp), "-o", str(tmp_path / "out.xml"), "--nodes", "2",
         "--trace", str(tmp_path / "t.json"), "--profile", str(tmp_path / "p.json")],
        capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stderr
    assert box_events(json.loads((tmp_path / "t.json").read_text()), "inc") == {1: 3}
    assert len(json.loads((tmp_path / "p.json").read_text())["nodes"]) == 2


def test_unwritable_trace_fails_the_run(tmp_path):
    net = snet.Network.from_source(PROGRAM.format(last=0))
    net.add_boxes(boxes_conformance)
    with pytest.raises(snet.RunError, match="cannot write the trace"):
        list(net.run([{"a": 1}], trace=tmp_path / "no" / "such" / "dir.json"))
