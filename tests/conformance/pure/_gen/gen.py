#!/usr/bin/env python3
"""Generates the pure-S-Net conformance cases in tests/conformance/pure/.

Every case is defined below: program text, input records and the expected
output, which is computed here by plain Python written for that case (C
integer semantics via cdiv/cmod), independently of any S-Net interpreter.
`check.py` then cross-checks every case against the reference interpreter
`refsnet.py` under several random schedules.

Run from anywhere:  python3 tests/conformance/pure/_gen/gen.py
It rewrites the case directories it owns (never anything else).
"""
import os
import random
import shutil

import c4snet  # canonical C4SNet field values (records.md), beside this file

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

CASES = []

PROLOG = '<?xml version="1.0" ?>'


# ----------------------------------------------------------------------------
# helpers

def cdiv(a, b):
    assert b != 0
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


def cmod(a, b):
    return a - b * cdiv(a, b)


def R(tags=None, btags=None, fields=None, **kw):
    """record: R(a=1, b=2) for tags; btags={'k':1}; fields={'f':'(int)5'}"""
    r = {}
    for k, v in (tags or {}).items():
        r[('t', k)] = v
    for k, v in kw.items():
        r[('t', k)] = v
    for k, v in (btags or {}).items():
        r[('b', k)] = v
    for k, v in (fields or {}).items():
        r[('f', k)] = v
    return r


def xml_escape(s):
    return s.replace('&', '&amp;').replace('<', '&lt;').replace('>', '&gt;')


def rec_body(r, escape_fields=True):
    parts = []
    order = {'f': 0, 't': 1, 'b': 2}
    for (k, n), v in sorted(r.items(), key=lambda kv: (order[kv[0][0]], kv[0][1])):
        if k == 'f':
            iface, v = v if isinstance(v, tuple) else ('C4SNet', v)  # (interface, text) for other interfaces
            val = xml_escape(v) if escape_fields else v
            parts.append('<field label="%s" interface="%s">%s</field>' % (n, iface, val))
        elif k == 't':
            parts.append('<tag label="%s">%d</tag>' % (n, v))
        else:
            parts.append('<btag label="%s">%d</btag>' % (n, v))
    return ''.join(parts)


def input_xml(recs, terminate=True):
    lines = [PROLOG]
    for r in recs:
        lines.append('<record xmlns="snet-home.org" type="data" mode="textual" interface="C4SNet">'
                     + rec_body(r) + '</record>')
    if terminate:
        lines.append('<record type="terminate" />')
    return '\n'.join(lines) + '\n'


def output_xml(recs):
    lines = []
    for r in recs:
        lines.append(PROLOG + '<record xmlns="snet-home.org" type="data" mode="textual" >'
                     + rec_body(r) + '</record>')
    lines.append('<record type="terminate" />')
    return '\n'.join(lines) + '\n'


def case(name, prog, inp, expected=None, ordered=False, error=None, notes=None, heavy=False,
         nodes=None, one_node=None, warning=None):
    """inp: list of records or raw XML text.  expected: list of records.
    nodes: the node counts of the distributed runs (the `nodes` file);
    one_node: an error case's records on one node (`expected-1node.xml`);
    warning: the one-node run's one warning (`warning-1node.txt`)."""
    assert (expected is None) != (error is None)
    CASES.append(dict(name=name, prog=prog.strip('\n') + '\n', inp=inp, expected=expected,
                      ordered=ordered, error=error, notes=notes, heavy=heavy, nodes=nodes,
                      one_node=one_node, warning=warning))


META = '<metadata> <default> <interface value="C4SNet" /> </default> </metadata>\n'
I = lambda v: '(int)%d' % v

# ============================================================================
# FILTERS

ins = [R(a=1), R(a=2, b=3), R(c=-4, fields={'x': I(5)}), R(a=0, fields={'s': '(char[2])o,k'})]
case('filter-identity', '''
// The identity filter passes every record (tags and fields) unchanged.
net ident connect [];
''', ins, ins, ordered=True,
     notes='[] is the identity filter: each record comes out unchanged, in input order.')

ins = [R(n=7, fields={'a': I(1), 'b': I(2), 'd': '(char[2])h,i'}),
       R(n=-1, fields={'a': I(10), 'b': I(20)})]
exp = []
for r in ins:
    a, b = r[('f', 'a')], r[('f', 'b')]
    extra = {k: v for k, v in r.items() if k[1] not in ('a', 'b', 'n')}
    o1 = {('f', 'a'): a, ('f', 'b'): a, ('f', 'c'): b, ('t', 'n'): r[('t', 'n')]}
    o1.update(extra)
    o2 = {('f', 'a'): b, ('f', 'b'): a}
    o2.update(extra)
    exp += [o1, o2]
case('filter-fields', '''
// Field items: f copies, f=g renames/duplicates (the value of input field g).
// The second outspec swaps a and b; <n> is named by the pattern but not
// mentioned there, so it is dropped from that record.  d is flow-inherited.
net fields connect [{a, b, <n>} -> {a, b=a, c=b, <n>}; {a=b, b=a}];
''', ins, exp, ordered=True,
     notes='f, f=g (rename, duplicate, swap evaluated on the input record), dropping of pattern labels, inheritance of d.')

ins = [R(a=5, k=1), R(a=-2, k=2, fields={'f': I(3)})]
exp = []
for r in ins:
    inh = {k: v for k, v in r.items() if k != ('t', 'a')}
    o1 = dict(inh); o1[('t', 'a')] = r[('t', 'a')]; o1[('t', 'z')] = 0
    o2 = dict(inh); o2[('t', 'y')] = 0
    o3 = dict(inh)
    exp += [o1, o2, o3]
case('filter-tag-create', '''
// <t> for a tag the input does not carry creates it with value 0;
// {} emits a record holding only the flow-inherited labels.
net tcreate connect [{<a>} -> {<a>, <z>}; {<y>}; {}];
''', ins, exp, ordered=True,
     notes='<z>/<y> absent from the input are created as 0; {} keeps only inherited labels (k, f).')

ins = [R(a=3, z=9, k=2), R(a=1, y=4, k=3)]
exp = [R(a=3, z=9, k=2), R(y=0, z=9, k=2), R(z=9, k=2),
       R(a=1, z=0, y=4, k=3), R(y=4, k=3), R(y=4, k=3)]
case('filter-tag-copy-unnamed', '''
// <z> and <y> are not named by the pattern.  Per language.md section 4, <t> copies
// tag t from the *input record* if it has one (else creates 0), so a tag
// present in the record but absent from the pattern keeps its value.
net tcopy connect [{<a>} -> {<a>, <z>}; {<y>}; {}];
''', ins, exp, ordered=True,
     notes='<t> where t is in the record but not in the pattern: copied (not reset to 0). Same program as filter-tag-create.')

pairs = [(7, 2), (-7, 2), (7, -2), (-7, -2), (0, 5), (100, 7), (-1, 3), (5, 10), (-9, -10), (2147483647, 1000)]
ins = [R(a=a, b=b, i=i) for i, (a, b) in enumerate(pairs)]
exp = [R(i=i, sum=a + b, diff=a - b, prod=a * b, quot=cdiv(a, b), rem=cmod(a, b))
       for i, (a, b) in enumerate(pairs)]
case('filter-arith', '''
// + - * / % on tags; / and % follow C: truncation toward zero, and the
// remainder has the sign of the dividend.
net arith connect [{<a>, <b>} -> {<sum=a+b>, <diff=a-b>, <prod=a*b>, <quot=a/b>, <rem=a%b>}];
''', ins, exp, ordered=True,
     notes='C division semantics: -7/2 = -3, -7%2 = -1, 7%-2 = 1, -7/-2 = 3. Tags are 64-bit (2147483647*1000 does not wrap).')

trip = [(2, 3, 4), (10, 3, 5), (-7, 2, 3), (1, 1, 1), (0, 5, -2), (17, -4, 6)]
ins = [R(a=a, b=b, c=c) for a, b, c in trip]
exp = []
for a, b, c in trip:
    exp.append(R(a=a, b=b, c=c,
                 r1=a + (b * c), r2=(a - b) - c, r3=cdiv(a, b) * c, r4=(-a) * b,
                 r5=(a + b) * c, r6=(a - b) + c, r7=cmod(a * b, c), r8=a + (cmod(b, c) * 2),
                 r9=cmod(-a, b), r10=a - (-b), r11=cdiv(cdiv(a * 12, b), c) if True else 0,
                 r12=(a + b) - (c * 2) + cmod(a, 3)))
case('filter-precedence', '''
// C precedence and left associativity of the arithmetic operators.
// All input tags are named in the outspecs (<a>,<b>,<c>), so they survive.
net prec connect
  [{<a>, <b>, <c>} -> {<a>, <b>, <c>,
      <r1=a+b*c>, <r2=a-b-c>, <r3=a/b*c>, <r4=-a*b>, <r5=(a+b)*c>, <r6=a-b+c>,
      <r7=a*b%c>, <r8=a+b%c*2>, <r9=-a%b>, <r10=a - -b>, <r11=a*12/b/c>,
      <r12=a + b - c * 2 + a % 3>}];
''', ins, exp, ordered=True,
     notes='a+b*c, a-b-c = (a-b)-c, a/b*c = (a/b)*c, -a%b = (-a)%b, a*12/b/c left to right, all with C truncation.')


def B(x):
    return 1 if x else 0


