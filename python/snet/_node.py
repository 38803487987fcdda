"""A node process of a multi-node run (``python -m snet._node SPEC``).

Node 0 (the process that called ``Network.run``/``start`` with
``nodes > 1``) starts nodes 1..N-1 with this module and a file holding the
program, the run options and the box functions (pickled by reference,
as ``multiprocessing`` sends them). This process rebuilds the network
from them and joins the run; the library ends the process with the run.
"""

import pickle
import runpy
import sys
import types


def _load_main(path):
    """Runs the user's main script as ``__mp_main__`` (so its
    ``if __name__ == "__main__":`` part does not run) and makes it
    ``__main__``, where the box functions defined in it are looked up."""
    module = types.ModuleType("__mp_main__")
    module.__dict__.update(runpy.run_path(path, run_name="__mp_main__"))
    sys.modules["__main__"] = sys.modules["__mp_main__"] = module


def main():
    with open(sys.argv[1], "rb") as f:
        head = pickle.load(f)
        sys.path[:] = head["sys_path"]
        if head["main_file"]:
            _load_main(head["main_file"])
        boxes = pickle.load(f)
    import snet

    name, text, entry = head["source"]
    net = snet.Network(text, name=name, entry=entry)
    for path in head["c_libraries"]:
        net.add_c_boxes(path)
    for box, func in boxes.items():
        net.add_box(box, func)
    trace, trace_sample, profile = head["report"]
    net.start(workers=head["workers"], nodes=head["nodes"], transport="shm",
              box_concurrency=head["box_concurrency"], trace=trace,
              trace_sample=trace_sample, profile=profile)
    # The library ends a node process with its run.
    sys.exit(f"error: node process {snet.node_process()} returned from its run")


if __name__ == "__main__":
    main()
