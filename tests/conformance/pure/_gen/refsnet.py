#!/usr/bin/env python3
"""A tiny, slow reference interpreter for *pure* S-Net (filters, synchrocells,
combinators; no boxes), used only to cross-check the expected outputs of the
conformance corpus in tests/conformance/pure/.

It is NOT part of the product.  It simulates the network as a set of FIFO
streams and, at every step, advances a *randomly chosen* non-empty stream, so
running it with several seeds explores different legal interleavings of the
non-deterministic combinators.  Deterministic combinators (||, **, !!) are
modelled by running their operand to quiescence for each incoming record
(outputs of record i are all emitted before those of record i+1).

Usage:  refsnet.py prog.snet input.xml [--seed N]  -> writes records to stdout
"""
import random
import re
import sys
from collections import deque

import c4snet


class SNetError(Exception):
    pass


# --------------------------------------------------------------------------
# lexer
TOKEN_RE = re.compile(r"""
  (?P<ws>\s+|//[^\n]*|/\*.*?\*/)
| (?P<int>0[xX][0-9a-fA-F]+|[0-9]+)
| (?P<id>[A-Za-z_][A-Za-z_0-9]*)
| (?P<op>\.\.\.|\.\.|\[\||\|\]|\|\||\*\*|!!@|!!|!@|<\#|->|==|!=|<=|>=|&&|[-+*/%<>!?:,;=(){}\[\]|\\@])
""", re.S | re.X)


def lex(src):
    # strip metadata block
    src = re.sub(r"<metadata>.*?</metadata>", lambda m: " " * len(m.group(0)), src, flags=re.S)
    toks = []
    pos = 0
    while pos < len(src):
        m = TOKEN_RE.match(src, pos)
        if not m:
            raise SNetError("lex error at %d: %r" % (pos, src[pos:pos + 20]))
        pos = m.end()
        if m.lastgroup == 'ws':
            continue
        if m.lastgroup == 'int':
            t = m.group(0)
            if t.lower().startswith('0x'):
                v = int(t, 16)
            elif len(t) > 1 and t.startswith('0'):
                v = int(t, 8)
            else:
                v = int(t)
            toks.append(('int', v))
        elif m.lastgroup == 'id':
            toks.append(('id', m.group(0)))
        else:
            toks.append(('op', m.group(0)))
    toks.append(('eof', None))
    return toks


# --------------------------------------------------------------------------
# AST helpers
# label = (kind, name), kind in 't' (tag), 'b' (binding tag), 'f' (field)

def ctrunc_div(a, b):
    if b == 0:
        raise SNetError("division by zero")
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


def cmod(a, b):
    if b == 0:
        raise SNetError("division by zero (remainder)")
    return a - b * ctrunc_div(a, b)


def eval_expr(e, rec):
    k = e[0]
    if k == 'int':
        return e[1]
    if k == 'name':
        if ('t', e[1]) in rec:
            return rec[('t', e[1])]
        if ('b', e[1]) in rec:
            return rec[('b', e[1])]
        raise SNetError("tag %s not in record" % e[1])
    if k == 'un':
        v = eval_expr(e[2], rec)
        return -v if e[1] == '-' else int(not v)
    if k == 'call':
        args = [eval_expr(a, rec) for a in e[2]]
        if e[1] == 'abs':
            return abs(args[0])
        if e[1] == 'min':
            return min(args)
        if e[1] == 'max':
            return max(args)
    if k == 'cond':
        return eval_expr(e[2], rec) if eval_expr(e[1], rec) else eval_expr(e[3], rec)
    if k == 'bin':
        op = e[1]
        if op == '&&':
            return int(bool(eval_expr(e[2], rec)) and bool(eval_expr(e[3], rec)))
        if op == '||':
            return int(bool(eval_expr(e[2], rec)) or bool(eval_expr(e[3], rec)))
        a = eval_expr(e[2], rec)
        b = eval_expr(e[3], rec)
        if op == '+': return a + b
        if op == '-': return a - b
        if op == '*': return a * b
        if op == '/': return ctrunc_div(a, b)
        if op == '%': return cmod(a, b)
        if op == '==': return int(a == b)
        if op == '!=': return int(a != b)
        if op == '<': return int(a < b)
        if op == '<=': return int(a <= b)
        if op == '>': return int(a > b)
        if op == '>=': return int(a >= b)
    raise SNetError("bad expr %r" % (e,))


