#!/usr/bin/env python3
"""Writes the C-box conformance cases (tests/conformance/c/<case>/).

Each case: prog.snet, box sources (*.c), input.xml, expected.xml (or
expected-error.txt / expected-build-error.txt), optional `ordered` and `args`
(one command-line argument per line).
Expected outputs are computed here in plain Python. Field values that boxes
produce are printed by the runtime in C printf formats (records.md):
%d-style integers, %.32f for float, %.32le for double, %.32Le for long double.
Rerun `python3 gen.py` after editing; it rewrites only the cases it defines.
"""
import os, shutil

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
HDR = '<?xml version="1.0" ?>\n'

def tag(l, v): return ('tag', l, v)
def btag(l, v): return ('btag', l, v)
def field(l, v): return ('field', l, v)

def esc(s): return s.replace('&', '&amp;').replace('<', '&lt;').replace('>', '&gt;')

def xml(recs, terminate=True):
    out = [HDR]
    for r in recs:
        parts = []
        for kind, l, v in r:
            if kind == 'field':
                parts.append(f'<field label="{l}" interface="C4SNet">{esc(v)}</field>')
            else:
                parts.append(f'<{kind} label="{l}">{v}</{kind}>')
        out.append('<record xmlns="snet-home.org" type="data" mode="textual" interface="C4SNet">' + ''.join(parts) + '</record>\n')
    if terminate:
        out.append('<record type="terminate" />\n')
    return ''.join(out)

CASES = {}

def case(name, prog, sources, inp, expected=None, error=None, build_error=None, ordered=False, args=None, notes='',
         nodes=None):
    # nodes: the node counts of the distributed runs (the `nodes` file)
    CASES[name] = dict(prog=prog, sources=sources, inp=inp, expected=expected, error=error,
                       build_error=build_error, ordered=ordered, args=args, notes=notes, nodes=nodes)

def cint(v):  # C int wrap
    v &= 0xffffffff
    return v - (1 << 32) if v >= 1 << 31 else v

def dbl(x): return '%.32e' % x
def flt(x): return '%.32f' % x

# --------------------------------------------------------------------------
case('variants-multi', '''
box classify((<x>) -> (<pos>) | (<neg>) | (<zero>));
net variants connect classify;
''', {'classify.c': r'''
#include "C4SNet.h"
void *classify(void *hnd, int x)
{
    if (x > 0) C4SNetOut(hnd, 1, x);
    else if (x < 0) C4SNetOut(hnd, 2, -x);
    else C4SNetOut(hnd, 3, 0);
    return hnd;
}
'''}, [[tag('x', v), tag('id', i)] for i, v in enumerate([5, -3, 0, 7, -1, 0, 12])],
    [[tag({True: 'pos'}.get(v > 0, 'neg' if v < 0 else 'zero'), abs(v)), tag('id', i)] for i, v in enumerate([5, -3, 0, 7, -1, 0, 12])],
    notes='one box, three output variants chosen by the sign; <id> is flow-inherited')

case('zero-outputs', '''
box keep_even((<x>) -> (<x>));
net zero connect keep_even;
''', {'keep_even.c': r'''
#include "C4SNet.h"
void *keep_even(void *hnd, int x)
{
    if (x % 2 == 0)
        C4SNetOut(hnd, 1, x);
    return hnd;   /* odd: no output record at all */
}
'''}, [[tag('x', v)] for v in range(20)], [[tag('x', v)] for v in range(0, 20, 2)],
    notes='a box that returns without emitting produces zero records')

case('many-outputs', '''
box expand((<n>) -> (<i>, <n>));
net many connect expand;
''', {'expand.c': r'''
#include "C4SNet.h"
void *expand(void *hnd, int n)
{
    for (int i = 0; i < n; i++)
        C4SNetOut(hnd, 1, i, n);
    return hnd;
}
'''}, [[tag('n', n)] for n in [0, 1, 3, 5]], [[tag('i', i), tag('n', n)] for n in [0, 1, 3, 5] for i in range(n)],
    notes='several records per call, and none for n = 0')

case('flow-inherit', '''
box inc((a) -> (b));
box twice((b) -> (c));
net flow connect inc .. [{b} -> {b, <mid>}] .. twice;
''', {'boxes.c': r'''
#include "C4SNet.h"
void *inc(void *hnd, c4snet_data_t *a)
{
    int v = *(int *)C4SNetGetData(a) + 1;
    C4SNetFree(a);
    C4SNetOut(hnd, 1, C4SNetCreate(CTYPE_int, 1, &v));
    return hnd;
}
void *twice(void *hnd, c4snet_data_t *b)
{
    int v = *(int *)C4SNetGetData(b) * 2;
    C4SNetFree(b);
    C4SNetOut(hnd, 1, C4SNetCreate(CTYPE_int, 1, &v));
    return hnd;
}
'''}, [[field('a', f'(int){v}'), field('keep', '(char[3])x,y,z'), tag('t', v * 10)] for v in range(6)],
    [[field('c', f'(int){(v + 1) * 2}'), field('keep', '(char[3])x,y,z'), tag('t', v * 10), tag('mid', 0)] for v in range(6)],
    notes='a field and a tag the boxes never see travel around both boxes and a filter')

