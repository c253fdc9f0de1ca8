#!/usr/bin/python3
"""otlp_client.py: builds the requests profd's push.v1 and OTLP converters read,
from a pprof profile, with Debian's python3-protobuf and modules that Debian's
protoc generates from pkg/ingest/proto/*.proto and pkg/pprof/profile.proto. It is
a client written apart from profd's C code, so that tests/ingest/otlp_test.sh can
check the C converters against it.

  otlp_client.py GEN otlp|connect bin|json|jsonp PPROF OUT [NAME]

GEN is a directory for the generated modules (made when missing). An OTLP request
holds one Profile per sample type of the pprof, in a dictionary built here from
the pprof's tables; a Connect PushRequest holds the pprof's bytes as they are, in
a series named NAME (default process_cpu). bin writes protobuf, json the proto3
JSON form of google.protobuf.json_format (lowerCamelCase names), jsonp the same
with the names of the .proto files.
"""
import gzip
import os
import subprocess
import sys


def generate(gen, root):
    protos = os.path.join(root, "pkg", "ingest", "proto")
    if not os.path.exists(os.path.join(gen, "otlp_profiles_service_pb2.py")):
        os.makedirs(gen, exist_ok=True)
        files = sorted(os.path.join(protos, f) for f in os.listdir(protos) if f.endswith(".proto"))
        subprocess.check_call(["protoc", "-I" + protos, "--python_out=" + gen] + files)
        subprocess.check_call(["protoc", "-I" + os.path.join(root, "pkg", "pprof"),
                               "--python_out=" + gen,
                               os.path.join(root, "pkg", "pprof", "profile.proto")])
    sys.path.insert(0, gen)


class Strings:
    def __init__(self, table):
        self.table = table
        self.index = {}
        self.add("")

    def add(self, s):
        if s not in self.index:
            self.index[s] = len(self.table)
            self.table.append(s)
        return self.index[s]


def to_otlp(prof):
    import otlp_profiles_service_pb2 as svc

    req = svc.ExportProfilesServiceRequest()
    d = req.dictionary
    st = Strings(d.string_table)
    s = lambda i: prof.string_table[i]
    # index 0 of every table is its zero value
    d.mapping_table.add()
    d.function_table.add()
    d.location_table.add()
    d.stack_table.add()
    d.attribute_table.add()
    d.link_table.add()

    def attr(key, value=None, num=None, unit=""):
        a = d.attribute_table.add()
        a.key_strindex = st.add(key)
        if value is not None:
            a.value.string_value = value
        else:
            a.value.int_value = num
            a.unit_strindex = st.add(unit)
        return len(d.attribute_table) - 1

    mapping = {}
    for m in prof.mapping:
        om = d.mapping_table.add()
        om.memory_start = m.memory_start
        om.memory_limit = m.memory_limit
        om.file_offset = m.file_offset
        om.filename_strindex = st.add(s(m.filename))
        if m.build_id:
            om.attribute_indices.append(attr("process.executable.build_id.gnu", s(m.build_id)))
        mapping[m.id] = len(d.mapping_table) - 1
    function = {}
    for f in prof.function:
        of = d.function_table.add()
        of.name_strindex = st.add(s(f.name))
        of.system_name_strindex = st.add(s(f.system_name))
        of.filename_strindex = st.add(s(f.filename))
        of.start_line = f.start_line
        function[f.id] = len(d.function_table) - 1
    location = {}
    for l in prof.location:
        ol = d.location_table.add()
        ol.mapping_index = mapping.get(l.mapping_id, 0)
        ol.address = l.address
        for ln in l.line:
            x = ol.lines.add()
            x.function_index = function[ln.function_id]
            x.line = ln.line
        location[l.id] = len(d.location_table) - 1
    stacks = []
    for smp in prof.sample:
        stk = d.stack_table.add()
        stk.location_indices.extend(location[i] for i in smp.location_id)
        stacks.append(len(d.stack_table) - 1)

    rp = req.resource_profiles.add()
    for k, v in (("service.name", "pyclient"), ("host.name", "h1")):
        kv = rp.resource.attributes.add()
        kv.key = k
        kv.value.string_value = v
    sp = rp.scope_profiles.add()
    sp.scope.name = "otlp_client.py"
    for ti, t in enumerate(prof.sample_type):
        p = sp.profiles.add()
        p.sample_type.type_strindex = st.add(s(t.type))
        p.sample_type.unit_strindex = st.add(s(t.unit))
        if prof.HasField("period_type"):
            p.period_type.type_strindex = st.add(s(prof.period_type.type))
            p.period_type.unit_strindex = st.add(s(prof.period_type.unit))
        p.period = prof.period
        p.time_unix_nano = prof.time_nanos
        p.duration_nano = prof.duration_nanos
        for si, smp in enumerate(prof.sample):
            os_ = p.samples.add()
            os_.stack_index = stacks[si]
            os_.values.append(smp.value[ti])
            for lb in smp.label:
                if lb.str:
                    os_.attribute_indices.append(attr(s(lb.key), s(lb.str)))
                else:
                    os_.attribute_indices.append(attr(s(lb.key), num=lb.num, unit=s(lb.num_unit)))
    return req


def to_connect(raw, name):
    import push_pb2

    req = push_pb2.PushRequest()
    series = req.series.add()
    for k, v in (("__name__", name), ("service_name", "pyclient"), ("host.name", "h1")):
        lp = series.labels.add()
        lp.name = k
        lp.value = v
    smp = series.samples.add()
    smp.raw_profile = raw
    smp.ID = "00000000-0000-0000-0000-000000000001"
    return req


def main():
    if len(sys.argv) not in (6, 7) or sys.argv[2] not in ("otlp", "connect") or \
            sys.argv[3] not in ("bin", "json", "jsonp"):
        sys.stderr.write(__doc__)
        return 2
    gen, kind, form, path, out = sys.argv[1:6]
    name = sys.argv[6] if len(sys.argv) == 7 else "process_cpu"
    generate(gen, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
    from google.protobuf import json_format
    import profile_pb2

    with open(path, "rb") as f:
        raw = f.read()
    if kind == "otlp":
        prof = profile_pb2.Profile()
        prof.ParseFromString(gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw)
        req = to_otlp(prof)
    else:
        req = to_connect(raw, name)
    with open(out, "wb") as f:
        if form == "bin":
            f.write(req.SerializeToString())
        else:
            f.write(json_format.MessageToJson(
                req, preserving_proto_field_name=(form == "jsonp")).encode())
    return 0


if __name__ == "__main__":
    sys.exit(main())
