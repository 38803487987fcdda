"""Python versions of the C boxes of some C-box conformance cases
(tests/conformance/c/<case>/*.c), one function per box, with the same
outputs. Module-level functions, so that node processes import them."""


# feedback-box
def halve(n, c):
    return {"<n>": n // 2 if n >= 0 else -((-n) // 2), "<c>": c + 1}


# flow-inherit
def inc(a):
    return {"b": a + 1}


def twice(b):
    return {"c": b * 2}


# gen-split
def gen(k, n):
    return ({"<k>": k, "<i>": i} for i in range(n))


# gen-star
def st(s, p):
    if s == 0:
        yield {"<done>": 1, "<p>": p, "<w>": -1}
        return
    for w in range(2000):
        if w == 500:
            yield {"<s>": s - 1, "<p>": 2 * p}
        elif w == 1500:
            yield {"<s>": s - 1, "<p>": 2 * p + 1}
        else:
            yield {"<done>": 1, "<p>": p, "<w>": w}


# gen-sync
def ga(na):
    return [{"<a>": 3 * k, "<k>": k} for k in range(na)]


def gb(lo, hi):
    return [{"<b>": 7 * k, "<k>": k} for k in range(hi - 1, lo - 1, -1)]


def gc(nc):
    return [{"<c>": c} for c in range(nc)]


def gd(nd):
    return [{"<d>": 5} for _ in range(nd)]