case('btag-arg', '''
box scale((v, <#k>) -> (v, <#k>));
net bt connect scale;
''', {'scale.c': r'''
#include "C4SNet.h"
void *scale(void *hnd, c4snet_data_t *v, int k)
{
    int n = (int)C4SNetArraySize(v);
    int *src = C4SNetGetData(v);
    int *dst;
    c4snet_data_t *out = C4SNetAlloc(CTYPE_int, n, (void **)&dst);
    for (int i = 0; i < n; i++)
        dst[i] = src[i] * k;
    C4SNetFree(v);
    C4SNetOut(hnd, 1, out, k);
    return hnd;
}
'''}, [[field('v', '(int[3])1,2,3'), btag('k', 2)], [field('v', '(int[2])-4,5'), btag('k', -3)], [field('v', '(int)7'), btag('k', 0)]],
    [[field('v', '(int[3])2,4,6'), btag('k', 2)], [field('v', '(int[2])12,-15'), btag('k', -3)], [field('v', '(int)0'), btag('k', 0)]],
    notes='a binding tag is passed to the box as an int argument and emitted again')

case('tag-args-order', '''
box mix((<b>, a, <c>, d) -> (<r>, s));
net order connect mix;
''', {'mix.c': r'''
#include "C4SNet.h"
/* arguments in signature order: <b>, a, <c>, d */
void *mix(void *hnd, int b, c4snet_data_t *a, int c, c4snet_data_t *d)
{
    int r = b * 100 + c * 10 + *(int *)C4SNetGetData(a) - *(int *)C4SNetGetData(d);
    C4SNetFree(a);
    C4SNetOut(hnd, 1, r, d);   /* pass d on unchanged */
    return hnd;
}
'''}, [[tag('b', 1), field('a', '(int)3'), tag('c', 2), field('d', '(int)1')], [tag('b', 4), field('a', '(int)0'), tag('c', 5), field('d', '(int)9')]],
    [[tag('r', 122), field('s', '(int)1')], [tag('r', 441), field('s', '(int)9')]],
    notes='tags and fields interleave in signature order; a received field reference is passed on as an output')

# --- arrays of every C type -------------------------------------------------
types_in = [
    ('uc', '(unsigned char[3])a,b,c'), ('ch', '(char[4])T,e,s,t'),
    ('us', '(unsigned short[3])0,1,65535'), ('sh', '(short[3])-32768,0,32767'),
    ('ui', '(unsigned int[2])0,4294967295'), ('in', '(int[3])-2147483648,0,2147483647'),
    ('ul', '(unsigned long[2])0,18446744073709551615'), ('lo', '(long[2])-9223372036854775808,9223372036854775807'),
    ('fl', '(float[3])' + ','.join(flt(x) for x in [1.5, -0.25, 1024.0])),
    ('db', '(double[3])' + ','.join(dbl(x) for x in [1.5, -0.001, 1e300])),
    ('ld', '(long double[2])' + ','.join(dbl(x) for x in [2.5, -0.125])),
    ('sc', '(int)42'),
]
labels = [l for l, _ in types_in]
case('types-roundtrip', f'''
box copyall(({", ".join(labels)}) -> ({", ".join("o" + l for l in labels)}));
net rt connect copyall;
''', {'copyall.c': '#include "C4SNet.h"\n\nvoid *copyall(void *hnd, ' + ', '.join(f'c4snet_data_t *{l}' for l in labels) + ''')
{
    /* deep copies go out, the received references are released */
''' + ''.join(f'    c4snet_data_t *o{l} = C4SNetDeepCopy({l}); C4SNetFree({l});\n' for l in labels) +
    '    C4SNetOut(hnd, 1, ' + ', '.join(f'o{l}' for l in labels) + ');\n    return hnd;\n}\n'},
    [[field(l, v) for l, v in types_in]], [[field('o' + l, v) for l, v in types_in]],
    notes='arrays of every C4SNet element type (extreme values) are decoded, deep-copied by C and written back exactly')

case('types-create', '''
box make((<n>) -> (uc, ch, us, sh, ui, in, ul, lo, fl, db, ld, pt));
net mk connect make;
''', {'make.c': r'''
#include <string.h>
#include "C4SNet.h"
void *make(void *hnd, int n)
{
    unsigned char uc[2] = { 'A', 200 };
    char ch[2] = { 'x', '<' };
    unsigned short us[2] = { 7, 65535 };
    short sh[2] = { -7, 300 };
    unsigned int ui[2] = { 3000000000u, 1 };
    int in[2] = { -n, n };
    unsigned long ul[2] = { 18446744073709551615ul, 2 };
    long lo[2] = { -5000000000l, 5000000000l };
    float fl[2] = { 0.1f, 3.75f };
    double db[2] = { 0.1, -2.5e-10 };
    long double ld[2] = { 0.75L, -1024.5L };
    void *pt[1] = { 0 };
    C4SNetOut(hnd, 1,
        C4SNetCreate(CTYPE_uchar, 2, uc), C4SNetCreate(CTYPE_char, 2, ch),
        C4SNetCreate(CTYPE_ushort, 2, us), C4SNetCreate(CTYPE_short, 2, sh),
        C4SNetCreate(CTYPE_uint, 2, ui), C4SNetCreate(CTYPE_int, 2, in),
        C4SNetCreate(CTYPE_ulong, 2, ul), C4SNetCreate(CTYPE_long, 2, lo),
        C4SNetCreate(CTYPE_float, 2, fl), C4SNetCreate(CTYPE_double, 2, db),
        C4SNetCreate(CTYPE_ldouble, 2, ld), C4SNetCreate(CTYPE_pointer, 1, pt));
    return hnd;
}
'''}, [[tag('n', 9)]],
    [[field('uc', '(unsigned char[2])A,\u00c8'), field('ch', '(char[2])x,<'), field('us', '(unsigned short[2])7,65535'),
      field('sh', '(short[2])-7,300'), field('ui', '(unsigned int[2])3000000000,1'), field('in', '(int[2])-9,9'),
      field('ul', '(unsigned long[2])18446744073709551615,2'), field('lo', '(long[2])-5000000000,5000000000'),
      field('fl', '(float[2])' + flt(__import__('struct').unpack('f', __import__('struct').pack('f', 0.1))[0]) + ',' + flt(3.75)),
      field('db', '(double[2])' + dbl(0.1) + ',' + dbl(-2.5e-10)), field('ld', '(long double[2])' + dbl(0.75) + ',' + dbl(-1024.5)),
      field('pt', '(pointer)0')]],
    notes='fields of every type created in C are printed in C printf formats (%.32f, %.32le, %.32Le), chars raw and XML-escaped',
     nodes=[1])

