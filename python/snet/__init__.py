"""S-Net for Python: write sequential functions, run them as the boxes of a
parallel streaming network.

    import snet

    net = snet.Network.from_source('''
        box square((x) -> (y));
        net main connect square;
    ''')

    @net.box
    def square(x):
        return {"y": x * x}

    for out in net.run({"x": v, "<i>": i} for i, v in enumerate([1.0, 2.0])):
        print(out)          # {'y': 1.0, '<i>': 0} ...

A record is a dict: fields by name (any Python object), tags as
``'<t>'`` and binding tags as ``'<#b>'`` (ints). A box function takes its
input labels as positional arguments, in the order of its signature, and
returns None, one output dict (keys: the labels of one output variant,
tags with or without the angle brackets), or an iterable of them.

``nodes=N`` runs nodes 1..N-1 as processes of their own (each with its
own interpreter), so placements (``box !@ <k>``) spread Python work over
cores. See docs/python.md.
"""

import atexit
import itertools
import os
import pickle
import shlex
import shutil
import subprocess
import sys
import tempfile
from collections import namedtuple

from . import _snet
from ._snet import LoadError, RunError, SnetError, XmlError

__all__ = [
    "Network", "Running", "BoxSignature", "SnetError", "LoadError", "RunError",
    "XmlError", "read_xml", "write_xml", "node_process", "load",
]

BoxSignature = namedtuple("BoxSignature", "name inputs outputs interface")
BoxSignature.__doc__ = """A declared box: its input labels (``'x'``, ``'<t>'``),
its output variants (lists of labels) and its interface."""


def node_process():
    """``k`` in node process ``k`` of a multi-node run, else None."""
    return _snet.node_process()


def _origin(func):
    """``module.name (file:line)`` of a function, for messages."""
    name = getattr(func, "__qualname__", None) or repr(func)
    module = getattr(func, "__module__", None)
    code = getattr(func, "__code__", None)
    where = f"{module}.{name}" if module else name
    if code is not None:
        where += f" ({code.co_filename}:{code.co_firstlineno})"
    return where


