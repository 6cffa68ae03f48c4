#!/usr/bin/env python3
"""check_otf2.py - an OTF2 archive of ours, read with OTF2's Python reader, against the
run's calls.

usage: check_otf2.py ARCHIVE.otf2 RUN_JSON CHROME_JSON [--ranks 0,2] [--include RE]
                     [--counters OUT_JSON]

RUN_JSON is the run's JSON profile (the calls: rank, region, start and end ns),
CHROME_JSON its Chrome trace with every rank (the lane each call is on, by its
thread_name). Checks the clock (1e9 ticks a second), the location groups ("rank R", one
per selected rank, ascending, under one system tree node), that every location's Enter and
Leave events nest and never go back in time, and that the calls they make are exactly the
run's, each on its rank's group and its lane's location. Prints the first problems and
exits 1 on any. --counters writes the metric events, [[group, member, value], ...].
"""
import gzip
import json
import re
import sys

import otf2


def load_json(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8") as f:
        return json.load(f)


def main(argv):
    archive, run_path, chrome_path = argv[1:4]
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
            expected.append((r["rank"], lane_of.get((r["rank"], r["name"], i)), r["name"], s, e))

    got = []
    counters = []
    with otf2.reader.open(archive) as trace:
        defs = trace.definitions
        if defs.clock_properties.timer_resolution != 1000000000:
            bad("timer resolution %d" % defs.clock_properties.timer_resolution)
        nodes = list(defs.system_tree_nodes)
        if len(nodes) != 1:
            bad("%d system tree nodes, expected 1" % len(nodes))
        groups = [g.name for g in defs.location_groups]
        want = ["rank %d" % r for r in sorted(set(ranks))]
        if groups != want:
            bad("location groups %s, expected %s" % (groups, want))
        for g in defs.location_groups:
            if g.system_tree_parent != nodes[0]:
                bad("group %s is not under the run's node" % g.name)
        stacks = {}
        last = {}
        for loc, ev in trace.events:
            t = ev.time
            if t < last.get(loc, t):
                bad("%s/%s: time goes back to %d" % (loc.group.name, loc.name, t))
            last[loc] = t
            st = stacks.setdefault(loc, [])
            if isinstance(ev, otf2.events.Enter):
                st.append((ev.region.name, t))
            elif isinstance(ev, otf2.events.Leave):
                if not st:
                    bad("%s/%s: a Leave with nothing entered at %d" % (loc.group.name, loc.name, t))
                    continue
                name, start = st.pop()
                if name != ev.region.name:
                    bad("%s/%s: Leave %s closes %s" % (loc.group.name, loc.name, ev.region.name, name))
                got.append((int(loc.group.name.split()[1]), loc.name, name, start, t))
            elif isinstance(ev, otf2.events.Metric):
                for m, v in zip(ev.metric.members, ev.values):
                    counters.append([loc.group.name, m.description + ": " + m.name, v])
            else:
                bad("unexpected event %r" % ev)
        for loc, st in stacks.items():
            if st:
                bad("%s/%s: %d regions never left" % (loc.group.name, loc.name, len(st)))
    if sorted(got) != sorted(expected):
        g, x = set(got), set(expected)
        bad("calls differ: %d read, %d expected; read only: %s; expected only: %s"
            % (len(got), len(expected), sorted(g - x)[:3], sorted(x - g)[:3]))
    if counters_out:
        with open(counters_out, "w") as f:
            json.dump(counters, f)
    for p in problems:
        print("check_otf2: " + p, file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
