#!/usr/bin/env python3
"""Runs the placement cases with their placements exactly as written.

The conformance runner (crates/snet-cli/tests/conformance.rs) runs every
distributed trial with `--scatter SEED`, which wraps random components in
extra `@ k`; an extra placement on a component inside an explicit one
overrides it, so those trials never run a program's own placement
unchanged.  This script does: every case at each node count of its
`nodes` file (default 1 2 4) with 1 and 2 workers, on the loopback
transport, no scatter, output compared with expected.xml (multiset, or
sequence with `ordered`) or the error with expected-error.txt.

It also runs *location probes*: a case's program with a division by zero
injected into one component, so the run fails on the node where that
component runs; the engine names the node in the error (`node K: ...`,
no prefix on node 0), which shows where the component actually ran
(e.g. that in `((x @ 2) .. y) @ 1` x runs on 2 and y on 1).

  python3 run.py [--snet PATH] [--repeat N] [--workers 1,2] [--extra 'ARGS']
                [case-substring ...]

--extra adds arguments to every case run (not the probes), e.g.
`--extra '--inline-fields 0'` or `--extra '--scatter 7'`.

PATH defaults to $SNET or target/release/snet of this repository.
"""
import os
import re
import subprocess
import sys
from collections import Counter

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
REPO = os.path.normpath(os.path.join(ROOT, '..', '..', '..'))
sys.path.insert(0, os.path.join(ROOT, '..', 'pure', '_gen'))
import refsnet  # noqa: E402  (record parsing only)