trip = [(0, 0, 0), (1, 2, 3), (3, 2, 1), (0, 1, 1), (1, 0, 1), (2, 2, 0), (-1, 0, 0), (5, 5, 1)]
ins = [R(a=a, b=b, c=c) for a, b, c in trip]
exp = []
for a, b, c in trip:
    exp.append(R(a=a, b=b, c=c,
                 l1=B(B(a < b) == B(b < c)),
                 l2=B((a and b) or c),
                 l3=B(B(not a) == b),
                 l4=B(a or (b and c)),
                 l5=B(B(a == b) != c),
                 l6=B(not (a < b)),
                 l7=B(a > b),
                 l8=B(a >= b and b <= c),
                 l9=B(not (not a)),
                 l10=B(a + b > c * 2),
                 l11=(a < b) + (b < c) + (a == c),
                 l12=B(-a < -b)))
case('filter-logic', '''
// Comparison and logical operators: results are 0/1, C precedence
// (relational binds tighter than equality, && tighter than ||, ! is unary).
net logic connect
  [{<a>, <b>, <c>} -> {<a>, <b>, <c>,
      <l1=(a < b == b < c)>, <l2=(a && b || c)>, <l3=(!a == b)>, <l4=(a || b && c)>,
      <l5=(a == b != c)>, <l6=!(a < b)>, <l7=(a > b)>, <l8=(a >= b && b <= c)>,
      <l9=!(!a)>, <l10=(a + b > c * 2)>, <l11=(a < b) + (b < c) + (a == c)>,
      <l12=(-a < -b)>}];
''', ins, exp, ordered=True,
     notes='a<b==b<c is (a<b)==(b<c); a&&b||c is (a&&b)||c; !a==b is (!a)==b; a==b!=c is (a==b)!=c; booleans are 0/1 and can be added.')

pairs = [(10, 0), (10, 3), (9, 3), (-4, 0), (0, 0)]
ins = [R(a=a, b=b) for a, b in pairs]
exp = []
for a, b in pairs:
    exp.append(R(a=a, b=b,
                 q=B(b != 0 and cdiv(a, b) > 1),
                 r=B(b == 0 or cmod(a, b) == 0),
                 s=0 if b == 0 else cdiv(a, b),
                 t=(cmod(a, b) if b != 0 else -1)))
case('filter-shortcircuit', '''
// && || and ?: evaluate lazily as in C, so a guarded division by a zero tag
// is not an error.
net lazy connect
  [{<a>, <b>} -> {<a>, <b>, <q=(b != 0 && a / b > 1)>, <r=(b == 0 || a % b == 0)>,
                  <s=b == 0 ? 0 : a / b>, <t=b ? a % b : -1>}];
''', ins, exp, ordered=True,
     notes='C semantics: the right operand of && / || and the unselected arm of ?: are not evaluated (no division by zero here).')

vals = [(7, 3), (-7, 3), (0, 0), (-12, -30), (100, -100), (4, 4)]
ins = [R(a=a, b=b) for a, b in vals]
exp = []
for a, b in vals:
    exp.append(R(mx=max(a, b), mn=min(a, b), ab=abs(a), neg=-a, t1=a if a > b else b,
                 sgn=-1 if a < 0 else (0 if a == 0 else 1), cl=min(max(a, -5), 5),
                 t3=b if a else 7, t4=abs(a - b) + max(a, b) * min(a, b),
                 t5=-(-a), t6=max(abs(a), abs(b))))
case('filter-ternary-minmax', '''
// ?: (right associative), abs, min, max, unary minus.
net tmm connect
  [{<a>, <b>} -> {<mx=max(a, b)>, <mn=min(a,b)>, <ab=abs(a)>, <neg=-a>,
                  <t1=(a > b) ? a : b>, <sgn=a < 0 ? -1 : a == 0 ? 0 : 1>,
                  <cl=min(max(a, -5), 5)>, <t3=(a ? b : 7)>,
                  <t4=abs(a - b) + max(a, b) * min(a, b)>, <t5=-(-a)>,
                  <t6=max(abs(a), abs(b))>}];
''', ins, exp, ordered=True,
     notes='c ? x : y ? u : v parses as c ? x : (y ? u : v); min/max/abs as functions; pattern tags a, b are dropped.')

vals = [0, 1, -100]
ins = [R(a=a) for a in vals]
exp = [R(h=a + 31, o=a + 15, z=0, hx=510, oc=64, mix=34, big=2147483647, zo=a + 0, neg=-255 + a)
       for a in vals]
case('filter-literals', '''
/* Integer literals: decimal, 0x hexadecimal, leading-0 octal. */
net lits connect
  [{<a>} -> {<h=a + 0x1F>, <o=a + 017>, <z=0>, <hx=0xff * 2>, <oc=010 * 010>,
             <mix=0x10 + 010 + 10>, <big=0x7fffffff>, <zo=a + 00>, <neg=-0xFF + a>}];
''', ins, exp, ordered=True,
     notes='0x1F=31, 017=15, 010=8, 0x10=16, 00=0, 0x7fffffff=2147483647.')

