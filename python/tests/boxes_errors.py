"""Box functions of the error-path tests (module level: node processes
import them)."""

import os
import time


def fail_at_13(x, k):
    if x == 13:
        raise ValueError("thirteen is unlucky")
    return {"y": x * 2}


def wrong_labels(x, k):
    return {"z": x}


def exit_at_5(x, k):
    if x == 5:
        os._exit(3)
    return {"y": x}


def slow(x, k):
    time.sleep(0.05)
    return {"y": x}


def objects(x, k):
    # Objects that are not C4SNet data: a dict is pickled when it crosses
    # to another node, a bytearray travels as its bytes.
    return {"y": {"x": x, "pair": (x, str(x)), "buf": bytearray(b"ab" * x)}}
