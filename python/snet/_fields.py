"""How Python field values cross between node processes, and the typed
arrays C boxes and the XML record format know.

Called by the extension module (``snet._snet``): ``encode``/``decode``
when a field that is a Python object crosses to another node process,
``make_array`` for a C4SNet array, ``typed_buffer`` when the XML writer
meets a Python object, ``format_exception`` for a box's error.
"""

import array
import pickle
import traceback

# The first byte of an encoded value says how the rest is to be read.
_PICKLE = 0  # pickle.dumps(obj)
_BYTEARRAY = 1  # the bytes themselves
_NDARRAY = 2  # 4-byte length of a header (dtype, shape), the header, the buffer

# struct-module formats of typed buffers, by the C type C4SNet names.
_C_TYPES = {
    "b": "char", "B": "unsigned char", "h": "short", "H": "unsigned short",
    "i": "int", "I": "unsigned int", "q": "long", "Q": "unsigned long",
    "f": "float", "d": "double",
}
_C_TYPES["l" if array.array("l").itemsize == 8 else "i"] = "long"
_C_TYPES["L" if array.array("L").itemsize == 8 else "I"] = "unsigned long"


def _is_ndarray(obj):
    t = type(obj)
    return t.__name__ == "ndarray" and t.__module__ == "numpy"


def encode(obj):
    """The bytes of a field value for another process: buffers raw, the
    rest pickled."""
    if type(obj) is bytearray:
        return bytes((_BYTEARRAY,)) + obj
    if _is_ndarray(obj) and not obj.dtype.hasobject:
        header = pickle.dumps((obj.dtype.str, obj.shape))
        return b"".join((bytes((_NDARRAY,)), len(header).to_bytes(4, "little"), header,
                         obj.tobytes(order="C")))
    return bytes((_PICKLE,)) + pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)


def decode(data):
    """The field value of bytes ``encode`` made."""
    kind, rest = data[0], memoryview(data)[1:]
    if kind == _BYTEARRAY:
        return bytearray(rest)
    if kind == _NDARRAY:
        import numpy

        n = int.from_bytes(rest[:4], "little")
        dtype, shape = pickle.loads(rest[4:4 + n])
        return numpy.frombuffer(bytearray(rest[4 + n:]), dtype=dtype).reshape(shape)
    return pickle.loads(rest)


def make_array(typecode, data):
    """A C4SNet array (not of one element) as an ``array.array``."""
    a = array.array(typecode)
    a.frombytes(data)
    return a


def typed_buffer(obj):
    """``(C type, bytes)`` of an object with a typed buffer of numbers
    (``array.array``, a numpy array, ``bytearray``), else None."""
    try:
        m = memoryview(obj)
    except TypeError:
        return None
    fmt = m.format.lstrip("@=")
    ctype = _C_TYPES.get(fmt)
    if ctype is None or not m.c_contiguous:
        return None
    return ctype, m.tobytes()


def format_exception(exc, tb):
    """An exception with its traceback ``tb``, as Python prints it."""
    return "".join(traceback.format_exception(type(exc), exc, tb))
