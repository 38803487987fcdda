#!/usr/bin/env python3
"""Writes the conformance cases for inherited requirements (docs/typing.md):
programs that type-check only because labels flow around earlier
components, and parallel routing by the branches' inferred input types.

Expected outputs are computed here by plain Python for each case.
Run from anywhere:  python3 tests/conformance/pure/_gen/inherit.py
It rewrites only the `inherit-*` case directories it lists.
"""
import os
import shutil

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
PROLOG = '<?xml version="1.0" ?>'


def rec(tags):
    body = ''.join('<tag label="%s">%d</tag>' % (k, v) for k, v in sorted(tags.items()))
    return body


def input_xml(recs):
    lines = [PROLOG]
    for r in recs:
        lines.append('<record xmlns="snet-home.org" type="data" mode="textual" interface="C4SNet">%s</record>' % rec(r))
    lines.append('<record type="terminate" />')
    return '\n'.join(lines) + '\n'


def output_xml(recs):
    lines = [PROLOG + '<record xmlns="snet-home.org" type="data" mode="textual" >%s</record>' % rec(r) for r in recs]
    lines.append('<record type="terminate" />')
    return '\n'.join(lines) + '\n'


CASES = []


def case(name, prog, inp, expected, notes, ordered=False):
    CASES.append((name, prog.strip('\n') + '\n', inp, expected, notes, ordered))


# The routing example, with filters for the boxes: both branches
# start with a {D} -> {D} component; the left needs <B> behind it, the right
# <C>. Many records of both kinds, interleaved, so that routing by the first
# component's type alone (a tie) would send some to the wrong branch.
ROUTE = '''
net two connect ([{<D>} -> {<D>}] .. [{<B>} -> {<B>, <side=1>}])
              | ([{<D>} -> {<D>}] .. [{<C>} -> {<C>, <side=2>}]);
'''
inp = [dict(D=i, B=i * 3) if i % 2 == 0 else dict(D=i, C=i * 5) for i in range(300)]
exp = [dict(r, side=1 if 'B' in r else 2) for r in inp]
case('inherit-routing', ROUTE, inp, exp,
     'Branch input types are {<B>,<D>} and {<C>,<D>} (inherited requirements), '
     'so every {<B>,<D>} record goes left (side=1) and every {<C>,<D>} right (side=2).')

case('inherit-routing-det', ROUTE.replace(')\n              | (', ')\n              || ('), inp, exp,
     'As inherit-routing under ||: same routing, input order kept.', ordered=True)

# A requirement that flows back through a component before the parallel.
PRE = '''
net pre connect [{<X>} -> {<D=X>}]
             .. (([{<D>} -> {<D>}] .. [{<B>} -> {<L=B>}])
               | ([{<D>} -> {<D>}] .. [{<C>} -> {<R=C>}]));
'''
inp = [dict(X=i, B=i + 100) if i % 3 else dict(X=i, C=i + 200) for i in range(120)]
exp = [dict(D=r['X'], L=r['B']) if 'B' in r else dict(D=r['X'], R=r['C']) for r in inp]
case('inherit-before-parallel', PRE, inp, exp,
     'pre : {<B>,<X>} | {<C>,<X>}: <B>/<C> flow around the first filter and pick the branch.')

# Inside a star: the counter filter does not name <B>, which the step filter
# needs in every replica; <B> flows around the counter.
STAR = '''
net loop connect ([{<A>} -> {<A=A+1>}]
               .. [{<B>} -> if <B >= 1> then {<B=B-1>} else {<done>}]) * {<done>};
'''
inp = [dict(A=0, B=k) for k in range(40)]
exp = [dict(A=k + 1, done=0) for k in range(40)]
case('inherit-star', STAR, inp, exp,
     'loop : {<A>,<B>}: each replica counts A up and B down; B flows around the counter.')

case('inherit-star-det', STAR.replace(') * {<done>}', ') ** {<done>}'), inp, exp,
     'As inherit-star under **: one output per input, in input order.', ordered=True)

# Inside feedback: fed-back records carry <B> round (inherited by the step
# filter's then-branch output) and pick up <again>, which flows out with <done>.
FB = '''
net fb connect ([{<A>} -> {<A=A+1>}]
             .. [{<B>} -> if <B >= 1> then {<B=B-1>, <again>} else {<done>}]) \\ {<B>, <again>};
'''
inp = [dict(A=10 * k, B=k) for k in range(30)]
exp = [dict(A=10 * k + k + 1, done=0, **({'again': 0} if k >= 1 else {})) for k in range(30)]
case('inherit-feedback', FB, inp, exp,
     'fb : {<A>,<B>}: B flows round the loop; records that went round carry <again> out.')


def write():
    for name, prog, inp, exp, notes, ordered in CASES:
        d = os.path.join(ROOT, name)
        if os.path.isdir(d):
            shutil.rmtree(d)
        os.makedirs(d)
        with open(os.path.join(d, 'prog.snet'), 'w') as f:
            f.write(prog)
        with open(os.path.join(d, 'input.xml'), 'w') as f:
            f.write(input_xml(inp))
        with open(os.path.join(d, 'expected.xml'), 'w') as f:
            f.write(output_xml(exp))
        with open(os.path.join(d, 'notes.txt'), 'w') as f:
            f.write(notes + '\n')
        if ordered:
            open(os.path.join(d, 'ordered'), 'w').close()
    print('%d cases written' % len(CASES))


if __name__ == '__main__':
    write()