class Parser:
    def __init__(self, toks):
        self.t = toks
        self.i = 0

    def peek(self, k=0):
        return self.t[self.i + k]

    def next(self):
        tok = self.t[self.i]
        self.i += 1
        return tok

    def at(self, v, k=0):
        return self.t[self.i + k][1] == v and self.t[self.i + k][0] in ('op', 'id')

    def expect(self, v):
        tok = self.next()
        if tok[1] != v:
            raise SNetError("expected %r got %r at token %d" % (v, tok, self.i))
        return tok

    def ident(self):
        tok = self.next()
        if tok[0] != 'id':
            raise SNetError("expected identifier got %r" % (tok,))
        return tok[1]

    # ---- program
    def program(self):
        defs = []
        while self.peek()[0] != 'eof':
            defs.append(self.toplevel())
        return defs

    def toplevel(self):
        if self.at('net'):
            return self.netdef()
        if self.at('type'):
            self.next(); name = self.ident(); self.expect('='); ty = self.type_(); self.expect(';')
            return ('type', name, ty)
        if self.at('typesig'):
            self.next(); name = self.ident(); self.expect('=')
            maps = [self.mapping()]
            while self.at(','):
                self.next()
                if self.peek()[0] == 'id' and not self.at('{', 1) and self.peek(1)[1] != '->':
                    maps.append(('ref', self.ident()))
                else:
                    maps.append(self.mapping())
            self.expect(';')
            return ('typesig', name, maps)
        if self.at('box'):
            raise SNetError("box declarations not supported by the pure reference")
        raise SNetError("unexpected %r" % (self.peek(),))

    def netdef(self):
        self.expect('net')
        name = self.ident()
        sig = None
        if self.at('('):
            self.next()
            if self.peek()[0] == 'id' and self.at(')', 1):
                sig = ('ref', self.ident())
            else:
                sig = [self.mapping()]
                while self.at(','):
                    self.next(); sig.append(self.mapping())
            self.expect(')')
        inner = []
        if self.at('{'):
            self.next()
            while not self.at('}'):
                inner.append(self.toplevel())
            self.expect('}')
        body = None
        if self.at('connect'):
            self.next()
            body = self.expr()
        if self.at(';'):
            self.next()
        return ('net', name, sig, inner, body)

    def mapping(self):
        a = self.type_()
        self.expect('->')
        if self.at('...'):
            self.next(); b = '...'
        else:
            b = self.type_()
        return (a, b)

    def type_(self):
        if self.peek()[0] == 'id':
            return ('tref', self.ident())
        vs = [self.variant()]
        while self.at('|'):
            self.next(); vs.append(self.variant())
        return ('type', vs)

    def variant(self):
        self.expect('{')
        labels = []
        while not self.at('}'):
            if self.at('<'):
                self.next(); labels.append(('t', self.ident())); self.expect('>')
            elif self.at('<#'):
                self.next(); labels.append(('b', self.ident())); self.expect('>')
            else:
                labels.append(('f', self.ident()))
            if self.at(','):
                self.next()
        self.expect('}')
        return frozenset(labels)

    # ---- combinator expressions
    def expr(self):
        e = self.serial()
        while self.at('|') or self.at('||'):
            op = self.next()[1]
            r = self.serial()
            if e[0] == 'par' and e[1] == op and not e[3]:
                e = ('par', op, e[2] + [r], False)
            else:
                e = ('par', op, [e, r], False)
        if e[0] == 'par':
            e = ('par', e[1], e[2], True)
        return e

    def serial(self):
        e = self.postfix()
        while self.at('..'):
            self.next()
            e = ('ser', e, self.postfix())
        return e

    def postfix(self):
        e = self.operand()
        while True:
            if self.at('*') or self.at('**'):
                op = self.next()[1]
                e = ('star', op == '**', e, self.pats())
            elif self.at('!') or self.at('!!'):
                op = self.next()[1]
                self.expect('<'); t = self.ident(); self.expect('>')
                e = ('split', op == '!!', e, t, False)
            elif self.at('!@') or self.at('!!@'):
                # Dynamic placement: a split whose value names the node (only node 0 exists).
                op = self.next()[1]
                self.expect('<'); t = self.ident(); self.expect('>')
                e = ('split', op == '!!@', e, t, True)
            elif self.at('\\'):
                self.next()
                e = ('fb', e, self.pats())
            elif self.at('@'):
                self.next(); self.next()
                e = e
            else:
                return e

    def pats(self):
        ps = [self.gvariant()]
        while self.at(','):
            self.next(); ps.append(self.gvariant())
        return ps

    def gvariant(self):
        v = self.variant()
        g = None
        if self.at('if'):
            self.next(); self.expect('<'); g = self.cexpr(); self.expect('>')
        return (v, g)

    def operand(self):
        if self.at('('):
            self.next(); e = self.expr(); self.expect(')'); return e
        if self.at('[|'):
            self.next()
            pats = self.pats()
            self.expect('|]')
            return ('sync', pats)
        if self.at('['):
            self.next()
            if self.at(']'):
                self.next(); return ('filter', frozenset(), ('out', [(frozenset(), {})]), True)
            pat = self.variant()
            self.expect('->')
            act = self.action()
            self.expect(']')
            return ('filter', pat, act, False)
        return ('name', self.ident())

    def action(self):
        if self.at('if'):
            self.next(); self.expect('<'); g = self.cexpr(); self.expect('>')
            self.expect('then')
            outs = self.outputs()
            self.expect('else')
            return ('if', g, outs, self.action())
        return self.outputs()

    def outputs(self):
        outs = []
        if self.at('{'):
            outs.append(self.outspec())
            while self.at(';'):
                self.next(); outs.append(self.outspec())
        return ('out', outs)

    def outspec(self):
        self.expect('{')
        items = []
        while not self.at('}'):
            if self.at('<') or self.at('<#'):
                kind = 't' if self.next()[1] == '<' else 'b'
                n = self.ident()
                if self.at('='):
                    self.next(); items.append((kind, n, self.cexpr()))
                else:
                    items.append((kind, n, None))
                self.expect('>')
            else:
                n = self.ident()
                if self.at('='):
                    self.next(); items.append(('f', n, self.ident()))
                else:
                    items.append(('f', n, None))
            if self.at(','):
                self.next()
        self.expect('}')
        return ('spec', items)

    # ---- C expressions; '>' closes when the next token cannot start an operand
    def starts_operand(self, k):
        tok = self.peek(k)
        if tok[0] == 'id' and tok[1] in ('then', 'else', 'if'):
            return False
        return tok[0] in ('int', 'id') or tok[1] in ('(', '-', '!')

    def cexpr(self):
        c = self.lor()
        if self.at('?'):
            self.next(); a = self.cexpr(); self.expect(':'); b = self.cexpr()
            return ('cond', c, a, b)
        return c

    def lor(self):
        e = self.land()
        while self.at('||'):
            self.next(); e = ('bin', '||', e, self.land())
        return e

    def land(self):
        e = self.eq()
        while self.at('&&'):
            self.next(); e = ('bin', '&&', e, self.eq())
        return e

    def eq(self):
        e = self.rel()
        while self.at('==') or self.at('!='):
            op = self.next()[1]; e = ('bin', op, e, self.rel())
        return e

    def rel(self):
        e = self.add()
        while (self.at('<') or self.at('<=') or self.at('>=') or
               (self.at('>') and self.starts_operand(1))):
            op = self.next()[1]; e = ('bin', op, e, self.add())
        return e

    def add(self):
        e = self.mul()
        while self.at('+') or self.at('-'):
            op = self.next()[1]; e = ('bin', op, e, self.mul())
        return e

    def mul(self):
        e = self.unary()
        while self.at('*') or self.at('/') or self.at('%'):
            op = self.next()[1]; e = ('bin', op, e, self.unary())
        return e

    def unary(self):
        if self.at('-') or self.at('!'):
            op = self.next()[1]
            return ('un', op, self.unary())
        if self.at('('):
            self.next(); e = self.cexpr(); self.expect(')'); return e
        tok = self.next()
        if tok[0] == 'int':
            return ('int', tok[1])
        if tok[0] == 'id':
            if tok[1] in ('abs', 'min', 'max') and self.at('('):
                self.next()
                args = [self.cexpr()]
                while self.at(','):
                    self.next(); args.append(self.cexpr())
                self.expect(')')
                return ('call', tok[1], args)
            return ('name', tok[1])
        raise SNetError("bad expression token %r" % (tok,))


