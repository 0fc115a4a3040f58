#!/usr/bin/env python3
# Reads what offcpu record --push sent (tests/integration/push.sh): every
# OTLP request a receiver stored, or left in a spool, decoded with code protoc
# generates from otlp_profiles_subset.proto, held to the OpenTelemetry
# profiling group's conformance rules (profcheck's: each table's index 0 its
# zero value, string_table[0] "", every index in bounds, no key twice in an
# attribute list, timestamps inside [time, time + duration), values and
# timestamps of one length, one sample shape in a profile; and the
# dictionary's SHOULDs: nothing twice, nothing unreferenced). Prints, tab
# separated:
#   request FILE PROFILES WINDOW_START WINDOW_END
#   profile ID_HEX START END PID SERVICE
#   resource PID KEY VALUE
#   sample TID THREAD STATE WAKER WAKER_FUNCTION NS LEAF_FUNCTIONS(;-joined, leaf first)
# and exits 1 (after printing every violation) when a rule is broken.
#   push_check.py otlp GENDIR RECEIVED_DIR    the receiver's NNNNNN.body/.json
#   push_check.py spool GENDIR SPOOL_DIR      a --push-spool's files
import glob
import gzip
import json
import os
import sys

mode, gendir, src = sys.argv[1:4]
sys.path.insert(0, gendir)
import otlp_profiles_subset_pb2 as pb  # noqa: E402

errors = []


def err(where, msg):
    errors.append("%s: %s" % (where, msg))


def check_index(where, n, i):
    if i < 0 or i >= n:
        err(where, "index %d out of range [0, %d)" % (i, n))
        return False
    return True


def check_request(where, req):
    d = req.dictionary
    strs = list(d.string_table)
    if not strs or strs[0] != "":
        err(where, "string_table[0] is not the empty string")
    if len(set(strs)) != len(strs):
        err(where, "a string twice in string_table")
    tables = {
        "mapping_table": d.mapping_table, "location_table": d.location_table,
        "function_table": d.function_table, "link_table": d.link_table,
        "attribute_table": d.attribute_table, "stack_table": d.stack_table,
    }
    for name, t in tables.items():
        if len(t) == 0 or t[0].ByteSize() != 0:
            err(where, "%s[0] is not the zero value" % name)
        ser = [e.SerializeToString(deterministic=True) for e in t]
        if len(set(ser)) != len(ser):
            err(where, "an entry twice in %s" % name)
    used = {k: set([0]) for k in ["map", "loc", "fn", "attr", "stack", "str"]}

    def attrs(w, idx):
        keys = set()
        for i in idx:
            if check_index(w, len(d.attribute_table), i):
                used["attr"].add(i)
                k = d.attribute_table[i].key_strindex
                if check_index(w + " key", len(strs), k):
                    if strs[k] in keys:
                        err(w, "key %r twice" % strs[k])
                    keys.add(strs[k])

    for i, m in enumerate(d.mapping_table):
        w = "%s mapping_table[%d]" % (where, i)
        if check_index(w, len(strs), m.filename_strindex):
            used["str"].add(m.filename_strindex)
        attrs(w, m.attribute_indices)
        if not (m.memory_start == 0 and m.memory_limit == 0) and not m.memory_start < m.memory_limit:
            err(w, "memory_start >= memory_limit")
    for i, loc in enumerate(d.location_table):
        w = "%s location_table[%d]" % (where, i)
        if check_index(w, len(d.mapping_table), loc.mapping_index):
            used["map"].add(loc.mapping_index)
        attrs(w, loc.attribute_indices)
        for ln in loc.lines:
            if check_index(w, len(d.function_table), ln.function_index):
                used["fn"].add(ln.function_index)
            if ln.line < 0 or ln.column < 0:
                err(w, "a negative line or column")
    for i, f in enumerate(d.function_table):
        w = "%s function_table[%d]" % (where, i)
        for s in (f.name_strindex, f.system_name_strindex, f.filename_strindex):
            if check_index(w, len(strs), s):
                used["str"].add(s)
        if f.start_line < 0:
            err(w, "a negative start_line")
    for i, a in enumerate(d.attribute_table):
        w = "%s attribute_table[%d]" % (where, i)
        for s in (a.key_strindex, a.unit_strindex):
            if check_index(w, len(strs), s):
                used["str"].add(s)
    for i, st in enumerate(d.stack_table):
        for li in st.location_indices:
            if check_index("%s stack_table[%d]" % (where, i), len(d.location_table), li):
                used["loc"].add(li)
    for i, link in enumerate(d.link_table[1:]):
        if len(link.trace_id) != 16 or len(link.span_id) != 8:
            err(where, "link_table[%d] ids of the wrong length" % (i + 1))
    if not req.resource_profiles:
        err(where, "no resource_profiles")
    out = []
    for ri, rp in enumerate(req.resource_profiles):
        res = {}
        for kv in rp.resource.attributes:
            v = kv.value
            res[kv.key] = v.string_value if v.WhichOneof("value") == "string_value" else v.int_value
        if not rp.scope_profiles:
            err(where, "resource_profiles[%d] has no scope_profiles" % ri)
        for sp in rp.scope_profiles:
            if not sp.profiles:
                err(where, "scope_profiles without profiles")
            for prof in sp.profiles:
                w = "%s resource_profiles[%d]" % (where, ri)
                for s in (prof.sample_type.type_strindex, prof.sample_type.unit_strindex,
                          prof.period_type.type_strindex, prof.period_type.unit_strindex):
                    if check_index(w + " value type", len(strs), s):
                        used["str"].add(s)
                if (strs[prof.sample_type.type_strindex], strs[prof.sample_type.unit_strindex]) != ("off_cpu", "nanoseconds"):
                    err(w, "sample type is not off_cpu/nanoseconds")
                attrs(w, prof.attribute_indices)
                start, end = prof.time_unix_nano, prof.time_unix_nano + prof.duration_nano
                if len(prof.profile_id) != 16 or prof.profile_id == bytes(16):
                    err(w, "no profile_id")
                out.append(("profile", prof.profile_id.hex(), start, end, res.get("process.pid", ""),
                            res.get("service.name", "")))
                for k, v in res.items():
                    out.append(("resource", res.get("process.pid", ""), k, v))
                shape = None
                for si, s in enumerate(prof.samples):
                    ws = "%s sample[%d]" % (w, si)
                    if check_index(ws, len(d.stack_table), s.stack_index):
                        used["stack"].add(s.stack_index)
                    check_index(ws + " link", len(d.link_table), s.link_index)
                    attrs(ws, s.attribute_indices)
                    vals, ts = list(s.values), list(s.timestamps_unix_nano)
                    if not vals and not ts:
                        err(ws, "neither values nor timestamps")
                    if vals and ts and len(vals) != len(ts):
                        err(ws, "%d values and %d timestamps" % (len(vals), len(ts)))
                    this = (bool(vals), bool(ts))
                    if shape is None:
                        shape = this
                    elif shape != this:
                        err(ws, "another shape than the profile's first sample")
                    if not ts and len(vals) != 1:
                        err(ws, "values must have one element without timestamps")
                    for t in ts:
                        if t < start or t >= end:
                            err(ws, "timestamp %d outside [%d, %d)" % (t, start, end))
                    if any(v < 0 for v in vals):
                        err(ws, "a negative value")
                    a = {}
                    for i in s.attribute_indices:
                        if 0 <= i < len(d.attribute_table):
                            kv = d.attribute_table[i]
                            v = kv.value
                            a[strs[kv.key_strindex]] = (v.string_value if v.WhichOneof("value") == "string_value"
                                                        else v.int_value)
                    st = d.stack_table[s.stack_index] if 0 <= s.stack_index < len(d.stack_table) else None
                    leafs = []
                    for li in (st.location_indices if st else []):
                        loc = d.location_table[li]
                        for ln in loc.lines:
                            leafs.append(strs[d.function_table[ln.function_index].name_strindex])
                    out.append(("sample", a.get("thread.id", ""), a.get("thread.name", ""),
                                a.get("linux.sched.state", ""), a.get("linux.sched.waker.thread.name", ""),
                                a.get("linux.sched.waker.function", ""), sum(vals), ";".join(leafs)))
    for key, table in (("map", d.mapping_table), ("loc", d.location_table), ("fn", d.function_table),
                       ("attr", d.attribute_table), ("stack", d.stack_table)):
        if len(used[key]) != len(table):
            err(where, "%d unreferenced entries in the %s table" % (len(table) - len(used[key]), key))
    return out


