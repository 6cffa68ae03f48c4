#!/usr/bin/env python3
"""check_perfetto.py - a decoded Perfetto trace against the run's calls.

usage: check_perfetto.py DECODED RUN_JSON CHROME_JSON [--ranks 0,2] [--include RE]
                         [--counters OUT_JSON]
       check_perfetto.py --expand TRACE OUT

--expand writes TRACE with its compressed_packets expanded in place (zlib streams of
whole packets, each packet under 512 KB, as Perfetto's reader takes them) to OUT, for
protoc, and fails unless every run of packets is compressed and well formed.

DECODED is `protoc --decode=perfetto.protos.Trace` text of our .pftrace, RUN_JSON the
run's JSON profile (the calls: rank, region, start and end ns, ids), CHROME_JSON its Chrome
trace with every rank (the lane each call is on, by its thread_name). Checks that the
slices are exactly the calls (rank, lane, name, start and end ns, and the Chrome trace's
informative args), each on its rank's process and its lane's track, that the BEGIN and END
events of every track nest in the order written, and that each sequence clears its state
before it uses interned names, its defaults (track, clock) or its stepping clock, whose
timestamps are read as Perfetto reads them: steps from the ClockSnapshot's reading, which
BOOTTIME reads too. Prints the first problems and exits 1 on any.
--counters writes the counter tracks' values, [[pid, name, timestamp, value], ...].
"""
import codecs
import gzip
import json
import re
import sys
import zlib


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


def varint(b, i):
    v = sh = 0
    while True:
        c = b[i]
        i += 1
        v |= (c & 0x7F) << sh
        sh += 7
        if not c & 0x80:
            return v, i


def expand(src, dst):
    data = open(src, "rb").read()
    out = bytearray()
    i = packets = compressed = 0
    while i < len(data):
        if data[i] != 0x0A:
            sys.exit("check_perfetto: byte %d: not a Trace.packet field" % i)
        n, j = varint(data, i + 1)
        body = data[j:j + n]
        if len(body) != n:
            sys.exit("check_perfetto: byte %d: a packet past the end" % i)
        packets += 1
        if body[:2] == b"\x92\x03":  # field 50, compressed_packets, alone
            zn, k = varint(body, 2)
            if k + zn != n:
                sys.exit("check_perfetto: byte %d: more than compressed_packets" % i)
            if j + n - i >= 512 * 1024:
                sys.exit("check_perfetto: byte %d: a compressed packet of 512 KB" % i)
            out += zlib.decompress(body[k:])
            compressed += 1
        else:
            out += data[i:j + n]
        i = j + n
    open(dst, "wb").write(out)
    if packets > 0 and compressed == 0:
        sys.exit("check_perfetto: %s: no compressed packets" % src)
    return 0


