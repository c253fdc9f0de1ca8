#!/usr/bin/env python3
"""export_golden.py: `profd pprof folded` and `profd pprof speedscope` against
`go tool pprof` on the same files.

For every profile under testdata/profiles that both tools read, and every
profile of the shared corpus when it is beside the repository (as
totals_golden.sh finds it), and for every sample type:

  folded      the multiset of (stack, value) lines equals the stacks and values
              `go tool pprof -traces` prints (in the type's own unit), with
              identical stacks summed and zero sums left out;
  speedscope  the file has the structure speedscope's file format schema
              requires, its profile of that type holds the same stacks and
              weights, and each frame's weight as a leaf equals the flat of
              `go tool pprof -top -nodefraction=0`.

Corpus profiles (hundreds of Go profiles whose every frame has a function name)
are read with one `go tool pprof -raw` each: the stacks are its samples with
their locations' function names, and -top's flat is compared for the default
sample type only. Of each profile type's folder, the first PD_EXPORT_CORPUS
files in name order are checked (default 5; 0 checks all), so that the test
stays within its time on a loaded machine.

    export_golden.py PROFD TESTDATA [CORPUS]
"""
import collections
import concurrent.futures
import json
import os
import re
import subprocess
import sys
import tempfile

SCHEMA = "https://www.speedscope.app/file-format-schema.json"
UNITS = {"none", "nanoseconds", "microseconds", "milliseconds", "seconds", "bytes"}

profd = os.path.realpath(sys.argv[1])
data = os.path.realpath(sys.argv[2])
here = os.path.dirname(os.path.realpath(__file__))
corpus = sys.argv[3] if len(sys.argv) > 3 else os.environ.get(
    "PD_CORPUS", os.path.join(data, "..", "..", "shared", "corpus", "prometheus"))
tmp = tempfile.mkdtemp()
env = dict(os.environ, PPROF_TMPDIR=tmp, HOME=os.environ.get("HOME", tmp))


def run(args, check=True):
    # decoded here rather than with text=True, whose universal newlines would turn
    # a carriage return inside a name into "\n"
    r = subprocess.run(args, cwd=tmp, env=env, capture_output=True)
    r.stdout = r.stdout.decode("utf-8", "surrogateescape")
    r.stderr = r.stderr.decode("utf-8", "surrogateescape")
    if check and r.returncode != 0:
        raise RuntimeError("%s: exit %d: %s" % (" ".join(args), r.returncode, r.stderr.strip()))
    return r


def gopprof(*args, check=True):
    # -symbolize=remote: no address is symbolized on a file, but names are demangled
    # and simplified, as by default (and by profd's reports)
    return run(["go", "tool", "pprof", "-symbolize=remote"] + list(args), check=check)


def types_of(raw):
    """[(type, unit)] as go tool pprof -raw's output lists them."""
    lines = raw.splitlines()
    for i, l in enumerate(lines):
        if l.startswith("Samples:"):
            return [tuple(t.replace("[dflt]", "").split("/", 1)) for t in lines[i + 1].split()]
    return []


def safe(name):
    """A frame name as folded output writes it (docs/api.md)."""
    return "".join(":" if c == ";" else " " if ord(c) < 0x20 or c == "\x7f" else c for c in name)


def in_json(name):
    """A frame name as profd's JSON holds it: each byte that is not UTF-8 (read
    here as a surrogate escape) is U+FFFD (docs/api.md)."""
    return re.sub("[\udc80-\udcff]", "\ufffd", name)


VALUE = re.compile(r"^\s*(-?\d+)[^\s\d]*   (.*)$")


def go_stacks(path, idx, unit):
    """{stack tuple (outermost first): summed value} from go tool pprof -traces."""
    out = gopprof("-traces", "-sample_index=%d" % idx, "-unit=" + unit, path).stdout
    stacks = collections.Counter()
    blocks = out.split("-----------+-------------------------------------------------------\n")
    for b in blocks[1:]:
        value, frames = None, []
        # lines end at "\n" only (names may hold other line-breaking bytes), and a
        # line that is no frame continues the name before it: a name holding a
        # line break (edge/nul-bytes.pb)
        lines = b.split("\n")
        if lines and lines[-1] == "":
            lines.pop()
        for line in lines:
            if value is None:
                m = VALUE.match(line)
                if m:
                    value = int(m.group(1))
                    frames.append(m.group(2))
            elif line.startswith(" " * 13):
                frames.append(line[13:])
            else:
                frames[-1] += "\n" + line
        if value is None or not frames:
            continue
        frames = [re.sub(r" \((partial-)?inline\)$", "", f) for f in frames]
        stacks[tuple(reversed(frames))] += value
    return {k: v for k, v in stacks.items() if v != 0}