case('strings', '''
box shout((s) -> (s, <len>));
net str connect shout;
''', {'shout.c': r'''
#include <stdlib.h>
#include <string.h>
#include <ctype.h>
#include "C4SNet.h"
void *shout(void *hnd, c4snet_data_t *s)
{
    char *str = C4SNetGetString(s);
    size_t n = strlen(str);
    for (size_t i = 0; i < n; i++)
        str[i] = toupper((unsigned char)str[i]);
    C4SNetFree(s);
    C4SNetOut(hnd, 1, C4SNetCreate(CTYPE_char, n, str), (int)n);
    free(str);
    return hnd;
}
'''}, [[field('s', '(char[5])h,e,l,l,o')], [field('s', '(char[3])a,&,b')], [field('s', '(char)q')]],
    [[field('s', '(char[5])H,E,L,L,O'), tag('len', 5)], [field('s', '(char[3])A,&,B'), tag('len', 3)], [field('s', '(char)Q'), tag('len', 1)]],
    notes='C4SNetGetString (malloc\'d copy), char arrays with XML escapes')

case('shallow-copy', '''
box dup((a) -> (x, y));
net sc connect dup;
''', {'dup.c': r'''
#include "C4SNet.h"
void *dup(void *hnd, c4snet_data_t *a)
{
    /* the same field twice: one extra reference, both passed on */
    C4SNetOut(hnd, 1, a, C4SNetShallowCopy(a));
    return hnd;
}
'''}, [[field('a', f'(int[2]){i},{i*i}')] for i in range(5)], [[field('x', f'(int[2]){i},{i*i}'), field('y', f'(int[2]){i},{i*i}')] for i in range(5)],
    notes='C4SNetShallowCopy: one field in two labels, reference counted')

_WIDE = [f't{i:02d}' for i in range(1, 18)]
case('wide-output', f'''
// An output of 18 values (a field and 17 tags): more than C4SNetOut reads
// on its stack in the common case, so read on its checked path.
box wide((a, <x>) -> (a, {", ".join(f"<{l}>" for l in _WIDE)}));
net w connect wide;
''', {'wide.c': f'''
#include "C4SNet.h"
void *wide(void *hnd, c4snet_data_t *a, int x)
{{
    C4SNetOut(hnd, 1, a, {", ".join(f"x + {i}" for i in range(1, 18))});
    return hnd;
}}
'''}, [[field('a', f'(int[2]){i},{i*i}'), tag('x', 10 * i)] for i in range(4)],
    [[field('a', f'(int[2]){i},{i*i}')] + [tag(l, 10 * i + k) for k, l in enumerate(_WIDE, 1)] for i in range(4)],
    notes='an output variant of 18 values, a field and 17 tags: beyond the 16 that C4SNetOut reads on its fast path, each value read by its kind and the record built whole')

# --- FRONT's two state-modelling patterns with a real Compute box ----------
def prefix_run(recs, op):
    # the pure corpus computes expected outputs; reuse its input and expected files
    pass

def from_pure(name):
    d = os.path.join(os.path.dirname(ROOT), 'pure', name)
    return open(os.path.join(d, 'input.xml')).read(), open(os.path.join(d, 'expected.xml')).read()

case('state-star', '''
// FRONT Fig. 10 (left) with a real Compute box: state modelled by a star over
// a parallel choice. The state record {<s>,<n>} moves one replica down per
// value; the replica's one-shot cell pairs it with the next value.
box compute((<s>, <n>, <v>) -> (<out>) | (<s>, <n>));
net prefix
{
  net combine connect [| {<s>, <n>}, {<v>} |];
}
connect (combine .. ([] | compute)) * {<out>};
''', {'compute.c': r'''
#include "C4SNet.h"
/* running sum: emit the new sum; pass the state on while values remain */
void *compute(void *hnd, int s, int n, int v)
{
    C4SNetOut(hnd, 1, s + v);
    if (n > 1)
        C4SNetOut(hnd, 2, s + v, n - 1);
    return hnd;
}
'''}, from_pure('state-star-prefix')[0], from_pure('state-star-prefix')[1],
    notes='same input and expected output as pure/state-star-prefix, whose filter is now a C box')

case('state-feedback', '''
// FRONT Fig. 10 (right) with a real Compute box: state modelled by feedback
// over repeated synchronisation (running product).
box compute((<s>, <n>, <v>) -> (<out>) | (<s>, <n>));
net prefixfb
{
  net combine connect [| {<s>, <n>}, {<v>} |] * {<s>, <n>, <v>};
}
connect (combine .. compute) \\ {<s>, <n>};
''', {'compute.c': r'''
#include "C4SNet.h"
void *compute(void *hnd, int s, int n, int v)
{
    C4SNetOut(hnd, 1, s * v);
    if (n > 1)
        C4SNetOut(hnd, 2, s * v, n - 1);
    return hnd;
}
'''}, from_pure('state-feedback-prefix')[0], from_pure('state-feedback-prefix')[1],
    notes='same input and expected output as pure/state-feedback-prefix, whose filter is now a C box')