def main(argv):
    if len(argv) == 4 and argv[1] == "--expand":
        return expand(argv[2], argv[3])
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
        st = r["start_times_ns"]
        unsorted = any(st[i] > st[i + 1] for i in range(len(st) - 1))
        for i, (s, e) in enumerate(zip(r["start_times_ns"], r["end_times_ns"])):
            extra = {}
            if unsorted:  # the call's index says what the slices' order does not
                extra["call_index"] = i
            if "call_ids" in r and "parent_ids" in r:
                extra["call_id"] = r["call_ids"][i]
                extra["parent_id"] = r["parent_ids"][i]
            if "gpu_durations_ns" in r:
                extra["gpu_duration"] = r["gpu_durations_ns"][i] / 1e9
            if "task_ids" in r and "await_ns" in r:
                extra["await_duration"] = r["await_ns"][i] / 1e9
            lane = lane_of.get((r["rank"], r["name"], i))
            expected.append((r["rank"], r["name"], s, e, lane, tuple(sorted(extra.items()))))

    trace = parse_text(open(decoded, encoding="ascii").read())
    tracks = {}  # uuid -> (pid, name) of the lane's track
    processes = {}  # uuid -> pid
    open_slices = {}  # uuid -> stack of (name, start, annotations)
    last_ts = {}
    got = []
    counters = []
    counter_tracks = {}  # uuid -> (pid, name)
    seen_ranks = []
    seqs = {}  # sequence -> {"names", "anns", "defaults", "clock"} since its last clear
    for pk in trace.get("packet", []):
        seq = int(one(pk, "trusted_packet_sequence_id", "0"))
        if seq == 0:
            bad("a packet without a sequence id")
        if int(one(pk, "sequence_flags", "0")) & 1:
            seqs[seq] = {"names": {}, "anns": {}, "defaults": None, "clock": None}
        state = seqs.get(seq)
        if "trace_packet_defaults" in pk:
            if state is None:
                bad("sequence %d: defaults before its state was cleared" % seq)
            else:
                d = pk["trace_packet_defaults"][0]
                ted = d.get("track_event_defaults", [{}])[0]
                state["defaults"] = (int(one(d, "timestamp_clock_id", "0")),
                                     int(one(ted, "track_uuid", "0")))
        if "interned_data" in pk:
            if state is None:
                bad("sequence %d: interned data before its state was cleared" % seq)
            else:
                idata = pk["interned_data"][0]
                for n in idata.get("event_names", []):
                    state["names"][int(one(n, "iid"))] = one(n, "name")
                for n in idata.get("debug_annotation_names", []):
                    state["anns"][int(one(n, "iid"))] = one(n, "name")
        if "clock_snapshot" in pk:
            clocks = {}
            for c in pk["clock_snapshot"][0].get("clocks", []):
                clocks[int(one(c, "clock_id"))] = (int(one(c, "timestamp", "0")),
                                                   one(c, "is_incremental", "false"),
                                                   int(one(c, "unit_multiplier_ns", "1")))
            for cid, (ts, inc, unit) in clocks.items():
                if 64 <= cid < 128:
                    if state is None:
                        bad("sequence %d: a clock before its state was cleared" % seq)
                        continue
                    if inc != "true" or unit != 1:
                        bad("sequence %d: clock %d not a nanosecond stepping clock" % (seq, cid))
                    if clocks.get(6, (None,))[0] != ts:
                        bad("sequence %d: clock %d at %d, BOOTTIME at %r" %
                            (seq, cid, ts, clocks.get(6, (None,))[0]))
                    state["clock"] = (cid, ts)
            continue
        # the packet's time: absolute, or a step of its sequence's clock
        ts = None
        if "timestamp" in pk:
            ts = int(one(pk, "timestamp"))
            cid = int(one(pk, "timestamp_clock_id", "0"))
            if cid == 0 and state is not None and state["defaults"] is not None:
                cid = state["defaults"][0]
            if 64 <= cid < 128:
                if state is None or state["clock"] is None or state["clock"][0] != cid:
                    bad("sequence %d: a step of clock %d before its snapshot" % (seq, cid))
                    continue
                ts += state["clock"][1]
                state["clock"] = (cid, ts)
            elif cid not in (0, 6):
                bad("sequence %d: a time on clock %d" % (seq, cid))
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
            if ts is None:
                bad("sequence %d: an event without a time" % seq)
                continue
            uuid = int(one(ev, "track_uuid", "0"))
            if uuid == 0 and state is not None and state["defaults"] is not None:
                uuid = state["defaults"][1]
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
                names = state["names"] if state is not None else {}
                name = names.get(int(one(ev, "name_iid", "0")))
                if name is None:
                    bad("a slice name not interned in its sequence")
                anns = {}
                for a in ev.get("debug_annotations", []):
                    key = state["anns"].get(int(one(a, "name_iid"))) if state else None
                    if key is None:
                        bad("an annotation name not interned in its sequence")
                    val = one(a, "int_value")
                    anns[key] = int(val) if val is not None else float(one(a, "double_value"))
                st.append((name, ts, anns))
            elif kind == "TYPE_SLICE_END":
                if not st:
                    bad("track %d: an END with no open slice at %d" % (uuid, ts))
                    continue
                name, start, anns = st.pop()
                pid, lane = tracks[uuid]
                got.append((pid, name, start, ts, lane, tuple(sorted(anns.items()))))
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
