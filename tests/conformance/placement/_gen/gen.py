#!/usr/bin/env python3
"""Generates the placement conformance cases in tests/conformance/placement/.

Distributed S-Net (shared/spec/distributed.md): static placement `A @ n`,
dynamic placement `A !@ <t>` and `A !!@ <t>`.  Placement changes where work
runs, never the output, so every expected output below is computed by plain
Python from the language semantics (language.md), per case, as if the
program had no placement at all (except that `!@`/`!!@` need the node to
exist).  `check.py` cross-checks every case against the pure suite's
reference interpreter under random schedules.

Run from anywhere:  python3 tests/conformance/placement/_gen/gen.py
It rewrites the case directories it defines and the case table of README.md
(never anything else).
"""
import os
import random
import re
import shutil
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(ROOT, '..', 'pure', '_gen'))
import c4snet  # noqa: E402  canonical C4SNet field values (records.md)

CASES = []
PROLOG = '<?xml version="1.0" ?>'


# ----------------------------------------------------------------------------
# helpers (records are dicts {(kind, name): value}, kind 't' tag, 'b' binding
# tag, 'f' field; a field value is its C4SNet text)

def cdiv(a, b):
    assert b != 0
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


def cmod(a, b):
    return a - b * cdiv(a, b)


def R(tags=None, btags=None, fields=None, **kw):
    r = {}
    for k, v in list((tags or {}).items()) + list(kw.items()):
        r[('t', k)] = v
    for k, v in (btags or {}).items():
        r[('b', k)] = v
    for k, v in (fields or {}).items():
        r[('f', k)] = v
    return r


def T(r, name):
    return r[('t', name)]


def filt(rec, pattern, outs):
    """A filter [pattern -> outs]: `pattern` is a list of keys (the labels
    the pattern names), `outs` a list of dicts of emitted labels (computed
    by the caller on the input record).  Labels of the input not named by
    the pattern are inherited by every output; an emitted label wins."""
    assert all(k in rec for k in pattern), (rec, pattern)
    inh = {k: v for k, v in rec.items() if k not in pattern}
    res = []
    for o in outs:
        r = dict(inh)
        r.update(o)
        res.append(r)
    return res


def t(name):
    return ('t', name)


def f(name):
    return ('f', name)


def b(name):
    return ('b', name)


def merge(recs, pats):
    """Synchrocell merge: labels named by pattern k from record k, all
    others from the record of the first pattern."""
    out = dict(recs[0])
    for r, p in zip(recs[1:], pats[1:]):
        for k in p:
            out[k] = r[k]
    return out


def xml_escape(s):
    return s.replace('&', '&amp;').replace('<', '&lt;').replace('>', '&gt;')


def rec_body(r):
    parts = []
    order = {'f': 0, 't': 1, 'b': 2}
    for (k, n), v in sorted(r.items(), key=lambda kv: (order[kv[0][0]], kv[0][1])):
        if k == 'f':
            parts.append('<field label="%s" interface="C4SNet">%s</field>' % (n, xml_escape(v)))
        elif k == 't':
            parts.append('<tag label="%s">%d</tag>' % (n, v))
        else:
            parts.append('<btag label="%s">%d</btag>' % (n, v))
    return ''.join(parts)


def input_xml(recs):
    lines = [PROLOG]
    for r in recs:
        lines.append('<record xmlns="snet-home.org" type="data" mode="textual" interface="C4SNet">'
                     + rec_body(r) + '</record>')
    lines.append('<record type="terminate" />')
    return '\n'.join(lines) + '\n'


def canon_rec(r):
    return {k: (c4snet.canonical(v) if k[0] == 'f' else v) for k, v in r.items()}


def output_xml(recs):
    lines = []
    for r in recs:
        lines.append(PROLOG + '<record xmlns="snet-home.org" type="data" mode="textual" >'
                     + rec_body(canon_rec(r)) + '</record>')
    lines.append('<record type="terminate" />')
    return '\n'.join(lines) + '\n'


def case(name, prog, inp, expected=None, ordered=False, error=None, nodes=None, notes=None,
         readme=None, one_node=None, warning=None):
    """inp: list of records or raw XML text; expected: list of records;
    nodes: the node counts the distributed runs may use (the `nodes` file;
    one-node runs always happen: one node ignores placements);
    one_node: for an error case, the records of a one-node run
    (`expected-1node.xml`); warning: the one-node run's warning
    (`warning-1node.txt`);
    readme: (check, covers) for the suite README table."""
    assert (expected is None) != (error is None)
    CASES.append(dict(name=name, prog=prog.strip('\n') + '\n', inp=inp, expected=expected,
                      ordered=ordered, error=error, nodes=nodes, notes=notes, readme=readme,
                      one_node=one_node, warning=warning))


def chars(s):
    """A C4SNet char array holding the characters of s."""
    assert ',' not in s
    return '(char[%d])%s' % (len(s), ','.join(s)) if len(s) != 1 else '(char)' + s


def big_text(rnd, n):
    alphabet = 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789<>&"'
    return ''.join(rnd.choice(alphabet) for _ in range(n))


I = lambda v: '(int)%d' % v  # noqa: E731
rnd = random.Random(20240611)

# ============================================================================
# STATIC PLACEMENT

ins = []
for i in range(300):
    r = R(id=i, x=rnd.randint(-60, 60))
    if i % 3 == 0:
        r[f('f')] = I(i * 7)
    if i % 5 == 0:
        r[t('keep')] = -i
    ins.append(r)
exp = []
for r in ins:
    x = T(r, 'x')
    r = filt(r, [t('x')], [{t('x'): x + 1, t('p0'): x}])[0]
    x = T(r, 'x')
    r = filt(r, [t('x')], [{t('x'): x * 3, t('p1'): x}])[0]
    x = T(r, 'x')
    r = filt(r, [t('x')], [{t('x'): x - 7, t('p2'): x}])[0]
    x = T(r, 'x')
    r = filt(r, [t('x')], [{t('x'): cmod(x, 11), t('p3'): x}])[0]
    exp.append(r)
case('static-chain', '''
// A serial chain with one stage on each of the four nodes: a on 0, b on 1,
// c on 2, d on 3; every record crosses 0 -> 1 -> 2 -> 3 -> 0.  Each stage
// records the value it saw, so a skipped or repeated stage shows.
net chain
{
  net a connect [{<x>} -> {<x=x+1>, <p0=x>}];
  net b connect [{<x>} -> {<x=x*3>, <p1=x>}];
  net c connect [{<x>} -> {<x=x-7>, <p2=x>}];
  net d connect [{<x>} -> {<x=x%11>, <p3=x>}];
}
connect (a @ 0) .. (b @ 1) .. (c @ 2) .. (d @ 3);
''', ins, exp, ordered=True, nodes=[4],
     notes='A serial chain of one-output filters, one stage per node: output = input order (records on one '
           'stream never overtake each other, also across nodes). x -> ((x+1)*3-7) % 11 (C remainder), '
           'p0..p3 the value each stage saw; id, keep and the int field f are flow-inherited.',
     readme=('ordered', '`(a @ 0) .. (b @ 1) .. (c @ 2) .. (d @ 3)`, 300 records, one stage per node'))

ins = []
for i in range(600):
    k = rnd.randrange(3)
    if k == 0:
        ins.append(R(id=i, x=rnd.randint(-100, 100), s=rnd.randint(0, 9)))
    elif k == 1:
        ins.append(R(id=i, x=rnd.randint(-100, 100), f=rnd.randint(0, 9)))
    else:
        ins.append(R(id=i, n=rnd.randint(-3, 25)))
