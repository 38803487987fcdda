#!/usr/bin/env python3
"""Cross-checks every placement case against the pure suite's reference
interpreter (tests/conformance/pure/_gen/refsnet.py) under several random
schedules, independently of the engine.

refsnet ignores `@ n` (placement changes no output) and models `!@` / `!!@`
as `!` / `!!`; here its node check is widened to the node counts a case
runs with (its `nodes` file), so a case is checked once per node count:
an expected output must hold for every count, an expected error must be
raised for every count.  The static `@ n` check (before any record) is the
engine's, not refsnet's: those cases are skipped here.

  python3 check.py [--seeds N] [case ...]
"""
import os
import sys
from collections import Counter

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, '..', 'pure', '_gen'))
import refsnet  # noqa: E402

STATIC_ERRORS = {'err-static-node9', 'err-static-before-input'}
NODES = [1]


def split_process(self, rec):
    key = ('t', self.tag)
    if key not in rec:
        raise refsnet.SNetError("split: record lacks tag <%s>" % self.tag)
    v = rec[key]
    if self.place and not 0 <= v < NODES[0]:
        raise refsnet.SNetError("dynamic placement to node %d (tag <%s>), but the run has %d node(s)"
                                % (v, self.tag, NODES[0]))
    if v not in self.reps:
        e = refsnet.instantiate(self.operand, self.env, self.sched,
                                refsnet.Stream(self.sched, self.coll))
        self.reps[v] = refsnet.Stream(self.sched, e)
    self.reps[v].put(rec)


refsnet.SplitInst.process = split_process


def main():
    args = sys.argv[1:]
    seeds = 4
    if '--seeds' in args:
        i = args.index('--seeds'); seeds = int(args[i + 1]); del args[i:i + 2]
    names = args or sorted(d for d in os.listdir(ROOT)
                           if os.path.isfile(os.path.join(ROOT, d, 'prog.snet')))
    bad = 0
    for name in names:
        d = os.path.join(ROOT, name)
        if name in STATIC_ERRORS:
            print('SKIP %s (static placement check)' % name)
            continue
        src = open(os.path.join(d, 'prog.snet')).read()
        ordered = os.path.exists(os.path.join(d, 'ordered'))
        nodes = [1, 2, 4]
        if os.path.exists(os.path.join(d, 'nodes')):
            nodes = [int(n) for n in open(os.path.join(d, 'nodes')).read().split()]
        recs = refsnet.parse_records(open(os.path.join(d, 'input.xml')).read())
        want_err = None
        if os.path.exists(os.path.join(d, 'expected-error.txt')):
            want_err = open(os.path.join(d, 'expected-error.txt')).read().strip().lower()
        else:
            exp = [refsnet.canon(r) for r in
                   refsnet.parse_records(open(os.path.join(d, 'expected.xml')).read())]
        ok, info = True, ''
        for n in nodes:
            NODES[0] = n
            for p in ['uniform', 'priority', 'lifo']:
                refsnet.Scheduler.policy = p
                for s in range(seeds):
                    try:
                        out = [refsnet.canon(r) for r in refsnet.run(src, recs, s)]
                    except refsnet.SNetError as e:
                        if want_err is None or want_err not in str(e).lower():
                            ok, info = False, 'nodes %d %s seed %d: error: %s' % (n, p, s, e)
                        continue
                    if want_err is not None:
                        ok, info = False, 'nodes %d %s seed %d: no error' % (n, p, s)
                    elif (out != exp) if ordered else (Counter(out) != Counter(exp)):
                        extra = Counter(out) - Counter(exp)
                        missing = Counter(exp) - Counter(out)
                        ok, info = False, 'nodes %d %s seed %d: %d out vs %d exp; extra %s; missing %s' % (
                            n, p, s, len(out), len(exp), list(extra)[:2], list(missing)[:2])
                    if not ok:
                        break
                if not ok:
                    break
            if not ok:
                break
        print('%s %s %s' % ('ok  ' if ok else 'FAIL', name, info))
        bad += not ok
    print('%d failed' % bad)
    sys.exit(1 if bad else 0)


if __name__ == '__main__':
    main()