# --- initialiser boxes -------------------------------------------------------
case('init-once', '''
box init(-> (<seed>, greeting));
net start connect init;
''', {'init.c': r'''
#include "C4SNet.h"
static int calls;
void *init(void *hnd)
{
    calls++;
    C4SNetOut(hnd, 1, 1000 + calls, C4SNetCreate(CTYPE_char, 2, "hi"));
    return hnd;
}
'''}, [], [[tag('seed', 1001), field('greeting', '(char[2])h,i')]],
    notes='an initialiser box fires exactly once at start (empty input stream): one record')

case('init-flow', '''
box init(-> (<seed>));
box use((<seed>, <x>) -> (<y>));
net start connect init .. [{<seed>} -> {<seed>, <x>}] .. use;
''', {'boxes.c': r'''
#include "C4SNet.h"
void *init(void *hnd)
{
    C4SNetOut(hnd, 1, 7);
    return hnd;
}
void *use(void *hnd, int seed, int x)
{
    C4SNetOut(hnd, 1, seed * 100 + x);
    return hnd;
}
'''}, [[tag('x', 1)], [tag('x', 2)]], [[tag('y', 700)], [tag('y', 701)], [tag('y', 702)]],
    notes='the initialiser\'s start-up record flows downstream (x created as 0 by the filter); records arriving from upstream call it again with flow inheritance (<x> kept)')

# initialisers anywhere in the static network fire once at start (boxes.rs)
case('init-unentered-branch', """
box init(-> (<i>));
net unentered connect (init | []);
""", {'init.c': r"""
#include "C4SNet.h"
void *init(void *hnd)
{
    for (int i = 0; i < 5; i++)
        C4SNetOut(hnd, 1, i);
    return hnd;
}
"""}, [], [[tag('i', i)] for i in range(5)],
    notes='an initialiser in a parallel branch that no record ever enters (the input is only the terminate record) still fires once at start: five records')

case('init-det-parallel', """
box init(-> (<s>));
box twice((<x>) -> (<y>));
net detpar connect twice || (init .. [{<s>} -> {<s>, <boot>}]);
""", {'boxes.c': r"""
#include <time.h>
#include "C4SNet.h"
void *init(void *hnd)
{
    /* slow, so that input records would overtake it without the ordering rule */
    struct timespec t = { 0, 10 * 1000000L };
    nanosleep(&t, 0);
    for (int s = 1; s <= 3; s++)
        C4SNetOut(hnd, 1, s);
    return hnd;
}
void *twice(void *hnd, int x)
{
    C4SNetOut(hnd, 1, 2 * x);
    return hnd;
}
"""}, [[tag('x', i), tag('id', i)] for i in range(40)],
    [[tag('s', s), tag('boot', 0)] for s in range(1, 4)] + [[tag('y', 2 * i), tag('id', i)] for i in range(40)],
    ordered=True,
    notes='an initialiser inside || fires once at start; || orders its start-up before its first input record, so the three init records come first, then the outputs in input order')

case('init-nested-net', """
box init(-> (<base>));
net outer
{
  net inner
  {
    net seed connect init .. [{<base>} -> {<base>, <tag=base*10>}];
  }
  connect seed .. [{<base>, <tag>} -> {<v=base+tag>}];
}
connect [{<x>} -> {<v=x>}] | (inner @ 0);
""", {'init.c': r"""
#include "C4SNet.h"
void *init(void *hnd)
{
    C4SNetOut(hnd, 1, 4);
    return hnd;
}
"""}, [[tag('x', i)] for i in (1, 2, 3)], [[tag('v', 44)]] + [[tag('v', i)] for i in (1, 2, 3)],
    notes='an initialiser two nets deep, under a placement, in a parallel branch the input records never enter: fires once at start (v = 4 + 40)')

case('init-feedback', """
box init(-> (<n>, <boot>));
net fb connect ([{<n>} -> {<n=n+1>}] | init) \\ {<n>} if <n < 5>;
""", {'init.c': r"""
#include "C4SNet.h"
void *init(void *hnd)
{
    C4SNetOut(hnd, 1, 0, 1);
    return hnd;
}
"""}, [[tag('n', 7)], [tag('n', 2)]], [[tag('n', 5), tag('boot', 1)], [tag('n', 8)], [tag('n', 5)]],
    notes='an initialiser in a branch of a feedback body fires once at start; its record {<n>=0} goes round the loop (routed to the filter branch, the better match) until n = 5')

case('init-star', """
box init(-> (<r>));
net st connect ([{<n>} -> {<n=n-1>}] .. ([] | init)) * {<n>} if <n <= 0>, {<r>};
""", {'init.c': r"""
#include "C4SNet.h"
static int calls;
void *init(void *hnd)
{
    C4SNetOut(hnd, 1, __atomic_add_fetch(&calls, 1, __ATOMIC_SEQ_CST));
    return hnd;
}
"""}, [[tag('n', n), tag('id', i)] for i, n in enumerate([3, 1, 5, 2, 0])],
    [[tag('n', 0), tag('id', i)] for i in range(5)] + [[tag('r', k)] for k in range(1, 6)],
    notes='an initialiser inside a star replica fires when that replica is created: the largest n is 5, so replicas 0..4 exist and five init calls are made (r = 1..5); none fires before a record needs its replica')

# --- boxes under combinators ------------------------------------------------------
case('split-box', '''
box acc((<k>, <v>) -> (<k>, <w>));
net sp connect acc ! <k>;
''', {'acc.c': r'''
#include "C4SNet.h"
void *acc(void *hnd, int k, int v)
{
    C4SNetOut(hnd, 1, k, v * 10 + k);
    return hnd;
}
'''}, [[tag('k', i % 5), tag('v', i)] for i in range(40)], [[tag('k', i % 5), tag('w', i * 10 + i % 5)] for i in range(40)],
    notes='a box under ! (one replica per <k> value)')