def raw_stacks(raw, ntypes):
    """[{stack: summed value}] per sample type from go tool pprof -raw's output, or
    None when a location has a frame without a function name (named by pprof's
    rules, which -raw does not print)."""
    lines = raw.splitlines()
    i = lines.index("Samples:") + 2 if "Samples:" in lines else len(lines)
    samples = []
    while i < len(lines) and lines[i] != "Locations":
        m = re.match(r"^\s*(-?\d+(?:\s+-?\d+)*): ([\d ]+)$", lines[i])
        if m:
            samples.append(([int(v) for v in m.group(1).split()], [int(x) for x in m.group(2).split()]))
        i += 1
    locs, cur = {}, None
    for line in lines[i + 1:]:
        if line == "Mappings":
            break
        m = re.match(r"^\s*(\d+): 0x[0-9a-f]+ (?:M=\d+ )?(.*)$", line)
        rest = m.group(2) if m else line.strip()
        if m:
            cur = locs[int(m.group(1))] = []
        if not rest:
            if m:
                return None
            continue
        name = re.sub(r" \S*:\d+ s=\d+$", "", rest)
        if not name or name == rest:
            return None
        cur.append(name)
    out = [collections.Counter() for _ in range(ntypes)]
    for values, ids in samples:
        frames = [f for l in ids for f in locs[l]][::-1]
        if frames:
            for t in range(ntypes):
                out[t][tuple(frames)] += values[t]
    return [{k: v for k, v in c.items() if v != 0} for c in out]


TOP = re.compile(r"^\s*(-?\d+)\S*\s+\S+\s+\S+\s+(-?\d+)\S*\s+\S+  (.*)$", re.S)


def go_flat(path, idx, unit):
    out = gopprof("-top", "-nodefraction=0", "-sample_index=%d" % idx, "-unit=" + unit,
                  path).stdout
    flat, on = {}, False
    # a row starts with its five figures: a line break inside a name does not end it
    for line in re.split(r"\n(?= *\S+ +\S+% +\S+% +\S+ +\S+%  )", out):
        if re.search(r"^\s+flat\s+flat%", line, re.M):
            on = True
            continue
        m = on and TOP.match(line.rstrip("\n"))
        if m and int(m.group(1)) != 0:
            name = re.sub(r" \((partial-)?inline\)$", "", m.group(3))
            flat[name] = int(m.group(1))
    return flat


def folded_stacks(text):
    stacks = collections.Counter()
    for line in text.splitlines():
        m = re.match(r"^(.*) (-?\d+)$", line)
        if not m:
            raise ValueError("not a folded line: %r" % line)
        if m.group(1) == "" or line.count("\n"):
            raise ValueError("empty stack: %r" % line)
        key = tuple(m.group(1).split(";"))
        if key in stacks:
            raise ValueError("stack printed twice: %r" % line)
        stacks[key] = int(m.group(2))
    return dict(stacks)


def check_speedscope(doc, ntypes):
    """The structure speedscope's schema requires of a file of sampled profiles."""
    need = lambda c, what: None if c else (_ for _ in ()).throw(ValueError(what))
    need(isinstance(doc, dict), "not an object")
    need(doc.get("$schema") == SCHEMA, "$schema is %r" % doc.get("$schema"))
    frames = doc.get("shared", {}).get("frames")
    need(isinstance(frames, list), "shared.frames is not an array")
    for f in frames:
        need(isinstance(f, dict) and isinstance(f.get("name"), str), "frame without a name: %r" % f)
    profs = doc.get("profiles")
    need(isinstance(profs, list) and len(profs) == ntypes, "profiles: want %d" % ntypes)
    for p in profs:
        need(p.get("type") == "sampled", "type %r" % p.get("type"))
        need(isinstance(p.get("name"), str), "profile without a name")
        need(p.get("unit") in UNITS, "unit %r" % p.get("unit"))
        for k in ("startValue", "endValue"):
            need(isinstance(p.get(k), (int, float)), "%s missing" % k)
        s, w = p.get("samples"), p.get("weights")
        need(isinstance(s, list) and isinstance(w, list) and len(s) == len(w),
             "samples and weights differ in length")
        for st in s:
            need(isinstance(st, list) and all(isinstance(i, int) and 0 <= i < len(frames)
                                              for i in st), "bad sample %r" % st)
        need(all(isinstance(x, (int, float)) and x >= 0 for x in w), "bad weight")
        need(p["endValue"] - p["startValue"] == sum(w), "endValue is not the weights' sum")
    if "activeProfileIndex" in doc:
        need(isinstance(doc["activeProfileIndex"], int) and
             0 <= doc["activeProfileIndex"] < len(profs), "activeProfileIndex out of range")
    for k in ("name", "exporter"):
        need(k not in doc or isinstance(doc[k], str), "%s is not a string" % k)


