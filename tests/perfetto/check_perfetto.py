#!/usr/bin/env python3
"""check_perfetto.py - a decoded Perfetto trace against the run's calls.

usage: check_perfetto.py DECODED RUN_JSON CHROME_JSON [--ranks 0,2] [--include RE]
                         [--counters OUT_JSON]

DECODED is `protoc --decode=perfetto.protos.Trace` text of our .pftrace, RUN_JSON the
run's JSON profile (the calls: rank, region, start and end ns, ids), CHROME_JSON its Chrome
trace with every rank (the lane each call is on, by its thread_name). Checks that the
slices are exactly the calls, each on its rank's process and its lane's track, that the
BEGIN and END events of every track nest in the order written, and that names are
interned in each block before use. Prints the first problems and exits 1 on any.
--counters writes the counter tracks' values, [[pid, name, timestamp, value], ...].
"""
import codecs
import gzip
import json
import re
import sys


def parse_text(text):
    """protoc's text format -> nested dicts of lists."""
    root = {}
    stack = [root]
    for line in text.splitlines():
        line = line.strip()
        if not line:
            continue
        if line == "}":
            stack.pop()
            continue
        if line.endswith("{"):
            node = {}
            stack[-1].setdefault(line[:-1].strip(), []).append(node)
            stack.append(node)
            continue
        key, _, val = line.partition(": ")
        if val.startswith('"'):
            val = codecs.escape_decode(val[1:-1].encode("ascii"))[0].decode("utf-8")
        stack[-1].setdefault(key, []).append(val)
    return root


def one(d, key, default=None):
    v = d.get(key)
    return v[0] if v else default