class Network:
    """A compiled S-Net program with its Python boxes.

    ``Network.from_file(path)`` or ``Network.from_source(text)``; register a
    function for each box (``@net.box``, ``net.add_box(name, f)``), then
    ``net.run(records)`` (an iterator of the outputs) or ``net.start()``
    (a :class:`Running` to feed and drain). Raises :class:`LoadError`,
    whose ``str`` renders the diagnostics as ``snet check`` does.
    """

    def __init__(self, text, name="<string>", entry=None):
        self._raw = _snet.RawNetwork(name, text, entry)
        self._source = (name, text, entry)
        self._boxes = {}
        self._c_libraries = []  # absolute paths of the C box libraries loaded
        self._c_boxes = set()  # the boxes they define

    @classmethod
    def from_source(cls, text, name="<string>", entry=None):
        """The program ``text`` (named ``name`` in messages); the entry
        network is ``entry``, or the last one defined."""
        return cls(text, name=name, entry=entry)

    @classmethod
    def from_file(cls, path, entry=None):
        """The program in file ``path``."""
        path = os.fspath(path)
        try:
            with open(path, encoding="utf-8") as f:
                text = f.read()
        except (OSError, UnicodeDecodeError):
            raise _snet.RawNetwork.file_error(path) from None
        return cls(text, name=path, entry=entry)

    @property
    def boxes(self):
        """The declared boxes, as :class:`BoxSignature` s."""
        return [BoxSignature(*s) for s in self._raw.signatures()]

    @property
    def warnings(self):
        """The program's warnings (``line:col: warning: ...``)."""
        return self._raw.warnings()

    def add_box(self, name, func):
        """Registers ``func`` as box ``name``; returns ``func``."""
        if not callable(func):
            raise TypeError(f"box `{name}`: {func!r} is not callable")
        self._raw.add_box(name, func, _origin(func))
        self._boxes[name] = func
        return func

    def box(self, arg=None):
        """A decorator registering a function as the box of its name
        (``@net.box``) or of another (``@net.box("name")``)."""
        if callable(arg):
            return self.add_box(arg.__name__, arg)

        def register(func):
            return self.add_box(arg or func.__name__, func)

        return register

    def add_boxes(self, namespace):
        """Registers, for every declared box without a function yet (and
        not a C box of a library added with :meth:`add_c_boxes`), the
        attribute of that name of ``namespace`` (a module, a class, a
        dict); returns the names of the boxes still without one."""
        get = namespace.get if isinstance(namespace, dict) else (
            lambda n: getattr(namespace, n, None))
        missing = []
        for sig in self.boxes:
            if sig.name in self._boxes or sig.name in self._c_boxes:
                continue
            func = get(sig.name)
            if callable(func):
                self.add_box(sig.name, func)
            else:
                missing.append(sig.name)
        return missing

    def add_c_boxes(self, *files, cflags=()):
        """Takes boxes written in C (C4SNet) from ``files``: a C box
        library (``.so``) made by :meth:`build_c_boxes`, or C sources
        (``.c``, and ``.o``/``.a`` files) compiled into one now. Every box of
        the program the library defines runs its C function, unless a
        Python function is registered for it (which wins). Returns the
        names of those boxes. ``cflags``: more arguments for the C
        compiler (``-O3``, ``-lm``, ``-I dir``), as a list or a string.
        Raises :class:`LoadError` naming the library (a symbol it lacks, a
        box it was built for with another signature) or with the C
        compiler's messages."""
        files = [os.fspath(f) for f in files]
        libraries = [f for f in files if f.endswith(".so")]
        sources = [f for f in files if not f.endswith(".so")]
        if sources:
            # A name of its own: a process loads a library path once.
            fd, out = tempfile.mkstemp(prefix="boxes-", suffix=".so", dir=_scratch())
            os.close(fd)
            libraries.append(self.build_c_boxes(sources, out, cflags=cflags))
        names = []
        for lib in libraries:
            path = os.path.abspath(lib)
            got = self._raw.add_c_library(path)
            self._c_libraries.append(path)
            self._c_boxes.update(got)
            names.extend(got)
        return names

    def build_c_boxes(self, sources, output, cflags=()):
        """Compiles C box ``sources`` (with this program's box table)
        into the C box library ``output`` (a ``.so``) with the C compiler
        (``$CC``, default ``cc``); returns ``output``. Raises
        :class:`LoadError` with the compiler's messages when it fails (a
        box function defined nowhere is named: ``undefined reference to
        `f'``)."""
        if isinstance(cflags, str):
            cflags = shlex.split(cflags)
        gen = tempfile.mkdtemp(prefix="gen-", dir=_scratch())
        for name, text in self._raw.c_library_files():
            with open(os.path.join(gen, name), "w", encoding="utf-8") as f:
                f.write(text)
        sources = [os.fspath(s) for s in sources]
        dirs = []
        for s in sources:
            d = os.path.dirname(os.path.abspath(s))
            if d not in dirs:
                dirs.append(d)
        cc = shlex.split(os.environ.get("CC", "cc"))
        cmd = (cc + ["-shared", "-fPIC", "-O2", "-Wl,-z,defs", "-I", gen]
               + [a for d in dirs for a in ("-I", d)]
               + ["-o", os.fspath(output), os.path.join(gen, "snet_library.c"),
                  os.path.join(gen, "snet_c4snet.c")] + sources + list(cflags))
        try:
            done = subprocess.run(cmd, capture_output=True, text=True)
        except OSError as e:
            raise LoadError(f"error: cannot run the C compiler `{cc[0]}`: {e}") from None
        finally:
            shutil.rmtree(gen, ignore_errors=True)
        if done.returncode != 0:
            raise LoadError(
                f"error: the C compiler (`{cc[0]}`) failed to build the C boxes of "
                f"{', '.join(sources)}:\n{done.stderr.rstrip()}")
        return output

    def start(self, *, workers=None, nodes=1, transport="shm", box_concurrency=1,
              trace=None, trace_sample=1000, profile=None):
        """Starts the network and returns its :class:`Running`.

        ``workers``: threads per node (default one per core); ``nodes``:
        nodes, 1..N-1 as processes of their own with ``transport="shm"``
        (the default) or as threads of this process with ``"loopback"``;
        ``box_concurrency``: calls of one box instance at once;
        ``trace``, ``profile``: files the run's trace (Trace Event Format
        JSON, every ``trace_sample``-th input record followed) and profile
        (JSON) are written to when it ends, as ``snet run --trace`` and
        ``--profile-json`` write them.
        """
        trace = trace and os.path.abspath(os.fspath(trace))
        profile = profile and os.path.abspath(os.fspath(profile))
        missing = [s.name for s in self.boxes
                   if s.name not in self._boxes and s.name not in self._c_boxes]
        if missing:
            raise SnetError(
                "no Python function is registered for box " + ", ".join(
                    f"`{m}`" for m in missing) + " (net.add_box(name, f) or @net.box), "
                "nor does a C box library define it (net.add_c_boxes)")
        self._raw.configure(workers, nodes, transport, box_concurrency,
                            trace, trace_sample, profile)
        spec = None
        if nodes > 1 and transport == "shm" and node_process() is None:
            spec = self._node_spec(workers, nodes, box_concurrency,
                                   (trace, trace_sample, profile))
            self._raw.node_command(sys.executable, ["-m", "snet._node", spec])
        try:
            return Running(self._raw.start(), spec)
        except BaseException:
            if spec:
                os.unlink(spec)
            raise

    def run(self, records, **options):
        """Runs the network on ``records`` (an iterable of dicts) and
        returns an iterator of its outputs (dicts), in the order the
        network produces them. Options as for :meth:`start`. A box's error
        raises :class:`RunError` from the iterator, after the outputs
        finished before it."""
        return self.start(**options)._outputs(records)

    def _node_spec(self, workers, nodes, box_concurrency, report):
        """Writes what a node process needs to rebuild this network (the
        program, the options, the box functions by reference) to a file
        and returns its name."""
        name, text, entry = self._source
        mains = sorted({f.__module__ for f in self._boxes.values()
                        if getattr(f, "__module__", None) == "__main__"})
        main_file = None
        if mains:
            main_file = getattr(sys.modules["__main__"], "__file__", None)
            if main_file is None:
                raise SnetError(
                    "nodes > 1 runs node processes that import the box functions, but "
                    "these are defined in an interactive session: define them in a module")
        head = {"source": (name, text, entry), "workers": workers, "nodes": nodes,
                "box_concurrency": box_concurrency, "sys_path": list(sys.path),
                "c_libraries": list(self._c_libraries), "report": report,
                "main_file": main_file and os.path.abspath(main_file)}
        try:
            body = pickle.dumps(self._boxes)
        except Exception:
            for box, func in self._boxes.items():
                try:
                    pickle.dumps(func)
                except Exception as e:
                    raise SnetError(
                        f"box `{box}`: its function {_origin(func)} cannot be sent to the "
                        f"node processes ({e}): with nodes > 1 a box is a function defined "
                        "at the top level of a module, which they import") from None
            raise
        fd, path = tempfile.mkstemp(prefix="snet-nodes-", suffix=".pickle")
        with os.fdopen(fd, "wb") as f:
            pickle.dump(head, f)
            f.write(body)
        return path


