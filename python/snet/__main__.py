"""``python -m snet``: run an S-Net program whose boxes are functions of
Python modules, on records in the XML record format.

    python -m snet run prog.snet --boxes boxes.py [--c-boxes boxes.c|lib.so]
                       -i in.xml [-o out.xml]
                       [-w N] [--nodes N] [--transport shm|loopback]
                       [--box-concurrency N] [--entry NET]
                       [--trace FILE] [--profile FILE]
    python -m snet check prog.snet
"""

import argparse
import importlib
import os
import sys

import snet


def _import(spec):
    """A module given as a file (``boxes.py``) or a dotted name."""
    if spec.endswith(".py") or os.sep in spec:
        path = os.path.abspath(spec)
        if not os.path.isfile(path):
            raise SystemExit(f"error: --boxes {spec}: no such file")
        # Imported by name from its directory, so that node processes
        # import it the same way (box functions travel by reference).
        sys.path.insert(0, os.path.dirname(path))
        spec = os.path.splitext(os.path.basename(path))[0]
    return importlib.import_module(spec)


def _run(args):
    net = snet.Network.from_file(args.program, entry=args.entry)
    for w in net.warnings:
        print(f"{args.program}:{w}", file=sys.stderr)
    if args.c_boxes:
        net.add_c_boxes(*args.c_boxes, cflags=args.cflags or ())
    for spec in args.boxes:
        net.add_boxes(_import(spec))
    missing = [b.name for b in net.boxes
               if b.name not in net._boxes and b.name not in net._c_boxes]
    if missing:
        mods = ", ".join(args.boxes + args.c_boxes) or "no --boxes module"
        raise SystemExit(
            "error: no function for box " + ", ".join(f"`{m}`" for m in missing)
            + f" in {mods}")
    records = snet.read_xml(args.input if args.input != "-" else sys.stdin,
                            name=args.input if args.input != "-" else "stdin")
    outputs = []
    status = 0
    try:
        for out in net.run(records, workers=args.workers, nodes=args.nodes,
                           transport=args.transport,
                           box_concurrency=args.box_concurrency, trace=args.trace,
                           trace_sample=args.trace_sample, profile=args.profile):
            outputs.append(out)
    except snet.RunError as e:
        print(f"error: {e}", file=sys.stderr)
        status = 1
    except KeyboardInterrupt:
        print("error: interrupted", file=sys.stderr)
        status = 130
    # The outputs finished before an error are written too.
    if args.output:
        snet.write_xml(outputs, args.output)
    else:
        sys.stdout.write(snet.write_xml(outputs))
    return status


def main(argv=None):
    p = argparse.ArgumentParser(prog="python -m snet", description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="command", required=True)
    r = sub.add_parser("run", help="run a program on an XML record stream")
    r.add_argument("program")
    r.add_argument("--boxes", action="append", default=[], metavar="MODULE",
                   help="a Python file or module whose functions of the boxes' names are the boxes")
    r.add_argument("--c-boxes", action="append", default=[], metavar="FILE",
                   help="a C box library (.so) or C box sources (.c, .o, .a; compiled together)")
    r.add_argument("--cflags", metavar="FLAGS",
                   help="more arguments for the C compiler of --c-boxes sources")
    r.add_argument("-i", "--input", default="-", help="input stream (default: standard input)")
    r.add_argument("-o", "--output", help="output stream (default: standard output)")
    r.add_argument("-w", "--workers", type=int, help="worker threads per node (default: one per core)")
    r.add_argument("--nodes", type=int, default=1, help="nodes (1..N-1 as processes with shm)")
    r.add_argument("--transport", choices=["shm", "loopback"], default="shm")
    r.add_argument("--box-concurrency", type=int, default=1)
    r.add_argument("--entry", help="the entry network (default: the last defined)")
    r.add_argument("--trace", metavar="FILE",
                   help="write a trace of the run to FILE (Trace Event Format JSON, as snet run)")
    r.add_argument("--trace-sample", type=int, default=1000, metavar="N",
                   help="with --trace: follow the records of every Nth input record (0: none)")
    r.add_argument("--profile", metavar="FILE",
                   help="write the run's profile to FILE as JSON (snet run --profile-json)")
    c = sub.add_parser("check", help="compile a program and report its diagnostics")
    c.add_argument("program")
    args = p.parse_args(argv)
    try:
        if args.command == "check":
            net = snet.Network.from_file(args.program)
            for w in net.warnings:
                print(f"{args.program}:{w}", file=sys.stderr)
            return 0
        return _run(args)
    except (snet.LoadError, snet.XmlError) as e:
        msg = str(e)
        print(msg if msg.startswith("error") else f"error: {msg}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
