#!/usr/bin/env python3
"""check_speedscope.py PROFILE.json SPEEDSCOPE.json
                     [--shuffle OUT.json | --lanes OUT.json | --ties OUT.json |
                      --overlap OUT.json]
       check_speedscope.py PROFILE.json --nest-error

Check a speedscope document against the JSON profile it was made from, worked out
here the slow and obvious way: per rank, per lane (task, else thread, else none;
lanes in ascending key order: threads by -2 - id, then no lane, then tasks), the
calls sorted by (start, -end, region order, call order), opened at their start and
closed at their end; "at" in seconds from the earliest call of the document.

--shuffle OUT / --lanes OUT / --ties OUT write a variant of PROFILE instead (its rows'
calls in a shuffled order / every call on a task lane of its own / every row of a rank
with the times of its first row, so that calls tie on start and end across regions and
nest by region order), for the sorts' other paths. --overlap OUT: a few calls of each
rank lengthened at random, so that calls overlap without nesting, here and there.

--nest-error prints the nesting error the reference gives for PROFILE (its first rank
whose calls do not nest), worked out as the reference does: per lane, a call's depth is
the number of calls before it not yet closed at its start (ends sorted), its parent the
latest call one level up, and the first call that ends after its parent is named.
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


def nest_error(profile):
    order = []  # region names in first-seen order: the rows' order
    for row in profile["regions"]:
        if row["name"] not in order:
            order.append(row["name"])
    calls = {}  # (rank, lane) -> [(start, -end, region, index)]
    has_lanes = any("thread_ids" in r for r in profile["regions"])
    for row in profile["regions"]:
        g = order.index(row["name"])
        for i, (s, e) in enumerate(zip(row["start_times_ns"], row["end_times_ns"])):
            lane = lanes_of(row, i) if has_lanes else -1
            calls.setdefault((row["rank"], lane), []).append((s, -e, g, i))
    for key in sorted(calls):
        c = sorted(calls[key])
        ends = sorted(2 * -ne + (1 if -ne == s else 0) for s, ne, _, _ in c)
        closed, depth = 0, []
        for s, _, _, _ in c:
            while closed < len(ends) and ends[closed] <= 2 * s:
                closed += 1
            depth.append(len(depth) - closed)
        last, parent = {}, []
        for i, d in enumerate(depth):
            parent.append(-1 if d == 0 else last[d - 1])
            last[d] = i
        for i, p in enumerate(parent):
            if p >= 0 and -c[p][1] < -c[i][1]:
                def label(x):
                    return f"{order[x[2]]!r} call {x[3]} [{x[0]}, {-x[1]}] ns"
                return (f"recorded calls are not properly nested: {label(c[i])} starts "
                        f"inside {label(c[p])} but ends after it.")
    return None


def main():
    profile = json.load(open(sys.argv[1]))
    if sys.argv[2] == "--nest-error":
        print(nest_error(profile))
        return 0
    if len(sys.argv) == 4 and sys.argv[2] == "--overlap":
        rng = random.Random(11)
        for row in profile["regions"]:
            e = row["end_times_ns"]
            for _ in range(2):
                i = rng.randrange(len(e))
                e[i] += rng.randrange(1, 10**7)
        json.dump(profile, open(sys.argv[3], "w"))
        return 0
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