exp = []
for r in ins:
    r = dict(r)
    r[t('hop')] = 2  # pre sets 1, the filter between sets hop+1
    if t('s') in r:
        r[t('x')] += 5
        exp.append(r)
    elif t('f') in r:
        x = T(r, 'x')
        exp += filt(r, [t('x'), t('f')], [{t('x'): 2 * x, t('f'): T(r, 'f')}, {t('y'): x}])
    else:
        n = T(r, 'n')
        c = 0
        while n > 0:
            n, c = n - 1, c + 1
        r[t('n')], r[t('c')] = n, c
        exp.append(r)
case('static-node1', '''
// Placements name only node 1: the first stage and the whole deterministic
// parallel part run there, the filter between them on node 0, so records
// cross 0 -> 1 -> 0 -> 1 -> 0.
net only1
{
  net pre connect [{<id>} -> {<id>, <hop=1>}];
  net slow connect [{<x>, <s>} -> {<x=x+1>, <s>}] .. [{<x>, <s>} -> {<x=x+1>, <s>}]
                .. [{<x>, <s>} -> {<x=x+1>, <s>}] .. [{<x>, <s>} -> {<x=x+1>, <s>}]
                .. [{<x>, <s>} -> {<x=x+1>, <s>}];
  net fast connect [{<x>, <f>} -> {<x=x*2>, <f>}; {<y=x>}];
  net count connect [{<n>} -> {<n>, <c=0>}]
                 .. ([{<n>, <c>} -> {<n=n-1>, <c=c+1>}] ** {<n>} if <n <= 0>);
}
connect (pre @ 1) .. [{<hop>} -> {<hop=hop+1>}] .. ((slow || fast || count) @ 1);
''', ins, exp, ordered=True, nodes=[2, 4],
     notes='Only node 1 is named; runs with 2 and 4 nodes. || keeps input order (every output of input i '
           'before those of i+1); fast emits its two records in written order; count runs n down to 0 '
           '(c = n for n > 0, records with n <= 0 leave the ** before the first replica).',
     readme=('ordered', 'placements only on node 1 (`(pre @ 1) .. f .. ((slow || fast || count) @ 1)`), '
                        '600 records, nodes 2 and 4'))

ins = [R(id=i, v=rnd.randint(-500, 500)) for i in range(300)]
exp = []
for r in ins:
    v = T(r, 'v')
    r = filt(r, [t('v')], [{t('v'): v * 2, t('xs'): v}])[0]
    v = T(r, 'v')
    r = filt(r, [t('v')], [{t('v'): v + 5, t('ys'): v}])[0]
    v = T(r, 'v')
    r = filt(r, [t('v')], [{t('v'): v - 1, t('zs'): v}])[0]
    exp.append(r)
case('nested-override', '''
// Nested static placement: the inner @ 2 overrides the outer @ 1 for x, so
// x runs on node 2, y (placed only by the outer @ 1) on node 1, z on node 0.
net nested
{
  net x connect [{<v>} -> {<v=v*2>, <xs=v>}];
  net y connect [{<v>} -> {<v=v+5>, <ys=v>}];
  net z connect [{<v>} -> {<v=v-1>, <zs=v>}];
}
connect (((x @ 2) .. y) @ 1) .. z;
''', ins, exp, ordered=True, nodes=[4],
     notes='((x @ 2) .. y) @ 1: x on node 2, y on node 1, z on node 0; a serial chain of one-output filters '
           'keeps input order. v -> 2v+5-1, xs/ys/zs the value each stage saw.',
     readme=('ordered', '`(((x @ 2) .. y) @ 1) .. z`: inner placement overrides the outer one'))

ins = []
for i in range(300):
    if rnd.randrange(2):
        ins.append(R(id=i, v=rnd.randint(-20, 20), w=rnd.randint(-9, 9)))
    else:
        ins.append(R(id=i, v=rnd.randint(-20, 20), m=rnd.randint(-9, 9)))
exp = []
for r in ins:
    for op, lab in [(lambda v: v + 1, 'tp'), (lambda v: v * 2, 'tq'), (lambda v: v - 3, 'tr'),
                    (lambda v: v * v, 'ts')]:
        v = T(r, 'v')
        r = filt(r, [t('v')], [{t('v'): op(v), t(lab): v}])[0]
    if t('w') in r:
        r = filt(r, [t('v'), t('w')], [{t('v'): T(r, 'v') + T(r, 'w')}])[0]
    else:
        r = filt(r, [t('v'), t('m')], [{t('v'): T(r, 'v') * T(r, 'm')}])[0]
    v = T(r, 'v')
    r = filt(r, [t('v')], [{t('v'): cmod(v, 1000), t('tt'): v}])[0]
    exp.append(r)
case('nested-deep', '''
// Deeper nesting.  inner is a net placed as a whole on node 1 that places
// two of its parts elsewhere: p runs on 3, q on 1 (inherits inner's @ 1),
// r on 2.  That is nested in an @ 3 (s runs on 3) inside an @ 2 (the ||
// itself on 2, its branches on 1 and 0); t runs on node 0.
net deep
{
  net inner
  {
    net p connect [{<v>} -> {<v=v+1>, <tp=v>}];
    net q connect [{<v>} -> {<v=v*2>, <tq=v>}];
    net r connect [{<v>} -> {<v=v-3>, <tr=v>}];
  }
  connect (p @ 3) .. q .. (r @ 2);
  net s connect [{<v>} -> {<v=v*v>, <ts=v>}];
  net addw connect [{<v>, <w>} -> {<v=v+w>}];
  net mulm connect [{<v>, <m>} -> {<v=v*m>}];
  net t connect [{<v>} -> {<v=v%1000>, <tt=v>}];
}
connect (((((inner @ 1) .. s) @ 3) .. ((addw @ 1) || (mulm @ 0))) @ 2) .. (t @ 0);
''', ins, exp, ordered=True, nodes=[4],
     notes='Placements nested four deep, the innermost one wins for each component. Serial one-output '
           'filters and one || : output in input order. v -> ((2(v+1)-3)^2 (+w | *m)) % 1000 (C remainder); '
           'w/m are named by the || branches and dropped there.',
     readme=('ordered', 'four levels of nested `@`, a net placed as a whole containing placed parts, '
                        '`||` on node 2 with branches on 1 and 0'))

# ============================================================================
# DYNAMIC PLACEMENT

ins = []
for node in range(4):
    npairs = 30 + 10 * node
    for j in range(npairs):
        ins.append(R(node=node, a=node * 1000 + j, x=rnd.randint(0, 99)))
        ins.append(R(node=node, b=node * 1000 + j, y=rnd.randint(0, 99)))
    for j in range(20):
        ins.append(R(node=node, c=rnd.randint(-50, 50), id=j))
rnd.shuffle(ins)
exp = []
for node in range(4):
    As = [r for r in ins if T(r, 'node') == node and t('a') in r]
    Bs = [r for r in ins if T(r, 'node') == node and t('b') in r]
    assert len(As) == len(Bs)
    for ra, rb in zip(As, Bs):
        exp.append(merge([ra, rb], [[t('a')], [t('b')]]))
for r in ins:
    if t('c') in r:
        exp += filt(r, [t('c'), t('node')], [{t('c'): T(r, 'c') ** 2, t('node'): T(r, 'node'),
                                              t('on'): T(r, 'node')}])
