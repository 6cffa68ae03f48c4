#!/usr/bin/env python3
"""check_speedscope.py PROFILE.json SPEEDSCOPE.json
                     [--shuffle OUT.json | --lanes OUT.json | --ties OUT.json]

Check a speedscope document against the JSON profile it was made from, worked out
here the slow and obvious way: per rank, per lane (task, else thread, else none;
lanes in ascending key order: threads by -2 - id, then no lane, then tasks), the
calls sorted by (start, -end, region order, call order), opened at their start and
closed at their end; "at" in seconds from the earliest call of the document.

--shuffle OUT / --lanes OUT / --ties OUT write a variant of PROFILE instead (its rows'
calls in a shuffled order / every call on a task lane of its own / every row of a rank
with the times of its first row, so that calls tie on start and end across regions and
nest by region order), for the sorts' other paths.
"""
import json
import random
import sys


def lanes_of(row, i):
    tasks, threads = row.get("task_ids"), row.get("thread_ids")
    if tasks is not None and tasks[i] >= 0:
        return tasks[i]
    if threads is not None and threads[i] >= 0:
        return -2 - threads[i]
    return -1


def expected(profile):
    calls = {}  # (rank, lane) -> [(start, -end, seq, name, end)]
    seq = 0
    has_lanes = any("thread_ids" in r for r in profile["regions"])
    for row in profile["regions"]:
        for i, (s, e) in enumerate(zip(row["start_times_ns"], row["end_times_ns"])):
            lane = lanes_of(row, i) if has_lanes else -1
            calls.setdefault((row["rank"], lane), []).append((s, -e, seq, row["name"], e))
            seq += 1
    origin = min(c[0] for v in calls.values() for c in v) / 1e9
    out = []
    for key in sorted(calls):
        ev, stack = [], []
        for s, _, _, name, e in sorted(calls[key]):
            while stack and stack[-1][0] <= s and not (stack[-1][0] == s and stack[-1][2]):
                end, nm, _ = stack.pop()
                ev.append(("C", nm, end / 1e9 - origin))
            ev.append(("O", name, s / 1e9 - origin))
            stack.append((e, name, e == s))
        while stack:
            end, nm, _ = stack.pop()
            ev.append(("C", nm, end / 1e9 - origin))
        out.append((key, ev))
    return out


def main():
    profile = json.load(open(sys.argv[1]))
    if len(sys.argv) == 4:  # a variant
        rng = random.Random(7)
        first = {}
        for row in profile["regions"]:
            if sys.argv[2] == "--ties":
                f = first.setdefault(row["rank"], row)
                row["start_times_ns"] = list(f["start_times_ns"])
                row["end_times_ns"] = list(f["end_times_ns"])
                continue
            n = len(row["start_times_ns"])
            cols = [k for k in ("start_times_ns", "end_times_ns", "thread_ids", "task_ids")
                    if k in row]
            if sys.argv[2] == "--shuffle":
                order = list(range(n))
                rng.shuffle(order)
                for k in cols:
                    row[k] = [row[k][i] for i in order]
            else:
                row["task_ids"] = [hash((row["rank"], row["name"], i)) % 100000 for i in range(n)]
        json.dump(profile, open(sys.argv[3], "w"))
        return 0
    doc = json.load(open(sys.argv[2]))
    frames = [f["name"] for f in doc["shared"]["frames"]]
    want = expected(profile)
    got = doc["profiles"]
    if len(got) != len(want):
        print(f"{len(got)} profiles, expected {len(want)}")
        return 1
    for (key, ev), p in zip(want, got):
        if len(p["events"]) != len(ev):
            print(f"rank {key[0]} lane {key[1]}: {len(p['events'])} events, expected {len(ev)}")
            return 1
        for j, (e, g) in enumerate(zip(ev, p["events"])):
            if e[0] != g["type"] or e[1] != frames[g["frame"]] or abs(e[2] - g["at"]) > 1e-9:
                print(f"rank {key[0]} lane {key[1]} event {j}: {g}, expected {e}")
                return 1
    print(f"ok: {len(want)} profiles, {sum(len(e) for _, e in want)} events")
    return 0


if __name__ == "__main__":
    sys.exit(main())