vals = [-5, 0, 4, 7, 101, 102, 200, 99, -1]
ins = [R(n=n, i=i) for i, n in enumerate(vals)]
exp = []
for i, n in enumerate(vals):
    if n < 0:
        exp.append(R(n=n, cls=0, i=i))
    elif n == 0:
        exp.append(R(n=n, cls=1, i=i))
    elif n % 2 == 0:
        exp.append(R(n=n, cls=2, i=i)); exp.append(R(half=n // 2, i=i))
    elif n > 100:
        exp.append(R(n=n, cls=4, i=i))
    else:
        exp.append(R(n=n, cls=3, i=i))
case('filter-ifelse', '''
// A chain of guarded actions: the first true guard selects its outputs,
// the final else is the fallback.  One branch emits two records.
net classify connect
  [{<n>} -> if <n < 0> then {<n>, <cls=0>}
            else if <n == 0> then {<n>, <cls=1>}
            else if <n % 2 == 0> then {<n>, <cls=2>}; {<half=n/2>}
            else if <n > 100> then {<n>, <cls=4>}
            else {<n>, <cls=3>}];
''', ins, exp, ordered=True,
     notes='Guards tried in order (102 and 200 are even, so class 2 wins over n > 100). <i> is inherited.')

ins = [R(a=5), R(a=12), R(a=13), R(c=1), R(a=11), R(a=20), R(a=15, x=1), R(c=7, x=2)]
exp = [R(b=13), R(b=11), R(b=15, x=1)]
case('filter-consume', '''
// Empty output lists consume records: a whole filter ([{<c>} -> ]) and
// empty guarded branches (then-branch and else-branch).
net consume
{
  net drop connect [{<c>} -> ];
  net keep connect [{<a>} -> if <a > 10> then {<a>} else ]
                .. [{<a>} -> if <a % 2 == 0> then else {<b=a>}];
}
connect keep | drop;
''', ins, exp,
     notes='a<=10 dropped by the else-branch, even a dropped by the then-branch, every {<c>} dropped; x inherited.')

ins = [R(n=n) for n in range(1, 6)]
exp = [R(v=n * 10 + k) for n in range(1, 6) for k in (1, 2, 3)]
case('filter-multi-out', '''
// One input record produces three output records, in the order written;
// a serial chain of filters preserves that order.
net fan connect [{<n>} -> {<n>, <k=1>}; {<n>, <k=2>}; {<n>, <k=3>}]
             .. [{<n>, <k>} -> {<v=n*10+k>}];
''', ins, exp, ordered=True,
     notes='Outspecs are emitted in the order written; filters preserve order.')

ins = [R(a=1, b=7, x=3, fields={'fld': I(9)}), R(a=10, d=50),
       R(a=0, fields={'fa': I(1), 'fb': I(2)})]
exp = []
# f1: {a} -> a+1, b=100 ; f2: {b} -> b+1, <c> ; f3: {c} -> c+5 ; f4: {fa} -> {fb=fa} | []
exp.append(R(a=2, b=101, c=5, x=3, fields={'fld': I(9)}))
exp.append(R(a=11, b=101, c=5, d=50))
exp.append(R(a=1, b=101, c=5, fields={'fb': I(1)}))
case('filter-flow-inherit', '''
// Flow inheritance through nested filter networks: labels beyond a filter's
// pattern reach every output; an emitted label wins over an inherited one
// (b=7 loses to b=100, fb=(int)2 loses to fb=fa).
net inherit
{
  net f1 connect [{<a>} -> {<a=a+1>, <b=100>}];
  net inner
  {
    net f2 connect [{<b>} -> {<b=b+1>, <c>}];
    net f3 connect [{<c>} -> {<c=c+5>}];
  }
  connect f2 .. f3;
  net f4 connect [{fa} -> {fb=fa}] | [];
}
connect f1 .. inner .. f4;
''', ins, exp,
     notes='Record 1: b=7 overridden by b=100, x and fld inherited through all stages. Record 3: fb=(int)2 overridden by fb=fa, fa dropped.')

ins = [R(v=3, btags={'k': 5}), R(v=0, x=9, btags={'k': -1})]
exp = []
for r in ins:
    k = r[('b', 'k')]; v = r[('t', 'v')]
    extra = {kk: vv for kk, vv in r.items() if kk[1] not in ('k', 'v')}
    o1 = R(v=v * 2, r=1, btags={'k': k}); o1.update(extra)
    o2 = R(w=v, r=2); o2.update(extra)
    exp += [o1, o2]
case('filter-btag', '''
// Binding tags: <#k> copies, <#j=expr> creates; expressions read binding
// tags by bare name.  A record carrying <#k> only matches patterns with
// exactly that binding tag, so each output goes to exactly one branch.
net btag connect
     [{<#k>, <v>} -> {<#k>, <v=v*2>}; {<#j=k+1>, <w=v>}]
  .. ( [{<#k>, <v>} -> {<#k>, <v>, <r=1>}]
     | [{<#j>, <w>} -> {<w>, <r=2>}] );
''', ins, exp,
     notes='The {<#j>,<w>} record loses #j (named by the pattern, not emitted); x is inherited everywhere.')

vals = [100000, -3000000, 2000000000]
ins = [R(a=a) for a in vals]
exp = [R(a=a, sq=a * a, c=a * 1000000, d=cdiv(a * a, 7)) for a in vals]
case('filter-tag-64bit', '''
// Tag arithmetic is 64-bit: intermediate and final values beyond 2^31.
net wide connect [{<a>} -> {<a>, <sq=a*a>, <c=a*1000000>, <d=a*a/7>}];
''', ins, exp, ordered=True,
     notes='language.md section 1: 64-bit arithmetic internally. 2000000000^2 = 4e18 fits in int64.')

# ============================================================================
# BINDING TAG ROUTING / PARALLEL

ins = [R(x=1), R(x=2, btags={'b': 0}), R(x=3, y=1, z=1), R(x=4, y=2, z=2, btags={'b': 9}), R(x=5, y=3)]
exp = [R(x=1, r=1), R(x=2, r=2), R(x=3, r=4), R(x=4, r=2, y=2, z=2), R(x=5, r=1, y=3)]
case('btag-routing', '''
// Subtyping with binding tags: {<x>,<y>,<z>,<#b>} does NOT match {<x>,<y>,<z>}
// (binding tag sets differ), so it goes to the {<x>,<#b>} branch even though
// the other branch names more labels.
net broute connect [{<x>} -> {<x>, <r=1>}]
                 | [{<x>, <#b>} -> {<x>, <r=2>}]
                 | [{<x>, <y>, <z>} -> {<x>, <r=4>}];
''', ins, exp,
     notes='x=4 carries #b: only the {<x>,<#b>} branch is eligible (r=2); without the binding-tag rule it would go to r=4.')

recs = [({'a': 1}, 1, {}), ({'a': 1, 'b': 1}, 2, {}), ({'a': 1, 'b': 1, 'c': 1}, 3, {}),
        ({'a': 1, 'c': 2}, 4, {}), ({'a': 1, 'b': 1, 'c': 1, 'e': 5}, 5, {}),
        ({}, 6, {'d': I(6)}), ({'a': 1}, 7, {'d': I(7)}), ({'a': 1, 'b': 1, 'c': 1}, 8, {'d': I(8)})]
ins = [R(tags=dict(t, id=i), fields=f) for t, i, f in recs]
exp = [R(r=1, id=1), R(r=2, id=2), R(r=3, id=3), R(r=1, c=2, id=4), R(r=3, e=5, id=5),
       R(r=4, id=6), R(r=5, id=7), R(r=3, id=8, fields={'d': I(8)})]
case('par-best-match', '''
// Best-match routing: a record goes to the branch whose input variant
// matches the most labels of the record.
net best connect [{<a>} -> {<r=1>}]
               | [{<a>, <b>} -> {<r=2>}]
               | [{<a>, <b>, <c>} -> {<r=3>}]
               | [{d} -> {<r=4>}]
               | [{d, <a>} -> {<r=5>}];
''', ins, exp,
     notes='{a,c}->r1 (c inherited), {a,b,c,e}->r3, {d,a}->r5 (2 labels beat 1), {d,a,b,c}->r3 (3 beat 2, field d inherited).')

ins = [R(a=1, b=2, i=1), R(a=3, i=2), R(c=4, i=3), R(c=5, d=6, e=7, i=4), R(a=8, c=9, d=10, e=11, i=5),
       R(a=12, b=13, c=14, i=6)]
exp = [R(r=1, i=1), R(r=3, i=2), R(r=2, i=3), R(r=4, i=4), R(r=4, a=8, i=5), R(r=1, c=14, i=6)]
case('par-multivariant', '''
// Branches that are nets with multi-variant signatures: the score of a
// branch is the largest number of labels of any of its variants that the
// record matches.
net mv
{
  net left ({<a>, <b>} | {<c>} -> {<r>})
    connect [{<a>, <b>} -> {<r=1>}] | [{<c>} -> {<r=2>}];
  net right ({<a>} | {<c>, <d>, <e>} -> {<r>})
    connect [{<a>} -> {<r=3>}] | [{<c>, <d>, <e>} -> {<r=4>}];
}
connect left | right;
''', ins, exp,
     notes='{a,c,d,e}: left scores 1, right scores 3 -> right, then {c,d,e} inside (a inherited). {a,b,c}: left 2 vs right 1.')

rng = random.Random(16)
N = 600
ins, exp = [], []
for i in range(N):
    x = rng.randint(-1000, 1000)
    if rng.random() < 0.5:
        ins.append(R(id=i, x=x, s=1)); exp.append(R(id=i, x=x + 12, s=1))
    else:
        ins.append(R(id=i, x=x, f=1)); exp.append(R(id=i, x=x * 2, f=1)); exp.append(R(id=i, y=x))
slow = ' .. '.join(['[{<x>, <s>} -> {<x=x+1>, <s>}]'] * 12)
case('par-det-ordered', '''
// Deterministic parallel composition: outputs keep input order although one
// branch is a 12-filter chain and the other a single filter.
net detpar
{
  net slow connect %s;
  net fast connect [{<x>, <f>} -> {<x=x*2>, <f>}; {<y=x>}];
}
connect slow || fast;
''' % slow, ins, exp, ordered=True,
     notes='|| : every output caused by input i precedes those of input j>i; the two outputs of a fast record come in written order.')

rng = random.Random(17)
ins, exp = [], []
for i in range(500):
    v = rng.randint(0, 99)
    kind = rng.choice('abc')
    ins.append(R(tags={kind: v, 'id': i}))
    if kind == 'a':
        exp.append(R(a=v + 10, via=1, id=i))
    elif kind == 'b':
        exp.append(R(b=v, via=2, id=i))
    else:
        exp.append(R(c=v, via=3, id=i))
chain = ' .. '.join(['[{<a>} -> {<a=a+1>}]'] * 10)
case('par-nondet-in-det', '''
// A non-deterministic parallel nested inside a deterministic one.  Every
// input produces exactly one output, so the outer || fixes the whole order
// (causality through nested components).
net nd_in_d
{
  net longa connect [{<a>} -> {<a>, <via=1>}] .. %s;
}
connect (longa | [{<b>} -> {<b>, <via=2>}]) || [{<c>} -> {<c>, <via=3>}];
''' % chain, ins, exp, ordered=True,
     notes='Order is defined by the outermost || even though the inner | is non-deterministic.')

rng = random.Random(18)
ins, exp = [], []
for i in range(200):
    v = rng.randint(-50, 50)
    kind = rng.choice('abc')
    ins.append(R(tags={kind: v, 'id': i}))
    if kind == 'a':
        exp.append(R(a=v * 3, id=i))
    elif kind == 'b':
        exp.append(R(b=v - 1, id=i)); exp.append(R(b=v + 1, id=i))
    else:
        exp.append(R(c=-v, id=i))
case('par-det-in-nondet', '''
// A deterministic parallel nested inside a non-deterministic one: the top
// level gives no order guarantee, so only the multiset is checked.
net d_in_nd connect ([{<a>} -> {<a=a*3>}] || [{<b>} -> {<b=b-1>}; {<b=b+1>}])
                  | [{<c>} -> {<c=-c>}];
''', ins, exp,
     notes='Multiset only: the outer | merges non-deterministically.')

# ============================================================================
# STAR

vals = [1, 3, 150, 100, 51, 101, 7]
ins = [R(n=n, id=i) for i, n in enumerate(vals)]
exp = []
for i, n in enumerate(vals):
    while not n > 100:
        n *= 2
    exp.append(R(n=n, id=i))
case('star-guard', '''
// Serial replication with a guarded exit pattern, tested before every
// replica including the first (150 and 101 leave without being doubled).
net dbl connect [{<n>} -> {<n=n*2>}] * {<n>} if <n > 100>;
''', ins, exp,
     notes='1 -> 128, 3 -> 192, 100 -> 200, 51 -> 102; 150 and 101 match the exit before the first replica.')


def collatz_cap(n, cap):
    s = 0
    while not (n == 1 or s >= cap):
        n = n // 2 if n % 2 == 0 else 3 * n + 1
        s += 1
    return n, s


ins, exp = [], []
for i, n in enumerate(list(range(1, 31)) + [97, 27]):
    ins.append(R(n=n, steps=0, id=i))
    m, s = collatz_cap(n, 20)
    exp.append(R(n=m, steps=s, id=i))
ins.append(R(n=5, steps=0, done=1, id=99))
exp.append(R(n=5, steps=0, done=1, id=99))
case('star-multi-exit', '''
// Several exit patterns, some guarded: stop when n reaches 1, or after 20
// steps, or immediately for records carrying <done>.
net collatz connect
  [{<n>, <steps>} -> if <n % 2 == 0> then {<n=n/2>, <steps=steps+1>}
                     else {<n=3*n+1>, <steps=steps+1>}]
  * {<n>} if <n == 1>, {<steps>} if <steps >= 20>, {<done>};
''', ins, exp,
     notes='Collatz iteration capped at 20 steps; n=1 exits before the first replica with steps=0; the <done> record exits unchanged.')

rng = random.Random(19)
ins, exp = [], []
for i in range(400):
    n = rng.randint(-2, 30)
    ins.append(R(id=i, n=n, c=0))
    exp.append(R(id=i, n=n if n <= 0 else 0, c=max(n, 0)))
case('star-det-ordered', '''
// Deterministic serial replication: records leave after very different
// numbers of iterations (0..30) but the output keeps input order.
net detstar connect [{<n>, <c>} -> {<n=n-1>, <c=c+1>}] ** {<n>} if <n <= 0>;
''', ins, exp, ordered=True,
     notes='** : output order = input order; a record with n<=0 exits before the first replica unchanged.')

ins, exp = [], []
for i, n in enumerate([0, 1, 2, 3, 5, 8, 12]):
    ins.append(R(i=n, j=n, c=0, id=i))
    exp.append(R(i=0, j=0, c=n * (n + 1) // 2, id=i))
case('star-nested', '''
// A star inside a star: the inner loop counts j down to 0 adding 1 to c per
// step, the outer loop restarts it with j = i-1; c ends as n(n+1)/2.
net tri
{
  net inner connect [{<i>, <j>, <c>} -> {<i>, <j=j-1>, <c=c+1>}] * {<i>, <j>, <c>} if <j <= 0>;
  net next connect [{<i>, <j>, <c>} -> {<i=i-1>, <j=i-1>, <c>}];
}
connect (inner .. next) * {<i>, <j>, <c>} if <i <= 0>;
''', ins, exp,
     notes='Triangular numbers by nested replication; n=0 exits the outer star before its first replica.')

# ============================================================================
# SPLIT

rng = random.Random(20)
keys = list(range(-50, 250))
ins = []
for k in keys:
    ins.append(R(k=k, a=k * 3 + 1))
    ins.append(R(k=k, b=k * k))
rng.shuffle(ins)
exp = [R(k=k, s=k * 3 + 1 + k * k) for k in keys]
case('split-sync-many', '''
// Parallel replication on a tag with 300 distinct values: each replica is a
// one-shot synchrocell joining the {<a>} and {<b>} records of its key.
net pairs connect ([| {<a>}, {<b>} |] ! <k>)
               .. ( [{<a>, <b>} -> {<s=a+b>}]
                  | [{<a>} -> ]
                  | [{<b>} -> ] );
''', ins, exp,
     notes='Each key has exactly one a and one b (shuffled input order); the catch-all branches keep the program well-typed and never fire.')

rng = random.Random(21)
ins, exp = [], []
for i in range(500):
    k = i % 17
    if rng.random() < 0.8:
        v = rng.randint(0, 25)
        ins.append(R(id=i, k=k, v=v))
        exp.append(R(id=i, k=k, v=min(v, 0) if v <= 0 else 0, c=k * max(v, 0)))
    else:
        w = rng.randint(-9, 9)
        ins.append(R(id=i, k=k, w=w))
        exp.append(R(id=i, k=k, w=w * w))
case('split-det-ordered', '''
// Deterministic parallel replication over 17 tag values; inside each
// replica a non-deterministic choice and a deterministic star whose number
// of iterations varies per record.  Output keeps input order.
net detsplit
{
  net count connect [{<k>, <v>} -> {<k>, <v>, <c=0>}]
                 .. ([{<k>, <v>, <c>} -> {<k>, <v=v-1>, <c=c+k>}] ** {<v>} if <v <= 0>);
  net square connect [{<k>, <w>} -> {<k>, <w=w*w>}];
}
connect (count | square) !! <k>;
''', ins, exp, ordered=True,
     notes='!! : outputs in input order across replicas; each input yields exactly one output.')

ins = []
for i in range(6):
    for j in range(6):
        ins.append(R(i=i, j=j, a=i + 1))
        ins.append(R(i=i, j=j, b=j + 10))
random.Random(22).shuffle(ins)
exp = [R(i=i, j=j, p=(i + 1) * (j + 10)) for i in range(6) for j in range(6)]
case('split-nested', '''
// Two chained splits (postfix operators apply left to right): one cell per
// (i, j) pair.  (i=1,j=2) and (i=2,j=1) must not share a cell.
net grid connect ([| {<a>}, {<b>} |] ! <i> ! <j>)
              .. ( [{<a>, <b>} -> {<p=a*b>}]
                 | [{<a>} -> ]
                 | [{<b>} -> ] );
''', ins, exp,
     notes='Keyed on both tags; every (i,j) gets exactly one a and one b.')

# ============================================================================
# FEEDBACK

vals = [1, 500, 2000, 7, 999, 1000]
ins = [R(n=n, id=i) for i, n in enumerate(vals)]
exp = []
for i, n in enumerate(vals):
    n = n * 3
    while n < 1000:
        n *= 3
    exp.append(R(n=n, id=i))
case('feedback-guard', '''
// Feedback with a guarded pattern: records always pass the operand at
// least once (2000 -> 6000), then loop while n < 1000.
net fbg connect [{<n>} -> {<n=n*3>}] \\ {<n>} if <n < 1000>;
''', ins, exp,
     notes='Unlike star, the operand is applied before the first test: 1000 -> 3000, 999 -> 2997, 1 -> 2187.')


def collatz_steps(n):
    s = 0
    while n > 1:
        n = n // 2 if n % 2 == 0 else 3 * n + 1
        s += 1
    return s


ins, exp = [], []
for i, n in enumerate(range(1, 21)):
    ins.append(R(a=n, s=0, id=i))
    exp.append(R(res=collatz_steps(n), id=i))
case('feedback-multi', '''
// Feedback with two patterns: even and odd intermediate results go back
// under different labels and are renamed at the entry of the loop body.
net fbm
{
  net entry connect [{<e>, <s>} -> {<a=e>, <s>}]
                  | [{<o>, <s>} -> {<a=o>, <s>}]
                  | [{<a>, <s>} -> {<a>, <s>}];
  net step connect [{<a>, <s>} -> if <a <= 1> then {<res=s>}
                                  else if <a % 2 == 0> then {<e=a/2>, <s=s+1>}
                                  else {<o=3*a+1>, <s=s+1>}];
}
connect (entry .. step) \\ {<e>}, {<o>};
''', ins, exp,
     notes='Number of Collatz steps to reach 1 for 1..20; only {<res>} records leave the loop.')

# ============================================================================
# SYNCHROCELLS

ins = [R(a=1, x=10), R(a=2), R(b=4), R(a=5), R(b=6)]
exp = [R(a=2), R(a=1, b=4, x=10), R(a=5), R(b=6)]
case('sync-basic', '''
// One synchrocell: the second {<a>} matches an already filled slot and
// passes straight through; after firing the cell is the identity.
net sb connect [| {<a>}, {<b>} |];
''', ins, exp,
     notes='Merged record = a,x from the first record plus b from the {<b>} record; a=2, a=5 and b=6 pass unchanged.')

ins = [R(k=1, a=1, x=5, fields={'f': I(1), 'h': I(7)}),
       R(k=1, b=2, x=9, y=3, fields={'g': I(2), 'f': I(99)}),
       R(k=2, b=20, x=90, fields={'g': I(20)}),
       R(k=2, a=10, x=50, fields={'f': I(10)}),
       R(k=3, a=30, b=77, fields={'f': I(30)}),
       R(k=3, b=31, fields={'g': I(31)})]
exp = [R(k=1, a=1, x=5, b=2, fields={'f': I(1), 'h': I(7), 'g': I(2)}),
       R(k=2, a=10, x=50, b=20, fields={'f': I(10), 'g': I(20)}),
       R(k=3, a=30, b=31, fields={'f': I(30), 'g': I(31)})]
case('sync-merge-rule', '''
// Merge rule: labels named by pattern k come from the record stored for
// pattern k; every other label comes from the record stored for the FIRST
// pattern (whatever the arrival order); the rest of the second record is lost.
net sm connect [| {<a>, f}, {<b>, g} |] ! <k>;
''', ins, exp,
     notes='k=1: x=9,y=3,f=(int)99 of the {<b>,g} record are dropped. k=2: {<b>,g} arrives first, x still comes from the {<a>,f} record. k=3: b=77 of record 1 is replaced by b=31 (named by pattern 2).')

ins = [R(k=1, a=-1), R(k=1, a=3), R(k=2, b=50), R(k=1, b=5), R(k=2, a=0), R(k=1, b=10),
       R(k=2, a=1), R(k=1, a=-7), R(k=2, b=2)]
exp = [R(k=1, a=-1), R(k=1, b=5), R(k=1, a=3, b=10), R(k=2, a=0), R(k=2, a=1, b=50),
       R(k=1, a=-7), R(k=2, b=2)]
case('sync-guard', '''
// Guarded patterns: a record whose guard is false is not stored and passes
// straight through (as do records once the cell has fired).
net sg connect [| {<a>} if <a > 0>, {<b>} if <b >= 10> |] ! <k>;
''', ins, exp,
     notes='k=1: a=-1 and b=5 fail their guards; the cell fires on a=3,b=10. k=2: a=0 fails, fires on b=50,a=1. Later records pass.')

ins = [R(k=1, a=1), R(k=1, b=2), R(k=1, c=3),
       R(k=2, c=10), R(k=2, a=11), R(k=2, c=12), R(k=2, b=13), R(k=2, a=14)]
exp = [R(k=1, a=1, b=2, c=3), R(k=2, c=12), R(k=2, a=11, b=13, c=10), R(k=2, a=14)]
case('sync-three', '''
// A cell with three patterns fires only when all three slots are filled.
net s3 connect [| {<a>}, {<b>}, {<c>} |] ! <k>;
''', ins, exp,
     notes='k=2: the second {<c>} (12) arrives while c is already stored and passes through; the merge uses c=10.')

rng = random.Random(23)
A = [rng.randint(-999, 999) for _ in range(200)]
Bv = [rng.randint(1000, 9999) for _ in range(200)]
seq = ['a'] * 200 + ['b'] * 200
rng.shuffle(seq)
ia = ib = 0
ins = []
for s in seq:
    if s == 'a':
        ins.append(R(a=A[ia])); ia += 1
    else:
        ins.append(R(b=Bv[ib])); ib += 1
exp = [R(a=A[i], b=Bv[i]) for i in range(200)]
case('sync-repeated', '''
// Repeated synchronisation: the i-th {<a>} of the stream is paired with the
// i-th {<b>} (each star replica is a fresh one-shot cell).
net rs connect [| {<a>}, {<b>} |] * {<a>, <b>};
''', ins, exp,
     notes='200 a and 200 b records in a shuffled interleaving; pairing is by rank within each kind, independent of scheduling.')

ins = [R(id=i, fields={'img': I(i * 7)}) for i in range(100)]
exp = [R(id=i, ok=1, fields={'img': I(i * 7)}) for i in range(100)]
case('sync-repeated-rgb', '''
// Pure-S-Net version of the split / process / re-join idiom of the FRONT
// paper's Fig. 2: each record is split into three parts that take different
// branches and are re-joined by repeated synchronisation over three patterns.
net rgb
{
  net split connect [{<id>} -> {<r=id*10+1>}; {<g=id*10+2>}; {<b=id*10+3>}];
  net work connect [{<r>} -> {<r=r+100>}] | [{<g>} -> {<g=g+200>}] | [{<b>} -> {<b=b+300>}];
  net join connect [| {<r>}, {<g>}, {<b>} |] * {<r>, <g>, <b>};
  net check connect [{<r>, <g>, <b>} -> {<id=(r-101)/10>, <ok=(g - r == 101 && b - g == 101)>}];
}
connect split .. work .. join .. check;
''', ins, exp,
     notes='Parts of image i stay in order within each branch, so the i-th r, g and b are joined (ok=1); field img is inherited from the r part.')

ins = [R(k=1, a=1), R(k=2, a=2), R(k=3, b=3), R(k=1, b=4), R(k=3, b=5)]
exp = [R(k=1, a=1, b=4), R(k=3, b=5)]
case('sync-unfired', '''
// Cells that never fire: k=2 only ever receives an {<a>}, k=3's first {<b>}
// waits forever.  At end of input such stored records are discarded and the
// program terminates normally.
net su connect [| {<a>}, {<b>} |] ! <k>;
''', ins, exp,
     notes='ASSUMPTION (not spelled out in language.md): records stored in a cell that never fires are dropped silently at termination, as the FRONT Sieve benchmark relies on.')

# ============================================================================
# STATE MODELLING (FRONT Fig. 10) WITH TAGS

vals = [3, 1, 4, 1, 5, 9, 2, 6]
ins = [R(v=v) for v in vals[:3]] + [R(s=0, n=len(vals))] + [R(v=v) for v in vals[3:]]
exp, acc = [], 0
for v in vals:
    acc += v; exp.append(R(out=acc))
case('state-star-prefix', '''
// FRONT Fig. 10 (left): state modelled by a star over a parallel choice.
// The single state record {<s>,<n>} moves one replica down per value: the
// replica's one-shot cell pairs it with the next value, [] lets values that
// meet an already-used cell pass on.  Running sum of the values.
net prefix
{
  net combine connect [| {<s>, <n>}, {<v>} |];
  net compute connect [{<s>, <n>, <v>} -> if <n <= 1> then {<out=s+v>}
                                          else {<out=s+v>}; {<s=s+v>, <n=n-1>}];
}
connect (combine .. ([] | compute)) * {<out>};
''', ins, exp,
     notes='Replica r pairs the state with the r-th value in input order, whatever the interleaving, so the prefix sums are determined; n counts values so the last state is not re-emitted (no cell left waiting).')

vals = [2, 3, 1, 5, 2, 7]
ins = [R(v=v) for v in vals] + [R(s=1, n=len(vals))]
exp, acc = [], 1
for v in vals:
    acc *= v; exp.append(R(out=acc))
case('state-feedback-prefix', '''
// FRONT Fig. 10 (right): state modelled by a feedback loop over repeated
// synchronisation.  The state comes back after each step and is paired with
// the next value.  Running product of the values.
net prefixfb
{
  net combine connect [| {<s>, <n>}, {<v>} |] * {<s>, <n>, <v>};
  net compute connect [{<s>, <n>, <v>} -> if <n <= 1> then {<out=s*v>}
                                          else {<out=s*v>}; {<s=s*v>, <n=n-1>}];
}
connect (combine .. compute) \\ {<s>, <n>};
''', ins, exp,
     notes='The state record arrives last; values wait in successive cells until the state reaches them.')

# ============================================================================
# FIBONACCI / POWER OF TWO / SIEVE

FIB = META + '''
// Recursive Fibonacci in pure S-Net.
//  * grow: a star unfolds the call tree; node <pos> has children 2*pos and
//    2*pos+1 (fib(n-1) and fib(n-2)); leaves (n < 2) carry their value.
//  * a feedback loop folds values back up the tree: a left child becomes
//    <lhs>, a right child <rhs> of its <parent>; a one-shot cell per
//    (job, parent) adds the two halves and the sum re-enters the loop as
//    the value of the parent; the root leaves as <fib>.
// Several jobs may run at once: <job> keeps their trees apart.
net fib ({<n>, <job>} -> {<fib>, <job>})
{
  net grow connect
    [{<n>, <pos>} -> if <n < 2> then {<pos>, <val=n>}
                    else {<n=n-1>, <pos=2*pos>}; {<n=n-2>, <pos=2*pos+1>}];

  net climb connect
    [{<pos>, <val>} -> if <pos == 1> then {<fib=val>}
                       else if <pos % 2 == 0> then {<parent=pos/2>, <lhs=val>}
                       else {<parent=pos/2>, <rhs=val>}];

  net add connect ([| {<lhs>}, {<rhs>} |] ! <parent> ! <job>)
               .. ( [{<parent>, <lhs>, <rhs>} -> {<pos=parent>, <val=lhs+rhs>}]
                  | [{<parent>, <lhs>} -> ]
                  | [{<parent>, <rhs>} -> ] );
}
connect [{<n>} -> {<n>, <pos=1>}]
     .. grow * {<pos>, <val>}
     .. (climb .. (add | [])) \\ {<pos>, <val>};
'''


def fibv(n):
    a, b = 0, 1
    for _ in range(n):
        a, b = b, a + b
    return a


ns = [(0, 0), (1, 1), (2, 2), (3, 5), (4, 10), (5, 15), (6, 20), (7, 10), (8, 3)]
ins = [R(n=n, job=j) for j, n in ns]
exp = [R(fib=fibv(n), job=j) for j, n in ns]
case('fib-multi', FIB, ins, exp,
     notes='fib(0..20) for 9 concurrent jobs (job 4 and job 7 both compute fib(10)); every internal node of each tree gets exactly one lhs and one rhs, so all cells fire.')
case('fib-25', FIB, [R(n=25, job=1)], [R(fib=fibv(25), job=1)],
     notes='fib(25) = 75025: 121393 leaves, 121392 one-shot cells (the heavy case of the corpus).', heavy=True)

PO2 = META + '''
// Powers of two, Po2(n) = n > 0 ? Po2(n-1) + Po2(n-1) : 1, in pure S-Net.
//  * expansion by a feedback loop: a node at position K spawns 2K and 2K+1
//    until depth N; every leaf carries V=1;
//  * all leaves are at the same depth, so the fold can be a star: replica d
//    joins the siblings of level N-d with one cell per (job, parent), and
//    the root (K == 1) leaves the star.
net po2 ({<N>, <job>} -> {<R>, <job>})
{
  net spawn connect [{<N>, <K>} -> if <N == 0> then {<K>, <V=1>}
                                  else {<N=N-1>, <K=2*K>}; {<N=N-1>, <K=2*K+1>}];
  net pair connect
       [{<K>, <V>} -> if <K % 2 == 0> then {<P=K/2>, <L=V>} else {<P=K/2>, <H=V>}]
    .. ([| {<L>}, {<H>} |] ! <P> ! <job>)
    .. ( [{<P>, <L>, <H>} -> {<K=P>, <V=L+H>}] | [{<P>, <L>} -> ] | [{<P>, <H>} -> ] );
}
connect [{<N>} -> {<N>, <K=1>}]
     .. spawn \\ {<N>, <K>}
     .. pair * {<K>, <V>} if <K == 1>
     .. [{<K>, <V>} -> {<R=V>}];
'''
case('po2-12', PO2, [R(N=12, job=0)], [R(R=4096, job=0)],
     notes='4096 leaves are merged through 4095 cells created on demand under split (the collector of the split sees thousands of inputs).')
ns = [(1, 0), (2, 1), (3, 2), (4, 3), (5, 4), (6, 5), (7, 6), (8, 3)]
case('po2-jobs', PO2, [R(N=n, job=j) for j, n in ns], [R(R=2 ** n, job=j) for j, n in ns],
     notes='Jobs of different depth share the star: job 1 (N=0) exits before the first replica; the split on <job> keeps equal parent keys of different jobs apart.')

NS = 200
primes = [p for p in range(2, NS + 1) if all(p % d for d in range(2, p))]

SIEVE_STAR = META + '''
// Sieve of Eratosthenes, state style (a) of FRONT Fig. 10: a star whose
// replicas are the sieve stages; each stage holds one prime.
//
// How a stage holds its prime with synchrocells and tags only:
//  * first: every number is split into two halves {<a>} and {<b>}; the stage's
//    one-shot cell fires on the two halves of the FIRST number only, so that
//    number (the smallest one reaching the stage, i.e. the next prime) comes
//    out as {<a>,<b>} while later numbers come out as separate halves;
//  * route (a parallel choice) turns the joined record into the output
//    {<prime>} plus a state record {<p>}, later {<a>} halves back into
//    numbers, and drops the {<b>} halves;
//  * hold keeps the state alive: the state {<p>} circulates in a feedback loop
//    and repeated synchronisation pairs it with each later number in turn;
//    numbers not divisible by p leave for the next stage, in order.
// Numbers reach every stage in increasing order (all paths a number takes
// are order preserving), which is what makes the first arrival prime.
net sieve ({<x>} -> {<prime>})
{
  net first connect [{<x>} -> {<a=x>}; {<b=x>}] .. [| {<a>}, {<b>} |];

  net route connect [{<a>, <b>} -> {<prime=a>}; {<p=a>}]
                  | [{<a>} -> {<x=a>}]
                  | [{<b>} -> ];

  net hold connect
    (  ([| {<p>}, {<x>} |] * {<p>, <x>})
    .. [{<p>, <x>} -> if <x % p == 0> then {<p>} else {<p>}; {<x>}] ) \\ {<p>};

  net stage connect first .. route .. (hold | []);
}
connect stage * {<prime>};
'''
case('sieve-star', SIEVE_STAR, [R(x=x) for x in range(2, NS + 1)], [R(prime=p) for p in primes],
     notes=('Primes up to %d, style (a): star over stages, one prime per stage.\n'
            'Idea: a stage detects its first number with a one-shot cell fed with two halves of every number '
            '(only the first number\'s halves are joined); a parallel choice turns that joined record into '
            '{<prime>} plus a state record {<p>}; the state circulates in a feedback loop over repeated '
            'synchronisation and meets every later number, passing on those not divisible by p.\n'
            'Scheduling independence: each stage judges one number at a time (one state record) and every path '
            'a number takes is FIFO, so numbers reach each stage in increasing order and its first number is prime.\n'
            'The last state record of every stage is still stored in a cell when input ends; it is discarded (as in sync-unfired).') % NS)

SIEVE_FB = META + '''
// Sieve of Eratosthenes, state style (b) of FRONT Fig. 10: one feedback
// loop over repeated synchronisation; the whole sieve is instantiated once.
//
// State: the k-th prime is a record {<p>, <k>} (p = 0 while the k-th prime
// is not known yet).  A number that has survived the first k-1 primes is a
// record {<x>, <k>}.  Records meet per index k (split on <k>), and within an
// index, repeated synchronisation pairs the circulating state with the
// numbers in arrival order:
//  * p == 0: x is the k-th prime: emit it, store it as the state of index k,
//    and open index k+1 with an empty state;
//  * x % p == 0: drop x; otherwise pass x on to index k+1.
// The state goes back after each pair, so numbers of one index are judged
// one after the other, in increasing order.  Number 2 seeds index 1.
net sieve ({<x>} -> {<prime>})
{
  net seed connect [{<x>} -> if <x == 2> then {<p=0>, <k=1>}; {<x>, <k=1>}
                              else {<x>, <k=1>}];
  net meet connect ([| {<p>}, {<x>} |] * {<p>, <x>}) ! <k>;
  net judge connect
    [{<p>, <x>, <k>} -> if <p == 0> then {<prime=x>}; {<p=x>, <k>}; {<p=0>, <k=k+1>}
                        else if <x % p == 0> then {<p>, <k>}
                        else {<p>, <k>}; {<x>, <k=k+1>}];
}
connect seed .. (meet .. judge) \\ {<p>}, {<x>};
'''
case('sieve-feedback', SIEVE_FB, [R(x=x) for x in range(2, NS + 1)], [R(prime=p) for p in primes],
     notes=('Primes up to %d, style (b): a single feedback loop over repeated synchronisation.\n'
            'Idea: the k-th prime is a state record {<p>,<k>} (p=0 until known); a number surviving the first k-1 '
            'primes is {<x>,<k>}; a split on <k> gives every index its own repeated synchronisation, which pairs the '
            'circulating state with the numbers of that index one at a time. p=0: x is the k-th prime (emit it, keep '
            'it as state, open index k+1); x%%p==0: drop x; else pass x to index k+1. Number 2 seeds index 1.\n'
            'Scheduling independence: one state record per index serialises its pairs, and forwarded numbers travel '
            'one FIFO path, so each index sees its numbers in increasing order.\n'
            'The final state of every index (and the empty state of index pi(N)+1) is still stored when input ends; it is discarded (as in sync-unfired).') % NS)

# ============================================================================
# NET DEFINITIONS

ins = [R(v=0), R(v=5), R(v=-3)]
exp = [R(v=-((v + 100 + 10000) * 2) + 100) for v in (0, 5, -3)]
case('net-nested-shadow', '''
net inc connect [{<v>} -> {<v=v+1>}];
net neg connect [{<v>} -> {<v=-v>}];

// Lexical scoping: outer's inc shadows the top-level inc; mid's inc shadows
// outer's inc inside mid only; mid also sees outer's dbl and the top-level neg.
net outer
{
  net inc connect [{<v>} -> {<v=v+100>}];
  net dbl connect [{<v>} -> {<v=v*2>}];
  net mid
  {
    net inc connect [{<v>} -> {<v=v+10000>}];
  }
  connect inc .. dbl .. neg;
}
connect inc .. mid .. inc;
''', ins, exp, ordered=True,
     notes='Entry = outer (last top-level net): v -> +100 -> (+10000, *2, negate) -> +100; the top-level inc (+1) is never used.')

ins = [R(v=3), R(u=7), R(z=1), R(v=-4)]
exp = [R(r=12), R(r=7), R(z=1, q=1), R(r=19)]
case('net-sig-types', '''
// Type definitions, type signatures (one referring to another, one with an
// unspecified "..." output) and net signatures given by name or inline.
type Num = {<v>};
type Pair = {<v>, <w>} | {<u>};
typesig Square = Num -> Num;
typesig Square2 = {<u>} -> {<u>}, Square;
typesig Combine = Pair -> {<r>}, {<z>} -> ...;

net square (Square2) connect [{<v>} -> {<v=v*v>}] | [{<u>} -> {<u>}];
net combine (Combine) connect [{<v>, <w>} -> {<r=v+w>}] | [{<u>} -> {<r=u>}] | [{<z>} -> {<z>, <q=1>}];

net main ({<v>} | {<u>} | {<z>} -> {<r>} | {<z>, <q>})
  connect ( (square .. ([{<v>} -> {<v>, <w=3>}] | [{<u>} -> {<u>}])) | [{<z>} -> {<z>}] ) .. combine;
''', ins, exp,
     notes='square accepts {<v>} and {<u>} (Square2 includes Square): {<v>} -> v*v, then w=3, r = v*v+3; {<u>} -> r=u; {<z>} -> {<z>,<q=1>}.')

ins = [R(v=v) for v in range(1, 6)]
exp = [R(v=v + 1) for v in range(1, 6)]
case('net-metadata-placement', '''
<metadata>
  <default> <interface value="C4SNet"/> </default>
  <boxdefault> <interface value="C4SNet" /> </boxdefault>
  <net name="placed"> <observer type="before" /> </net>
  <somethingunknown attr="1"/>
</metadata>

/* A block comment that mentions net fake connect []; and spans
   several lines. */
// Static placement @ 0 and dynamic placement !@ <node> with node = 0: on a
// single node they change nothing.
net placed
{
  net w connect [{<v>, <node>} -> {<v=v+1>, <node>}];   // trailing comment
}
connect ([{<v>} -> {<v>, <node=0>}] @ 0) .. (w !@ <node>) .. [{<v>, <node>} -> {<v>}] @ 0;
''', ins, exp,
     notes='Metadata with unknown elements is ignored; placement on node 0 only (the single node).')

rng = random.Random(30)
ins, exp = [], []
for i in range(400):
    if rng.random() < 0.75:
        v = rng.randint(0, 30)
        ins.append(R(id=i, v=v))
        exp.append(R(id=i, v=0, c=2 * v))
    else:
        w = rng.randint(-9, 9)
        ins.append(R(id=i, w=w))
        exp.append(R(id=i, w=w * w))
case('place-det-ordered', '''
// Deterministic dynamic placement !!@: every record is placed on node 0
// (the only node of a single-process run).  Inside, a non-deterministic
// choice between a one-filter branch and a non-deterministic star with
// 0..30 iterations per record, so records overtake each other there; !!@
// must still emit them in input order.  A metadata block stands in the
// net body (it applies to that net's boxes; this net has none).
net detplace ({<id>, <v>} | {<id>, <w>} -> {<id>, <v>, <c>} | {<id>, <w>})
{
  <metadata> <net name="count"> <observer type="after" /> </net> </metadata>
  net count connect [{<v>} -> {<v>, <c=0>}]
                 .. ([{<v>, <c>} -> {<v=v-1>, <c=c+2>}] * {<v>} if <v <= 0>);
  net square connect [{<w>} -> {<w=w*w>}];
}
connect [{<id>} -> {<id>, <node=0>}] .. ((count | square) !!@ <node>) .. [{<node>} -> {}];
''', ins, exp, ordered=True,
     notes='!!@ on one node is !! over the single value 0: outputs in input order although the star and | inside reorder.')

case('err-place-node', '''
// Dynamic placement to a node that does not exist: a run on two nodes has
// only nodes 0 and 1. One node runs every placement on node 0.
net pl connect [{<x>} -> {<y=x>}] !!@ <node>;
''', [R(x=1, node=0), R(x=2, node=3)], error='placement to node 3', nodes=[2],
     one_node=[R(y=1, node=0), R(y=2, node=3)],
     warning='placement `!!@ <node>` ignored: this run has one node',
     notes='The second record names node 3; a run on two nodes has only nodes 0 and 1. On one node every '
           'placement runs on node 0 (one warning): `!!@ <node>` is `!! <node>`.')

ins = [R(v=1), R(v=2)]
exp = [R(v=31), R(v=31)]
case('net-entry-last', '''
net first connect [{<v>} -> {<v=1>}];
net second connect [{<v>} -> {<v=2>}];
// The entry network is the LAST top-level net; it may use earlier ones.
net third connect first .. [{<v>} -> {<v=v+30>}];
''', ins, exp, ordered=True,
     notes='Entry is third: v is reset to 1 by first, then +30.')

# ============================================================================
# PIPELINE

rng = random.Random(24)
ins, exp = [], []
for i in range(2000):
    x = rng.randint(-5000, 5000)
    ins.append(R(id=i, x=x, fields={'tagline': I(i)}))
    y = x + 1
    y = y * 2
    y = y - 3
    y = cmod(y, 1000)
    y = y + 7
    y = y * 3
    y = cdiv(y, 2)
    y = y - cdiv(y, 10)
    y = abs(y) + 1
    y = -y if y % 2 == 0 else y
    exp.append(R(id=i, x=y, fields={'tagline': I(i)}))
case('pipeline-10x2000', '''
// A ten-stage serial chain of filters over 2000 records: a pure serial
// chain preserves order.  Fields and other tags are flow-inherited.
net pipe
{
  net s1 connect [{<x>} -> {<x=x+1>}];
  net s2 connect [{<x>} -> {<x=x*2>}];
  net s3 connect [{<x>} -> {<x=x-3>}];
  net s4 connect [{<x>} -> {<x=x%1000>}];
  net s5 connect [{<x>} -> {<x=x+7>}];
  net s6 connect [{<x>} -> {<x=x*3>}];
  net s7 connect [{<x>} -> {<x=x/2>}];
  net s8 connect [{<x>} -> {<x=x-x/10>}];
  net s9 connect [{<x>} -> {<x=abs(x)+1>}];
  net s10 connect [{<x>} -> if <x % 2 == 0> then {<x=-x>} else {<x>}];
}
connect s1 .. s2 .. s3 .. s4 .. s5 .. s6 .. s7 .. s8 .. s9 .. s10;
''', ins, exp, ordered=True,
     notes='Order preserved through a pure chain; negative intermediate values exercise C % and /.')

# ============================================================================
# INPUT STREAM EDGE CASES

SIMPLE = '''
net twice connect [{<a>} -> {<a=a*2>}];
'''
raw = PROLOG + '\n' + ''.join(
    '<record xmlns="snet-home.org" type="data" mode="textual" interface="C4SNet"><tag label="a">%d</tag></record>\n' % a
    for a in (1, 2, 3))
case('input-no-terminate', SIMPLE, raw, [R(a=2), R(a=4), R(a=6)], ordered=True,
     notes='The input ends without a terminate record: end of input ends the stream; output still ends with terminate.')

raw = ('<?xml version="1.0" encoding="UTF-8"?>\n'
       '<record xmlns="snet-home.org" type="data" mode="textual" interface="C4SNet"><tag label="a">1</tag></record>\n'
       '<?xml version="1.0" ?>\n'
       '<record xmlns="snet-home.org" type="data" mode="textual" interface="C4SNet"><tag label="a">2</tag></record>\n'
       "<?xml version='1.0' encoding='ISO-8859-1' ?>"
       '<record xmlns="snet-home.org" type="data" mode="textual" interface="C4SNet"><tag label="a">3</tag></record>\n'
       '<?xml version="1.0" ?><record type="terminate" />\n'
       '<record xmlns="snet-home.org" type="data" mode="textual" interface="C4SNet"><tag label="a">99</tag></record>\n')
case('input-prolog-repeated', SIMPLE, raw, [R(a=2), R(a=4), R(a=6)], ordered=True,
     notes='The <?xml ?> prolog is repeated (with encoding attributes); the record after terminate is ignored.')

raw = ("<?xml version='1.0' ?>\n"
       "<record type='data' mode='textual' xmlns='snet-home.org'><tag label='a'>5</tag>"
       "<field interface='C4SNet' label='f'>(int)7</field></record>\n"
       "<record interface=\"C4SNet\" type='data'><field label=\"f\" interface='C4SNet'>(int)-8</field>"
       "<tag label=\"a\">6</tag></record>\n"
       "<record type='terminate'/>\n")
case('input-single-quotes', '''
net q connect [{<a>, f} -> {<a=a+1>, g=f}];
''', raw, [R(a=6, fields={'g': I(7)}), R(a=7, fields={'g': I(-8)})], ordered=True,
     notes='Single- and double-quoted attributes in any order, mode/interface omitted or given on record or field.')

raw = ('<?xml version="1.0" ?>\n\n'
       '  <record xmlns="snet-home.org" type="data" mode="textual" interface="C4SNet">\n'
       '     <tag label="a">  -42  </tag>\n'
       '  </record>\n'
       '<record type="data">\n<tag label="a">\n  17\n</tag>\n</record>\n'
       '<record type="data"><tag label="a">0</tag><btag label="k"> -3 </btag></record>\n'
       '<record type="data">   <tag label="a">-2147483648</tag>   </record>\n'
       '   <record type="terminate" />   \n')
case('input-whitespace-negative', '''
// Whitespace around integers and between elements; negative values.
net ws connect [{<a>} -> {<a>, <b=a-1>}] | [{<a>, <#k>} -> {<a>, <#k>, <b=a+k>}];
''', raw, [R(a=-42, b=-43), R(a=17, b=16), R(a=0, b=-3, btags={'k': -3}),
           R(a=-2147483648, b=-2147483649)],
     notes='Integers may be surrounded by whitespace (including newlines) and negative; the btag record routes to the #k branch.')

raw = ('<?xml version="1.0" ?>\n'
       '<record xmlns="snet-home.org" type="data" mode="textual" interface="C4SNet">'
       '<tag label="n">1</tag><field label="s" interface="C4SNet">(char[5])a,&lt;,&amp;,&gt;,b</field></record>\n'
       '<record xmlns="snet-home.org" type="data" mode="textual" interface="C4SNet">'
       '<tag label="n">2</tag><field label="s" interface="C4SNet">(char[2])&quot;,&apos;</field></record>\n'
       '<record xmlns="snet-home.org" type="data" mode="textual" interface="C4SNet">'
       '<tag label="n">3</tag><field label="s" interface="C4SNet">(char[5])h,e,l,l,o</field></record>\n'
       '<record type="terminate" />\n')
case('input-xml-escapes', '''
// Char-array fields containing XML escapes are carried opaquely.
net esc connect [{s, <n>} -> {t=s, <n=n+1>}];
''', raw, [R(n=2, fields={'t': '(char[5])a,<,&,>,b'}), R(n=3, fields={'t': '(char[2])",\''}),
           R(n=4, fields={'t': '(char[5])h,e,l,l,o'})], ordered=True,
     notes='Field values compare as text after XML unescaping: "a,<,&,>,b", "\\",\'" and "h,e,l,l,o".')

# Every C4SNet value is written in its canonical printf form, as the original
# runtime writes it, including values no box touched (here they only flow
# around a filter); values of other interfaces are written as read.
raw = (PROLOG + '\n'
       '<record xmlns="snet-home.org" type="data" mode="textual" interface="C4SNet"><tag label="n">1</tag>'
       '<field label="d" interface="C4SNet">(double)0.5</field><field label="f" interface="C4SNet">(float)0.5</field>'
       '<field label="i" interface="C4SNet">(int)007</field><field label="v" interface="C4SNet">(int[3]) 1, 2 ,3</field></record>\n'
       '<record xmlns="snet-home.org" type="data" mode="textual" interface="C4SNet"><tag label="n">2</tag>'
       '<field label="ld" interface="C4SNet">(long double)0.1</field><field label="big">(double)1e300</field>'
       '<field label="hex">(double)0x1p-2</field><field label="one">(int[1])9</field>'
       '<field label="s">(short) -12 </field><field label="u">(unsigned long)+18446744073709551615</field>'
       '<field label="c">(char[3])a,&amp;,b</field><field label="e">(double[0])</field>'
       '<field label="w">( unsigned  int [2] )4294967295,00</field><field label="fl">(float[2])0.1,-1e3</field></record>\n'
       '<record xmlns="snet-home.org" type="data" mode="binary" interface="C4SNet"><tag label="n">3</tag>'
       '<field label="b">(int[2])AQAAAAIAAAA=</field><field label="dd">(double)AAAAAAAA4D8=</field>'
       '<field label="uc">(unsigned char[2])aGk=</field></record>\n'
       "<record type='data'><tag label='n'>4</tag><field label='sac' interface='SAC'> 0.5 raw </field>"
       "<field label='x'>(double)2</field></record>\n"
       '<record type="terminate" />\n')
fields_in = [
    (1, {'d': '(double)0.5', 'f': '(float)0.5', 'i': '(int)007', 'v': '(int[3]) 1, 2 ,3'}, False),
    (2, {'ld': '(long double)0.1', 'big': '(double)1e300', 'hex': '(double)0x1p-2', 'one': '(int[1])9',
         's': '(short) -12 ', 'u': '(unsigned long)+18446744073709551615', 'c': '(char[3])a,&,b',
         'e': '(double[0])', 'w': '( unsigned  int [2] )4294967295,00', 'fl': '(float[2])0.1,-1e3'}, False),
    (3, {'b': '(int[2])AQAAAAIAAAA=', 'dd': '(double)AAAAAAAA4D8=', 'uc': '(unsigned char[2])aGk='}, True),
    (4, {'sac': ('SAC', ' 0.5 raw '), 'x': '(double)2'}, False),
]
exp = [R(n=n, seen=1, fields={k: v if isinstance(v, tuple) else c4snet.canonical(v, binary) for k, v in fs.items()})
       for n, fs, binary in fields_in]
case('fields-canonical', '''
// C4SNet field values are written in the canonical printf form (records.md):
// %d-style integers, %.32f float, %.32le double, %.32Le long double, one
// element as (TYPE), binary-mode values as text. These fields only flow
// around the filter; no box touches them. Other interfaces stay verbatim.
net canon connect [{<n>} -> {<n>, <seen=1>}];
''', raw, exp, ordered=True,
     notes='(double)0.5 -> (double)5.00000000000000000000000000000000e-01, (float)0.5 -> %.32f, (int)007 -> (int)7, '
           '(int[3]) 1, 2 ,3 -> (int[3])1,2,3, (int[1])9 -> (int)9, long double 0.1 -> %.32Le of the x87 value, hex '
           'floats, whitespace in the type, binary-mode values -> textual; the SAC field is written as read. '
           'The runner compares field text exactly, so a verbatim writer fails this case.')

# ============================================================================
# ERRORS

case('err-no-branch', '''
net nb connect [{<a>} -> {<r=1>}] | [{<b>} -> {<r=2>}];
''', [R(a=1), R(b=2), R(c=3)], error='no branch',
     notes='{<c>} matches no branch of the parallel: runtime type error, nonzero exit.')

case('err-btag-no-branch', '''
// A record with binding tag #c matches neither {<x>} (binding tags differ)
// nor {<x>,<#b>}.
net bnb connect [{<x>} -> {<r=1>}] | [{<x>, <#b>} -> {<r=2>}];
''', [R(x=1), R(x=2, btags={'b': 1}), R(x=3, btags={'c': 1})], error='no branch',
     notes='Binding tags prevent subtyping: {<x>,<#c>} has no eligible branch.')

case('err-div-zero', '''
net dz connect [{<a>, <b>} -> {<q=a/b>}];
''', [R(a=6, b=3), R(a=1, b=0)], error='division by zero',
     notes='Division by zero in a filter expression is a runtime error, never a crash.')

case('err-mod-zero', '''
net mz connect [{<a>, <b>} -> {<r=a%b>}];
''', [R(a=6, b=4), R(a=1, b=0)], error='by zero',
     notes='Remainder by zero in a filter expression is a runtime error.')

case('err-split-missing-tag', '''
net sp connect [{<x>} -> {<y=x>}] ! <k>;
''', [R(x=1, k=0), R(x=2)], error='tag',
     notes='The second record lacks the split tag <k>.')

IDF = '''
net idf connect [{<a>} -> {<a>}];
'''
raw = (PROLOG + '\n'
       '<record xmlns="snet-home.org" type="data" mode="textual" interface="C4SNet"><tag label="a">1</tag></record>\n'
       '<record xmlns="snet-home.org" type="data" mode="textual" interface="C4SNet"><tag label="a">2</record>\n'
       '<record type="terminate" />\n')
case('err-malformed-unclosed', IDF, raw, error=':3:93: expected </tag> to close <tag label="a"> opened at line 3, column 77, found </record>',
     notes='The <tag> element of the second record is never closed: malformed input, reported with its position.')

raw = (PROLOG + '\n'
       '<record xmlns="snet-home.org" type="data" mode="textual" interface="C4SNet"><tag label="a">1</tag></record>\n'
       '<record xmlns="snet-home.org" type="data" mode="textual" interface="C4SNet"><tag label="a">12x</tag></record>\n'
       '<record type="terminate" />\n')
case('err-malformed-nonint', IDF, raw, error=':3:77: tag "a" has a non-integer value',
     notes='A tag value that is not an integer is malformed input.')

raw = (PROLOG + '\n'
       '<record xmlns="snet-home.org" type="data" mode="textual" interface="C4SNet"><tag label="a">9223372036854775807</tag></record>\n'
       '<record xmlns="snet-home.org" type="data" mode="textual" interface="C4SNet"><tag label="a">-9223372036854775809</tag></record>\n'
       '<record type="terminate" />\n')
case('err-malformed-tag-range', IDF, raw,
     error=':3:77: tag "a" has the value -9223372036854775809, outside the range of tags (-9223372036854775808 to 9223372036854775807',
     notes='Tags are 64-bit signed integers (records.md): a decimal value outside that range is malformed input, '
           'reported with its position and the range; the largest value itself is read.')

raw = (PROLOG + '\n'
       '<record xmlns="snet-home.org" type="data" mode="textual" interface="C4SNet"><tag label="a">1</tag></record>\n'
       '<record xmlns="snet-home.org" type="bogus" mode="textual" interface="C4SNet"><tag label="a">2</tag></record>\n'
       '<record type="terminate" />\n')
case('err-unknown-record-type', IDF, raw, error=':3:1: unknown record type "bogus"',
     notes='type="bogus" is not a record type this project documents: malformed input, reported with its position.')

# Malformed C4SNet values are input errors reported with their position
# (records.md): unknown type, wrong element count, bad number.
for name, value, what in [
        ('err-field-unknown-type', '(bool)1', 'unknown field type "bool"'),
        ('err-field-count', '(int[3])1,2', 'wrong element count: the type announces 3, the value has 2'),
        ('err-field-number', '(double[2])0.5,1.5x', 'element 1 ("1.5x") is not a valid double')]:
    bad = ('<record xmlns="snet-home.org" type="data" mode="textual" interface="C4SNet"><tag label="a">2</tag>'
           '<field label="f" interface="C4SNet">%s</field></record>' % value)
    raw = (PROLOG + '\n'
           '<record xmlns="snet-home.org" type="data" mode="textual" interface="C4SNet"><tag label="a">1</tag></record>\n'
           + bad + '\n<record type="terminate" />\n')
    col = bad.index('<field') + 1
    case(name, IDF, raw, error=':3:%d: field "f": %s' % (col, what),
         notes='A malformed C4SNet value (%s) is malformed input: the message names the field and its line and column.' % value)


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
        with open(os.path.join(d, 'prog.snet'), 'w') as f:
            f.write(c['prog'])
        inp = c['inp'] if isinstance(c['inp'], str) else input_xml(c['inp'])
        with open(os.path.join(d, 'input.xml'), 'w') as f:
            f.write(inp)
        if c['error'] is not None:
            with open(os.path.join(d, 'expected-error.txt'), 'w') as f:
                f.write(c['error'] + '\n')
        else:
            with open(os.path.join(d, 'expected.xml'), 'w') as f:
                f.write(output_xml(c['expected']))
        if c['ordered']:
            open(os.path.join(d, 'ordered'), 'w').close()
        if c['nodes']:
            with open(os.path.join(d, 'nodes'), 'w') as f:
                f.write(' '.join(map(str, c['nodes'])) + '\n')
        if c['one_node'] is not None:
            with open(os.path.join(d, 'expected-1node.xml'), 'w') as f:
                f.write(output_xml(c['one_node']))
        if c['warning'] is not None:
            with open(os.path.join(d, 'warning-1node.txt'), 'w') as f:
                f.write(c['warning'] + '\n')
        if c['notes']:
            with open(os.path.join(d, 'notes.txt'), 'w') as f:
                f.write(c['notes'] + '\n')
    print('%d cases written' % len(CASES))


if __name__ == '__main__':
    write_all()
