"""The API around the network: loading, records, boxes' outputs, XML,
services, and every error path (on one node and on node processes)."""

import io
import re
import os
import signal
import subprocess
import sys

import pytest

import snet
import boxes_errors

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))

# `work` runs on node <k> % nodes (node 0 with one node).
FARM = """
box work((x, <k>) -> (y));
net main connect [{<k>} -> {<k>, <node = k % 2>}] .. (work !@ <node>) .. [{<node>} -> {}];
"""


def farm(func, name="farm.snet"):
    net = snet.Network.from_source(FARM, name=name)
    net.add_box("work", func)
    return net


def inputs(n):
    return [{"x": i, "<k>": i} for i in range(n)]


def test_load_error_renders_as_snet_check():
    with pytest.raises(snet.LoadError) as e:
        snet.Network.from_source("net n connect nosuch;", name="bad.snet")
    text = str(e.value)
    assert text.startswith("error: unknown box or net `nosuch`")
    assert "bad.snet:1:15" in text and "^^^^^^" in text


def test_load_error_for_a_missing_file():
    with pytest.raises(snet.LoadError, match="cannot read nosuch.snet"):
        snet.Network.from_file("nosuch.snet")


def test_box_signatures_decorators_and_flow_inheritance():
    net = snet.Network.from_source(
        "box f((x, <n>) -> (y) | (<e>)); net p connect f;")
    assert net.boxes == [snet.BoxSignature("f", ["x", "<n>"], [["y"], ["<e>"]], "C4SNet")]

    def several(x, n):
        yield {"y": [x] * n}           # a generator: several outputs
        yield {"y": x}

    @net.box
    def f(x, n):
        if n < 0:
            return {"<e>": n}          # one output; a tag, with brackets
        return several(x, n)

    out = list(net.run([{"x": "a", "<n>": 2, "keep": {1: 2}, "<t>": 7}, {"x": 1, "<n>": -1}],
                       workers=1))
    assert out == [{"y": ["a", "a"], "keep": {1: 2}, "<t>": 7},
                   {"y": "a", "keep": {1: 2}, "<t>": 7}, {"<e>": -1}]


def test_add_box_by_name_and_tags_without_brackets():
    net = snet.Network.from_source("box inc((<n>) -> (<n>)); net p connect inc;")
    net.add_box("inc", lambda n: {"n": n + 1})
    assert [r["<n>"] for r in net.run({"<n>": i} for i in range(3))] == [1, 2, 3]
    with pytest.raises(ValueError, match="declares no box `nosuch`"):
        net.add_box("nosuch", print)


def test_missing_box_function():
    net = snet.Network.from_source("box f((x) -> (y)); net p connect f;")
    with pytest.raises(snet.SnetError, match="no Python function is registered for box `f`"):
        net.run([])


def test_service_send_recv_finish():
    net = snet.Network.from_source("box inc((<n>) -> (<n>)); net p connect inc;")
    net.add_box("inc", lambda n: {"<n>": n + 1})
    with net.start(workers=2) as running:
        running.send({"<n>": 1})
        assert running.recv() == {"<n>": 2}
        running.send({"<n>": 41})
        assert running.finish() == [{"<n>": 42}]


def test_xml_round_trip_and_read_errors():
    import array
    recs = [{"x": 1.5, "s": "hi", "b": b"\x00\x01", "a": array.array("i", [1, 2]),
             "ba": bytearray(b"xy"), "<n>": 3, "<#b>": 4}]
    text = snet.write_xml(recs)
    assert '<field label="a" interface="C4SNet">(int[2])1,2</field>' in text
    back = snet.read_xml(io.StringIO(text))
    assert back == [{"x": 1.5, "s": "hi", "b": b"\x00\x01", "a": array.array("i", [1, 2]),
                     "ba": b"xy", "<n>": 3, "<#b>": 4}]
    with pytest.raises(snet.XmlError, match="cannot hold"):
        snet.write_xml([{"x": {"a": 1}}])
    with pytest.raises(snet.XmlError, match=r"^in.xml:1:9: "):
        snet.read_xml(io.StringIO('<record><tag label="n">x</tag></record>'), name="in.xml")


def test_python_objects_cross_node_processes():
    net = farm(boxes_errors.objects)
    out = sorted(net.run(inputs(6), nodes=2), key=lambda r: r["y"]["x"])
    assert [r["y"] for r in out] == [
        {"x": i, "pair": (i, str(i)), "buf": bytearray(b"ab" * i)} for i in range(6)]