case('star-box', '''
box step((<n>, <steps>) -> (<n>, <steps>) | (<done>, <steps>));
net st connect step * {<done>};
''', {'step.c': r'''
#include "C4SNet.h"
/* Collatz: iterate until n == 1 */
void *step(void *hnd, int n, int steps)
{
    if (n == 1)
        C4SNetOut(hnd, 2, 1, steps);
    else
        C4SNetOut(hnd, 1, n % 2 ? 3 * n + 1 : n / 2, steps + 1);
    return hnd;
}
'''}, [[tag('n', n), tag('steps', 0), tag('id', n)] for n in [1, 2, 3, 6, 7, 27]],
    [[tag('done', 1), tag('steps', s), tag('id', n)] for n, s in [(1, 0), (2, 1), (3, 7), (6, 8), (7, 16), (27, 111)]],
    notes='a box under * (Collatz step counts); <id> inherited through every replica')

case('feedback-box', '''
box halve((<n>, <c>) -> (<n>, <c>));
net fb connect halve \\ {<n>} if <n > 1>;
''', {'halve.c': r'''
#include "C4SNet.h"
void *halve(void *hnd, int n, int c)
{
    C4SNetOut(hnd, 1, n / 2, c + 1);
    return hnd;
}
'''}, [[tag('n', n), tag('c', 0)] for n in [1, 2, 5, 64, 1000]],
    [[tag('n', 1 if n > 1 else 0), tag('c', c)] for n, c in [(1, 1), (2, 1), (5, 2), (64, 6), (1000, 9)]],
    notes='a box under \\ : records with n > 1 go round again')

case('parallel-boxes', '''
box ints((a) -> (r));
box strs((s) -> (r));
net par connect (ints | strs) .. [{r} -> {r, <seen>}];
''', {'ints.c': r'''
#include "C4SNet.h"
void *ints(void *hnd, c4snet_data_t *a)
{
    int n = (int)C4SNetArraySize(a), sum = 0;
    for (int i = 0; i < n; i++) sum += ((int *)C4SNetGetData(a))[i];
    C4SNetFree(a);
    C4SNetOut(hnd, 1, C4SNetCreate(CTYPE_int, 1, &sum));
    return hnd;
}
''', 'strs.c': r'''
#include "C4SNet.h"
void *strs(void *hnd, c4snet_data_t *s)
{
    long n = (long)C4SNetArraySize(s);
    C4SNetFree(s);
    C4SNetOut(hnd, 1, C4SNetCreate(CTYPE_long, 1, &n));
    return hnd;
}
'''}, [[field('a', '(int[4])1,2,3,4')], [field('s', '(char[3])a,b,c')], [field('a', '(int)9')]],
    [[field('r', '(int)10'), tag('seen', 0)], [field('r', '(long)3'), tag('seen', 0)], [field('r', '(int)9'), tag('seen', 0)]],
    notes='two boxes in two source files, chosen by parallel routing')

case('det-split-box', '''
box work((<k>, <i>) -> (<k>, <i>, <sq>));
net ds connect work !! <k>;
''', {'work.c': r'''
#include "C4SNet.h"
void *work(void *hnd, int k, int i)
{
    C4SNetOut(hnd, 1, k, i, i * i);
    return hnd;
}
'''}, [[tag('k', i % 7), tag('i', i)] for i in range(200)], [[tag('k', i % 7), tag('i', i), tag('sq', i * i)] for i in range(200)],
    ordered=True, notes='!! keeps input order across box replicas')

slow_src = r'''
#include <time.h>
#include "C4SNet.h"
/* slow, and slower for some records: later records finish first */
void *slow(void *hnd, int i)
{
    struct timespec t = { 0, (i % 5 == 0 ? 20 : 1) * 1000000L };
    nanosleep(&t, 0);
    C4SNetOut(hnd, 1, i, 2 * i);
    if (i % 3 == 0)
        C4SNetOut(hnd, 1, i, -1);
    return hnd;
}
'''
def slow_out(i):
    r = [[tag('i', i), tag('r', 2 * i)]]
    if i % 3 == 0: r.append([tag('i', i), tag('r', -1)])
    return r
case('concurrent-ordered', '''
box slow((<i>) -> (<i>, <r>));
net conc connect slow;
''', {'slow.c': slow_src}, [[tag('i', i)] for i in range(48)], [r for i in range(48) for r in slow_out(i)],
    ordered=True, args=['--box-concurrency', '4'],
    notes='one slow box invoked concurrently (--box-concurrency 4): outputs leave in input order')

case('concurrent-det-star', '''
box slow((<i>) -> (<i>, <r>));
net cds connect ([{<i>} -> {<i>, <round>}] .. (slow .. [{<i>, <r>, <round>} -> if <round < 2> then {<i>, <round=round+1>} else {<i>, <r>, <done>}]) ** {<done>});
''', {'slow.c': slow_src}, [[tag('i', i)] for i in range(24)],
    [[tag('i', i), tag('r', -1 if (i % 3 == 0) else 2 * i), tag('done', 0), tag('round', 2)] for i in range(24) for _ in range(1)],
    ordered=False, args=['--box-concurrency', '3'],
    notes='placeholder; rewritten below')
del CASES['concurrent-det-star']

