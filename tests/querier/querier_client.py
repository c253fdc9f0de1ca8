#!/usr/bin/python3
"""querier_client.py: a client of profd's querier.v1.QuerierService (Pyroscope's
query API over Connect), written apart from profd's C code with Debian's
python3-protobuf and modules that Debian's protoc generates from
pkg/ingest/proto/*.proto. tests/integration/querier.sh runs it against a running
profd; it makes the calls Grafana's Pyroscope data source makes, in its order, and
writes what `go tool pprof` is to be compared with.

  querier_client.py GEN SRC URL OUT START END

GEN: a directory for the generated modules; SRC: the source tree; URL: profd's
base URL; OUT: a directory for the answers; START, END: the range in ms.
Exits non-zero, saying why, when an answer is not what the protocol says.
"""
import json
import os
import subprocess
import sys
import urllib.error
import urllib.request


def generate(gen, root):
    protos = os.path.join(root, "pkg", "ingest", "proto")
    os.makedirs(gen, exist_ok=True)
    files = [os.path.join(protos, f) for f in ("types.proto", "querier.proto", "google_profile.proto")]
    subprocess.check_call(["protoc", "-I" + protos, "--python_out=" + gen] + files)
    sys.path.insert(0, gen)


FAILS = []
# headers every call carries (tenants_client.py sets X-Scope-OrgID)
HEADERS = {}


def check(cond, what):
    if not cond:
        FAILS.append(what)
        print("FAIL " + what)


def call(url, method, body, json_body=False, ctype=None):
    """POSTs a Connect unary call; returns (status, bytes)."""
    req = urllib.request.Request(url + "/querier.v1.QuerierService/" + method, data=body,
                                 method="POST")
    req.add_header("Content-Type", ctype or ("application/json" if json_body else "application/proto"))
    req.add_header("Connect-Protocol-Version", "1")
    for k, v in HEADERS.items():
        req.add_header(k, v)
    try:
        with urllib.request.urlopen(req, timeout=60) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


def rpc(url, method, msg, resp_type):
    """The call in protobuf and in JSON: both answers must be 200 and the same message."""
    from google.protobuf import json_format
    st, b = call(url, method, msg.SerializeToString())
    check(st == 200, "%s (proto) answered %d: %r" % (method, st, b[:300]))
    resp = resp_type()
    resp.ParseFromString(b)
    st, j = call(url, method, json_format.MessageToJson(msg).encode(), json_body=True)
    check(st == 200, "%s (json) answered %d: %r" % (method, st, j[:300]))
    jr = resp_type()
    json_format.Parse(j, jr)
    check(jr == resp, "%s: the JSON answer differs from the protobuf one" % method)
    return resp


def connect_error(url, method, body, want_status, want_code, **kw):
    st, b = call(url, method, body, **kw)
    check(st == want_status, "%s: want HTTP %d, got %d: %r" % (method, want_status, st, b[:300]))
    try:
        e = json.loads(b)
    except ValueError:
        check(False, "%s: the error is not Connect's JSON: %r" % (method, b[:300]))
        return
    check(e.get("code") == want_code and e.get("message"),
          "%s: want code %s with a message, got %r" % (method, want_code, e))


def flame_selfs(fg, diff=False):
    """Per function: its self value summed over the flame graph, and the total."""
    n = 7 if diff else 4
    out = [{}, {}] if diff else [{}]
    for lv in fg.levels:
        v = list(lv.values)
        check(len(v) % n == 0, "a level has %d values, not a multiple of %d" % (len(v), n))
        for i in range(0, len(v), n):
            name = fg.names[v[i + n - 1]]
            if name == "total":
                continue
            for side in range(len(out)):
                s = v[i + 2 + 3 * side]
                if s:
                    out[side][name] = out[side].get(name, 0) + s
    return out


def tree_selfs(b):
    """Per function: its self value summed over a tree in Pyroscope's tree format
    (depth first from a nameless root: uvarint name length, name, uvarint self,
    uvarint children count), the total, and the number of named nodes."""
    pos = 0

    def uvarint():
        nonlocal pos
        v, shift = 0, 0
        while True:
            c = b[pos]
            pos += 1
            v |= (c & 0x7f) << shift
            shift += 7
            if c < 0x80:
                return v

    selfs, total, nodes, pending = {}, 0, 0, 1
    while pending:
        pending -= 1
        n = uvarint()
        name = b[pos:pos + n].decode()
        pos += n
        v = uvarint()
        pending += uvarint()
        if name:
            nodes += 1
        total += v
        if v:
            selfs[name] = selfs.get(name, 0) + v
    check(pos == len(b), "the tree has %d bytes after its last node" % (len(b) - pos))
    return selfs, total, nodes