# --------------------------------------------------------------------------
# records

def btags(labels):
    return frozenset(l for l in labels if l[0] == 'b')


def matches(rec, variant):
    keys = rec.keys()
    return variant <= keys and btags(variant) == btags(keys)


def guard_ok(rec, g):
    return g is None or bool(eval_expr(g, rec))


def fmt_label(l):
    return {'t': '<%s>', 'b': '<#%s>', 'f': '%s'}[l[0]] % l[1]


# --------------------------------------------------------------------------
# scheduler and streams

class Scheduler:
    """policy: 'uniform' (random ready stream), 'priority' (every stream has a
    random fixed priority; the highest ready one runs: some paths starve),
    'lifo' (most recently readied stream first)."""
    policy = 'uniform'

    def __init__(self, rng):
        self.rng = rng
        self.ready = []          # list of streams with pending records
        self.steps = 0

    def pick(self):
        if self.policy == 'priority':
            j = max(range(len(self.ready)), key=lambda i: self.ready[i].prio)
        elif self.policy == 'lifo' and self.rng.random() < 0.9:
            j = len(self.ready) - 1
        else:
            j = self.rng.randrange(len(self.ready))
        s = self.ready[j]
        rec = s.q.popleft()
        if not s.q:
            self.ready[j] = self.ready[-1]
            self.ready.pop()
            s.inready = False
        self.steps += 1
        return s, rec

    def run(self):
        while self.ready:
            s, rec = self.pick()
            s.target.process(rec)


