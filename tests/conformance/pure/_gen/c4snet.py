"""C4SNet field values as the original runtime writes them (records.md).

The runtime decodes every C4SNet field it reads and encodes it again on
output, whether or not a box touched it, so a value is written in its
canonical form: `%d`-style integers, `%.32f` for float, `%.32le` for double,
`%.32Le` for long double, char arrays as raw characters, and `(TYPE)` for
one element.  `canonical(text)` computes that form in plain Python (exact
arithmetic for long double), for the generator's expected outputs and the
reference interpreter.  Only what the corpus needs: valid values, no
pointers.
"""
import base64
import re
import struct
from decimal import Decimal, Context, ROUND_HALF_EVEN
from fractions import Fraction

TYPES = {  # name -> (struct code for binary mode, kind)
    'char': ('b', 'char'), 'unsigned char': ('B', 'char'),
    'short': ('<h', 'int'), 'unsigned short': ('<H', 'int'),
    'int': ('<i', 'int'), 'unsigned int': ('<I', 'int'),
    'long': ('<q', 'int'), 'unsigned long': ('<Q', 'int'),
    'float': ('<f', 'float'), 'double': ('<d', 'double'),
    'long double': (None, 'ldouble'),
}

HEADER = re.compile(r'\s*\(\s*([a-z ]+?)\s*(?:\[\s*(\d+)\s*\])?\s*\)')


def _exp(e):
    return 'e%s%02d' % ('-' if e < 0 else '+', abs(e))


def _ldouble(text):
    """%.32Le of strtold(text) on x86_64 (64-bit significand, round to nearest even)."""
    t = text.strip().lower()
    if t.lstrip('+-') in ('inf', 'infinity'):
        return '-inf' if t.startswith('-') else 'inf'
    v = Fraction(t)
    if v == 0:
        return ('-' if t.startswith('-') else '') + '0.' + '0' * 32 + 'e+00'
    neg, v = v < 0, abs(v)
    e = v.numerator.bit_length() - v.denominator.bit_length()
    if Fraction(2) ** e > v:
        e -= 1
    m = round(v / Fraction(2) ** (e - 63))  # Fraction rounds half to even
    v = m * Fraction(2) ** (e - 63)
    d = Context(prec=33, rounding=ROUND_HALF_EVEN).divide(Decimal(v.numerator), Decimal(v.denominator))
    _, digits, exp = d.as_tuple()
    e10 = exp + len(digits) - 1
    digits = ''.join(map(str, digits)).ljust(33, '0')
    return ('-' if neg else '') + digits[0] + '.' + digits[1:33] + _exp(e10)


def _number(kind, code, s):
    s = s.strip()
    if kind == 'int':
        return '%d' % int(s)
    if kind == 'ldouble':
        return _ldouble(s)
    x = float.fromhex(s) if s.lower().lstrip('+-').startswith('0x') else float(s)
    if kind == 'float':
        return '%.32f' % struct.unpack('<f', struct.pack('<f', x))[0]
    return '%.32e' % x


def canonical(text, binary=False):
    m = HEADER.match(text)
    name = ' '.join(m.group(1).split())
    code, kind = TYPES[name]
    n = int(m.group(2)) if m.group(2) is not None else 1
    body = text[m.end():]
    if binary:
        raw = base64.b64decode(''.join(body.split()))
        if kind == 'ldouble':
            raise ValueError('binary long double is not supported here')
        size = struct.calcsize(code)
        vals = [struct.unpack(code, raw[i * size:(i + 1) * size])[0] for i in range(n)]
        if kind == 'char':
            elems = [chr(v & 0xff) for v in vals]
        else:
            elems = [_number(kind, code, repr(v) if kind != 'int' else str(v)) for v in vals]
    elif kind == 'char':
        elems = [body[2 * i] for i in range(n)]  # positional: c,c,c
    else:
        elems = [_number(kind, code, e) for e in body.split(',')] if n else []
    head = '(%s)' % name if n == 1 else '(%s[%d])' % (name, n)
    return head + ','.join(elems)


if __name__ == '__main__':
    # self-check against values C prints (x86_64 glibc)
    assert canonical('(double)0.5') == '(double)5.00000000000000000000000000000000e-01'
    assert canonical('(float)0.1') == '(float)0.10000000149011611938476562500000'
    assert canonical('(long double)1.5') == '(long double)1.50000000000000000000000000000000e+00'
    assert canonical('(long double)0.1') == '(long double)1.00000000000000000001355252715607e-01'
    assert canonical('(long double)1e-4000') == '(long double)9.99999999999999999987257660377714e-4001'
    assert canonical('(int[3]) 1, 2 ,3') == '(int[3])1,2,3'
    assert canonical('(int[1])007') == '(int)7'
    assert canonical('(int[2])AQAAAAIAAAA=', binary=True) == '(int[2])1,2'
    print('ok')
