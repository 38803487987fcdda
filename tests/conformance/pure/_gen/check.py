#!/usr/bin/env python3
"""Cross-checks every case in tests/conformance/pure/ against the reference
interpreter refsnet.py under several random schedules.

  python3 check.py [--seeds N] [case ...]

For expected.xml cases: output must equal the expected multiset (or the
exact sequence when the case has an `ordered` file) for every seed.
For expected-error.txt cases whose error arises inside the network the run
must fail; malformed-input cases are skipped (refsnet's XML reader is lax),
and so are error cases with an `args` file (errors in the command line).
An `--input-limit` formula in `args` is applied by refsnet's input
admission (`refsnet.run(..., limit=...)`).
"""
import os
import sys
from collections import Counter

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import refsnet  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
XML_ERRORS = {'err-malformed-unclosed', 'err-malformed-nonint', 'err-malformed-tag-range',
              'err-unknown-record-type',
              'err-field-unknown-type', 'err-field-count', 'err-field-number'}


def input_limit(d):
    """The case's --input-limit bound as a function of the output count, or None."""
    p = os.path.join(d, 'args')
    args = open(p).read().splitlines() if os.path.exists(p) else []
    if '--input-limit' not in args:
        return None
    formula = args[args.index('--input-limit') + 1]  # only output, integers, + - * ( )
    return lambda output: eval(formula, {'__builtins__': {}}, {'output': output})


def main():
    args = sys.argv[1:]
    seeds = 6
    policies = ['uniform', 'priority', 'lifo']
    if '--policy' in args:
        i = args.index('--policy'); policies = [args[i + 1]]; del args[i:i + 2]
    if '--seeds' in args:
        i = args.index('--seeds'); seeds = int(args[i + 1]); del args[i:i + 2]
    names = args or sorted(d for d in os.listdir(ROOT)
                           if os.path.isdir(os.path.join(ROOT, d)) and not d.startswith('_'))
    bad = 0
    for name in names:
        d = os.path.join(ROOT, name)
        src = open(os.path.join(d, 'prog.snet')).read()
        ordered = os.path.exists(os.path.join(d, 'ordered'))
        nseeds = 1 if name == 'fib-25' else seeds
        runs = [(p, s) for p in policies for s in range(nseeds)]
        if name == 'fib-25':
            runs = [('uniform', 0)]
        if os.path.exists(os.path.join(d, 'expected-error.txt')):
            if name in XML_ERRORS:
                print('SKIP %s (input-format error)' % name)
                continue
            if os.path.exists(os.path.join(d, 'args')):
                print('SKIP %s (command-line error)' % name)
                continue
            want = open(os.path.join(d, 'expected-error.txt')).read().strip()
            recs = refsnet.parse_records(open(os.path.join(d, 'input.xml')).read())
            ok = True
            for p, s in runs:
                refsnet.Scheduler.policy = p
                try:
                    refsnet.run(src, recs, s)
                    ok = False
                    msg = 'no error'
                except refsnet.SNetError as e:
                    msg = str(e)
                    if want not in msg.lower():
                        ok = False
            print('%s %s (%s)' % ('ok  ' if ok else 'FAIL', name, msg))
            bad += not ok
            continue
        recs = refsnet.parse_records(open(os.path.join(d, 'input.xml')).read())
        limit = input_limit(d)
        exp = [refsnet.canon(r) for r in refsnet.parse_records(open(os.path.join(d, 'expected.xml')).read())]
        ok = True
        info = ''
        for p, s in runs:
            refsnet.Scheduler.policy = p
            try:
                out = [refsnet.canon(r) for r in refsnet.run(src, recs, s, limit=limit)]
            except refsnet.SNetError as e:
                ok = False; info = 'error: %s' % e
                break
            if ordered:
                if out != exp:
                    ok = False
            else:
                if Counter(out) != Counter(exp):
                    ok = False
            if not ok:
                extra = Counter(out) - Counter(exp)
                missing = Counter(exp) - Counter(out)
                info = '%s seed %d: %d out vs %d exp; extra %s; missing %s' % (
                    p, s, len(out), len(exp), list(extra)[:3], list(missing)[:3])
                break
        print('%s %s %s' % ('ok  ' if ok else 'FAIL', name, info))
        bad += not ok
    print('%d failed' % bad)
    sys.exit(1 if bad else 0)


if __name__ == '__main__':
    main()
