"""Python versions of the boxes of tests/conformance/c/flow-inherit for
runs that mix them with its C boxes: a field that a C box reads as a C
`int` is given as an `array.array("i")` (a Python int would be a C
`long`). Module-level functions, so that node processes import them."""

import array


def inc(a):
    return {"b": array.array("i", [a + 1])}


def twice(b):
    return {"c": b * 2}