class Running:
    """A started network: :meth:`send` records in, :meth:`recv` outputs
    (or iterate over it), :meth:`close` the input; :meth:`finish` closes
    and returns the outputs not received yet. A failed run raises
    :class:`RunError` from ``recv``, ``send`` or ``finish``. Use it as a
    context manager to close it on the way out."""

    def __init__(self, raw, spec=None):
        self._raw = raw
        self._spec = spec

    def send(self, record):
        """Sends a record (a dict) into the network; waits while 1024 sent
        records have not been taken yet. Raises :class:`RunError` if the
        run has ended (``recv`` then gives the outputs it finished and
        raises its error)."""
        if not self._raw.send(record):
            raise RunError("the run has ended: no more input is taken "
                           "(recv() gives its outputs, then its error)")

    def recv(self):
        """The next output, waiting for it; None once the input is closed
        and every output has been received."""
        try:
            out = self._raw.recv()
        except BaseException:
            self._done()
            raise
        if out is None:
            self._done()
        return out

    def try_recv(self):
        """The next output if one is waiting, else None."""
        return self._raw.try_recv()

    def close(self):
        """Ends the input: once the network has drained, the run ends."""
        self._raw.close()

    def finish(self):
        """Closes the input and returns the outputs not received yet."""
        self.close()
        return list(self)

    def __iter__(self):
        while True:
            out = self.recv()
            if out is None:
                return
            yield out

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        self._done()
        return False

    def _done(self):
        if self._spec:
            try:
                os.unlink(self._spec)
            except OSError:
                pass
            self._spec = None

    def _outputs(self, records):
        # Records go in and outputs come out in batches, each converted
        # with one hold of the GIL and sent with it released once, so that
        # the boxes (which need the GIL) are not held up by this thread.
        try:
            it = iter(records)
            while True:
                batch = list(itertools.islice(it, _BATCH))
                if not batch:
                    break
                sent = self._raw.send_many(batch)
                yield from self._raw.try_recv_many(_BATCH * 4)
                if sent < len(batch):
                    break  # the run failed: its outputs, then its error
            self.close()
            while True:
                out = self.recv()
                if out is None:
                    break
                yield out
                yield from self._raw.try_recv_many(_BATCH * 4)
        finally:
            self.close()
            self._done()


# Records sent, and outputs taken, per hold of the GIL in Network.run.
_BATCH = 256

_SCRATCH = []


def _scratch():
    """A directory of this process for C box libraries it compiles,
    removed when the process ends (node processes load them at their
    start, while it lives)."""
    if not _SCRATCH:
        d = tempfile.mkdtemp(prefix="snet-c-boxes-")
        _SCRATCH.append(d)
        atexit.register(shutil.rmtree, d, True)
    return _SCRATCH[0]


def load(path, entry=None):
    """``Network.from_file(path, entry)``."""
    return Network.from_file(path, entry)


def read_xml(source, name=None):
    """The records of an XML record stream: ``source`` is a path or an
    open file; a list of dicts. Raises :class:`XmlError` naming the place."""
    if hasattr(source, "read"):
        text = source.read()
        name = name or getattr(source, "name", "input")
    else:
        with open(source, encoding="utf-8") as f:
            text = f.read()
        name = name or os.fspath(source)
    if isinstance(text, bytes):
        text = text.decode("utf-8")
    return _snet.read_xml(text, str(name))


def write_xml(records, dest=None):
    """Writes ``records`` (dicts) as an XML record stream, ended by the
    terminate record, to ``dest`` (a path or an open text file); returns
    the text when ``dest`` is None. Fields must be int, float, str, bytes
    or typed arrays (``array.array``, numpy), as the format holds."""
    text = _snet.write_xml(records)
    if dest is None:
        return text
    if hasattr(dest, "write"):
        dest.write(text)
    else:
        with open(dest, "w", encoding="utf-8") as f:
            f.write(text)
    return None