class Stream:
    def __init__(self, sched, target):
        self.sched = sched
        self.target = target
        self.q = deque()
        self.inready = False
        self.prio = sched.rng.random()

    def put(self, rec):
        self.q.append(rec)
        if not self.inready:
            self.inready = True
            self.sched.ready.append(self)


class ListSink:
    def __init__(self):
        self.out = []

    def put(self, rec):
        self.out.append(rec)


class Forward:
    """Collector: forwards whatever arrives to out."""
    def __init__(self, out):
        self.out = out

    def process(self, rec):
        self.out.put(rec)


# --------------------------------------------------------------------------
# static input types (for best-match routing)

class Env:
    def __init__(self, parent=None):
        self.parent = parent
        self.nets = {}

    def lookup(self, n):
        e = self
        while e:
            if n in e.nets:
                return e.nets[n]
            e = e.parent
        raise SNetError("unknown name %s" % n)


def input_variants(expr, env):
    k = expr[0]
    if k == 'filter':
        return [expr[1]]
    if k == 'sync':
        return [p[0] for p in expr[1]]
    if k == 'ser':
        return input_variants(expr[1], env)
    if k == 'par':
        r = []
        for b in expr[2]:
            r += input_variants(b, env)
        return r
    if k == 'star':
        return input_variants(expr[2], env) + [p[0] for p in expr[3]]
    if k == 'split':
        return [v | {('t', expr[3])} for v in input_variants(expr[2], env)]
    if k == 'fb':
        return input_variants(expr[1], env)
    if k == 'name':
        net = env.lookup(expr[1])
        return net.input_variants()
    raise SNetError("?")


class NetDef:
    def __init__(self, name, sig, body, env, tenv):
        self.name, self.sig, self.body, self.env, self.tenv = name, sig, body, env, tenv
        self._iv = None

    def input_variants(self):
        if self._iv is None:
            if self.sig is not None:
                maps = self.resolve_sig(self.sig)
                vs = []
                for a, b in maps:
                    vs += self.resolve_type(a)
                self._iv = vs
            else:
                self._iv = input_variants(self.body, self.env)
        return self._iv

    def resolve_sig(self, sig):
        if sig[0] == 'ref':
            maps = []
            for m in self.tenv.lookup(sig[1]):
                if m[0] == 'ref':
                    maps += self.resolve_sig(m)
                else:
                    maps.append(m)
            return maps
        return sig

    def resolve_type(self, ty):
        if ty[0] == 'tref':
            return self.resolve_type(self.tenv.lookup(ty[1]))
        return ty[1]


