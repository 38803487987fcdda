#!/usr/bin/env python3
"""Writes the `feedback-det-*` conformance cases: feedback loops inside the
deterministic combinators `||`, `**`, `!!` (and deterministic combinators
inside a feedback loop inside a deterministic combinator).

Why these matter: a deterministic combinator must emit every record caused
by input i before any record caused by input j > i (language.md section 3),
"causality through all nested components". Inside a feedback loop the
records of one input circulate a data-dependent number of times, so later
inputs with short loops finish long before earlier inputs with long ones;
only the ordering protocol keeps the output in input order.

Expected outputs are computed here by plain Python written for each case
(what the loop computes, iteration by iteration), independently of any
S-Net interpreter; `check.py` cross-checks them with `refsnet.py`.
Within one input, every case's outputs come from one causal chain whose
records share a FIFO path (see each case's notes), so their order is fixed
and the cases under a deterministic combinator are compared in order.

Run from anywhere:  python3 tests/conformance/pure/_gen/feedback_det.py
It rewrites only the `feedback-det-*` case directories it lists.
"""
import os
import random
import shutil

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
PROLOG = '<?xml version="1.0" ?>'


def rec(tags):
    return ''.join('<tag label="%s">%d</tag>' % (k, v) for k, v in sorted(tags.items()))


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


def case(name, prog, inp, expected, notes, ordered):
    CASES.append((name, prog.strip('\n') + '\n', inp, expected, notes, ordered))


# ----------------------------------------------------------------------------
# feedback-det-par: a counting feedback loop as one branch of ||.

PAR = '''
// Deterministic parallel composition; one branch is a counting feedback loop
// whose records go round n times (n varies per record, large ones early),
// emitting a trace record {<tr>} every 16th round and {<done>} at the end;
// n < 0 emits nothing at all.  The other branch is a plain filter with two
// outputs.
net fbpar
{
  net count connect [{<n>, <c>} -> if <n < 0> then
                                   else if <n == 0> then {<done=c>}
                                   else if <n % 16 == 0> then {<n=n-1>, <c=c+1>}; {<tr=c>}
                                   else {<n=n-1>, <c=c+1>}]
                    \\ {<n>, <c>};
  net plain connect [{<x>} -> {<x=x*2>}; {<y=x>}];
}
connect count || plain;
'''
rng = random.Random(11)
inp, exp = [], []
for i in range(300):
    if i % 4 == 3:
        x = rng.randint(-50, 50)
        inp.append(dict(id=i, x=x))
        exp += [dict(id=i, x=2 * x), dict(id=i, y=x)]
        continue
    u = rng.random()
    if u < 0.12:
        n = rng.randint(-3, -1)
    elif u < 0.25:
        n = 0
    else:
        n = rng.randint(1, max(2, 400 - i))
    c = rng.randint(0, 9)
    inp.append(dict(id=i, n=n, c=c))
    if n < 0:
        continue
    while n > 0:  # one round of the loop
        if n % 16 == 0:
            exp.append(dict(id=i, tr=c))
        n, c = n - 1, c + 1
    exp.append(dict(id=i, done=c))
case('feedback-det-par', PAR, inp, exp, ordered=True, notes='''\
|| with a feedback loop in one branch (300 inputs, n up to ~400 early and small later, so outputs of later inputs overtake earlier ones without the ordering protocol: with | instead of || they do, at 2 and 8 workers).
count: the loop body is one filter; an input {<n>,<c>} with n > 0 goes round n times: each round emits {<n=n-1>,<c=c+1>} (matches the feedback pattern {<n>,<c>}, goes back), and, when n % 16 == 0, then {<tr=c>} (leaves); n == 0 emits {<done=c>} (leaves); n < 0 emits nothing (the input causes no output, the collector must still move on).
So input (n >= 0, c) yields tr = c + (n - m) for every m in n, n-1, ..., 1 with m % 16 == 0 (in that order), then done = c + n, all with the inherited <id>; the filter emits them in that order and they leave along the single FIFO path body -> router -> exit, so their order is fixed.
plain: {<x>} -> {<x=2x>} then {<y=x>} (written order).
|| emits all outputs of input i before those of input j > i: expected = concatenation per input, in input order.''')

