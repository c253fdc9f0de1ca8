#!/usr/bin/python3
"""tenants_client.py: the query API (querier.v1.QuerierService) of a profd run with
--auth.multitenancy-enabled, through querier_client.py's calls with an
X-Scope-OrgID header. For one tenant it makes the Grafana data source's calls and
checks that they see exactly that tenant's series: the label names (no
__tenant__), the service names, the label sets, and a flame graph of
memory:inuse_space whose total is the one given (the tenant's own profiles);
then that a selector naming __tenant__ is refused.

  tenants_client.py GEN SRC URL TENANT START END SERVICES TOTAL

SERVICES: the tenant's service_name values, comma-separated; TOTAL: the
inuse_space total of its pushed profiles. TENANT "-" sends no header (a user of
the web configuration bound to one tenant). Exits non-zero, saying why.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import querier_client as qc  # noqa: E402


def main():
    gen, src, url, tenant, start, end, services, total = sys.argv[1:9]
    start, end, total = int(start), int(end), int(total)
    want_services = sorted(services.split(","))
    if tenant != "-":
        qc.HEADERS["X-Scope-OrgID"] = tenant
    auth = os.environ.get("PROFD_BASIC_AUTH")
    if auth:
        import base64
        qc.HEADERS["Authorization"] = "Basic " + base64.b64encode(auth.encode()).decode()
    qc.generate(gen, src)
    import types_pb2 as t
    import querier_pb2 as q

    pt = qc.rpc(url, "ProfileTypes", q.ProfileTypesRequest(start=start, end=end), q.ProfileTypesResponse)
    ids = [p.ID for p in pt.profile_types]
    qc.check("memory:inuse_space:bytes:space:bytes" in ids, "%s: ProfileTypes %r" % (tenant, ids))
    ln = qc.rpc(url, "LabelNames", t.LabelNamesRequest(matchers=["{}"], start=start, end=end),
                t.LabelNamesResponse)
    qc.check("__tenant__" not in ln.names and "service_name" in ln.names,
             "%s: LabelNames %r" % (tenant, list(ln.names)))
    lv = qc.rpc(url, "LabelValues", t.LabelValuesRequest(name="service_name", matchers=["{}"], start=start,
                                                        end=end), t.LabelValuesResponse)
    qc.check(sorted(lv.names) == want_services,
             "%s: LabelValues service_name %r, want %r" % (tenant, list(lv.names), want_services))
    tv = qc.rpc(url, "LabelValues", t.LabelValuesRequest(name="__tenant__", start=start, end=end),
                t.LabelValuesResponse)
    qc.check(list(tv.names) == [], "%s: LabelValues __tenant__ %r" % (tenant, list(tv.names)))
    se = qc.rpc(url, "Series", q.SeriesRequest(matchers=['{service_name="shop"}'], start=start, end=end),
                q.SeriesResponse)
    sets = [sorted((l.name, l.value) for l in ls.labels) for ls in se.labels_set]
    qc.check(len(sets) == 1, "%s: Series of shop %r" % (tenant, sets))
    qc.check(all(n != "__tenant__" for s in sets for n, _ in s), "%s: Series shows the tenant" % tenant)
    req = q.SelectMergeStacktracesRequest(profile_typeID="memory:inuse_space:bytes:space:bytes",
                                          label_selector='{service_name="shop"}', start=start, end=end)
    fg = qc.rpc(url, "SelectMergeStacktraces", req, q.SelectMergeStacktracesResponse).flamegraph
    qc.check(fg.total == total, "%s: flame graph total %d, want %d" % (tenant, fg.total, total))
    # the tenant's label is neither matchable nor a way into another tenant
    st, b = qc.call(url, "SelectMergeStacktraces", b'{"profileTypeID":"memory:inuse_space:bytes:space:bytes",'
                    b'"labelSelector":"{__tenant__=\\"team-b\\"}"}', json_body=True)
    qc.check(st == 400 and b"reserved" in b, "%s: a __tenant__ selector answered %d %r" % (tenant, st, b[:200]))
    if qc.FAILS:
        sys.exit(1)
    print("%s: ok (services %s, total %d)" % (tenant, ",".join(want_services), fg.total))


if __name__ == "__main__":
    main()