def load_received():
    for body in sorted(glob.glob(os.path.join(src, "*.body"))):
        meta = json.load(open(body[:-5] + ".json"))
        h = meta["headers"]
        if meta["path"] != "/v1development/profiles":
            err(body, "posted to %s" % meta["path"])
        if h.get("otlp-profiles-development-version") != "1":
            err(body, "no OTLP-Profiles-Development-Version: 1")
        if h.get("content-type") != "application/x-protobuf" or h.get("content-encoding") != "gzip":
            err(body, "content type %s, encoding %s" % (h.get("content-type"), h.get("content-encoding")))
        yield body, gzip.decompress(open(body, "rb").read())


def load_spool():
    for f in sorted(glob.glob(os.path.join(src, "*.otlp"))):
        data = open(f, "rb").read()
        nl = 0
        for _ in range(3):
            nl = data.index(b"\n", nl) + 1
        yield f, gzip.decompress(data[nl:])


for name, raw in (load_received() if mode == "otlp" else load_spool()):
    req = pb.ExportProfilesServiceRequest()
    req.ParseFromString(raw)
    if req.SerializeToString() != raw and len(req.SerializeToString()) != len(raw):
        err(name, "does not encode back to its size: fields protoc's code does not know")
    rows = check_request(os.path.basename(name), req)
    profiles = [r for r in rows if r[0] == "profile"]
    print("request\t%s\t%d\t%d\t%d" % (os.path.basename(name), len(profiles),
                                        min(p[2] for p in profiles) if profiles else 0,
                                        max(p[3] for p in profiles) if profiles else 0))
    for r in rows:
        print("\t".join(str(x) for x in r))
for e in errors:
    print("violation: " + e, file=sys.stderr)
sys.exit(1 if errors else 0)