case('concurrent-in-det-star', '''
box slow((<i>) -> (<i>, <r>));
net cds
{
  net body connect slow .. [{<i>, <r>, <round>} -> {<i=r>, <round=round+1>}];
  net loop connect body ** {<round>} if <round >= 2>;
}
connect [{<i>} -> {<i>, <round>}] .. loop;
''', {'slow.c': slow_src}, [[tag('i', i)] for i in range(1, 25)], None,
    ordered=True, args=['--box-concurrency', '3'],
    notes='a concurrent box inside ** : ordering markers stay behind earlier records\' outputs')

def cds_expected():
    out = []
    for i in range(1, 25):
        cur = [i]
        for rnd in range(2):
            nxt = []
            for v in cur:
                nxt.append(2 * v)
                if v % 3 == 0: nxt.append(-1)
            cur = nxt
        out += [[tag('i', v), tag('round', 2)] for v in cur]
    return out
CASES['concurrent-in-det-star']['expected'] = cds_expected()

# --- errors -------------------------------------------------------------------
case('err-variant-range', '''
box bad((<x>) -> (<y>) | (<z>));
net e connect bad;
''', {'bad.c': r'''
#include "C4SNet.h"
void *bad(void *hnd, int x)
{
    C4SNetOut(hnd, 3, x);
    return hnd;
}
'''}, [[tag('x', 1)]], error='variant 3', notes='variant out of range: a run error naming the box (`bad`)')

case('err-null-field', '''
box nul((<x>) -> (f));
net e connect nul;
''', {'nul.c': r'''
#include "C4SNet.h"
void *nul(void *hnd, int x)
{
    (void)x;
    C4SNetOut(hnd, 1, (c4snet_data_t *)0);
    return hnd;
}
'''}, [[tag('x', 1)]], error='null for field `f`', notes='NULL passed as a field to C4SNetOut')

case('err-crash', '''
box boom((<x>) -> (<x>));
net e connect boom;
''', {'boom.c': r'''
#include "C4SNet.h"
void *boom(void *hnd, int x)
{
    volatile int *p = 0;
    if (x == 3)
        *p = x;   /* SIGSEGV */
    C4SNetOut(hnd, 1, x);
    return hnd;
}
'''}, [[tag('x', i)] for i in range(5)], error='box `boom` crashed (signal sigsegv), declared at \n/prog.snet:1:1, caused by input record 4 (line 5)',
    notes='a crash inside a box is reported with the box name, the signal, the place of its declaration and the input record of the call')

case('err-mid-run', '''
box half((<x>) -> (<x>));
net e connect half;
''', {'half.c': r'''
#include "C4SNet.h"
void *half(void *hnd, int x)
{
    C4SNetOut(hnd, x == 2 ? 3 : 1, x);   /* variant 3: not declared */
    return hnd;
}
'''}, [[tag('x', i)] for i in range(5)], error='variant 3\ncaused by input record 3 (line 4)',
    notes='a call that fails in the middle of a run of calls ends the run: the error names its own input record, not a later one\'s')

case('err-tag-range', '''
box pass((<x>, <#k>) -> (<x>, <#k>));
net e connect pass;
''', {'pass.c': r'''
#include "C4SNet.h"
void *pass(void *hnd, int x, int k)
{
    C4SNetOut(hnd, 1, x, k);
    return hnd;
}
'''}, [[tag('x', 2147483647), btag('k', 1)], [tag('x', -2147483648), btag('k', 2)], [tag('x', 2147483648), btag('k', 3)]],
    error="box `pass`: tag `<x>` has the value 2147483648, which does not fit the box's parameter of type `int` (-2147483648 to 2147483647), caused by input record 3 (line 4)",
    notes='tags are 64-bit; a value beyond the C `int` a box takes is an error naming the box, the label, the value and the input record (never wrapped); both ends of the range pass')

case('err-stale-handle', '''
box keep((<x>) -> (<x>));
net e connect keep;
''', {'keep.c': r'''
#include "C4SNet.h"
static void *saved;
void *keep(void *hnd, int x)
{
    if (saved)
        C4SNetOut(saved, 1, x);   /* the handle of an earlier call */
    else
        C4SNetOut(hnd, 1, x);
    saved = hnd;
    return hnd;
}
'''}, [[tag('x', i)] for i in range(3)], error='stale handle', notes='C4SNetOut with a handle kept from an earlier call')

case('err-missing-box', '''
box present((<x>) -> (<x>));
box absent((<x>) -> (<y>));
net e connect present .. absent;
''', {'present.c': r'''
#include "C4SNet.h"
void *present(void *hnd, int x) { C4SNetOut(hnd, 1, x); return hnd; }
'''}, [[tag('x', 1)]], build_error='box `absent`', notes='an undefined box symbol is reported by name at build time')

# --- box functions checked against their signatures --------------------------
# `snet build` compiles every box source with a generated header declaring each
# box's C function (-include), so a definition of another type fails to build.
case('err-sig-missing', '''
box greet((name, <times>) -> (msg));
net e connect greet;
''', {'greet.c': r'''
#include "C4SNet.h"

/* `times` is missing: the runtime would pass it anyway. */
void *greet(void *hnd, c4snet_data_t *name)
{
    C4SNetOut(hnd, 1, name);
    return hnd;
}
'''}, [[field('name', '(char[3])B,o,b'), tag('times', 2)]],
    build_error='expected: void *greet(void *hnd, c4snet_data_t *name, int times);',
    notes='a box function missing a parameter of its signature is a build error with the expected prototype')

