#!/usr/bin/env python3
"""gen_bytes_seeds.py: writes the seeds of fuzz_pbdecode (corpus-pbdecode/) and
fuzz_pprof_decode (corpus/) whose strings hold every byte value 0..255 (as
Pyroscope's invalid_utf8 test profile does), raw profile.proto:

  bytes-single.pb    256 functions, each named by one byte (name, system name and
                     file name), one sample each
  bytes-all.pb       the 256-byte string of every byte value in every string field:
                     names, system names, file names, the mapping's file and build
                     id, a label key and value, a numeric label's unit, sample and
                     period types and units, comments, drop_frames and keep_frames
  bytes-utf8.pb      invalid UTF-8 (overlong forms, surrogates, truncated and 5-byte
                     sequences, 0xfe 0xff) beside valid multi-byte characters, as
                     names, labels and drop_frames/keep_frames regexes
  names-*.pb         testdata/names/*.pb.gz gunzipped (C++, Rust and Go names,
                     drop_frames and keep_frames), for fuzz_pprof_decode's reports

Run from anywhere: python3 tests/fuzz/gen_bytes_seeds.py
"""
import gzip
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "testdata", "names"))
from gen import fbytes, fint, packed  # noqa: E402

ALL = bytes(range(256))
BAD_UTF8 = [
    b"\xc0\xaf", b"\xe0\x80\xaf", b"\xed\xa0\x80", b"\xed\xbf\xbf", b"\xe2\x82",
    b"\xf0\x9f\x98", b"\xf8\x88\x80\x80\x80", b"\xfe\xff", b"\x80", b"caf\xc3",
    "naïve→✓😀".encode(), b"a\x00\xffb",
]


class Seed:
    def __init__(self):
        self.strings = [b""]
        self.index = {b"": 0}

    def s(self, b):
        if b not in self.index:
            self.index[b] = len(self.strings)
            self.strings.append(b)
        return self.index[b]


def encode(names, sample_type=(b"samples", b"count"), period=(b"cpu", b"nanoseconds"),
           label=None, mapping=None, comments=(), drop=b"", keep=b""):
    """names: (name, system_name, filename) per function; one sample per function,
    each leaf under the first function."""
    t = Seed()
    st = (t.s(sample_type[0]), t.s(sample_type[1]))
    pt = (t.s(period[0]), t.s(period[1]))
    funcs = [(t.s(n), t.s(s), t.s(f)) for n, s, f in names]
    lab = None
    if label:
        lab = (t.s(label[0]), t.s(label[1]), t.s(label[2]))
    mp = None
    if mapping:
        mp = (t.s(mapping[0]), t.s(mapping[1]))
    cs = [t.s(c) for c in comments]
    d, k = t.s(drop) if drop else 0, t.s(keep) if keep else 0
    out = fbytes(1, fint(1, st[0]) + fint(2, st[1]))
    for i in range(len(funcs)):
        locs = [i + 1, 1] if i else [1]
        body = packed(1, locs) + packed(2, [100 + i])
        if lab:
            body += fbytes(3, fint(1, lab[0]) + fint(2, lab[1]))
            body += fbytes(3, fint(1, lab[0]) + fint(3, 7 + i) + fint(4, lab[2]))
        out += fbytes(2, body)
    if mp:
        out += fbytes(3, fint(1, 1) + fint(2, 0x400000) + fint(3, 0x500000) + fint(5, mp[0]) +
                      fint(6, mp[1]) + fint(7, 1))
    for i in range(len(funcs)):
        line = fbytes(4, fint(1, i + 1) + fint(2, i + 1))
        out += fbytes(4, fint(1, i + 1) + (fint(2, 1) if mp else b"") + fint(3, 0x401000 + i) + line)
    for i, (n, s, f) in enumerate(funcs):
        out += fbytes(5, fint(1, i + 1) + fint(2, n) + fint(3, s) + fint(4, f) + fint(5, i))
    for b in t.strings:
        out += fbytes(6, b)
    out += fint(7, d) + fint(8, k) + fint(9, 1700000000 * 10**9) + fint(10, 10**10)
    out += fbytes(11, fint(1, pt[0]) + fint(2, pt[1])) + fint(12, 1000000)
    for c in cs:
        out += fint(13, c)
    return out


def write(name, data, dirs):
    for d in dirs:
        with open(os.path.join(HERE, d, name), "wb") as f:
            f.write(data)


def main():
    both = ["corpus-pbdecode", "corpus"]
    main_fn = (b"main", b"main", b"main.c")
    single = [main_fn] + [(bytes([c]), bytes([c]), bytes([c])) for c in range(256)]
    write("bytes-single.pb", encode(single), both)
    write("bytes-all.pb", encode([main_fn, (ALL, ALL, ALL), (b"", ALL, ALL), (ALL, b"", b"")],
                                 sample_type=(ALL, ALL), period=(ALL, ALL),
                                 label=(ALL, ALL, ALL), mapping=(ALL, ALL), comments=(ALL,),
                                 drop=ALL, keep=ALL), both)
    utf8 = [main_fn] + [(b, b, b) for b in BAD_UTF8]
    write("bytes-utf8.pb", encode(utf8, label=(BAD_UTF8[0], BAD_UTF8[2], BAD_UTF8[6]),
                                  drop=b".*\xed\xa0\x80.*|caf.", keep="naïve.*".encode()), both)
    names_dir = os.path.join(ROOT, "testdata", "names")
    for f in sorted(os.listdir(names_dir)):
        if f.endswith(".pb.gz"):
            with gzip.open(os.path.join(names_dir, f)) as g:
                write("names-" + f[:-3], g.read(), ["corpus"])


if __name__ == "__main__":
    main()
