#!/usr/bin/env python3
"""raw_samples.py: the samples of a `go tool pprof -raw` report (stdin) as one
line each, "values | frames | labels", with each location written out (address,
function, file:line) instead of its id, so that two profiles with the same samples
but other ids print the same; sorted. --div N --types I,J divides the values of the
sample types at indexes I, J by N (rounded half away from zero) and leaves out
samples whose values are then all zero: the expected average of a merge of N
profiles whose sum was given."""
import argparse
import re
import sys


def div_round(v, n):
    q, r = divmod(abs(v), n)
    if 2 * r >= n:
        q += 1
    return q if v >= 0 else -q


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--div", type=int, default=0)
    ap.add_argument("--types", default="")
    a = ap.parse_args()
    types = {int(t) for t in a.types.split(",") if t != ""}
    lines = sys.stdin.read().splitlines()
    samples, locs, sec, cur = [], {}, None, None
    for ln in lines:
        if ln in ("Samples:", "Locations", "Mappings"):
            sec, cur = ln, None
            continue
        if sec == "Samples:":
            m = re.match(r"^\s*(-?\d+(?:\s+-?\d+)*):(.*)$", ln)
            if m:
                cur = [[int(v) for v in m.group(1).split()], m.group(2).split(), []]
                samples.append(cur)
            elif cur is not None and ln.strip():
                cur[2].append(ln.strip())
        elif sec == "Locations":
            m = re.match(r"^\s*(\d+): (.*)$", ln)
            if m:
                cur = m.group(1)
                locs[cur] = [re.sub(r" M=\d+", "", m.group(2))]
            elif cur is not None and ln.strip():
                locs[cur].append(ln.strip())
    out = []
    for vals, ids, labels in samples:
        if a.div > 1:
            vals = [div_round(v, a.div) if i in types else v for i, v in enumerate(vals)]
            if all(v == 0 for v in vals):
                continue
        frames = " ; ".join(" / ".join(locs.get(i, ["?" + i])) for i in ids)
        out.append("%s | %s | %s" % (" ".join(map(str, vals)), frames, " ".join(sorted(labels))))
    out.sort()
    sys.stdout.write("".join(o + "\n" for o in out))


if __name__ == "__main__":
    main()