# ----------------------------------------------------------------------------
# feedback-det-star: a det star whose body contains a feedback loop.

STAR = '''
// Deterministic serial replication whose body contains a feedback loop.
// Replica r adds k (the current value of <k>) to <acc> one unit per round of
// the inner loop, then decrements k; the star exits when k <= 0, so a record
// with k = K goes through K replicas and K(K+1)/2 + K loop rounds.
net fbstar
{
  net inner connect [{<m>, <acc>} -> if <m > 0> then {<m=m-1>, <acc=acc+1>} else {<acc>}] \\ {<m>};
  net body connect [{<k>, <acc>} -> {<k>, <acc>, <m=k>}] .. inner .. [{<k>} -> {<k=k-1>}];
}
connect body ** {<k>} if <k <= 0>;
'''
rng = random.Random(12)
inp, exp = [], []
for i in range(400):
    u = rng.random()
    if u < 0.15:
        k = rng.randint(-2, 0)
    else:
        k = rng.randint(1, max(1, 25 - i // 20))
    acc = rng.randint(0, 100)
    inp.append(dict(id=i, k=k, acc=acc))
    if k <= 0:
        exp.append(dict(id=i, k=k, acc=acc))
    else:
        exp.append(dict(id=i, k=0, acc=acc + k * (k + 1) // 2))
case('feedback-det-star', STAR, inp, exp, ordered=True, notes='''\
** whose body contains a feedback loop (400 inputs, k up to 25 early and small later).
The exit pattern {<k>} if <k <= 0> is tested before every replica, the first included: a record with k <= 0 leaves unchanged at once.
Otherwise replica r sets m = k, the inner loop goes round m times adding 1 to acc each time and emits {<acc>} when m reaches 0 (<k> and <id> flow around the inner loop, whose pattern does not name them), and the last filter decrements k.
So (k = K > 0, acc = A) leaves after K replicas as k = 0, acc = A + K + (K-1) + ... + 1 = A + K(K+1)/2, with <id>.
One output per input; ** keeps input order.''')

# ----------------------------------------------------------------------------
# feedback-det-split: a det split whose replicas each contain a feedback loop.

SPLIT = '''
// Deterministic parallel replication over <g> (values 1..7, interleaved);
// each replica has its own feedback loop that counts v down in steps of g,
// emitting a trace {<g>, <step>} per round and the sum {<g>, <r>} at the end.
net fbsplit
{
  net loop connect [{<g>, <v>, <s>} -> if <v <= 0> then {<g>, <r=s>}
                                       else {<g>, <v=v-g>, <s=s+v>}; {<g>, <step=v>}] \\ {<v>, <s>};
}
connect ([{<g>, <v>} -> {<g>, <v>, <s=0>}] .. loop) !! <g>;
'''
rng = random.Random(13)
inp, exp = [], []
for i in range(500):
    g = rng.randint(1, 7)
    v = rng.randint(-2, 60) if rng.random() < 0.9 else rng.randint(-2, 0)
    inp.append(dict(id=i, g=g, v=v))
    s = 0
    while v > 0:
        exp.append(dict(id=i, g=g, step=v))
        s += v
        v -= g
    exp.append(dict(id=i, g=g, r=s))
case('feedback-det-split', SPLIT, inp, exp, ordered=True, notes='''\
!! <g> whose replicas each contain a feedback loop (500 inputs, g in 1..7 interleaved at random, v in -2..60).
An input (g, v) enters the replica for g with s = 0; while v > 0 a round emits {<g>,<v=v-g>,<s=s+v>} (matches {<v>,<s>}, goes back) then {<g>,<step=v>} (leaves); when v <= 0 it emits {<g>,<r=s>}.
So it yields step = v, v-g, v-2g, ... (the positive ones) then r = their sum, with <id> inherited; one filter emits them in that order along one FIFO path.
Replicas for different g run independently and loops of different lengths overlap; !! emits all outputs of input i before those of any later input.''')

# ----------------------------------------------------------------------------
# feedback-det-body-par: || inside the loop body of a (top-level) feedback.

BODYPAR = '''
// A feedback loop whose body holds a deterministic parallel composition:
// Collatz steps; classify renames a to e (even) or o (odd) and || routes by
// label.  Each odd step also emits its new value as {<peak>}.
net fbbodypar
{
  net classify connect [{<a>, <s>} -> if <a <= 1> then {<res=s>}
                                      else if <a % 2 == 0> then {<e=a>, <s>}
                                      else {<o=a>, <s>}];
  net even connect [{<e>, <s>} -> {<a=e/2>, <s=s+1>}];
  net odd connect [{<o>, <s>} -> {<a=3*o+1>, <s=s+1>}; {<peak=3*o+1>}];
  net fin connect [{<res>} -> {<res>}];
}
connect (classify .. (even || odd || fin)) \\ {<a>, <s>};
'''


def collatz(a):
    """(steps to reach 1, list of 3o+1 values of the odd steps, list of halvings)"""
    steps, peaks, halves = 0, [], []
    while a > 1:
        if a % 2 == 0:
            a //= 2
            halves.append(a)
        else:
            a = 3 * a + 1
            peaks.append(a)
        steps += 1
    return steps, peaks, halves


rng = random.Random(14)
inp, exp = [], []
for i in range(150):
    a = rng.randint(1, 100)
    inp.append(dict(id=i, a=a, s=0))
    steps, peaks, _ = collatz(a)
    exp += [dict(id=i, peak=p) for p in peaks]
    exp.append(dict(id=i, res=steps))
case('feedback-det-body-par', BODYPAR, inp, exp, ordered=False, notes='''\
A feedback loop (top level, so the output is compared as a multiset) whose body contains || : records of many inputs, and records fed back, enter the || interleaved.
Each input {<a>,<s=0>} (a in 1..100) runs the Collatz iteration: even a -> a/2, odd a > 1 -> 3a+1 (also emitting {<peak=3a+1>}), s counts steps; when a <= 1 the loop emits {<res=s>}.
Expected per input: one {<peak>} per odd step and {<res>} = number of steps to reach 1, each with <id> (inherited; <a>/<s> are named by the patterns and dropped from peak/res).''')

# ----------------------------------------------------------------------------
# feedback-det-nested: || and ** inside a feedback loop inside ||.

NESTED = '''
// Deterministic combinators inside a feedback loop inside a deterministic
// combinator: Collatz steps as in feedback-det-body-par, but the odd step
// computes 3a+1 with a deterministic star (acc = 1 + a + a + a) and the even
// step emits a trace {<h>} of each halving.  The loop sits in one branch of an
// outer ||, the other branch is a plain filter.
net fbnested
{
  net classify connect [{<a>, <s>} -> if <a <= 1> then {<res=s>}
                                      else if <a % 2 == 0> then {<e=a>, <s>}
                                      else {<o=a>, <s>, <t=3>, <acc=1>}];
  net halve connect [{<e>, <s>} -> {<a=e/2>, <s=s+1>}; {<h=e/2>}];
  net triple connect ([{<o>, <t>, <acc>} -> {<o>, <t=t-1>, <acc=acc+o>}] ** {<t>} if <t <= 0>)
                  .. [{<o>, <t>, <acc>, <s>} -> {<a=acc>, <s=s+1>}];
  net fin connect [{<res>} -> {<res>}];
  net collatz connect (classify .. (halve || triple || fin)) \\ {<a>, <s>};
  net other connect [{<x>} -> {<y=x+1>}];
}
connect collatz || other;
'''
rng = random.Random(15)
inp, exp = [], []
for i in range(300):
    if i % 5 == 4:
        x = rng.randint(-100, 100)
        inp.append(dict(id=i, x=x))
        exp.append(dict(id=i, y=x + 1))
        continue
    # long chains early, short ones later
    a = rng.randint(1, 120) if i < 150 else rng.randint(1, 12)
    inp.append(dict(id=i, a=a, s=0))
    steps, _, halves = collatz(a)
    exp += [dict(id=i, h=h) for h in halves]
    exp.append(dict(id=i, res=steps))
case('feedback-det-nested', NESTED, inp, exp, ordered=True, notes='''\
|| (outer) > feedback > (|| and ** inside the loop body): deterministic combinators nested in a feedback loop nested in a deterministic combinator (300 inputs; long Collatz chains among the first 150, short ones later; every 5th input takes the plain branch).
collatz: as feedback-det-body-par, the loop runs the Collatz iteration on {<a>,<s=0>}. The even step emits {<a=e/2>,<s=s+1>} (goes back) then {<h=e/2>} (leaves); the odd step runs a ** three times (t = 3, 2, 1; exit when t <= 0) adding o to acc = 1, so a = 3o+1. When a <= 1 the loop emits {<res=s>}.
Per input: the halving traces h in the order the halvings happen, then res = number of steps, each with <id>. Order within an input is fixed: one record of the input circulates at a time, each h is emitted before the next step starts, the inner || emits its outputs in the order records entered it, and everything leaves the loop along one FIFO path.
other: {<x>} -> {<y=x+1>}. The outer || keeps input order: expected = concatenation per input.''')

# ----------------------------------------------------------------------------
# feedback-det-double: a feedback inside a feedback inside !!.

DOUBLE = '''
// A feedback loop inside a feedback loop inside a deterministic split:
// multiplication by repeated addition.  The outer loop (row) runs a times,
// emitting the partial product {<part>} each time; the inner loop (addb)
// adds b to p one unit per round.  Replicas per <g> value.
net fbdouble
{
  net addb connect [{<j>, <p>} -> if <j > 0> then {<j=j-1>, <p=p+1>} else {<p>}] \\ {<j>};
  net row connect [{<i>, <b>, <p>} -> if <i > 0> then {<i=i-1>, <b>, <p>, <j=b>}; {<part=p>}
                                      else {<prod=p>}];
  net mul connect (row .. (addb | [])) \\ {<i>, <b>, <p>};
}
connect ([{<a>, <b>} -> {<i=a>, <b>, <p=0>}] .. mul) !! <g>;
'''
rng = random.Random(16)
inp, exp = [], []
for i in range(300):
    g = rng.randint(0, 5)
    hi = 12 if i < 100 else 4
    a, b = rng.randint(0, hi), rng.randint(0, hi)
    inp.append(dict(id=i, g=g, a=a, b=b))
    exp += [dict(id=i, g=g, part=k * b) for k in range(a)]
    exp.append(dict(id=i, g=g, prod=a * b))
case('feedback-det-double', DOUBLE, inp, exp, ordered=True, notes='''\
!! <g> > feedback (mul) > feedback (addb): nested feedback loops inside a deterministic split (300 inputs, g in 0..5; a, b up to 12 for the first 100 inputs, up to 4 later).
An input (a, b) becomes {<i=a>,<b>,<p=0>}. While i > 0, row emits {<i=i-1>,<b>,<p>,<j=b>} and {<part=p>}; the first goes to addb (best match in addb | []), which goes round b times adding 1 to p and emits {<p>} (<i>,<b> flow around it), and that record matches {<i>,<b>,<p>} and goes back to row. When i = 0 row emits {<prod=p>}.
Per input: part = 0, b, 2b, ..., (a-1)b, then prod = a*b, each with <g> and <id>. part and prod records all take the [] branch from row to the exit, one FIFO path, so their order is fixed.
!! emits all outputs of input i before those of any later input, across replicas.''')


def write_all():
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
    write_all()
