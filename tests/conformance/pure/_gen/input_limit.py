#!/usr/bin/env python3
"""Writes the `input-limit-*` and `err-input-limit-*` conformance cases: runs
under `--input-limit FORMULA` (an `args` file, one argument per line).

The bound (README.md, crates/snet-engine/src/limit.rs): input record number n
(counting from one) is admitted only while n <= FORMULA(output), `output`
being the number of records emitted so far -- except when the whole network
is idle, where admitting is the only way to make progress. So a bound never
changes *what* a program computes, only when input enters: every case's
expected output is the program's ordinary output, and a case whose network
needs several inputs before it can emit anything (synchrocells) must still
finish. Two cases (`input-limit-serial*`) use the bound itself: it admits a
record only after every earlier record has left the network, so even a
non-deterministic network emits in input order (see their notes).

Expected outputs are computed here by plain Python for each case; `check.py`
(which ignores `args`: the bound does not change the result) cross-checks
them with `refsnet.py`, except for the `input-limit-serial*` order, which is
a property of the bound.

Run from anywhere:  python3 tests/conformance/pure/_gen/input_limit.py
It rewrites only the case directories it lists.
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


def cdiv(a, b):
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


def cmod(a, b):
    return a - b * cdiv(a, b)


CASES = []


def case(name, prog, inp, limit, notes, expected=None, error=None, ordered=False):
    assert (expected is None) != (error is None)
    CASES.append(dict(name=name, prog=prog.strip('\n') + '\n', inp=inp, limit=limit, notes=notes,
                      expected=expected, error=error, ordered=ordered))


BOUND = ('Under --input-limit "%s" input record n is admitted only while n <= %s, '
         'or when the whole network is idle; the bound changes when input enters, not what the program computes.')

# ----------------------------------------------------------------------------
# input-limit-pipeline

PIPE = '''
// A serial chain of filters run under --input-limit "1 + output".  Some
// inputs are consumed (no output), some emit two records.
net limpipe connect [{<x>} -> {<x=x+1>}]
                 .. [{<x>} -> if <x % 7 == 0> then else {<x=x*2>}]
                 .. [{<x>} -> if <x % 5 == 0> then {<x=x-3>}; {<x>, <d=x/5>} else {<x=x-3>}]
                 .. [{<x>} -> {<x=(x*x) % 1000>}]
                 .. [{<x>} -> {<x=x+1>}];
'''
rng = random.Random(21)
inp, exp = [], []
for i in range(600):
    x = rng.randint(-100, 100)
    inp.append(dict(id=i, x=x))
    x += 1
    if cmod(x, 7) == 0:
        continue
    x *= 2
    outs = [dict(x=x - 3)] + ([dict(x=x, d=cdiv(x, 5))] if cmod(x, 5) == 0 else [])
    for o in outs:
        o['x'] = cmod(o['x'] * o['x'], 1000) + 1
        o['id'] = i
        exp.append(o)
case('input-limit-pipeline', PIPE, inp, '1 + output', ordered=True, expected=exp, notes=(BOUND % ('1 + output', '1 + output') + '''
A pure serial chain of filters keeps input order. Stage by stage: x+1; dropped if divisible by 7, else doubled; if divisible by 5 two outputs {x-3} then {x, d=x/5}, else {x-3}; x*x % 1000; +1. <id> is inherited.
Inputs that are dropped emit nothing, so the bound (1 + outputs so far) falls behind the inputs admitted: the run relies on admission when the network is idle.'''))

# ----------------------------------------------------------------------------
# input-limit-sync: a split of synchrocells, pairs far apart in the input.

SSYNC = '''
// One synchrocell per key: {<a>,<k>} and {<b>,<k>} meet; once fired the cell
// passes records on unchanged.  All a's come first, the b's in reverse, so
// nothing can be emitted before 51 inputs; run under "0*output + 1".
net limsync connect [| {<a>, <k>}, {<b>, <k>} |] ! <k>;
'''
K = 50
inp = [dict(k=k, a=100 + k) for k in range(K)] + [dict(k=k, b=1000 + 3 * k) for k in reversed(range(K))] \
    + [dict(k=k, a=-k) for k in range(0, K, 5)]
exp = [dict(k=k, a=100 + k, b=1000 + 3 * k) for k in range(K)] + [dict(k=k, a=-k) for k in range(0, K, 5)]
case('input-limit-sync', SSYNC, inp, '0*output + 1', expected=exp, notes=(BOUND % ('0*output + 1', '1') + '''
So only the first record enters under the bound; every later one enters when the network is idle (its earlier records have all been stored in cells or have left).
Split on <k>: the cell of key k stores {<a>,<k>} and fires when {<b>,<k>} arrives, emitting {<a>,<b>,<k>}; a later {<a>,<k>} for a fired key passes through unchanged (it follows the b of its key on the same FIFO path).
Inputs: a for keys 0..49, then b for keys 49..0, then 10 more a records for keys 0,5,..,45. Expected: the 50 merged records plus the 10 pass-throughs (multiset).'''))

# ----------------------------------------------------------------------------
# input-limit-sync-repeated

RSYNC = '''
// Repeated synchronisation under --input-limit "1 + output": 60 {<a>} records,
// then 60 {<b>} records; the i-th a pairs with the i-th b.
net limrs connect [| {<a>}, {<b>} |] * {<a>, <b>};
'''
inp = [dict(a=7 * i) for i in range(60)] + [dict(b=-i) for i in range(60)]
exp = [dict(a=7 * i, b=-i) for i in range(60)]
case('input-limit-sync-repeated', RSYNC, inp, '1 + output', expected=exp, notes=(BOUND % ('1 + output', '1 + output') + '''
The first output needs 61 inputs (60 a's are stored one per star replica before the first b arrives), so the run relies on admission when the network is idle.
Each replica is a fresh one-shot cell; records reach the replicas in stream order, so the i-th {<a>} and the i-th {<b>} meet in replica i: output {<a=7i>,<b=-i>} for i = 0..59 (multiset).'''))

# ----------------------------------------------------------------------------
# input-limit-det

DET = '''
// Deterministic parallel composition of a feedback loop and a deterministic
// star, under --input-limit "8 + 2*output".
net limdet
{
  net loop connect [{<n>, <c>} -> if <n <= 0> then {<done=c>} else {<n=n-1>, <c=c+2>}] \\ {<n>, <c>};
  net stars connect [{<k>, <t>} -> {<k=k-1>, <t=t+k>}] ** {<k>} if <k <= 0>;
}
connect loop || stars;
'''
rng = random.Random(23)
inp, exp = [], []
for i in range(400):
    hi = max(1, 200 - i)
    if i % 2:
        n = rng.randint(-2, hi)
        inp.append(dict(id=i, n=n, c=0))
        exp.append(dict(id=i, done=2 * max(n, 0)))
    else:
        k, t = rng.randint(-2, hi // 4), rng.randint(0, 9)
        inp.append(dict(id=i, k=k, t=t))
        exp.append(dict(id=i, k=min(k, 0), t=t + (k * (k + 1) // 2 if k > 0 else 0)))
case('input-limit-det', DET, inp, '8 + 2*output', ordered=True, expected=exp, notes=(BOUND % ('8 + 2*output', '8 + 2*output') + '''
loop: {<n>,<c>} goes round max(n,0)+1 times, adding 2 to c per round with n > 0, and leaves as {<done=2*max(n,0)>} (c starts at 0).
stars: {<k>,<t>} leaves the ** unchanged if k <= 0, else after k replicas as k = 0, t = t + k + (k-1) + ... + 1.
|| keeps input order: one output per input, in input order. Long loops/stars come early.'''))

# ----------------------------------------------------------------------------
# input-limit-star: state held by a star over one-shot cells.

STATE = '''
// FRONT Fig. 10 (left) under --input-limit "0*output + 1": the single state
// record {<s>,<n>} moves one star replica down per value, where the
// replica's one-shot cell pairs it with the value stored there.  Running sum.
net limstar
{
  net combine connect [| {<s>, <n>}, {<v>} |];
  net compute connect [{<s>, <n>, <v>} -> if <n <= 1> then {<out=s+v>}
                                          else {<out=s+v>}; {<s=s+v>, <n=n-1>}];
}
connect (combine .. ([] | compute)) * {<out>};
'''
rng = random.Random(24)
vals = [rng.randint(-20, 50) for _ in range(80)]
inp = [dict(v=v) for v in vals[:30]] + [dict(s=0, n=len(vals))] + [dict(v=v) for v in vals[30:]]
exp, s = [], 0
for v in vals:
    s += v
    exp.append(dict(out=s))
case('input-limit-star', STATE, inp, '0*output + 1', expected=exp, notes=(BOUND % ('0*output + 1', '1') + '''
So every record after the first enters only when the network is idle; here that is most of the time with records parked in cells of star replicas.
Value j (in input order) ends up stored in replica j's cell (earlier replicas' cells are full and pass it on through []); the state record {<s=0>,<n=80>} (the 31st input) fires replica 1's cell, compute emits {<out=s+v>} and the next state {<s=s+v>,<n=n-1>}, which goes on to replica 2, and so on; n = 1 emits no further state.
Expected: the 80 prefix sums of the values (multiset).'''))

# ----------------------------------------------------------------------------
# input-limit-feedback: the feedback sieve.

SIEVE = '''
// Sieve of Eratosthenes as one feedback loop over split repeated
// synchronisation (the sieve-feedback case), under --input-limit "1 + output".
// State of index k: {<p>,<k>} (p = 0 while the k-th prime is unknown); a
// number that survived the first k-1 primes: {<x>,<k>}.
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
NS = 300
primes = [n for n in range(2, NS + 1) if all(n % d for d in range(2, int(n ** 0.5) + 1))]
case('input-limit-feedback', SIEVE, [dict(x=x) for x in range(2, NS + 1)], '1 + output',
     expected=[dict(prime=p) for p in primes], notes=(BOUND % ('1 + output', '1 + output') + '''
Primes up to %d through a feedback loop (program and argument as in sieve-feedback). Most inputs are composites that emit nothing, and state records stay parked in cells: the bound lags far behind, so most inputs enter when the network is idle.
Expected: the %d primes up to %d (multiset); the final states left in cells are discarded at the end (sync-unfired).''' % (NS, len(primes), NS)))

# ----------------------------------------------------------------------------
# input-limit-serial: the bound serialises a non-deterministic network.

SERIAL = '''
// A non-deterministic parallel composition of a counting feedback loop (up to
// ~200 rounds, a trace every 8th round) and a plain filter, run under
// --input-limit "0*output + 1": each record is admitted only when the network
// is idle, i.e. after every earlier record has left, so the output is in
// input order although | imposes no order.
net limserial
{
  net count connect [{<n>, <c>} -> if <n < 0> then
                                   else if <n == 0> then {<done=c>}
                                   else if <n % 8 == 0> then {<n=n-1>, <c=c+1>}; {<tr=c>}
                                   else {<n=n-1>, <c=c+1>}]
                    \\ {<n>, <c>};
  net plain connect [{<x>} -> {<x=x*2>}; {<y=x>}];
}
connect count | plain;
'''
rng = random.Random(25)
inp, exp = [], []
for i in range(200):
    if i % 3 == 2:
        x = rng.randint(-50, 50)
        inp.append(dict(id=i, x=x))
        exp += [dict(id=i, x=2 * x), dict(id=i, y=x)]
        continue
    n = rng.randint(-2, 0) if rng.random() < 0.15 else rng.randint(1, max(2, 200 - i))
    c = rng.randint(0, 9)
    inp.append(dict(id=i, n=n, c=c))
    if n < 0:
        continue
    while n > 0:
        if n % 8 == 0:
            exp.append(dict(id=i, tr=c))
        n, c = n - 1, c + 1
    exp.append(dict(id=i, done=c))
case('input-limit-serial', SERIAL, inp, '0*output + 1', ordered=True, expected=exp, notes=(BOUND % ('0*output + 1', '1') + '''
So only the first record enters under the bound, and every later one only when the whole network is idle: every record caused by earlier inputs has left (this network stores nothing). Inputs are therefore processed one at a time, and the output is in input order although | and the feedback loop impose none (without the bound, runs at 2 and 8 workers do reorder).
count: (n >= 0, c) yields tr = c + (n - m) for each m = n, n-1, ..., 1 with m % 8 == 0, then done = c + n (one filter, one FIFO path: fixed order); n < 0 emits nothing. plain: {<x=2x>} then {<y=x>}. <id> inherited.'''))

SERIAL_FB = '''
// Collatz step counts by a feedback loop over a non-deterministic parallel
// choice, run under --input-limit "1 + output".  Every input emits exactly one
// record, so input n+1 is admitted only after n outputs, i.e. after every
// earlier input has left: the output is in input order.
net limserialfb
{
  net classify connect [{<a>, <s>} -> if <a <= 1> then {<res=s>}
                                      else if <a % 2 == 0> then {<e=a>, <s>}
                                      else {<o=a>, <s>}];
  net even connect [{<e>, <s>} -> {<a=e/2>, <s=s+1>}];
  net odd connect [{<o>, <s>} -> {<a=3*o+1>, <s=s+1>}];
  net fin connect [{<res>} -> {<res>}];
}
connect (classify .. (even | odd | fin)) \\ {<a>, <s>};
'''


def collatz_steps(a):
    s = 0
    while a > 1:
        a = a // 2 if a % 2 == 0 else 3 * a + 1
        s += 1
    return s


rng = random.Random(26)
inp, exp = [], []
for i in range(250):
    a = rng.randint(1, 300) if i < 120 else rng.randint(1, 8)
    inp.append(dict(id=i, a=a, s=0))
    exp.append(dict(id=i, res=collatz_steps(a)))
case('input-limit-serial-fb', SERIAL_FB, inp, '1 + output', ordered=True, expected=exp, notes=(BOUND % ('1 + output', '1 + output') + '''
Every input emits exactly one record ({<res>} = number of Collatz steps to reach 1, with <id>), so input n+1 may enter only once n records have been emitted, i.e. once inputs 1..n have all left (the idle exception cannot fire earlier: a record in the loop keeps the network busy). Inputs are processed one at a time and the output is in input order, although the feedback loop and | impose none (without the bound, runs at 2 and 8 workers do reorder: long chains come first).'''))

# ----------------------------------------------------------------------------
# invalid formulas

IDF = '''
// Any program: the run must refuse the --input-limit formula before it starts.
net ident connect [];
'''
case('err-input-limit-name', IDF, [dict(a=1)], '8 + input',
     error='--input-limit: unknown name `input` in input limit',
     notes='An --input-limit formula may only use `output`, integer literals, + - * and parentheses: "8 + input" is refused with a message naming the unknown name (exit status 2, no run).')
case('err-input-limit-syntax', IDF, [dict(a=1)], '2*output +',
     error='--input-limit: input limit ends too early',
     notes='A malformed --input-limit formula ("2*output +", operand missing) is refused with a message (exit status 2, no run).')


def write_all():
    for c in CASES:
        d = os.path.join(ROOT, c['name'])
        if os.path.isdir(d):
            shutil.rmtree(d)
        os.makedirs(d)
        with open(os.path.join(d, 'prog.snet'), 'w') as f:
            f.write(c['prog'])
        with open(os.path.join(d, 'input.xml'), 'w') as f:
            f.write(input_xml(c['inp']))
        with open(os.path.join(d, 'args'), 'w') as f:
            f.write('--input-limit\n%s\n' % c['limit'])
        if c['error'] is not None:
            with open(os.path.join(d, 'expected-error.txt'), 'w') as f:
                f.write(c['error'] + '\n')
        else:
            with open(os.path.join(d, 'expected.xml'), 'w') as f:
                f.write(output_xml(c['expected']))
        with open(os.path.join(d, 'notes.txt'), 'w') as f:
            f.write(c['notes'] + '\n')
        if c['ordered']:
            open(os.path.join(d, 'ordered'), 'w').close()
    print('%d cases written' % len(CASES))


if __name__ == '__main__':
    write_all()