def load_json(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8") as f:
        return json.load(f)


def main(argv):
    decoded, run_path, chrome_path = argv[1:4]
    ranks = None
    include = None
    counters_out = None
    rest = argv[4:]
    while rest:
        if rest[0] == "--ranks":
            ranks = [int(x) for x in rest[1].split(",")]
        elif rest[0] == "--include":
            include = re.compile(rest[1])
        elif rest[0] == "--counters":
            counters_out = rest[1]
        rest = rest[2:]
    problems = []

    def bad(msg):
        if len(problems) < 20:
            problems.append(msg)

    run = load_json(run_path)
    chrome = load_json(chrome_path)
    if ranks is None:
        ranks = list(range(run["num_ranks"]))
    # The expected slices: (rank, name, start, end, lane, call_index, extras).
    lane_name = {}
    for e in chrome["traceEvents"]:
        if e.get("ph") == "M" and e["name"] == "thread_name":
            lane_name[(e["pid"], e["tid"])] = e["args"]["name"]
    lane_of = {}
    for e in chrome["traceEvents"]:
        if e.get("ph") == "X":
            a = e["args"]
            lane_of[(a["rank"], e["name"], a["call_index"])] = lane_name[(e["pid"], e["tid"])]
    expected = []
    for r in run["regions"]:
        if "start_times_ns" not in r or r["rank"] not in ranks:
            continue
        if include is not None and not include.match(r["name"]):
            continue
        for i, (s, e) in enumerate(zip(r["start_times_ns"], r["end_times_ns"])):
            extra = {}
            if "call_ids" in r and "parent_ids" in r:
                extra["call_id"] = r["call_ids"][i]
                extra["parent_id"] = r["parent_ids"][i]
            if "gpu_durations_ns" in r:
                extra["gpu_duration"] = r["gpu_durations_ns"][i] / 1e9
            if "task_ids" in r and "await_ns" in r:
                extra["await_duration"] = r["await_ns"][i] / 1e9
            lane = lane_of.get((r["rank"], r["name"], i))
            expected.append((r["rank"], r["name"], s, e, lane, i, tuple(sorted(extra.items()))))

    trace = parse_text(open(decoded, encoding="ascii").read())
    tracks = {}  # uuid -> (pid, name) of the lane's track
    processes = {}  # uuid -> pid
    interned = {}  # sequence -> {"names": {}, "anns": {}}
    open_slices = {}  # uuid -> stack of (name, start, annotations)
    last_ts = {}
    got = []
    counters = []
    counter_tracks = {}  # uuid -> (pid, name)
    seen_ranks = []
    for pk in trace.get("packet", []):
        seq = int(one(pk, "trusted_packet_sequence_id", "0"))
        if seq == 0:
            bad("a packet without a sequence id")
        if "interned_data" in pk:
            if int(one(pk, "sequence_flags", "0")) != 1:
                bad("interned data without SEQ_INCREMENTAL_STATE_CLEARED")
            idata = pk["interned_data"][0]
            state = {"names": {}, "anns": {}}
            for n in idata.get("event_names", []):
                state["names"][int(one(n, "iid"))] = one(n, "name")
            for n in idata.get("debug_annotation_names", []):
                state["anns"][int(one(n, "iid"))] = one(n, "name")
            interned[seq] = state
        elif seq not in interned:
            bad("sequence %d: a packet before its state was cleared" % seq)
        if "track_descriptor" in pk:
            td = pk["track_descriptor"][0]
            uuid = int(one(td, "uuid"))
            if "process" in td:
                pid = int(one(td["process"][0], "pid"))
                if one(td["process"][0], "process_name") != "rank %d" % pid:
                    bad("process %d named %r" % (pid, one(td["process"][0], "process_name")))
                processes[uuid] = pid
                seen_ranks.append(pid)
            elif "counter" in td:
                parent = int(one(td, "parent_uuid", "0"))
                if parent not in processes:
                    bad("counter %d: parent %d is no process track" % (uuid, parent))
                counter_tracks[uuid] = (processes.get(parent), one(td, "name"))
            elif "thread" in td:
                th = td["thread"][0]
                tracks[uuid] = (int(one(th, "pid")), one(th, "thread_name"))
            else:  # an overlap track: a child of its process's track
                parent = int(one(td, "parent_uuid", "0"))
                if parent not in processes:
                    bad("track %d: parent %d is no process track" % (uuid, parent))
                name = re.sub(r" \(overlap \d+\)$", "", one(td, "name", ""))
                tracks[uuid] = (processes.get(parent), name)
        if "track_event" in pk:
            ev = pk["track_event"][0]
            uuid = int(one(ev, "track_uuid", "0"))
            ts = int(one(pk, "timestamp"))
            if one(ev, "type") == "TYPE_COUNTER" and uuid in counter_tracks:
                pid, name = counter_tracks[uuid]
                counters.append([pid, name, ts, int(one(ev, "counter_value"))])
                continue
            if uuid not in tracks:
                bad("an event on track %d, not described before" % uuid)
                continue
            if ts < last_ts.get(uuid, ts):
                bad("track %d: time goes back to %d" % (uuid, ts))
            last_ts[uuid] = ts
            st = open_slices.setdefault(uuid, [])
            kind = one(ev, "type")
            if kind == "TYPE_SLICE_BEGIN":
                state = interned.get(seq, {"names": {}, "anns": {}})
                name = state["names"].get(int(one(ev, "name_iid", "0")))
                if name is None:
                    bad("a slice name not interned in its block")
                anns = {}
                for a in ev.get("debug_annotations", []):
                    key = state["anns"].get(int(one(a, "name_iid")))
                    val = one(a, "int_value")
                    anns[key] = int(val) if val is not None else float(one(a, "double_value"))
                st.append((name, ts, anns))
            elif kind == "TYPE_SLICE_END":
                if not st:
                    bad("track %d: an END with no open slice at %d" % (uuid, ts))
                    continue
                name, start, anns = st.pop()
                pid, lane = tracks[uuid]
                index = anns.pop("call_index", None)
                got.append((pid, name, start, ts, lane, index, tuple(sorted(anns.items()))))
            else:
                bad("unexpected event type %s" % kind)
    for uuid, st in open_slices.items():
        if st:
            bad("track %d: %d slices never end" % (uuid, len(st)))
    if seen_ranks != ranks:
        bad("process tracks of ranks %s, expected %s" % (seen_ranks, ranks))
    if sorted(got, key=repr) != sorted(expected, key=repr):
        g, x = set(got), set(expected)
        for s in sorted(g - x, key=repr)[:5]:
            bad("unexpected slice %r" % (s,))
        for s in sorted(x - g, key=repr)[:5]:
            bad("missing slice %r" % (s,))
        if len(got) != len(expected):
            bad("%d slices, expected %d" % (len(got), len(expected)))
    if counters_out is not None:
        with open(counters_out, "w") as f:
            json.dump(counters, f)
    for p in problems:
        print("check_perfetto: " + p, file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