# --------------------------------------------------------------------------
# instantiation

def instantiate(expr, env, sched, out):
    """Return an entity with .process(rec); its outputs go to out.put."""
    k = expr[0]
    if k == 'filter':
        return FilterInst(expr, out)
    if k == 'sync':
        return SyncInst(expr[1], out)
    if k == 'name':
        net = env.lookup(expr[1])
        return instantiate(net.body, net.env, sched, out)
    if k == 'ser':
        b = instantiate(expr[2], env, sched, out)
        a = instantiate(expr[1], env, sched, Stream(sched, b))
        return a
    if k == 'par':
        det = expr[1] == '||'
        if det:
            return DetInst(lambda s, o: ParInst(expr, env, s, o), sched, out)
        return ParInst(expr, env, sched, out)
    if k == 'star':
        if expr[1]:
            return DetInst(lambda s, o: StarInst(expr, env, s, o), sched, out)
        return StarInst(expr, env, sched, out)
    if k == 'split':
        if expr[1]:
            return DetInst(lambda s, o: SplitInst(expr, env, s, o), sched, out)
        return SplitInst(expr, env, sched, out)
    if k == 'fb':
        return FbInst(expr, env, sched, out)
    raise SNetError("cannot instantiate %r" % (k,))


class FilterInst:
    def __init__(self, expr, out):
        self.pat, self.act, self.ident = expr[1], expr[2], expr[3]
        self.out = out

    def process(self, rec):
        if self.ident:
            if btags(rec.keys()):
                raise SNetError("identity filter got binding tags")
            self.out.put(dict(rec))
            return
        if not matches(rec, self.pat):
            raise SNetError("filter pattern %s does not match record %s" % (
                sorted(self.pat), sorted(rec)))
        act = self.act
        while act[0] == 'if':
            if eval_expr(act[1], rec):
                act = act[2]
                break
            act = act[3]
        inherited = {l: v for l, v in rec.items() if l not in self.pat}
        for spec in act[1]:
            o = {}
            for kind, n, src in spec[1]:
                if kind == 'f':
                    g = src if src is not None else n
                    if ('f', g) not in rec:
                        raise SNetError("field %s missing" % g)
                    o[('f', n)] = rec[('f', g)]
                else:
                    if src is None:
                        o[(kind, n)] = rec.get((kind, n), 0)
                    else:
                        o[(kind, n)] = eval_expr(src, rec)
            for l, v in inherited.items():
                if l not in o:
                    o[l] = v
            self.out.put(o)


class SyncInst:
    def __init__(self, pats, out):
        self.pats = pats
        self.slots = [None] * len(pats)
        self.fired = False
        self.out = out

    def process(self, rec):
        if not self.fired:
            for i, (v, g) in enumerate(self.pats):
                if self.slots[i] is None and matches(rec, v) and guard_ok(rec, g):
                    self.slots[i] = rec
                    if all(s is not None for s in self.slots):
                        self.fired = True
                        o = dict(self.slots[0])
                        for j, (vj, gj) in enumerate(self.pats):
                            for l in vj:
                                o[l] = self.slots[j][l]
                        self.slots = None
                        self.out.put(o)
                    return
        self.out.put(rec)


def route(rec, branches_vs):
    best, bscore = [], -1
    for i, vs in enumerate(branches_vs):
        sc = -1
        for v in vs:
            if matches(rec, v):
                sc = max(sc, len(v))
        if sc < 0:
            continue
        if sc > bscore:
            best, bscore = [i], sc
        elif sc == bscore:
            best.append(i)
    return best


class ParInst:
    def __init__(self, expr, env, sched, out):
        self.sched = sched
        self.coll = Forward(out)
        self.branches = expr[2]
        self.env = env
        self.vs = [input_variants(b, env) for b in self.branches]
        self.inst = [None] * len(self.branches)

    def process(self, rec):
        cand = route(rec, self.vs)
        if not cand:
            raise SNetError("no branch of parallel accepts record {%s}" % ", ".join(
                fmt_label(l) for l in sorted(rec)))
        i = self.sched.rng.choice(cand)
        if self.inst[i] is None:
            e = instantiate(self.branches[i], self.env, self.sched, Stream(self.sched, self.coll))
            self.inst[i] = Stream(self.sched, e)
        self.inst[i].put(rec)