def check_file(path, label, corpus=False):
    """Returns (checked, failures)."""
    fails, checked = [], 0
    raw = gopprof("-raw", path, check=False)
    if raw.returncode != 0:
        return 0, []
    types = types_of(raw.stdout)
    stacks_of = {}
    from_raw = raw_stacks(raw.stdout, len(types)) if corpus else None
    ss = run([profd, "pprof", "speedscope", path], check=False)
    negative = False
    for idx, (typ, unit) in enumerate(types):
        want = stacks_of[idx] = from_raw[idx] if from_raw else go_stacks(path, idx, unit)
        got = folded_stacks(run([profd, "pprof", "folded", "--sample-index=%d" % idx, path]).stdout)
        want_safe = collections.Counter()
        for k, v in want.items():
            want_safe[tuple(safe(f) for f in k)] += v
        checked += 1
        if got != dict(want_safe):
            only_go = {k: v for k, v in want_safe.items() if got.get(k) != v}
            only_pd = {k: v for k, v in got.items() if want_safe.get(k) != v}
            fails.append("%s [%s]: folded differs: go %d stacks, profd %d; go only %r; profd only %r"
                         % (label, typ, len(want_safe), len(got), list(only_go.items())[:2],
                            list(only_pd.items())[:2]))
        negative |= any(v < 0 for v in want.values())
    if negative:
        # a profile with negative values is refused, with a reason
        checked += 1
        if ss.returncode == 0 or "negative" not in ss.stderr:
            fails.append("%s: speedscope accepted negative values: %s" % (label, ss.stderr))
        return checked, fails
    if ss.returncode != 0:
        return checked + 1, fails + ["%s: profd pprof speedscope failed: %s" % (label, ss.stderr)]
    try:
        doc = json.loads(ss.stdout)
        check_speedscope(doc, len(types))
    except ValueError as e:
        return checked + 1, fails + ["%s: speedscope: %s" % (label, e)]
    frames = [f["name"] for f in doc["shared"]["frames"]]
    for idx, (typ, unit) in enumerate(types):
        p = doc["profiles"][idx]
        checked += 1
        if p["name"] != typ:
            fails.append("%s: profile %d is named %r, not %r" % (label, idx, p["name"], typ))
        stacks = collections.Counter()
        flat = collections.Counter()
        for st, w in zip(p["samples"], p["weights"]):
            stacks[tuple(frames[i] for i in st)] += w
            if st:
                flat[frames[st[-1]]] += w
        want_json = collections.Counter()
        for k, v in stacks_of[idx].items():
            want_json[tuple(in_json(f) for f in k)] += v
        if dict(stacks) != dict(want_json):
            fails.append("%s [%s]: speedscope stacks differ from go tool pprof -traces" % (label, typ))
        if from_raw and idx != doc.get("activeProfileIndex"):
            continue
        want_flat = collections.Counter()
        for k, v in go_flat(path, idx, unit).items():
            want_flat[in_json(k)] += v
        want_flat = dict(want_flat)
        got_flat = {k: v for k, v in flat.items() if v != 0}
        if got_flat != want_flat:
            diff = {k: (want_flat.get(k), got_flat.get(k))
                    for k in set(want_flat) | set(got_flat) if want_flat.get(k) != got_flat.get(k)}
            fails.append("%s [%s]: flat per frame differs from -top (go, profd): %r"
                         % (label, typ, list(diff.items())[:3]))
    return checked, fails


def main():
    known = set()
    with open(os.path.join(here, "known-differences.txt")) as f:
        for line in f:
            known.add(line.split(" ", 1)[0])
    files = []
    for root, _, names in os.walk(os.path.join(data, "profiles")):
        for n in names:
            if n.endswith((".pb", ".pb.gz")):
                p = os.path.join(root, n)
                rel = os.path.relpath(p, data)
                if rel not in known and run([profd, "pprof", "validate", p], check=False).returncode == 0:
                    files.append((p, rel, False))
    ncorpus = 0
    per_type = int(os.environ.get("PD_EXPORT_CORPUS", "5"))
    if os.path.isdir(corpus):
        for root, _, names in os.walk(corpus):
            names = sorted((n for n in names if n.endswith((".pb", ".pb.gz"))),
                           key=lambda n: (len(n), n))
            for n in names[:per_type] if per_type else names:
                p = os.path.join(root, n)
                files.append((p, "corpus/" + os.path.relpath(p, corpus), True))
                ncorpus += 1
    files.sort()
    checked, fails = 0, []
    with concurrent.futures.ThreadPoolExecutor(max_workers=2) as ex:
        for c, f in ex.map(lambda pl: check_file(*pl), files):
            checked += c
            fails += f
    for f in fails:
        print("FAIL:", f)
    print("%d files (%d of the corpus), %d checks, %d failures" % (len(files), ncorpus, checked, len(fails)))
    if checked == 0:
        print("FAIL: nothing was checked")
        return 1
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