def check_levels(fg, what):
    """Every node lies within its level's extent and starts after the previous one."""
    prev_end = []
    for d, lv in enumerate(fg.levels):
        v = list(lv.values)
        x = 0
        for i in range(0, len(v), 4):
            check(v[i] >= 0, "%s: level %d has a negative gap" % (what, d))
            x += v[i]
            check(v[i + 1] >= v[i + 2] >= 0, "%s: level %d: self above total" % (what, d))
            x += v[i + 1]
        check(x <= fg.total, "%s: level %d is %d wide, the total is %d" % (what, d, x, fg.total))


def full_nodes(fg):
    return sum(len(lv.values) // 4 for lv in fg.levels) - 1


def main():
    gen, src, url, out, start, end = sys.argv[1:7]
    start, end = int(start), int(end)
    generate(gen, src)
    import types_pb2 as t
    import querier_pb2 as q
    import google_profile_pb2 as gp

    # 1. the health check and the query editor: ProfileTypes, LabelNames, LabelValues
    pt = rpc(url, "ProfileTypes", q.ProfileTypesRequest(start=start, end=end), q.ProfileTypesResponse)
    ids = [p.ID for p in pt.profile_types]
    print("profile types:", ids)
    for want in ("process_cpu:cpu:nanoseconds:cpu:nanoseconds", "process_cpu:samples:count:cpu:nanoseconds",
                 "memory:inuse_space:bytes:space:bytes", "memory:alloc_objects:count:space:bytes"):
        check(want in ids, "ProfileTypes lacks " + want)
    check(ids == sorted(ids), "ProfileTypes is not sorted by id")
    for p in pt.profile_types:
        check(p.ID == ":".join([p.name, p.sample_type, p.sample_unit, p.period_type, p.period_unit]),
              "profile type %s does not match its fields" % p.ID)
    # without a range: every profile type of the store
    pt0 = rpc(url, "ProfileTypes", q.ProfileTypesRequest(), q.ProfileTypesResponse)
    check([p.ID for p in pt0.profile_types] == ids, "ProfileTypes without a range differs")

    ln = rpc(url, "LabelNames", t.LabelNamesRequest(matchers=["{}"], start=start, end=end),
             t.LabelNamesResponse)
    check("service_name" in ln.names and "job" in ln.names, "LabelNames: %r" % list(ln.names))
    lv = rpc(url, "LabelValues", t.LabelValuesRequest(name="service_name", matchers=["{}"], start=start,
                                                     end=end), t.LabelValuesResponse)
    check(list(lv.names) == ["scraped", "shop"], "LabelValues service_name: %r" % list(lv.names))
    lv = rpc(url, "LabelValues",
             t.LabelValuesRequest(name="instance", matchers=['{service_name="scraped"}'], start=start, end=end),
             t.LabelValuesResponse)
    check(list(lv.names) == ["a:1"], "LabelValues instance of scraped: %r" % list(lv.names))
    # Profiles Drilldown's form: the profile type as a __profile_type__ matcher
    for ptid, want in (("process_cpu:cpu:nanoseconds:cpu:nanoseconds", ["scraped", "shop"]),
                       ("memory:inuse_space:bytes:space:bytes", ["scraped"])):
        lv = rpc(url, "LabelValues", t.LabelValuesRequest(
            name="service_name", matchers=['{__profile_type__="%s"}' % ptid], start=start, end=end),
            t.LabelValuesResponse)
        check(list(lv.names) == want, "LabelValues of %s: %r" % (ptid, list(lv.names)))
    # JSON with the .proto's own field names is read too
    st, b = call(url, "LabelValues", b'{"name":"service_name","matchers":["{}"],"start":"%d","end":%d}'
                 % (start, end), json_body=True)
    check(st == 200 and json.loads(b).get("names") == ["scraped", "shop"], "LabelValues, JSON: %r" % b)
    se = rpc(url, "Series", q.SeriesRequest(matchers=['{service_name="scraped"}'], start=start, end=end),
             q.SeriesResponse)
    check(len(se.labels_set) == 2, "Series of scraped: %d label sets" % len(se.labels_set))
    for ls in se.labels_set:
        d = {p.name: p.value for p in ls.labels}
        check(d.get("service_name") == "scraped" and d.get("job") == "scraped",
              "Series: service_name is not derived from job: %r" % d)

    # 2. the flame graph: SelectMergeStacktraces of shop's CPU profiles
    cpu = "process_cpu:cpu:nanoseconds:cpu:nanoseconds"
    req = q.SelectMergeStacktracesRequest(profile_typeID=cpu, label_selector='{service_name="shop"}',
                                          start=start, end=end, max_nodes=1 << 40)
    fg = rpc(url, "SelectMergeStacktraces", req, q.SelectMergeStacktracesResponse).flamegraph
    check_levels(fg, "shop")
    check(fg.names[0] == "total", "names[0] is %r" % fg.names[0])
    (selfs,) = flame_selfs(fg)
    with open(os.path.join(out, "flame_shop.txt"), "w") as f:
        f.write("total %d\n" % fg.total)
        for k in sorted(selfs):
            f.write("%s %d\n" % (k, selfs[k]))
    # the tree format: the same per-function selfs and total
    req.format = q.PROFILE_FORMAT_TREE
    tr = rpc(url, "SelectMergeStacktraces", req, q.SelectMergeStacktracesResponse)
    check(not tr.HasField("flamegraph"), "PROFILE_FORMAT_TREE answered a flame graph too")
    tselfs, ttotal, tnodes = tree_selfs(tr.tree)
    check(tselfs == selfs and ttotal == fg.total,
          "the tree's selfs or total (%d) differ from the flame graph's (%d)" % (ttotal, fg.total))
    req.max_nodes = 5
    tr = rpc(url, "SelectMergeStacktraces", req, q.SelectMergeStacktracesResponse)
    tselfs, ttotal, tnodes = tree_selfs(tr.tree)
    check(ttotal == fg.total and "other" in tselfs and tnodes < full_nodes(fg),
          "a tree of max_nodes 5: total %d (want %d), %d nodes, selfs %r" % (ttotal, fg.total, tnodes, tselfs))
    req.format = q.PROFILE_FORMAT_UNSPECIFIED
    # max_nodes: at most that many nodes, the rest in "other", the total kept
    req.max_nodes = 5
    small = rpc(url, "SelectMergeStacktraces", req, q.SelectMergeStacktracesResponse).flamegraph
    # kept: every node but the root and "other": at most 5
    kept = [lv.values[i + 1] for d, lv in enumerate(small.levels) if d
            for i in range(0, len(lv.values), 4) if small.names[lv.values[i + 3]] != "other"]
    full = sum(len(lv.values) // 4 for lv in fg.levels) - 1
    check(kept and len(kept) <= 5 and len(kept) < full,
          "max_nodes 5 kept %d nodes (%d without it): %r" % (len(kept), full, kept))
    check("other" in small.names, "max_nodes 5: no other node")
    check(small.total == fg.total, "max_nodes changed the total")
    # a selector of the derived service_name: scraped series are found by job
    req2 = q.SelectMergeStacktracesRequest(profile_typeID=cpu, label_selector='{service_name="scraped"}',
                                           start=start, end=end)
    fg2 = rpc(url, "SelectMergeStacktraces", req2, q.SelectMergeStacktracesResponse).flamegraph
    (selfs2,) = flame_selfs(fg2)
    with open(os.path.join(out, "flame_scraped.txt"), "w") as f:
        f.write("total %d\n" % fg2.total)
        for k in sorted(selfs2):
            f.write("%s %d\n" % (k, selfs2[k]))

    # 3. SelectMergeProfile: a pprof of the sample type
    mp = gp.Profile()
    st, b = call(url, "SelectMergeProfile",
                 q.SelectMergeProfileRequest(profile_typeID=cpu, label_selector='{service_name="shop"}',
                                             start=start, end=end).SerializeToString())
    check(st == 200, "SelectMergeProfile answered %d: %r" % (st, b[:300]))
    mp.ParseFromString(b)
    check(len(mp.sample_type) == 1 and mp.string_table[mp.sample_type[0].type] == "cpu",
          "SelectMergeProfile: sample types %r" % [mp.string_table[x.type] for x in mp.sample_type])
    with open(os.path.join(out, "merged.pb"), "wb") as f:
        f.write(b)
    from google.protobuf import json_format
    st, j = call(url, "SelectMergeProfile",
                 json_format.MessageToJson(q.SelectMergeProfileRequest(
                     profile_typeID=cpu, label_selector='{service_name="shop"}', start=start, end=end)).encode(),
                 json_body=True)
    jp = gp.Profile()
    json_format.Parse(j, jp)
    check(st == 200 and jp == mp, "SelectMergeProfile: the JSON answer differs")

    # 4. Diff: shop against scraped
    # (profd runs with --query.max-flamegraph-nodes=1000000: nothing is cut here)
    req2.max_nodes = 1 << 40
    d = rpc(url, "Diff", q.DiffRequest(left=q.SelectMergeStacktracesRequest(
        profile_typeID=cpu, label_selector='{service_name="shop"}', start=start, end=end,
        max_nodes=1 << 40), right=req2), q.DiffResponse).flamegraph
    check(d.leftTicks == fg.total and d.rightTicks == fg2.total and d.total == fg.total + fg2.total,
          "Diff ticks %d %d %d, want %d %d" % (d.leftTicks, d.rightTicks, d.total, fg.total, fg2.total))
    dl, dr = flame_selfs(d, diff=True)
    check(dl == selfs, "Diff: the left side's selfs differ from SelectMergeStacktraces'")
    check(dr == selfs2, "Diff: the right side's selfs differ from SelectMergeStacktraces'")

    # 5. SelectSeries: written for the comparison with /prometheus
    ss = rpc(url, "SelectSeries", q.SelectSeriesRequest(
        profile_typeID=cpu, label_selector='{service_name="shop"}', start=start, end=end, step=60,
        group_by=["service_name"]), q.SelectSeriesResponse)
    with open(os.path.join(out, "series.json"), "w") as f:
        json.dump([{"labels": {p.name: p.value for p in s.labels},
                    "points": [[p.timestamp, p.value] for p in s.points]} for s in ss.series], f)
    all_ = rpc(url, "SelectSeries", q.SelectSeriesRequest(
        profile_typeID=cpu, label_selector="{}", start=start, end=end, step=60,
        group_by=["service_name"]), q.SelectSeriesResponse)
    check([s.labels[0].value for s in all_.series] == ["scraped", "shop"],
          "SelectSeries by service_name: %r" % [list(s.labels) for s in all_.series])
    lim = rpc(url, "SelectSeries", q.SelectSeriesRequest(
        profile_typeID=cpu, label_selector="{}", start=start, end=end, step=60,
        group_by=["service_name"], limit=1), q.SelectSeriesResponse)
    sums = {s.labels[0].value: sum(p.value for p in s.points) for s in all_.series}
    check(len(lim.series) == 1 and lim.series[0].labels[0].value == max(sums, key=sums.get),
          "SelectSeries limit 1 keeps the series of the largest sum: %r of %r" % (lim, sums))
    one = rpc(url, "SelectSeries", q.SelectSeriesRequest(
        profile_typeID=cpu, label_selector="{}", start=start, end=end, step=60), q.SelectSeriesResponse)
    check(len(one.series) == 1 and not one.series[0].labels, "SelectSeries without group_by: one series")

    # 6. what must fail, in Connect's error shape
    connect_error(url, "NoSuchMethod", b"", 404, "unimplemented")
    connect_error(url, "LabelNames", b"\x0a\xff\xff\xff", 400, "invalid_argument")
    connect_error(url, "SelectMergeStacktraces", b"{\"profileTypeID\":", 400, "invalid_argument", json_body=True)
    connect_error(url, "LabelNames", b"x", 415, "invalid_argument", ctype="text/plain")
    connect_error(url, "SelectMergeStacktraces",
                  q.SelectMergeStacktracesRequest(profile_typeID="nocolons", label_selector="{}").SerializeToString(),
                  400, "invalid_argument")
    connect_error(url, "SelectMergeStacktraces",
                  q.SelectMergeStacktracesRequest(profile_typeID=cpu, label_selector="{bad",
                                                  start=start, end=end).SerializeToString(),
                  400, "invalid_argument")
    connect_error(url, "SelectMergeStacktraces",
                  q.SelectMergeStacktracesRequest(profile_typeID=cpu, label_selector="{}", start=1,
                                                  end=end).SerializeToString(), 400, "invalid_argument")
    connect_error(url, "SelectSeries",
                  q.SelectSeriesRequest(profile_typeID=cpu, label_selector="{}", start=start, end=end,
                                        step=0.001).SerializeToString(), 400, "invalid_argument")
    connect_error(url, "SelectSeries",
                  q.SelectSeriesRequest(profile_typeID=cpu, label_selector="{}", start=1, end=end,
                                        step=60).SerializeToString(), 400, "invalid_argument")
    # a selector matching nothing: an empty flame graph, not an error
    e = rpc(url, "SelectMergeStacktraces", q.SelectMergeStacktracesRequest(
        profile_typeID=cpu, label_selector='{service_name="none"}', start=start, end=end),
        q.SelectMergeStacktracesResponse).flamegraph
    check(e.total == 0, "no series: total %d" % e.total)

    if FAILS:
        print("%d checks failed" % len(FAILS))
        sys.exit(1)
    print("querier client: all checks passed")


if __name__ == "__main__":
    main()