class StarInst:
    def __init__(self, expr, env, sched, out):
        self.operand, self.pats = expr[2], expr[3]
        self.env, self.sched = env, sched
        self.coll = Forward(out)
        self.tap0 = Tap(self, 0)

    def process(self, rec):
        self.tap0.process(rec)


class Tap:
    def __init__(self, star, i):
        self.star, self.i = star, i
        self.exit = Stream(star.sched, star.coll)
        self.replica = None

    def process(self, rec):
        for v, g in self.star.pats:
            if matches(rec, v) and guard_ok(rec, g):
                self.exit.put(rec)
                return
        if self.replica is None:
            nxt = Tap(self.star, self.i + 1)
            e = instantiate(self.star.operand, self.star.env, self.star.sched,
                            Stream(self.star.sched, nxt))
            self.replica = Stream(self.star.sched, e)
        self.replica.put(rec)


class SplitInst:
    def __init__(self, expr, env, sched, out):
        self.operand, self.tag, self.place = expr[2], expr[3], expr[4]
        self.env, self.sched = env, sched
        self.coll = Forward(out)
        self.reps = {}

    def process(self, rec):
        key = ('t', self.tag)
        if key not in rec:
            raise SNetError("split: record lacks tag <%s>" % self.tag)
        v = rec[key]
        if self.place and v != 0:
            raise SNetError("dynamic placement to node %d, but the run has 1 node(s)" % v)
        if v not in self.reps:
            e = instantiate(self.operand, self.env, self.sched, Stream(self.sched, self.coll))
            self.reps[v] = Stream(self.sched, e)
        self.reps[v].put(rec)


class FbInst:
    def __init__(self, expr, env, sched, out):
        self.pats = expr[2]
        self.out = out
        disp = FbDispatch(self)
        self.a = instantiate(expr[1], env, sched, Stream(sched, disp))
        self.back = Stream(sched, self.a)
        self.entry = Stream(sched, self.a)

    def process(self, rec):
        self.entry.put(rec)


class FbDispatch:
    def __init__(self, fb):
        self.fb = fb

    def process(self, rec):
        for v, g in self.fb.pats:
            if matches(rec, v) and guard_ok(rec, g):
                self.fb.back.put(rec)
                return
        self.fb.out.put(rec)


class DetInst:
    """Deterministic combinator: run the operand network to quiescence per record."""
    def __init__(self, mk, sched, out):
        self.inner_sched = Scheduler(sched.rng)
        self.sink = ListSink()
        self.inner = mk(self.inner_sched, self.sink)
        self.out = out

    def process(self, rec):
        self.inner.process(rec)
        self.inner_sched.run()
        outs, self.sink.out = self.sink.out, []
        for o in outs:
            self.out.put(o)


# --------------------------------------------------------------------------
# program loading

def load(src):
    defs = Parser(lex(src)).program()
    return build_env(defs, None, None)


class TEnv:
    def __init__(self, parent=None):
        self.parent, self.d = parent, {}

    def lookup(self, n):
        e = self
        while e:
            if n in e.d:
                return e.d[n]
            e = e.parent
        raise SNetError("unknown type %s" % n)


def build_env(defs, parent, tparent):
    env = Env(parent)
    tenv = TEnv(tparent)
    last = None
    for d in defs:
        if d[0] == 'type':
            tenv.d[d[1]] = d[2]
        elif d[0] == 'typesig':
            tenv.d[d[1]] = d[2]
        elif d[0] == 'net':
            _, name, sig, inner, body = d
            ienv, itenv, _ = build_env(inner, env, tenv)
            nd = NetDef(name, sig, body, ienv, itenv)
            env.nets[name] = nd
            last = nd
    return env, tenv, last


# --------------------------------------------------------------------------
# XML records