case('dyn-multiset', '''
// Dynamic placement: the replica for <node> = v runs on node v, one replica
// per value.  Each replica holds a repeated synchrocell, so the i-th {<a>}
// sent to node v is paired with the i-th {<b>} sent to node v: the output
// shows that every value has exactly one replica, fed in input order.
net dyn
{
  net pair connect [| {<a>}, {<b>} |] * {<a>, <b>};
  net sq connect [{<c>, <node>} -> {<c=c*c>, <node>, <on=node>}];
}
connect (pair | sq) !@ <node>;
''', ins, exp, nodes=[4],
     notes='Records with <node> 0..3 shuffled. Per node value, a records are paired with b records by rank '
           '(each !@ replica is one instance and receives its records in input order); the merged record '
           'takes a, node and x from the a record and b from the b record (y is dropped). c records are '
           'squared and tagged with the node that did it. Equal a/b counts per node, so no cell is left unfired.',
     readme=('multiset', '`!@ <node>` over nodes 0..3 interleaved; a repeated synchrocell per replica pairs '
                         'records by rank (one replica per value, input order per replica)'))

ins = []
for i in range(400):
    if rnd.randrange(3):
        ins.append(R(id=i, node=rnd.randrange(4), v=rnd.randint(-2, 30)))
    else:
        ins.append(R(id=i, node=rnd.randrange(4), w=rnd.randint(-9, 9)))
exp = []
for r in ins:
    r = dict(r)
    if t('v') in r:
        v = T(r, 'v')
        c = 0
        while v > 0:
            v, c = v - 1, c + 2
        r[t('v')], r[t('c')] = v, c
    else:
        r[t('w')] = T(r, 'w') ** 2
    exp.append(r)
case('dyn-det', '''
// Deterministic dynamic placement !!@ over nodes 0..3.  Inside each
// replica a non-deterministic choice and a non-deterministic star with
// 0..30 iterations, so records overtake each other inside a replica and
// across replicas on different nodes; !!@ still emits them in input order.
net dyndet
{
  net count connect [{<v>} -> {<v>, <c=0>}]
                 .. ([{<v>, <c>} -> {<v=v-1>, <c=c+2>}] * {<v>} if <v <= 0>);
  net square connect [{<w>} -> {<w=w*w>}];
}
connect (count | square) !!@ <node>;
''', ins, exp, ordered=True, nodes=[4],
     notes='!!@ keeps input order (language.md: !@ with the ordering guarantee of !!), one output per input: '
           'count gives c = 2v, v = 0 for v > 0 (records with v <= 0 leave the star unchanged, c = 0); '
           'square squares w.',
     readme=('ordered', '`!!@ <node>` over nodes 0..3 with a reordering `|` and `*` inside, 400 records'))

ins = []
for i in range(300):
    node, m = rnd.randrange(2), rnd.randrange(2)
    if rnd.randrange(2):
        ins.append(R(id=i, node=node, m=m, v=rnd.randint(-50, 50)))
    else:
        ins.append(R(id=i, node=node, m=m, u=rnd.randint(-2, 20), k=0))
exp = []
for r in ins:
    r = dict(r)
    if t('v') in r:
        r[t('v')] = 2 * T(r, 'v') + T(r, 'm')
    else:
        u, k = T(r, 'u'), T(r, 'k')
        while u > 0:
            u, k = u - 1, k + 1
        r[t('u')], r[t('k')] = u, k
    exp.append(r)
case('dyn-nested', '''
// Dynamic placement nested in dynamic placement: the outer !!@ <node>
// sends a record to node <node>, whose replica sends it on with !@ <m>
// (values 0 and 1: runs with 2 and 4 nodes).  The outer !!@ restores
// input order.
net dynnest
{
  net inner connect [{<v>, <m>} -> {<v=v*2+m>, <m>}]
                  | ([{<u>, <k>} -> {<u=u-1>, <k=k+1>}] * {<u>} if <u <= 0>);
}
connect (inner !@ <m>) !!@ <node>;
''', ins, exp, ordered=True, nodes=[2, 4],
     notes='Node values 0 and 1 only. One output per input, in input order (!!@ at the top): v -> 2v+m; '
           'u counted down to 0 with k = number of steps (u <= 0 leaves the star unchanged).',
     readme=('ordered', '`(inner !@ <m>) !!@ <node>`: nested dynamic placement, nodes 0/1, runs with 2 and 4 nodes'))

ins = []
for i in range(300):
    ins.append(R(id=i, node=rnd.randrange(4), m=rnd.randrange(4), v=rnd.randint(-99, 99)))
exp = []
for r in ins:
    v = T(r, 'v')
    r = filt(r, [t('v')], [{t('v'): v + 3, t('xs'): v}])[0]
    v = T(r, 'v')
    r = filt(r, [t('v'), t('node')], [{t('v'): v * 2, t('node'): T(r, 'node'), t('ys'): T(r, 'node')}])[0]
    v = T(r, 'v')
    r = filt(r, [t('v'), t('m')], [{t('v'): v - 1, t('m'): T(r, 'm'), t('zs'): T(r, 'm')}])[0]
    exp.append(r)
case('dyn-static-mix', '''
// Static placement inside dynamic placement and the reverse.  The replica
// of ((x @ 2) .. y) for <node> = v runs on node v, but x inside it is
// placed on node 2 whatever v is; the !@ <m> is itself placed on node 3,
// and its replica for <m> = u still runs on node u.
net mix
{
  net x connect [{<v>} -> {<v=v+3>, <xs=v>}];
  net y connect [{<v>, <node>} -> {<v=v*2>, <node>, <ys=node>}];
  net z connect [{<v>, <m>} -> {<v=v-1>, <m>, <zs=m>}];
}
connect (((x @ 2) .. y) !@ <node>) .. ((z !@ <m>) @ 3);
''', ins, exp, nodes=[4],
     notes='One output per input: v -> 2(v+3)-1, xs = v, ys = node, zs = m, the rest inherited. Where the '
           'parts run (x on 2, y on <node>, z on <m>) is checked by the location probes of _gen/run.py.',
     readme=('multiset', '`((x @ 2) .. y) !@ <node>` and `(z !@ <m>) @ 3`: static inside dynamic and the reverse'))

# Its own generator: the cases after it keep their inputs.
rc = random.Random(40)
ins = [R(id=i, node=rc.randrange(4), v=rc.randint(-99, 99)) for i in range(300)]
exp = []
first = set()
for r in ins:
    nd, v = T(r, 'node'), T(r, 'v')
    a = filt(r, [t('v')], [{t('v'): v, t('a'): v}, {t('v'): v, t('b'): v}])
    if nd not in first:
        # The replica's own cell merges its first pair; later ones pass.
        first.add(nd)
        a = [merge(a, [[t('a')], [t('b')]])]
    for x in a:
        m = 3 - nd
        x = filt(x, [t('v'), t('node')], [{t('v'): T(x, 'v') + 1, t('node'): nd, t('m'): m}])[0]
        x = filt(x, [t('v'), t('m')], [{t('v'): T(x, 'v') * 2, t('m'): m, t('zs'): m}])[0]
        exp.append(x)