case('err-sig-swapped', '''
box pair((v, <k>) -> (v));
box keep((v) -> (v));
net e connect pair .. keep;
''', {'pair.c': r'''
#include "C4SNet.h"

/* Field and tag swapped: the tag would be read from the field's pointer. */
void *pair(void *hnd, int k, c4snet_data_t *v)
{
    (void)k;
    C4SNetOut(hnd, 1, v);
    return hnd;
}

void *keep(void *hnd, c4snet_data_t *v)
{
    C4SNetOut(hnd, 1, v);
    return hnd;
}
'''}, [[field('v', '(int)1'), tag('k', 2)]],
    build_error='expected: void *pair(void *hnd, c4snet_data_t *v, int k);',
    notes='field and tag parameters in the wrong order; the other box of the same file is fine')

# Parameters beyond the signature build with a warning (they receive 0):
# the hand-written case `sig-extra-params`.

case('err-sig-type', '''
box size((text) -> (<len>));
net e connect size;
''', {'size.c': r'''
#include <string.h>
#include "C4SNet.h"

/* A field arrives as c4snet_data_t *, not as the characters. */
void *size(void *hnd, char *text)
{
    C4SNetOut(hnd, 1, (int)strlen(text));
    return hnd;
}
'''}, [[field('text', '(char[2])h,i')]],
    build_error='expected: void *size(void *hnd, c4snet_data_t *text);',
    notes='a field parameter of the wrong C type')

case('err-sig-return', '''
box done((<x>) -> (<x>));
net e connect done;
''', {'done.c': r'''
#include "C4SNet.h"

/* A box function returns void *. */
void done(void *hnd, int x)
{
    C4SNetOut(hnd, 1, x);
}
'''}, [[tag('x', 1)]],
    build_error='expected: void *done(void *hnd, int x);',
    notes='a box function with the wrong return type')

case('err-sig-header', '''
box half((<x>) -> (<x>));
net e connect half;
''', {'half.h': r'''
#ifndef HALF_H
#define HALF_H
#include "C4SNet.h"
void *half(void *hnd, double x);   /* a tag is an int */
#endif
''', 'half.c': r'''
#include "half.h"

void *half(void *hnd, double x)
{
    C4SNetOut(hnd, 1, (int)(x / 2));
    return hnd;
}
'''}, [[tag('x', 4)]],
    build_error='half.h:4',
    notes="the box sources' own header declares the box function with the wrong type: "
          "the error points at the header's declaration")

sig_in = [(3, 2), (-5, 4), (0, 7), (12, -1)]
case('sig-own-header', '''
// Box functions declared in the sources' own header, with parameter names
// of their own, `struct cdata *` for `c4snet_data_t *` and a `const`
// parameter: the types are the box's, so they build.
box scale((v, <k>) -> (v));
box negate((v) -> (v));
net e connect scale .. negate;
''', {'ops.h': r'''
#ifndef OPS_H
#define OPS_H
#include <C4SNet.h>
void *scale(void *handle, c4snet_data_t *value, int factor);
void *negate(void *, struct cdata *);
#endif
''', 'scale.c': r'''
#include "ops.h"

void *scale(void *h, c4snet_data_t *field, const int by)
{
    int x = *(int *)C4SNetGetData(field) * by;
    C4SNetFree(field);
    C4SNetOut(h, 1, C4SNetCreate(CTYPE_int, 1, &x));
    return h;
}
''', 'negate.c': r'''
#include <ops.h>

void *negate(void *hnd, struct cdata *v)
{
    int x = -*(int *)C4SNetGetData(v);
    C4SNetFree(v);
    C4SNetOut(hnd, 1, C4SNetCreate(CTYPE_int, 1, &x));
    return hnd;
}
'''}, [[field('v', f'(int){v}'), tag('k', k), tag('id', i)] for i, (v, k) in enumerate(sig_in)],
    [[field('v', f'(int){-v * k}'), tag('id', i)] for i, (v, k) in enumerate(sig_in)],
    notes="box functions declared in the sources' header (other parameter names, struct cdata *, const int) "
          "match the prototypes snet build checks them against")

# --- box code as the original toolchain built it ---------------------------
orig_in = [(n, k) for n, k in [(3, 4), (0, 7), (5, 10), (1, -3), (-2, 0), (8, 9)]]
case('original-style', '''
// Box code written for the original S-Net toolchain, built unchanged with
// `snet build prog.snet *.c -o prog`: it includes <C4SNet.h>, <bool.h> and
// its own header <dec.h> with angle brackets, and uses bool.
box countdown((<n>) -> (<n>) | (<done>));
box parity((<k>) -> (<even>) | (<odd>));
net original ({<n>, <k>} -> {<done>, <even>} | {<done>, <odd>})
  connect countdown * {<done>} .. parity;
''', {'dec.h': r'''
#ifndef DEC_H
#define DEC_H
/* A header next to the box sources, included as <dec.h>. */
#define DEC_STEP 1
#define DONE_MARK 42
int dec_step(int n);
#endif
''', 'countdown.c': r'''
#include <C4SNet.h>
#include <bool.h>
#include <dec.h>

/* The original <bool.h>: bool is int when <stdbool.h> is not included. */
typedef char bool_is_int[sizeof(bool) == sizeof(int) ? 1 : -1];

int dec_step(int n) { return n - DEC_STEP; }

void *countdown(void *hnd, int n)
{
    bool done = n <= 0 ? true : false;
    if (done == true)
        C4SNetOut(hnd, 2, DONE_MARK);
    else
        C4SNetOut(hnd, 1, dec_step(n));
    return hnd;
}
''', 'parity.c': r'''
#include <stdbool.h>
#include <bool.h>      /* after <stdbool.h>: keeps its bool */
#include <C4SNet.h>
#include <dec.h>

void *parity(void *hnd, int k)
{
    bool even = k % 2 == 0;
    if (even)
        C4SNetOut(hnd, 1, k);
    else
        C4SNetOut(hnd, 2, k);
    return hnd;
}
'''}, [[tag('n', n), tag('k', k), tag('id', i)] for i, (n, k) in enumerate(orig_in)],
    [[tag('done', 42), tag('even' if k % 2 == 0 else 'odd', k), tag('id', i)] for i, (n, k) in enumerate(orig_in)],
    notes='<bool.h>, <C4SNet.h> and a local <dec.h> included with angle brackets, as the original toolchain allowed; '
          '<stdbool.h> before <bool.h> in parity.c; countdown runs n+1 times (star), <k> and <id> flow around it')

