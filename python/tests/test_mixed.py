"""C boxes and Python boxes in one network: a C box library (compiled from
a conformance case's C sources) with Python functions registered for some
of its boxes gives the C-only run's expected outputs (as multisets), at 1
and 2 workers and on 2 shm nodes (each node process loads the library);
its errors name the box, the library or the missing symbol."""

import array
import os
import subprocess
import sys

import pytest

import snet
import boxes_conformance
import boxes_mixed

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
CASE = os.path.join(ROOT, "tests", "conformance", "c", "flow-inherit")
# inc in node process 1, twice in the last one.
PLACED = ("box inc((a) -> (b));\nbox twice((b) -> (c));\n"
          "net flow connect (inc @ 1) .. [{b} -> {b, <mid>}] .. (twice @ 1);")


def multiset(records):
    return sorted(repr(sorted(r.items())) for r in records)


@pytest.fixture(scope="module")
def library(tmp_path_factory):
    """The case's C boxes (inc, twice) as a C box library."""
    net = snet.Network.from_file(os.path.join(CASE, "prog.snet"))
    out = str(tmp_path_factory.mktemp("lib") / "libflow.so")
    return net.build_c_boxes([os.path.join(CASE, "boxes.c")], out)


def expected():
    return multiset(snet.read_xml(os.path.join(CASE, "expected.xml")))


def run(library, python_boxes, workers=1, nodes=1, text=None):
    net = (snet.Network.from_source(text, name="placed.snet") if text
           else snet.Network.from_file(os.path.join(CASE, "prog.snet")))
    assert sorted(net.add_c_boxes(library)) == ["inc", "twice"]
    for name in python_boxes:
        net.add_box(name, getattr(boxes_mixed, name))
    inp = snet.read_xml(os.path.join(CASE, "input.xml"))
    return multiset(net.run(inp, workers=workers, nodes=nodes))


@pytest.mark.parametrize("workers", [1, 2])
@pytest.mark.parametrize("python_boxes", [[], ["twice"], ["inc"]])
def test_mixed_one_node(library, python_boxes, workers):
    assert run(library, python_boxes, workers) == expected()


@pytest.mark.parametrize("python_boxes", [["twice"], ["inc"]])
def test_mixed_shm_nodes(library, python_boxes):
    text = PLACED if python_boxes == ["twice"] else PLACED.replace("(twice @ 1)", "twice")
    assert run(library, python_boxes, nodes=2, text=text) == expected()


def test_sources_compiled_and_python_boxes_for_the_rest(tmp_path):
    # A source defining only `inc`: `twice` is left to Python (add_boxes
    # skips the C boxes).
    src = tmp_path / "inc.c"
    src.write_text(open(os.path.join(CASE, "boxes.c")).read().split("void *twice")[0])
    net = snet.Network.from_file(os.path.join(CASE, "prog.snet"))
    assert net.add_c_boxes(str(src)) == ["inc"]
    assert net.add_boxes(boxes_conformance) == []
    inp = snet.read_xml(os.path.join(CASE, "input.xml"))
    assert multiset(net.run(inp)) == expected()


def test_fields_between_c_and_python(tmp_path):
    # C4SNet values a C box makes arrive as Python values, and back.
    src = tmp_path / "conv.c"
    src.write_text(r"""
#include "C4SNet.h"
void *mk(void *hnd, int n)
{
    int is[3] = {n, n + 1, n + 2};
    double d = n / 2.0;
    C4SNetOut(hnd, 1, C4SNetCreate(CTYPE_int, 3, is), C4SNetCreate(CTYPE_double, 1, &d),
              C4SNetCreate(CTYPE_char, 2, "hi"), C4SNetCreate(CTYPE_long, 1, &(long){n}));
    return hnd;
}
void *sum(void *hnd, c4snet_data_t *xs, c4snet_data_t *s)
{
    int t = 0, *p = C4SNetGetData(xs);
    for (size_t i = 0; i < C4SNetArraySize(xs); i++)
        t += p[i];
    int ok = C4SNetGetType(xs) == CTYPE_int && C4SNetGetType(s) == CTYPE_uchar;
    C4SNetFree(xs);
    C4SNetFree(s);
    C4SNetOut(hnd, 1, ok ? t : -1);
    return hnd;
}
""")
    net = snet.Network.from_source("""
        box mk((<n>) -> (is, d, s, l));
        box py((is, d, s, l) -> (xs, s));
        box sum((xs, s) -> (<t>));
        net conv connect mk .. py .. sum;
    """)
    net.add_c_boxes(str(src))
    seen = []

    @net.box
    def py(is_, d, s, l):
        seen.append((is_, d, s, l))
        return {"xs": array.array("i", [v * 10 for v in is_]), "s": s.encode()}

    assert list(net.run([{"<n>": 4}])) == [{"<t>": 150}]
    assert seen == [(array.array("i", [4, 5, 6]), 2.0, "hi", 4)]


def test_c_box_error_names_the_box(tmp_path):
    bad = os.path.join(ROOT, "tests", "conformance", "c", "err-variant-range")
    net = snet.Network.from_file(os.path.join(bad, "prog.snet"))
    net.add_c_boxes(os.path.join(bad, "bad.c"))
    with pytest.raises(snet.RunError) as e:
        list(net.run([{"<x>": 1}]))
    assert e.value.box_name == "bad"
    assert "variant 3" in str(e.value)


def test_missing_symbol_is_named(tmp_path):
    src = tmp_path / "helper.c"
    src.write_text('#include "C4SNet.h"\nint helper(int);\n'
                   "void *inc(void *hnd, c4snet_data_t *a) { C4SNetOut(hnd, 1, a); helper(1); return hnd; }\n")
    net = snet.Network.from_file(os.path.join(CASE, "prog.snet"))
    # At the link (-z defs) ...
    with pytest.raises(snet.LoadError) as e:
        net.add_c_boxes(str(src))
    assert "helper" in str(e.value) and "inc" not in net._c_boxes
    # ... and, for a library linked without it, when it is loaded.
    lib = net.build_c_boxes([str(src)], str(tmp_path / "libhelper.so"), cflags="-Wl,-z,undefs")
    with pytest.raises(snet.LoadError) as e:
        net.add_c_boxes(lib)
    assert "libhelper.so" in str(e.value) and "undefined symbol: helper" in str(e.value)


def test_library_of_another_signature_is_refused(library):
    net = snet.Network.from_source("box inc((a, <t>) -> (b)); net n connect inc;")
    with pytest.raises(snet.LoadError) as e:
        net.add_c_boxes(library)
    msg = str(e.value)
    assert "libflow.so" in msg and "inc((a) -> (b))" in msg and "inc((a, <t>) -> (b))" in msg


def test_not_a_library(tmp_path):
    net = snet.Network.from_file(os.path.join(CASE, "prog.snet"))
    with pytest.raises(snet.LoadError, match="no such file"):
        net.add_c_boxes(str(tmp_path / "nothing.so"))


def test_command_mixes_c_and_python(library, tmp_path):
    mod = tmp_path / "pyboxes.py"
    mod.write_text("def twice(b):\n    return {'c': b * 2}\n")
    out = tmp_path / "out.xml"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    done = subprocess.run(
        [sys.executable, "-m", "snet", "run", os.path.join(CASE, "prog.snet"),
         "--c-boxes", os.path.join(CASE, "boxes.c"), "--boxes", str(mod),
         "-i", os.path.join(CASE, "input.xml"), "-o", str(out), "--nodes", "2"],
        capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stderr
    assert multiset(snet.read_xml(str(out))) == expected()