case('dyn-replica-cells', '''
// Placements inside a dynamic placement's replica, with a synchrocell per
// replica: the replica of <node> = u splits each record into an <a> and a
// <b> on node u, its own cell (placed on node 2 whatever u is) merges the
// replica's first pair, the tag <m> is made inside the replica and a
// dynamic placement inside it sends the record on to node <m>.
net repcells
{
  net pair connect [{<v>} -> {<v>, <a=v>}; {<v>, <b=v>}];
  net cell connect [| {<a>}, {<b>} |];
  net tagm connect [{<v>, <node>} -> {<v=v+1>, <node>, <m=3-node>}];
  net z connect [{<v>, <m>} -> {<v=v*2>, <m>, <zs=m>}];
}
connect (pair .. (cell @ 2) .. tagm .. (z !@ <m>)) !@ <node>;
''', ins, exp, nodes=[4],
     notes='Each input gives an <a> and a <b> record, except the first of each <node> value, whose pair '
           'its replica\'s cell merges (one cell per replica: four merged records); then v -> 2(v+1), '
           'm = zs = 3 - node. Under --on-node-loss respawn each replica\'s body runs on node 0 with its '
           'unplaced parts on node <node>, which changes no output.',
     readme=('multiset', '`(pair .. (cell @ 2) .. tagm .. (z !@ <m>)) !@ <node>`: a cell per replica, '
                         'a static and a dynamic placement inside the replica, the inner tag made there'))

# ============================================================================
# PLACEMENT INSIDE STAR / SPLIT / FEEDBACK

ins = [R(id=i, n=rnd.randint(-2, 25), c=0, s=0) for i in range(300)]
exp = []
for r in ins:
    r = dict(r)
    while T(r, 'n') > 0:
        n, c = T(r, 'n'), T(r, 'c')
        if n % 5 == 0:
            outs = filt(r, [t('n'), t('c')], [{t('n'): n - 1, t('c'): c + 1}, {t('side'): n, t('c'): c}])
        else:
            outs = filt(r, [t('n'), t('c')], [{t('n'): n - 1, t('c'): c + 1}])
        r = outs[0]
        r[t('s')] += T(r, 'n')
        exp += outs[1:]
    exp.append(r)
case('star-inside', '''
// Placement inside a non-deterministic star: every replica's dec runs on
// node 1 and its acc on node 2, so each iteration crosses 0 -> 1 -> 2 and
// back to the star on node 0.  On multiples of 5 dec also emits a side
// record, which leaves the star before the next replica.
net starin
{
  net dec connect [{<n>, <c>} -> if <n % 5 == 0> then {<n=n-1>, <c=c+1>}; {<side=n>, <c>}
                                 else {<n=n-1>, <c=c+1>}];
  net acc connect [{<n>, <s>} -> {<n>, <s=s+n>}] | [{<side>} -> {<side>}];
}
connect ((dec @ 1) .. (acc @ 2)) * {<n>} if <n <= 0>, {<side>};
''', ins, exp, nodes=[4],
     notes='Each record runs n down to 0 (c = steps, s = sum of n-1..0 = n(n-1)/2); at each n = 5k > 0 a side '
           'record {side = n, c = steps so far, s = sum so far, id} leaves. n <= 0 leaves at once unchanged.',
     readme=('multiset', 'placement inside `*`: body `(dec @ 1) .. (acc @ 2)`, fan-out side records, multi-exit'))

ins = [R(id=i, n=rnd.randint(-2, 30), c=0, s=0) for i in range(400)]
exp = []
for r in ins:
    r = dict(r)
    while T(r, 'n') > 0:
        n = T(r, 'n')
        r[t('n')], r[t('c')] = n - 1, T(r, 'c') + 1
        r[t('s')] = T(r, 's') + (n - 1) * (n - 1)
    exp.append(r)
case('star-det-inside', '''
// Placement inside a deterministic star: each replica's dec runs on node 3
// and its acc on node 1; records need 0..30 iterations, so a later record
// can finish first, but ** emits them in input order.
net stardet
{
  net dec connect [{<n>, <c>} -> {<n=n-1>, <c=c+1>}];
  net acc connect [{<n>, <s>} -> {<n>, <s=s+n*n>}];
}
connect ((dec @ 3) .. (acc @ 1)) ** {<n>} if <n <= 0>;
''', ins, exp, ordered=True, nodes=[4],
     notes='** keeps input order; one output per input: n -> 0, c = n, s = sum of k^2 for k < n '
           '(n <= 0 leaves before the first replica, unchanged).',
     readme=('ordered', 'placement inside `**`: body `(dec @ 3) .. (acc @ 1)`, 400 records'))

ins = [R(id=i, n=rnd.randint(-1, 30), c=0, w=i % 4, tr=0) for i in range(400)]
exp = []
for r in ins:
    r = dict(r)
    while T(r, 'n') > 0:
        w = T(r, 'w')
        r[t('n')], r[t('c')] = T(r, 'n') - 1, T(r, 'c') + 1
        r[t('tr')] = (T(r, 'tr') * 4 + w) % 1000003
        r[t('w')] = (w + 1) % 4
    exp.append(r)
case('det-star-alternating', '''
// A deterministic star whose body moves from node to node: iteration i of
// a record runs step on node <w>, and step advances <w> (mod 4), so
// consecutive iterations run on consecutive nodes.  tr records the nodes
// visited.  ** emits in input order.
net alternate
{
  net step connect [{<n>, <c>, <w>, <tr>} -> {<n=n-1>, <c=c+1>, <w=(w+1)%4>, <tr=(tr*4+w)%1000003>}];
}
connect (step !@ <w>) ** {<n>} if <n <= 0>;
''', ins, exp, ordered=True, nodes=[4],
     notes='Record i starts at node w = i % 4. Each iteration runs on node w and appends w to tr (base 4, '
           'mod 1000003), then w = (w+1) % 4. ** keeps input order; one output per input.',
     readme=('ordered', '`**` whose body `step !@ <w>` moves to the next node each iteration, 400 records'))

ins = []
for k in range(30):
    na, nb = rnd.randint(1, 6), rnd.randint(1, 6)
    for j in range(na):
        ins.append(R(k=k, a=rnd.randint(-99, 99), xa=j))
    for j in range(nb):
        ins.append(R(k=k, b=rnd.randint(-99, 99), xb=j))
rnd.shuffle(ins)
exp = []
for k in range(30):
    As = [{**r, t('a'): T(r, 'a') + 1} for r in ins if T(r, 'k') == k and t('a') in r]
    Bs = [{**r, t('b'): T(r, 'b') * 2} for r in ins if T(r, 'k') == k and t('b') in r]
    exp.append(merge([As[0], Bs[0]], [[t('a')], [t('b')]]))
    exp += As[1:] + Bs[1:]
case('split-inside', '''
// Placement inside a non-deterministic split: every replica (one per <k>)
// runs prep on node 1 and its one-shot synchrocell on node 2.  Per k the
// first a and the first b (in input order) are merged; the others pass.
net splitin
{
  net prep connect [{<a>} -> {<a=a+1>}] | [{<b>} -> {<b=b*2>}];
}
connect ((prep @ 1) .. ([| {<a>}, {<b>} |] @ 2)) ! <k>;
''', ins, exp, nodes=[4],
     notes='30 values of k, each with 1..6 a and 1..6 b records, shuffled. prep adds 1 to a, doubles b. '
           'Each branch of prep is FIFO, so the first a / b reaching the cell of k is the first in input '
           'order; the merged record has a, k, xa from the a record and b from the b record (xb dropped); '
           'later records pass the fired cell unchanged.',
     readme=('multiset', 'placement inside `!`: replicas run `prep @ 1` and a synchrocell `@ 2`'))

ins = []
for i in range(500):
    k = rnd.randrange(17)
    if rnd.randrange(3):
        ins.append(R(id=i, k=k, v=rnd.randint(-2, 25)))
    else:
        ins.append(R(id=i, k=k, w=rnd.randint(-30, 30)))