# --- inline box bodies -------------------------------------------------------
inl_in = [(40, 1), (1000, 0), (-9, 2), (4096, 2), (7, 3), (-1, 0), (300, 1)]
def inl_out(i, v, s):
    x = v >> s
    if x < 0:
        return [field('msg', '(char[12])' + ','.join('negative }>>')), tag('neg', 0), tag('id', i)]
    return [field('v', f'(int){2 * min(x, 1000)}'), tag('big', 1 if x > 100 else 0), tag('id', i)]
case('inline-box', '''
// A box whose C code is written in the program (inside a net body), next to
// a box in a .c file; the inline code calls a helper function of that file.
net inlined {
  box shift((v, <s>) -> (v, <big>) | (msg)) {
    <<< C |
      int clamp(int x);                       /* defined in helpers.c */
      int x = *(int *)C4SNetGetData(v) >> s;  /* `>>` inside the code */
      bool big = x > 100;
      C4SNetFree(v);
      if (x < 0) {
        const char *m = "negative }>>";
        C4SNetOut(hnd, 2, C4SNetCreate(CTYPE_char, strlen(m), m));
      } else {
        x = clamp(x);
        C4SNetOut(hnd, 1, C4SNetCreate(CTYPE_int, 1, &x), big ? 1 : 0);
      }
    >>>
  };
  box twice((v) -> (v));
} connect shift .. (twice | [{msg} -> {msg, <neg>}]);
''', {'helpers.c': r'''
#include "C4SNet.h"

int clamp(int x) { return x > 1000 ? 1000 : x; }

void *twice(void *hnd, c4snet_data_t *v)
{
    int x = *(int *)C4SNetGetData(v) * 2;
    C4SNetFree(v);
    C4SNetOut(hnd, 1, C4SNetCreate(CTYPE_int, 1, &x));
    return hnd;
}
'''}, [[field('v', f'(int){v}'), tag('s', s), tag('id', i)] for i, (v, s) in enumerate(inl_in)],
    [inl_out(i, v, s) for i, (v, s) in enumerate(inl_in)],
    notes='inline C body compiled as `void *shift(void *hnd, c4snet_data_t *v, int s)`, linked with helpers.c; '
          'the code holds `>>`, braces and a string with `}>>`; it uses bool and strlen (the generated file includes them)')

case('err-inline-language', '''
box half((<x>) -> (<y>)) { <<< SAC | y = x / 2; >>> }
net e connect half;
''', {}, [[tag('x', 1)]], build_error='box `half` has an inline body in sac',
    notes='inline code in a language snet build cannot compile is reported with the box, the language and its place')

case('err-inline-twice', '''
box twice((<x>) -> (<x>)) {
  <<< C | C4SNetOut(hnd, 1, 2 * x); >>>
}
net e connect twice;
''', {'twice.c': r'''
#include "C4SNet.h"
void *twice(void *hnd, int x) { C4SNetOut(hnd, 1, x + x); return hnd; }
'''}, [[tag('x', 1)]], build_error='box `twice` is defined twice: by its inline body and in',
    notes='a box with an inline body and a function of the same name in a box source: both are named')

case('err-inline-compile', '''
box twice((<x>) -> (<x>)) {
  <<< C |
    C4SNetOut(hnd, 1, 2 * x)   /* missing `;` */
  >>>
}
net e connect twice;
''', {}, [[tag('x', 1)]], build_error='prog.snet:3:',
    notes='a C error in an inline body is reported by the C compiler at its line in the program (#line directives)')

def write():
    for name, c in CASES.items():
        d = os.path.join(ROOT, name)
        if os.path.isdir(d):
            shutil.rmtree(d)
        os.makedirs(d)
        open(os.path.join(d, 'prog.snet'), 'w').write(c['prog'].lstrip('\n'))
        for f, src in c['sources'].items():
            open(os.path.join(d, f), 'w').write(src.lstrip('\n'))
        inp = c['inp'] if isinstance(c['inp'], str) else xml(c['inp'])
        open(os.path.join(d, 'input.xml'), 'w').write(inp)
        if c['build_error']:
            open(os.path.join(d, 'expected-build-error.txt'), 'w').write(c['build_error'] + '\n')
        elif c['error']:
            open(os.path.join(d, 'expected-error.txt'), 'w').write(c['error'] + '\n')
        else:
            exp = c['expected'] if isinstance(c['expected'], str) else xml(c['expected'])
            open(os.path.join(d, 'expected.xml'), 'w').write(exp)
        if c['ordered']:
            open(os.path.join(d, 'ordered'), 'w').write('')
        if c['nodes']:
            open(os.path.join(d, 'nodes'), 'w').write(' '.join(map(str, c['nodes'])) + '\n')
        if c['args']:
            open(os.path.join(d, 'args'), 'w').write(''.join(a + '\n' for a in c['args']))
        open(os.path.join(d, 'notes.txt'), 'w').write(c['notes'] + '\n')
    print(f'{len(CASES)} cases')

if __name__ == '__main__':
    write()
