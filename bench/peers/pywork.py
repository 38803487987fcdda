"""The work of the Python rows of bench/peers (python-run): one function
per workload, importable by snet's node processes and by the peers'
worker processes alike."""

ROUNDS = {"rounds": 0}


def spin(x, rounds):
    """Pure-Python work: `rounds` steps of an integer recurrence."""
    s = x
    for _ in range(rounds):
        s = (s * 1103515245 + 12345) & 0x7FFFFFFF
    return s


def farm_box(x, r):
    # snet's box: `r` (the rounds) is a tag of the record.
    return {"<y>": spin(x, r)}


def peer_task(arg):
    x, r = arg
    return spin(x, r)


def inc(x):
    return {"<x>": x + 1}


# The ten boxes of the chain: one function, registered under ten names.
CHAIN = [f"b{i}" for i in range(10)]


def bare(x):
    return x + 1