exp = []
for r in ins:
    r = dict(r)
    k = T(r, 'k')
    if t('v') in r:
        v, c = T(r, 'v'), 0
        while v > 0:
            v, c = v - 1, c + k
        r[t('v')], r[t('c')] = v, c
    else:
        r[t('w')] = T(r, 'w') ** 2
    r[t('done')] = 10 * k
    exp.append(r)
case('split-det-inside', '''
// A deterministic split whose replicas place their parts with @: count
// (with a non-deterministic star) on node 1, square on node 2, the final
// stamp on node 3.  17 values of <k>, 500 records; !! keeps input order.
net splitdet
{
  net count connect [{<k>, <v>} -> {<k>, <v>, <c=0>}]
                 .. ([{<k>, <v>, <c>} -> {<k>, <v=v-1>, <c=c+k>}] * {<v>} if <v <= 0>);
  net square connect [{<k>, <w>} -> {<k>, <w=w*w>}];
}
connect (((count @ 1) | (square @ 2)) .. ([{<k>} -> {<k>, <done=k*10>}] @ 3)) !! <k>;
''', ins, exp, ordered=True, nodes=[4],
     notes='!! keeps input order across replicas and nodes; one output per input: c = k*v, v = 0 '
           '(v <= 0 unchanged, c = 0), or w squared; done = 10k.',
     readme=('ordered', '`!!` with replicas placed via `@` inside (nodes 1, 2, 3), 500 records'))


def collatz_steps(a):
    s = 0
    while a > 1:
        a = a // 2 if a % 2 == 0 else 3 * a + 1
        s += 1
    return s


COLLATZ = '''
  net entry connect [{<e>, <s>} -> {<a=e>, <s>}]
                  | [{<o>, <s>} -> {<a=o>, <s>}]
                  | [{<a>, <s>} -> {<a>, <s>}];
  net step connect [{<a>, <s>} -> if <a <= 1> then {<res=s>}
                                  else if <a % 2 == 0> then {<e=a/2>, <s=s+1>}
                                  else {<o=3*a+1>, <s=s+1>}];'''

ins = [R(id=i, a=a, s=0) for i, a in enumerate(list(range(1, 61)) + [97, 871, 6171, 77031])]
exp = [R(id=T(r, 'id'), res=collatz_steps(T(r, 'a'))) for r in ins]
case('feedback-inside', '''
// Placement inside feedback: the loop body's entry runs on node 1 and its
// step on node 3, so every trip round the loop crosses nodes (the
// feedback itself stays on node 0).  Collatz step counts.
net fbin
{''' + COLLATZ + '''
}
connect ((entry @ 1) .. (step @ 3)) \\ {<e>}, {<o>};
''', ins, exp, nodes=[4],
     notes='Number of Collatz steps to reach 1 for 1..60 and a few long ones (77031 takes 350 steps); only '
           '{<res>} leaves the loop, with the inherited id.',
     readme=('multiset', 'placement inside `\\`: `((entry @ 1) .. (step @ 3)) \\ {<e>}, {<o>}`, Collatz'))

ins = []
for i in range(60):
    ins.append(R(id=i, n=rnd.randint(-2, 20), c=0))
for k in range(25):
    ins.append(R(k=k, p=rnd.randint(0, 99), zp=k))
    ins.append(R(k=k, q=rnd.randint(0, 99), zq=k))
    if k % 4 == 0:
        ins.append(R(k=k, q=rnd.randint(0, 99), zq=100 + k))
for i in range(40):
    ins.append(R(id=100 + i, a=rnd.randint(1, 300), s=0))
rnd.shuffle(ins)
exp = []
for r in ins:
    if t('n') in r:
        r = dict(r)
        n = T(r, 'n')
        if n > 0:
            r[t('c')], r[t('n')] = n, 0
        exp.append(r)
    elif t('a') in r:
        exp.append(R(id=T(r, 'id'), res=collatz_steps(T(r, 'a'))))
for k in range(25):
    Ps = [r for r in ins if t('k') in r and T(r, 'k') == k and t('p') in r]
    Qs = [r for r in ins if t('k') in r and T(r, 'k') == k and t('q') in r]
    exp.append(merge([Ps[0], Qs[0]], [[t('p')], [t('q')]]))
    exp += Qs[1:]
case('whole-placed', '''
// A star, a split and a feedback loop, each placed as a whole on another
// node (everything inside runs there): the star on 1, the split with its
// synchrocells on 2, the feedback loop on 3.  A | on node 0 routes.
net whole
{
  net inc connect [{<n>, <c>} -> {<n=n-1>, <c=c+1>}];''' + COLLATZ + '''
}
connect ((inc * {<n>} if <n <= 0>) @ 1)
      | (([| {<p>}, {<q>} |] ! <k>) @ 2)
      | (((entry .. step) \\ {<e>}, {<o>}) @ 3);
''', ins, exp, nodes=[4],
     notes='Three kinds of record, shuffled: {n, c} counted down by the star (c = n for n > 0); per k one p '
           'and one or two q records, the first q merged with the p (p, k, zp from the p record, q from the '
           'q record), a second q passing the fired cell; {a, s} Collatz step counts.',
     readme=('multiset', '`(X * p) @ 1 | (Y ! <k>) @ 2 | (Z \\ p) @ 3`: combinators placed as a whole'))

ins = []
for i in range(300):
    if rnd.randrange(2):
        ins.append(R(id=i, k=rnd.randrange(5), n=rnd.randint(-2, 25), c=0))
    else:
        ins.append(R(id=i, k=rnd.randrange(5), v=rnd.randint(-20, 20)))
exp = []
for r in ins:
    r = dict(r)
    k = T(r, 'k')
    if t('n') in r:
        n = T(r, 'n')
        if n > 0:
            r[t('c')], r[t('n')] = n, 0
        r[t('by')] = 100 * k
    else:
        r[t('v')], r[t('by')] = 3 * T(r, 'v'), k
    exp.append(r)
case('whole-placed-det', '''
// Deterministic combinators placed as a whole: a ** on node 3 followed by a
// !! on node 1 (its replicas, each a ||, run there too).  Records with <v>
// leave the star at once.  A serial composition of order-keeping parts
// keeps input order.
net wholedet
{
  net inc connect [{<n>, <c>} -> {<n=n-1>, <c=c+1>}];
  net tri connect [{<v>, <k>} -> {<v=v*3>, <k>, <by=k>}]
               || [{<n>, <k>} -> {<n>, <k>, <by=k*100>}];
}
connect ((inc ** {<n>} if <n <= 0>, {<v>}) @ 3) .. ((tri !! <k>) @ 1);
''', ins, exp, ordered=True, nodes=[4],
     notes='** then !!, both order-keeping, one output per input: n-records counted down (c = n for n > 0) and '
           'by = 100k; v-records leave the star before the first replica, v tripled, by = k.',
     readme=('ordered', '`(A ** p) @ 3 .. (B !! <k>) @ 1`: deterministic combinators placed as a whole'))

# ============================================================================
# DETERMINISTIC NETWORKS SPANNING NODES

ins = []
for i in range(600):
    if rnd.randrange(2):
        ins.append(R(id=i, x=rnd.randint(-1000, 1000), s=rnd.randint(0, 3)))
    else:
        ins.append(R(id=i, x=rnd.randint(-1000, 1000), f=rnd.randint(0, 3)))