# (case, text to replace in prog.snet, replacement, node count, node the failing component runs on)
PROBES = [
    ('static-chain', '<x=x+1>, <p0=x>', '<x=x/0>, <p0=x>', 4, 0),
    ('static-chain', '<x=x*3>, <p1=x>', '<x=x/0>, <p1=x>', 4, 1),
    ('static-chain', '<x=x-7>, <p2=x>', '<x=x/0>, <p2=x>', 4, 2),
    ('static-chain', '<x=x%11>, <p3=x>', '<x=x/0>, <p3=x>', 4, 3),
    ('static-node1', '<id>, <hop=1>', '<id>, <hop=1/0>', 2, 1),
    ('static-node1', '<hop=hop+1>', '<hop=hop/0>', 2, 0),
    ('static-node1', '{<y=x>}', '{<y=x/0>}', 4, 1),
    ('nested-override', '<v=v*2>, <xs=v>', '<v=v/0>, <xs=v>', 4, 2),
    ('nested-override', '<v=v+5>, <ys=v>', '<v=v/0>, <ys=v>', 4, 1),
    ('nested-override', '<v=v-1>, <zs=v>', '<v=v/0>, <zs=v>', 4, 0),
    ('nested-deep', '<v=v+1>, <tp=v>', '<v=v/0>, <tp=v>', 4, 3),
    ('nested-deep', '<v=v*2>, <tq=v>', '<v=v/0>, <tq=v>', 4, 1),
    ('nested-deep', '<v=v-3>, <tr=v>', '<v=v/0>, <tr=v>', 4, 2),
    ('nested-deep', '<v=v*v>, <ts=v>', '<v=v/0>, <ts=v>', 4, 3),
    ('nested-deep', '<v=v+w>', '<v=v/0>', 4, 1),
    ('nested-deep', '<v=v*m>', '<v=v/0>', 4, 0),
    ('nested-deep', '<v=v%1000>, <tt=v>', '<v=v/0>, <tt=v>', 4, 0),
    ('dyn-multiset', '<on=node>', '<on=1/(node-3)>', 4, 3),
    ('dyn-multiset', '<on=node>', '<on=1/(node-2)>', 4, 2),
    ('dyn-det', '[{<w>} -> {<w=w*w>}]', '[{<w>, <node>} -> {<w=w*w/(node-1)>, <node>}]', 4, 1),
    ('dyn-nested', '<v=v*2+m>', '<v=v*2/m>', 2, 0),
    ('dyn-nested', '<v=v*2+m>', '<v=v*2/(m-1)>', 2, 1),
    ('dyn-static-mix', '<v=v+3>', '<v=v/0>', 4, 2),
    ('dyn-static-mix', '<ys=node>', '<ys=1/(node-1)>', 4, 1),
    ('dyn-static-mix', '<ys=node>', '<ys=1/(node-3)>', 4, 3),
    ('dyn-static-mix', '<zs=m>', '<zs=1/(m-1)>', 4, 1),
    ('dyn-static-mix', '<zs=m>', '<zs=1/m>', 4, 0),
    ('star-inside', '<side=n>', '<side=n/0>', 4, 1),
    ('star-inside', '<s=s+n>', '<s=s/0>', 4, 2),
    ('star-det-inside', '<c=c+1>', '<c=c/0>', 4, 3),
    ('star-det-inside', '<s=s+n*n>', '<s=s/0>', 4, 1),
    ('det-star-alternating', '<tr=(tr*4+w)%1000003>', '<tr=(tr*4+w)%1000003+1/(w-2)>', 4, 2),
    ('det-star-alternating', '<tr=(tr*4+w)%1000003>', '<tr=(tr*4+w)%1000003+1/(w-3)>', 4, 3),
    ('split-inside', '<a=a+1>', '<a=a/0>', 4, 1),
    ('split-det-inside', '<w=w*w>', '<w=w/0>', 4, 2),
    ('split-det-inside', '<done=k*10>', '<done=k/0>', 4, 3),
    ('feedback-inside', '<o=3*a+1>', '<o=3*a/0>', 4, 3),
    ('whole-placed', '<c=c+1>', '<c=c/0>', 4, 1),
    ('whole-placed', '<o=3*a+1>', '<o=3*a/0>', 4, 3),
    ('whole-placed-det', '<c=c+1>', '<c=c/0>', 4, 3),
    ('whole-placed-det', '<v=v*3>', '<v=v/0>', 4, 1),
    ('det-par-nodes', '{<y=x>}', '{<y=x/0>}', 4, 2),
    ('det-feedback-in-par', '<a=e>', '<a=e/0>', 4, 1),
    ('det-feedback-in-par', '<e=a/2>', '<e=a/0>', 4, 2),
    ('det-feedback-in-par', '<w=w*w>', '<w=w/0>', 4, 3),
    ('inherit-remote', '<y=x>, <x=0>', '<y=x/0>, <x=0>', 4, 1),
    ('inherit-remote', '<w=x*10>', '<w=x/0>', 4, 2),
    ('inherit-remote', '<x=x-keep>', '<x=x/0>', 4, 3),
    ('input-only-labels', '<n=n-1>', '<n=n/0>', 4, 2),
    ('input-only-labels', '[{<n>} -> {<n=n+1000>}]', '[{<n>, <node>} -> {<n=n+1000/(node-1)>, <node>}]', 4, 1),
    ('btag-remote', '<#j=k+1>', '<#j=k/0>', 4, 1),
    ('btag-remote', '{<#j>, <w>} -> {<#j>, <w>, <r=2>}',
     '{<#j>, <w>, <node>} -> {<#j>, <w>, <node>, <r=2/(node-3)>}', 4, 3),
    ('fields-remote', '<x=x+1>', '<x=x/0>', 4, 1),
]


def snet_path(args):
    if '--snet' in args:
        i = args.index('--snet'); p = args[i + 1]; del args[i:i + 2]
        return p
    return os.environ.get('SNET') or os.path.join(REPO, 'target', 'release', 'snet')


EXTRA = []


def run(snet, prog, inp, nodes, workers, extra=()):
    cmd = [snet, 'run', prog, '-i', inp, '-w', str(workers)] + list(extra)
    if nodes > 1:
        cmd += ['--nodes', str(nodes), '--transport', 'loopback']
    try:
        p = subprocess.run(cmd, capture_output=True, timeout=120)
    except subprocess.TimeoutExpired:
        return None, '', 'timeout'
    return p.returncode, p.stdout.decode('utf-8', 'replace'), p.stderr.decode('utf-8', 'replace')


