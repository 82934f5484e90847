#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""common/json-static.c against libcjson: json-probe linked with each (argv[1], argv[2]) must
answer the same for every input: hand-picked cases (escapes, surrogates, numbers, nesting,
leniencies, garbage) and 3000 generated ones (random values, then random cuts and byte
changes of them), from a fixed seed."""
import json
import random
import subprocess
import sys

CASES = [
    b'null', b'true', b'false', b'0', b'-0', b'1', b'-1', b'01', b'1.', b'.5', b'-', b'+1',
    b'1e5', b'1E-5', b'2147483647', b'2147483648', b'-2147483649', b'1e400', b'-1e400',
    b'0.1', b'3.141592653589793', b'123456789012345678901234567890', b'1.7976931348623157e308',
    b'4.9e-324', b'9007199254740993', b'"x"', b'""', b'"\\u00e9\\n\\t\\b\\f\\r\\"\\\\\\/"',
    b'"\\ud83d\\ude00"', b'"\\ud83d"', b'"\\ude00"', b'"\\ud83dx"', b'"\\u12"', b'"\\x"',
    b'"\\u0000a"', b'"raw \x01\x1f ctl"', b'"\xff\xfe invalid utf8"', b'"unterminated',
    b'[]', b'{}', b'[1,2,3]', b'[1,]', b'[,1]', b'{"a":1,}', b'{"a" 1}', b'{a:1}',
    b'{"a":1,"a":2}', b'{"Key":1,"key":2}', b'  \t\n\r [ 1 , { "b" : [ ] } ] ',
    b'\x01\x02[1]', b'\xef\xbb\xbf{"bom":1}', b'[1] trailing', b'{"a":1}x', b'[1]\x00junk',
    b'nul', b'tru', b'nullx', b'truex', b'[' * 999 + b']' * 999, b'[' * 1000 + b']' * 1000,
    b'[' * 1001 + b']' * 1001, b'{"a":' * 500 + b'1' + b'}' * 500, b'',
    b'{"e":"\\u20ac","n":-12.5e3,"arr":[true,false,null,"s",{"x":[]}]}',
]


def rand_value(r, depth=0):
    k = r.randrange(8 if depth < 6 else 5)
    if k == 0:
        return None
    if k == 1:
        return r.random() < 0.5
    if k == 2:
        return r.choice([0, -1, 7, 2**31, -2**31 - 1, 2**53 + 1, r.randint(-10**12, 10**12)])
    if k == 3:
        return r.choice([r.uniform(-1e6, 1e6), r.random() * 10**r.randint(-300, 300), 0.1, 1e-7])
    if k == 4:
        return ''.join(chr(r.choice([r.randint(0, 0x7f), r.randint(0x80, 0xffff),
                                     r.randint(0x10000, 0x10ffff)])) for _ in range(r.randint(0, 12))
                       ).encode('utf-8', 'surrogatepass').decode('utf-8', 'replace')
    if k == 5:
        return [rand_value(r, depth + 1) for _ in range(r.randint(0, 5))]
    return {rand_key(r): rand_value(r, depth + 1) for _ in range(r.randint(0, 5))}


def rand_key(r):
    return ''.join(r.choice('aAbBzZ_ é"\\\n') for _ in range(r.randint(0, 6)))


def generated(seed=20261207, n=3000):
    r = random.Random(seed)
    out = []
    for i in range(n):
        text = json.dumps(rand_value(r), ensure_ascii=r.random() < 0.5,
                          separators=r.choice([(',', ':'), (', ', ': ')])).encode()
        if i % 3 == 1 and text:
            text = text[:r.randrange(len(text))]
        elif i % 3 == 2 and text:
            b = bytearray(text)
            for _ in range(r.randint(1, 3)):
                b[r.randrange(len(b))] = r.randrange(256)
            text = bytes(b)
        out.append(text)
    return out


def run(binary, inputs):
    data = b''.join(b'%d\n%s' % (len(t), t) for t in inputs)
    p = subprocess.run([binary], input=data, capture_output=True, check=True)
    return p.stdout.split(b'\n')


def main():
    ref, ours = sys.argv[1], sys.argv[2]
    inputs = CASES + generated()
    a, b = run(ref, inputs), run(ours, inputs)
    bad = [(t, x, y) for t, x, y in zip(inputs, a, b) if x != y]
    if len(a) != len(b):
        bad.append((b'(count)', str(len(a)).encode(), str(len(b)).encode()))
    for t, x, y in bad[:10]:
        print(f'input {t[:120]!r}\n  libcjson:    {x[:400]!r}\n  json-static: {y[:400]!r}')
    print(f'{len(inputs)} inputs, {len(bad)} differ')
    return 1 if bad else 0


if __name__ == '__main__':
    sys.exit(main())