exp = []
for r in ins:
    if t('s') in r:
        exp.append({**r, t('x'): T(r, 'x') + 12})
    else:
        x = T(r, 'x')
        exp += filt(r, [t('x'), t('f')], [{t('x'): 2 * x, t('f'): T(r, 'f')}, {t('y'): x}])
SLOW = ' .. '.join(['[{<x>, <s>} -> {<x=x+1>, <s>}]'] * 12)
case('det-par-nodes', '''
// Deterministic parallel composition whose branches run on different
// nodes: a 12-filter chain on node 1, a one-filter branch with two outputs
// on node 2.  || keeps input order across the two nodes.
net detpar
{
  net slow connect %s;
  net fast connect [{<x>, <f>} -> {<x=x*2>, <f>}; {<y=x>}];
}
connect (slow @ 1) || (fast @ 2);
''' % SLOW, ins, exp, ordered=True, nodes=[4],
     notes='|| : every output caused by input i precedes those of input j > i although the branches run on '
           'nodes 1 and 2 at different speeds; fast emits its two records in written order.',
     readme=('ordered', '`(slow @ 1) || (fast @ 2)`, 600 records'))

ins = []
for i in range(300):
    if rnd.randrange(2):
        ins.append(R(id=i, a=rnd.randint(1, 500), s=0))
    else:
        ins.append(R(id=i, w=rnd.randint(-99, 99)))
exp = []
for r in ins:
    if t('a') in r:
        exp.append(R(id=T(r, 'id'), res=collatz_steps(T(r, 'a'))))
    else:
        exp.append({**r, t('w'): T(r, 'w') ** 2})
case('det-feedback-in-par', '''
// A feedback loop inside ||, its body spread over nodes 1 and 2, the other
// branch on node 3.  The loop takes 0..140 trips per record, but ||
// emits results in input order.
net detfb
{''' + COLLATZ + '''
  net sq connect [{<w>} -> {<w=w*w>}];
}
connect (((entry @ 1) .. (step @ 2)) \\ {<e>}, {<o>}) || (sq @ 3);
''', ins, exp, ordered=True, nodes=[4],
     notes='|| keeps input order; one output per input: {res = Collatz steps of a, id} or w squared.',
     readme=('ordered', 'feedback inside `||` spanning nodes 1, 2, 3'))

# ============================================================================
# SYNCHROCELLS ON REMOTE NODES

ins = [
    R(z=1),
    R(a=1, x=10),                                         # lacks f: matches no pattern, passes
    R(a=2, x=20, fields={'f': I(2), 'g': '(int[3])1,2,3'}),  # stored: pattern 1
    R(a=3, x=30, fields={'f': I(3)}),                    # pattern 1 already filled: passes
    R(b=4, y=40, fields={'g': chars('other')}),          # stored: pattern 2 -> fires
    R(b=5, y=50),                                        # after firing: identity
    R(a=6, x=60, fields={'f': I(6)}),
    R(z=2, fields={'h': chars('hello')}),
]
exp = [ins[0], ins[1], ins[3],
       merge([ins[2], ins[4]], [[t('a'), f('f')], [t('b')]]),
       ins[5], ins[6], ins[7]]
case('sync-remote', '''
// One synchrocell placed on node 1.  The first record matching each
// pattern is stored there; the merged record (a, f and everything
// unnamed from the first pattern's record, b from the second's) comes
// back to node 0; every other record passes through the cell.
net syncremote connect [| {<a>, f}, {<b>} |] @ 1;
''', ins, exp, nodes=[2, 4],
     notes='Record order into the cell is input order. {a=1,x} lacks f and passes; {a=2,x=20,f,g} is stored; '
           '{a=3} finds pattern 1 filled and passes; {b=4,y,g} fills pattern 2: merged = a, f, x, g=(int[3]) '
           'from the first record, b=4 (y and the second g are dropped); then the cell is the identity.',
     readme=('multiset', 'one synchrocell `@ 1`: store, pass-through, merge rule with fields, identity after firing'))

ins = []
for k in range(100):
    ins.append(R(k=k, a=rnd.randint(0, 999), xa=k))
    ins.append(R(k=k, b=rnd.randint(0, 999), xb=k))
    if k % 3 == 0:
        ins.append(R(k=k, b=rnd.randint(0, 999), xb=1000 + k))
rnd.shuffle(ins)
exp = []
for k in range(100):
    As = [r for r in ins if T(r, 'k') == k and t('a') in r]
    Bs = [r for r in ins if T(r, 'k') == k and t('b') in r]
    exp.append(merge([As[0], Bs[0]], [[t('a')], [t('b')]]))
    exp += Bs[1:]
case('sync-remote-split', '''
// A split on node 0 whose replicas are synchrocells placed on node 1: one
// cell per <k>, all on node 1.
net syncsplit connect ([| {<a>}, {<b>} |] @ 1) ! <k>;
''', ins, exp, nodes=[2, 4],
     notes='100 values of k, one a and one or two b records each, shuffled. Per k the a and the first b '
           '(input order) merge (a, k, xa from the a record, b from the b record); a second b passes.',
     readme=('multiset', '`([| {<a>}, {<b>} |] @ 1) ! <k>`: 100 remote cells'))

ins = [R(a=i, xa=-i) for i in range(200)] + [R(b=i, xb=-i) for i in range(200)]
rnd.shuffle(ins)
As = [r for r in ins if t('a') in r]
Bs = [r for r in ins if t('b') in r]
exp = [merge([ra, rb], [[t('a')], [t('b')]]) for ra, rb in zip(As, Bs)]
case('sync-repeated-remote', '''
// Repeated synchronisation placed as a whole on node 1: the i-th {<a>} of
// the stream is paired with the i-th {<b>}.
net rsremote connect ([| {<a>}, {<b>} |] * {<a>, <b>}) @ 1;
''', ins, exp, nodes=[2, 4],
     notes='200 a and 200 b records shuffled; pairing is by rank within each kind (the stream to node 1 keeps '
           'input order); the merged record has a, xa from the a record and b from the b record.',
     readme=('multiset', '`([| {<a>}, {<b>} |] * {<a>, <b>}) @ 1`, 200 + 200 records paired by rank'))

ins = [R(a=i, xa=-i) for i in range(150)] + [R(b=i, xb=-i) for i in range(150)]
rnd.shuffle(ins)
As = [r for r in ins if t('a') in r]
Bs = [r for r in ins if t('b') in r]
exp = [merge([ra, rb], [[t('a')], [t('b')]]) for ra, rb in zip(As, Bs)]
case('sync-repeated-cells', '''
// Repeated synchronisation whose cells are placed on node 1 while the star
// stays on node 0: every record crosses to node 1 and back once per
// replica it passes.
net rscells connect ([| {<a>}, {<b>} |] @ 1) * {<a>, <b>};
''', ins, exp, nodes=[2, 4],
     notes='Same pairing by rank as sync-repeated-remote (150 + 150 records); each cell is on node 1, each '
           'exit test on node 0.',
     readme=('multiset', '`([| {<a>}, {<b>} |] @ 1) * {<a>, <b>}`: star on node 0, each cell on node 1'))

# ============================================================================
# FLOW INHERITANCE, UNMENTIONED LABELS, BINDING TAGS, FIELDS

ins = []
for i in range(200):
    r = R(id=i, x=rnd.randint(-99, 99), keep=rnd.randint(-5, 5))
    if i % 2:
        r[t('w')] = 7777
    if i % 3 == 0:
        r[f('note')] = chars('hello')
    if i % 4 == 0:
        r[f('vec')] = '(int[3])%d,%d,%d' % (i, -i, 3)
    ins.append(r)