def check_case(snet, d, nodes, workers):
    prog, inp = os.path.join(d, 'prog.snet'), os.path.join(d, 'input.xml')
    rc, out, err = run(snet, prog, inp, nodes, workers, EXTRA)
    if rc is None:
        return 'timeout'
    errf = os.path.join(d, 'expected-error.txt')
    if os.path.exists(errf):
        want = open(errf).read().strip().lower()
        if rc == 0:
            return 'succeeded, expected an error containing %r' % want
        if want not in err.lower() or 'panicked' in err:
            return 'error lacks %r: %s' % (want, err.strip())
        return None
    if rc != 0:
        return 'failed (%d): %s' % (rc, err.strip()[:500])
    if not out.rstrip().endswith('<record type="terminate" />'):
        return 'output does not end with the terminate record'
    got = [refsnet.canon(r) for r in refsnet.parse_records(out)]
    exp = [refsnet.canon(r) for r in refsnet.parse_records(open(os.path.join(d, 'expected.xml')).read())]
    if os.path.exists(os.path.join(d, 'ordered')):
        if got != exp:
            i = next((i for i, (a, b) in enumerate(zip(got, exp)) if a != b), min(len(got), len(exp)))
            return 'order differs (%d vs %d records), first at %d' % (len(got), len(exp), i)
    elif Counter(got) != Counter(exp):
        return 'multiset differs: %d extra, %d missing' % (
            sum((Counter(got) - Counter(exp)).values()), sum((Counter(exp) - Counter(got)).values()))
    return None


def check_probe(snet, tmp, probe):
    name, old, new, nodes, where = probe
    d = os.path.join(ROOT, name)
    src = open(os.path.join(d, 'prog.snet')).read()
    assert src.count(old) == 1, (name, old)
    prog = os.path.join(tmp, '%s.snet' % name)
    with open(prog, 'w') as fh:
        fh.write(src.replace(old, new))
    rc, out, err = run(snet, prog, os.path.join(d, 'input.xml'), nodes, 2)
    if rc is None:
        return 'timeout'
    if rc == 0:
        return 'no error'
    if 'division by zero' not in err:
        return 'unexpected error: %s' % err.strip()
    named = re.findall(r'\bnode (\d+): ', err)
    if where == 0:
        return None if not named else 'expected node 0, error names node %s: %s' % (named, err.strip())
    return None if str(where) in named else 'expected node %d: %s' % (where, err.strip())


def main():
    args = sys.argv[1:]
    snet = snet_path(args)
    repeat = 1
    if '--repeat' in args:
        i = args.index('--repeat'); repeat = int(args[i + 1]); del args[i:i + 2]
    workers = [1, 2]
    if '--workers' in args:
        i = args.index('--workers'); workers = [int(w) for w in args[i + 1].split(',')]; del args[i:i + 2]
    if '--extra' in args:
        i = args.index('--extra'); EXTRA.extend(args[i + 1].split()); del args[i:i + 2]
    names = sorted(n for n in os.listdir(ROOT) if os.path.isfile(os.path.join(ROOT, n, 'prog.snet')))
    if args:
        names = [n for n in names if any(a in n for a in args)]
    bad = 0
    for name in names:
        d = os.path.join(ROOT, name)
        nodes = [1, 2, 4]
        if os.path.exists(os.path.join(d, 'nodes')):
            nodes = [int(n) for n in open(os.path.join(d, 'nodes')).read().split()]
        for n in nodes:
            for w in workers:
                for _ in range(repeat):
                    e = check_case(snet, d, n, w)
                    if e:
                        break
                print('%s %s n%d w%d %s' % ('ok  ' if not e else 'FAIL', name, n, w, e or ''))
                bad += bool(e)
    import tempfile
    with tempfile.TemporaryDirectory() as tmp:
        for p in PROBES:
            if args and not any(a in p[0] for a in args):
                continue
            e = check_probe(snet, tmp, p)
            print('%s probe %s %r -> node %d (n%d) %s' % ('ok  ' if not e else 'FAIL', p[0], p[2], p[4], p[3], e or ''))
            bad += bool(e)
    print('%d failed' % bad)
    sys.exit(1 if bad else 0)


if __name__ == '__main__':
    main()