REC_RE = re.compile(r"<record\b([^>]*?)(/>|>(.*?)</record>)", re.S)
CHILD_RE = re.compile(r"<(tag|btag|field)\b([^>]*)>(.*?)</\1>", re.S)
ATTR_RE = re.compile(r"""(\w+)\s*=\s*(?:"([^"]*)"|'([^']*)')""")


def unescape(s):
    return (s.replace('&lt;', '<').replace('&gt;', '>').replace('&quot;', '"')
            .replace('&apos;', "'").replace('&amp;', '&'))


def escape(s):
    return s.replace('&', '&amp;').replace('<', '&lt;').replace('>', '&gt;')


def parse_records(text):
    recs = []
    for m in REC_RE.finditer(text):
        attrs = {}
        for a, b, c in ATTR_RE.findall(m.group(1)):
            attrs[a] = b if b else c
        ty = attrs.get('type', 'data')
        if ty == 'terminate':
            break
        if ty != 'data':
            raise SNetError("unknown record type %s" % ty)
        rec = {}
        for cm in CHILD_RE.finditer(m.group(3) or ''):
            kind, cattrs, body = cm.groups()
            ca = {}
            for a, b, c in ATTR_RE.findall(cattrs):
                ca[a] = b if b else c
            lab = ca['label']
            if kind == 'tag':
                rec[('t', lab)] = int(body.strip())
            elif kind == 'btag':
                rec[('b', lab)] = int(body.strip())
            else:
                # C4SNet values are decoded on input and written canonically
                # (records.md); other interfaces' values stay as they are.
                iface = ca.get('interface', attrs.get('interface', 'C4SNet'))
                val = unescape(body)
                if iface == 'C4SNet':
                    val = c4snet.canonical(val, attrs.get('mode') == 'binary')
                else:
                    val = (iface, val)
                rec[('f', lab)] = val
        recs.append(rec)
    return recs


def format_record(rec):
    parts = []
    for (k, n), v in sorted(rec.items(), key=lambda kv: ({'f': 0, 't': 1, 'b': 2}[kv[0][0]], kv[0][1])):
        if k == 'f':
            iface, v = v if isinstance(v, tuple) else ('C4SNet', v)
            parts.append('<field label="%s" interface="%s">%s</field>' % (n, iface, escape(v)))
        elif k == 't':
            parts.append('<tag label="%s">%d</tag>' % (n, v))
        else:
            parts.append('<btag label="%s">%d</btag>' % (n, v))
    return ('<?xml version="1.0" ?><record xmlns="snet-home.org" type="data" mode="textual" >'
            + ''.join(parts) + '</record>')


def canon(rec):
    return tuple(sorted((k, n, v) for (k, n), v in rec.items()))


def run(src, records, seed=0, entry=None, limit=None):
    """limit: None, or a function of the number of records output so far
    (the --input-limit bound): input record n is admitted only while
    n <= limit(output), or when the network is quiescent."""
    env, tenv, last = load(src)
    net = env.lookup(entry) if entry else last
    rng = random.Random(seed)
    sched = Scheduler(rng)
    sink = ListSink()
    ent = instantiate(net.body, net.env, sched, sink)
    inp = Stream(sched, ent)
    # feed input in order, interleaved randomly with processing
    pending = deque(records)
    admitted = 0
    while pending or sched.ready:
        bounded = limit is not None and admitted >= limit(len(sink.out))
        if pending and (not sched.ready or (not bounded and rng.random() < 0.3)):
            admitted += 1
            inp.put(pending.popleft())
        else:
            s, rec = sched.pick()
            s.target.process(rec)
    return sink.out


def main():
    args = sys.argv[1:]
    seed = 0
    if '--policy' in args:
        i = args.index('--policy'); Scheduler.policy = args[i + 1]; del args[i:i + 2]
    if '--seed' in args:
        i = args.index('--seed'); seed = int(args[i + 1]); del args[i:i + 2]
    src = open(args[0]).read()
    recs = parse_records(open(args[1]).read())
    try:
        out = run(src, recs, seed)
    except SNetError as e:
        print("error: %s" % e, file=sys.stderr)
        sys.exit(1)
    for r in out:
        print(format_record(r))
    print('<record type="terminate" />')


if __name__ == '__main__':
    main()