exp = []
for r in ins:
    x = T(r, 'x')
    outs = filt(r, [t('x')], [{t('x'): x + 1}, {t('y'): x, t('x'): 0}])
    outs2 = []
    for o in outs:
        outs2 += filt(o, [t('x')], [{t('x'): T(o, 'x'), t('w'): T(o, 'x') * 10}])
    outs3 = []
    for o in outs2:
        outs3 += filt(o, [t('x'), t('keep')], [{t('x'): T(o, 'x') - T(o, 'keep')}])
    exp += outs3
case('inherit-remote', '''
// Flow inheritance across nodes.  two (node 1) emits two records per input;
// each inherits everything two's pattern does not name.  over (node 2)
// emits <w>, which beats an inherited <w>.  sub (node 3) names <keep> and
// does not mention it in its output, so it is dropped.  Tags and fields
// never named anywhere (id, note, vec) come back to node 0 intact.
net inhremote
{
  net two connect [{<x>} -> {<x=x+1>}; {<y=x>, <x=0>}];
  net over connect [{<x>} -> {<x>, <w=x*10>}];
  net sub connect [{<x>, <keep>} -> {<x=x-keep>}];
}
connect (two @ 1) .. (over @ 2) .. (sub @ 3);
''', ins, exp, ordered=True, nodes=[4],
     notes='A serial chain of filters whose multiple outputs come in written order: ordered. Per input: '
           '{x+1-keep, w=10(x+1)} then {y=x, x=-keep, w=0}, both with id and the fields note (char[5]) / vec '
           '(int[3]) where present; the input w=7777 is always overridden; keep is dropped.',
     readme=('ordered', 'flow inheritance across nodes: multiple outputs, emitted label beats inherited, '
                        'pattern label dropped, small fields carried'))

ins = []
for i in range(120):
    r = R(id=i, n=rnd.randint(-1, 6), node=rnd.randrange(4), secret=rnd.randint(-10**12, 10**12))
    if i % 2 == 0:
        r[f('vec')] = '(int[3])1,2,3'
    if i % 3 == 0:
        r[f('hello')] = chars('hello')
    if i % 5 == 0:
        r[f('big')] = chars(big_text(rnd, 4096 + i))
    if i % 7 == 0:
        r[f('dbl')] = '(double)2.5'
    if i % 11 == 0:
        r[t('only')] = i
    ins.append(r)
exp = []
for r in ins:
    r = dict(r)
    r[t('n')] = min(T(r, 'n'), 0) + 1000
    exp.append(r)
case('input-only-labels', '''
// Labels that appear only in the input (never named by the program: tags
// secret and only, fields vec, hello, big, dbl) cross nodes with every
// record: through a star placed on node 2, a dynamic placement to
// node <node> and a filter on node 3, and back to node 0 for output.
net unseen
{
  net step connect [{<n>} -> {<n=n-1>}];
}
connect ((step * {<n>} if <n <= 0>) @ 2)
     .. ([{<n>} -> {<n=n+1000>}] !@ <node>)
     .. ([{<n>} -> {<n>}] @ 3);
''', ins, exp, nodes=[4],
     notes='Every record comes out with n = min(n, 0) + 1000 and all other labels unchanged: 64-bit tag '
           'secret, tag only, (int[3])1,2,3, (char[5])h,e,l,l,o, char arrays of 4..4.2 KB (above the 1 KB '
           'inline threshold: they travel by reference and node 0 fetches them for output, XML escapes '
           'included) and (double)2.5 written canonically.',
     readme=('multiset', 'labels only in the input (64-bit tag, int[3], char[5], 4 KB char arrays, double) '
                         'crossing `@` and `!@` untouched'))

ins = []
for i in range(200):
    r = R(id=i, v=rnd.randint(-50, 50), node=rnd.randrange(4), btags={'k': rnd.randint(-5, 5)})
    if i % 4 == 0:
        r[f('tagf')] = chars('bt%03d' % i)
    ins.append(r)
exp = []
for r in ins:
    k, v = r[b('k')], T(r, 'v')
    o1, o2 = filt(r, [b('k'), t('v')], [{b('k'): k, t('v'): 2 * v}, {b('j'): k + 1, t('w'): v}])
    exp += filt(o1, [b('k'), t('v')], [{b('k'): k, t('v'): 2 * v, t('r'): 1}])
    exp += filt(o2, [b('j'), t('w')], [{b('j'): k + 1, t('w'): v, t('r'): 2}])
case('btag-remote', '''
// Binding tags across nodes: gen (node 1) copies <#k> and creates <#j>;
// the records then go to node <node>, where a | routes them by binding
// tag (a {<#k>, ...} record matches only patterns with exactly <#k>).
net btagremote
{
  net gen connect [{<#k>, <v>} -> {<#k>, <v=v*2>}; {<#j=k+1>, <w=v>}];
  net route connect [{<#k>, <v>} -> {<#k>, <v>, <r=1>}]
                  | [{<#j>, <w>} -> {<#j>, <w>, <r=2>}];
}
connect (gen @ 1) .. (route !@ <node>);
''', ins, exp, nodes=[4],
     notes='Per input {<#k>, v, node, id[, tagf]}: {<#k>, v=2v, r=1} and {<#j>=k+1, w=v, r=2}, both with node, '
           'id and the char field tagf where present.',
     readme=('multiset', 'binding tags `<#k>`, `<#j=k+1>` created on node 1, routed by binding tag under `!@`'))

ins = []
for k in range(40):
    r = R(k=k, x=rnd.randint(-9, 9),
          fields={'big': chars(big_text(rnd, 8000 + 37 * k)),
                  'med': chars(big_text(rnd, 2000 + k)),
                  'vec': '(int[3])%d,%d,%d' % (k, k * k, -k),
                  'hi': chars('hello')})
    ins.append(r)
exp = []
for r in ins:
    x = T(r, 'x')
    o1, o2 = filt(r, [f('big'), f('med'), t('x')],
                  [{f('big'): r[f('med')], f('med'): r[f('big')], t('x'): x},
                   {f('both'): r[f('big')], t('x'): x + 1}])
    exp.append(merge([o2, o1], [[f('both')], [f('big')]]))
case('fields-remote', '''
// Fields named by remote filters.  dup (node 1) swaps two large fields in
// one output and keeps one of them under another name in a second output
// (the same field shared by two records); each <k> then meets in its own
// synchrocell on node 2, which takes big from the first record and the
// rest from the second.  The output on node 0 fetches the bytes.
net fieldsremote
{
  net dup connect [{big, med, <x>} -> {big=med, med=big, <x>}; {both=big, <x=x+1>}];
}
connect (dup @ 1) .. (([| {both}, {big} |] @ 2) ! <k>);
''', ins, exp, nodes=[4],
     notes='40 records with 8..9.5 KB and 2 KB char arrays (by reference), (int[3]) and (char[5]) fields. '
           'Per input: merged {both = the input big, x+1, k, vec, hi} from the second dup output plus big = the '
           'input med from the first (its med and x are dropped by the merge).',
     readme=('multiset', 'large char fields renamed, swapped and shared by remote filters, merged by remote '
                         'cells'))

# ============================================================================
# ERRORS