@pytest.mark.parametrize("nodes", [1, 2])
def test_box_exception_names_box_place_record_and_traceback(nodes):
    net = farm(boxes_errors.fail_at_13)
    outs = []
    with pytest.raises(snet.RunError) as e:
        for r in net.run(inputs(20), nodes=nodes, workers=1):
            outs.append(r)
    text = str(e.value)
    assert e.value.box_name == "work"
    assert "farm.snet:3:" in text and "box `work`: failed: Python function" in text
    assert re.search(r"Python function boxes_errors.fail_at_13 \(\S*boxes_errors.py:\d+\)", text)
    assert "Traceback (most recent call last):" in text
    assert 'raise ValueError("thirteen is unlucky")' in text
    assert text.endswith("ValueError: thirteen is unlucky, caused by input record 14")
    if nodes == 2:
        assert text.startswith("node 1: ")


@pytest.mark.parametrize("nodes", [1, 2])
def test_output_matching_no_variant(nodes):
    net = farm(boxes_errors.wrong_labels)
    with pytest.raises(snet.RunError, match=r"gave an output with labels \(z\), which match none "
                                            r"of the box's output variants \(y\)"):
        list(net.run(inputs(4), nodes=nodes))


def test_unpicklable_box_with_nodes():
    net = farm(lambda x, k: {"y": x})
    with pytest.raises(snet.SnetError, match="cannot be sent to the node processes"):
        net.run(inputs(2), nodes=2)


def test_dead_node_process_is_a_lost_node():
    net = farm(boxes_errors.exit_at_5)
    with pytest.raises(snet.RunError, match=r"node 1 stopped unexpectedly \(exited with status 3\)"):
        list(net.run(inputs(20), nodes=2, workers=1))


def write(path, text):
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)
    return str(path)


def cli(*args, **kw):
    return subprocess.run([sys.executable, "-m", "snet", *args], capture_output=True, text=True,
                          timeout=120, **kw)


def test_cli_run_writes_outputs_and_finished_records_before_an_error(tmp_path):
    prog = write(tmp_path / "farm.snet", FARM)
    boxes = write(tmp_path / "farmboxes.py", "def work(x, k):\n"
                  "    if x == 3:\n        raise KeyError(x)\n    return {'y': x + 100}\n")
    inp = write(tmp_path / "in.xml", snet.write_xml(inputs(3)))
    ok = cli("run", prog, "--boxes", boxes, "-i", inp, "-w", "1", "--nodes", "2")
    assert ok.returncode == 0, ok.stderr
    assert sorted(r["y"] for r in snet.read_xml(io.StringIO(ok.stdout))) == [100, 101, 102]
    inp = write(tmp_path / "in.xml", snet.write_xml(inputs(5)))
    bad = cli("run", prog, "--boxes", boxes, "-i", inp, "-w", "1", "-o", str(tmp_path / "out.xml"))
    assert bad.returncode == 1
    assert "box `work`: failed" in bad.stderr and "KeyError: 3" in bad.stderr
    # The outputs that reached the network's output before the error are
    # written (which ones depends on the schedule): a well-formed stream.
    written = snet.read_xml(str(tmp_path / "out.xml"))
    assert {r["y"] for r in written} <= {100, 101, 102}


def test_outputs_finished_before_an_error_come_before_it():
    net = farm(boxes_errors.fail_at_13)
    running = net.start(workers=1)
    for i in range(3):
        running.send({"x": i, "<k>": i})
    got = [running.recv() for _ in range(3)]
    running.send({"x": 13, "<k>": 13})
    running.close()
    with pytest.raises(snet.RunError, match="thirteen"):
        running.recv()
    assert sorted(r["y"] for r in got) == [0, 2, 4]


def test_cli_check_and_missing_box_function(tmp_path):
    bad = write(tmp_path / "bad.snet", "net n connect nosuch;")
    r = cli("check", bad)
    assert r.returncode == 1 and "unknown box or net `nosuch`" in r.stderr
    prog = write(tmp_path / "farm.snet", FARM)
    boxes = write(tmp_path / "none.py", "x = 1\n")
    r = cli("run", prog, "--boxes", boxes, "-i", os.devnull)
    assert r.returncode == 1 and "no function for box `work`" in r.stderr


def test_ctrl_c_stops_the_run(tmp_path):
    prog = write(tmp_path / "farm.snet", FARM)
    boxes = write(tmp_path / "slowboxes.py",
                  "import time\ndef work(x, k):\n    time.sleep(0.05)\n    return {'y': x}\n")
    inp = write(tmp_path / "in.xml", snet.write_xml(inputs(400)))
    # The run's SIGINT as a terminal gives it, whatever this test inherited
    # (a job started in the background by a non-interactive shell ignores
    # SIGINT, and Python then installs no handler for it).
    p = subprocess.Popen([sys.executable, "-m", "snet", "run", prog, "--boxes", boxes, "-i", inp,
                          "--nodes", "2", "-w", "1"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    # Interrupt once the run is under way (the first box calls have begun).
    import time
    time.sleep(1.0)
    p.send_signal(signal.SIGINT)
    out, err = p.communicate(timeout=120)
    assert p.returncode == 130, err
    assert "interrupted" in err
    done = snet.read_xml(io.StringIO(out))
    assert len(done) < 400