IN_OK = [R(x=1), R(x=2), R(x=3)]
case('err-static-node9', '''
// Static placement to node 9: no run of this corpus has it (1, 2 or 4
// nodes).  The error must come before any record is read.
net far connect [{<x>} -> {<x>, <y=1>}] .. ([{<x>} -> {<x=x+1>}] @ 9);
''', IN_OK, error='@ 9', nodes=[2, 4],
     one_node=[R(x=r[('t', 'x')] + 1, y=1) for r in IN_OK],
     warning='prog.snet:3:66: placement `@ 9` ignored: this run has one node',
     notes='`@ 9` with 2 or 4 nodes is a placement error reported before any record is read, naming the '
           'placement (and its source location, not checked here: the message format is the engine\'s). '
           'One node runs every placement on node 0: there the program runs as if unplaced, with one warning.',
     readme=('error `@ 9`', 'static placement to a node the run lacks (2, 4 nodes; one node: ignored)'))

raw = (PROLOG + '\n<record xmlns="snet-home.org" type="data" mode="textual" interface="C4SNet">'
       '<tag label="x">1</tag>\n<record type="terminate" />\n')
case('err-static-before-input', '''
// Static placement to node 5 inside a branch no record would ever reach,
// with malformed input: the placement error comes first, before any
// record is read (distributed.md section 1).
net farbranch connect [{<x>} -> {<x>}] | ([{<never>} -> {<never>}] @ 5);
''', raw, error='prog.snet:4:68', nodes=[2, 4],
     notes='The input is malformed (unclosed record), but the placement is checked before reading any '
           'record, and also where no record goes: the error is the placement\'s and names its source '
           'location, prog.snet line 4, column 68 (the `@` of `@ 5`), not a position in the input. (On one '
           'node the placement is ignored with a warning naming the same place; the input error follows.)',
     readme=('error `prog.snet:4:68`', '`@ 5` in an unreached branch, malformed input: placement error first'))

ins = [R(node=0, x=1), R(node=0, x=2), R(node=7, x=3), R(node=0, x=4)]
case('err-dyn-node7', '''
// Dynamic placement to node 7: a runtime error naming the combinator, the
// tag and the value.
net dynfar connect [{<x>} -> {<y=x>}] !@ <node>;
''', ins, error='placement to node 7 (tag <node>)', nodes=[2, 4],
     one_node=[R(node=r[('t', 'node')], y=r[('t', 'x')]) for r in ins],
     warning='placement `!@ <node>` ignored: this run has one node',
     notes='The third record names node 7, which no run has (1, 2 or 4 nodes). The records before it go to '
           'node 0. The message names the dynamic placement, node 7 and the tag <node>.',
     readme=('error `placement to node 7 (tag <node>)`', '`!@ <node>` with node 7'))

ins = [R(node=0, x=1), R(node=-1, x=2), R(node=0, x=4)]
case('err-dyn-negative', '''
// Dynamic placement with a negative tag value: no node -1 exists.
net dynneg connect [{<x>} -> {<y=x>}] !@ <node>;
''', ins, error='placement to node -1', nodes=[2, 4],
     one_node=[R(node=r[('t', 'node')], y=r[('t', 'x')]) for r in ins],
     warning='placement `!@ <node>` ignored: this run has one node',
     notes='A node is a non-negative integer; <node> = -1 names no node: a runtime error, not a crash or a '
           'wrap-around to a large unsigned node number.',
     readme=('error `placement to node -1`', '`!@ <node>` with a negative value'))

ins = [R(node=0, x=1), R(node=1 << 32, x=2), R(node=0, x=3)]
case('err-dyn-wrap', '''
// Dynamic placement to node 2^32: a node number must not be truncated to
// 32 bits (it would wrap round to node 0, which exists).
net dynwrap connect [{<x>} -> {<y=x>}] !@ <node>;
''', ins, error='placement to node 4294967296', nodes=[2, 4],
     one_node=[R(node=r[('t', 'node')], y=r[('t', 'x')]) for r in ins],
     warning='placement `!@ <node>` ignored: this run has one node',
     notes='Tags are 64-bit; <node> = 4294967296 names no node of any run: a runtime error naming the full '
           'value, not a silent run on node 0.',
     readme=('error `placement to node 4294967296`', '`!@ <node>` with node 2^32 (no wrap-around to node 0)'))

ins = [R(id=i, node=0, x=i) for i in range(50)] + [R(id=50, node=7, x=50)] + \
      [R(id=51 + i, node=0, x=i) for i in range(50)]
case('err-dyn-det-node7', '''
// Deterministic dynamic placement to node 7, after 50 good records, inside
// a star: the error is raised where the placement happens, however deep.
net dyndetfar connect ([{<x>} -> {<x=x-1>}] !!@ <node>) ** {<x>} if <x <= 0>;
''', ins, error='placement to node 7', nodes=[2, 4],
     one_node=[R(id=r[('t', 'id')], node=r[('t', 'node')], x=0) for r in ins],
     warning='placement `!!@ <node>` ignored: this run has one node',
     notes='Record 50 (x = 50) reaches the !!@ with node 7 on its first iteration: runtime error; the '
           'earlier records only use node 0.',
     readme=('error `placement to node 7`', '`!!@` to node 7 inside a `**`'))


# ============================================================================

def write_all():
    names = set()
    for c in CASES:
        assert c['name'] not in names, c['name']
        names.add(c['name'])
        d = os.path.join(ROOT, c['name'])
        if os.path.isdir(d):
            shutil.rmtree(d)
        os.makedirs(d)
        with open(os.path.join(d, 'prog.snet'), 'w') as fh:
            fh.write(c['prog'])
        inp = c['inp'] if isinstance(c['inp'], str) else input_xml(c['inp'])
        with open(os.path.join(d, 'input.xml'), 'w') as fh:
            fh.write(inp)
        if c['error'] is not None:
            with open(os.path.join(d, 'expected-error.txt'), 'w') as fh:
                fh.write(c['error'] + '\n')
        else:
            with open(os.path.join(d, 'expected.xml'), 'w') as fh:
                fh.write(output_xml(c['expected']))
        if c['one_node'] is not None:
            with open(os.path.join(d, 'expected-1node.xml'), 'w') as fh:
                fh.write(output_xml(c['one_node']))
        if c['warning'] is not None:
            with open(os.path.join(d, 'warning-1node.txt'), 'w') as fh:
                fh.write(c['warning'] + '\n')
        if c['ordered']:
            open(os.path.join(d, 'ordered'), 'w').close()
        if c['nodes']:
            with open(os.path.join(d, 'nodes'), 'w') as fh:
                fh.write(' '.join(map(str, c['nodes'])) + '\n')
        with open(os.path.join(d, 'notes.txt'), 'w') as fh:
            fh.write(c['notes'] + '\n')
    print('%d cases written' % len(CASES))
    rows = []
    for c in CASES:
        check, covers = c['readme']
        nodes = ' '.join(map(str, c['nodes'])) if c['nodes'] else 'any'
        esc = lambda s: s.replace('|', '\\|')  # noqa: E731
        rows.append('| `%s` | %s | %s | %s |' % (c['name'], esc(check), nodes, esc(covers)))
    # The case table of README.md (between its header row and the next blank line).
    readme = os.path.join(ROOT, 'README.md')
    head = '|------|-------|-------|--------|\n'
    text = open(readme).read()
    start = text.index(head) + len(head)
    end = text.index('\n\n', start)
    text = text[:start] + '\n'.join(rows) + text[end:]
    text = re.sub(r'\d+ cases, all generated', '%d cases, all generated' % len(CASES), text)
    with open(readme, 'w') as fh:
        fh.write(text)


if __name__ == '__main__':
    write_all()
