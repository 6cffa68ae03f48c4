#!/usr/bin/env bash
# viewer_check.sh - open our trace documents in real viewers, as a person would, and say
# what each showed (not part of the test suite; run by hand, as root on Debian 12)
#
#   bash scripts/viewer_check.sh OUTDIR [DOC.json[.gz]|DOC.pftrace ...]
#
# Environment: SX_VIEWER_EVENTS (events of the large run, default 1000000, 0: none),
# SX_VIEWER_SPEEDSCOPE_TRACE_MB (largest Chrome trace given to speedscope too, default 50),
# SX_VIEWER_TIMEOUT (seconds for all viewers, default 1800), SX_VIEWER_TOOLS,
# SX_SPEEDSCOPE_VERSION, SX_PLAYWRIGHT_VERSION, BUILD_DIR, SX_SHARED_DIR.
#
# Without DOC arguments it exports the reference runs threads and mpi4_parallel (from
# ../shared/golden, or $SX_SHARED_DIR/golden), a small synthetic run (perf counters,
# non-ASCII names) and a large one (SX_VIEWER_EVENTS events, default 1000000; 0 leaves it
# out: --ranks 8 --regions 20 --nest, so the calls nest as speedscope requires) with
# build/scope-export, in both trace formats, some gzip-compressed. Every document gets a
# check against its format's rules (written here, independent of our code), and Python
# works out from the document what a viewer that parsed every event must show: calls,
# each region's self and total time per profile (speedscope) or per thread track (Chrome
# trace). Then:
#   speedscope documents (.gz too): the speedscope web app (npm package), served on
#     127.0.0.1, loads it through #profileURL=; we read its profile list (each profile's
#     total weight), its Sandwich table (each region's total and self time) and press its
#     Export button: the exported document holds every call speedscope parsed, so its call
#     count and per-region times must equal the document's exactly. speedscope 1.25 opens
#     gzip documents: it decompresses them itself (checked through #profileURL=, served as
#     plain application/gzip bytes); should a version not, that is reported as its answer,
#     not as a failure of this script;
#   Chrome trace documents (.gz too): Chromium's own DevTools Performance panel
#     (trace_app.html, as "Load profile" does): we select the thread track drawn first and
#     read every row of its Bottom-up table (self and total time per activity, to 0.1 ms),
#     which must agree with one of the document's tracks; then the other thread tracks
#     through the flame chart's keyboard (the panel shows one track's table at a time),
#     saying how many of the document's tracks and calls were reached (on the large run
#     7 of 8: the track of pid 0 tid 0 shows an empty table when reached by keyboard);
#     and speedscope's Trace Event importer (calls counted through Export), for documents
#     up to SX_VIEWER_SPEEDSCOPE_TRACE_MB only: it took 281 s for the 1M-event one (224 MB).
# Each line says loaded or not, in how many seconds, and parsed against expected.
# Measured limits (Chromium 156, speedscope 1.25.0, 2 shared cores, documents from
# scope-export-synth --ranks 8 --regions 20 --nest, ~225 bytes per event): DevTools loads
# a Chrome trace of 1M events (224 MB) in 13-19 s, 2M (450 MB) in 21 s, 2.3M (517 MB) in
# 34 s, the Bottom-up times of the track read all right; 2.4M (539 MB) fails at once with
# "Unexpected end of JSON input", as 3M (675 MB) did; 2.5M (562 MB) shows no profile
# either. The limit lies between 517 and 539 MB of JSON text, where V8's longest string
# (2^29 - 24 characters, 536.9 MB) lies: ~2.35M events of this shape.
# speedscope loads a speedscope document of 1M calls (106 MB) in ~7 s and of 3M calls
# (317 MB) in 20-41 s, every call and time right (Export).
# Perfetto protobuf documents (--format perfetto, .pftrace) are not opened here: the
# Perfetto UI is not on the npm registry (no "perfetto" or "@perfetto/ui" package) and
# cannot be fetched. Open one by hand at https://ui.perfetto.dev ("Open trace file"; the
# file stays in the browser) or with Perfetto's trace_processor (trace_processor_shell
# FILE.pftrace, then e.g. "select name, count(*), sum(dur) from slice group by name").
# A .pftrace argument gets a line saying so. OTF2 archives: otf2-print (Debian otf2-tools).
# Screenshots and the exported documents go to OUTDIR; one line per document and viewer
# goes to standard output. Exit status 1 when a check failed or a viewer did not load.
# Installs chromium (apt-get) and, in $SX_VIEWER_TOOLS (default ~/.cache/scope-export-viewer),
# the npm packages speedscope and playwright-core. Nothing goes into the repository.
# playwright-core is pinned to 1.61.0 ($SX_PLAYWRIGHT_VERSION), the last release whose
# engines field allows Node 18: Debian 12's nodejs is 18.19, and 1.62 and later need
# Node >= 20. 1.61.0 drives Debian's chromium 156 (checked under Node 18.19 and 20).
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
[ $# -ge 1 ] || {
    echo "usage: $0 OUTDIR [DOC.json[.gz]|DOC.pftrace ...]" >&2
    exit 2
}
out=$(mkdir -p "$1" && cd "$1" && pwd)
shift
build=${BUILD_DIR:-$top/build}
case $build in /*) ;; *) build=$top/$build ;; esac
shared=${SX_SHARED_DIR:-$top/../shared}
tools=${SX_VIEWER_TOOLS:-$HOME/.cache/scope-export-viewer}
speedscope_version=${SX_SPEEDSCOPE_VERSION:-1.25.0}
playwright_version=${SX_PLAYWRIGHT_VERSION:-1.61.0}
big_events=${SX_VIEWER_EVENTS:-1000000}
export DEBIAN_FRONTEND=noninteractive

# --- what it needs -------------------------------------------------------------------------
need_apt=()
command -v chromium >/dev/null || need_apt+=(chromium)
command -v node >/dev/null || need_apt+=(nodejs)
command -v npm >/dev/null || need_apt+=(npm)
command -v python3 >/dev/null || need_apt+=(python3)
if [ ${#need_apt[@]} -gt 0 ]; then
    apt-get update -q >/dev/null
    apt-get install -y -q "${need_apt[@]}" >/dev/null
fi
node_major=$(node -p 'process.versions.node.split(".")[0]')
[ "$node_major" -ge 18 ] || {
    echo "viewer_check: node $(node --version) is too old: playwright-core needs Node >= 18" >&2
    exit 1
}
installed() { # installed PACKAGE: its version in $tools, or nothing
    [ -f "$tools/node_modules/$1/package.json" ] &&
        node -p "require('$tools/node_modules/$1/package.json').version"
}
if [ "$(installed speedscope || true)" != "$speedscope_version" ] ||
    [ "$(installed playwright-core || true)" != "$playwright_version" ]; then
    mkdir -p "$tools"
    (cd "$tools" && npm install --no-audit --no-fund --loglevel=error \
        "speedscope@$speedscope_version" "playwright-core@$playwright_version" >/dev/null)
fi
app=$tools/node_modules/speedscope/dist/release
[ -f "$app/index.html" ] || {
    echo "viewer_check: no speedscope web app in $app" >&2
    exit 1
}

work=$(mktemp -d)
server=
# shellcheck disable=SC2317 # called by the EXIT trap
cleanup() {
    [ -z "$server" ] || kill "$server" 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT

# --- the documents -------------------------------------------------------------------------
docs=()
if [ $# -gt 0 ]; then
    for d in "$@"; do
        d=$(cd "$(dirname "$d")" && pwd)/$(basename "$d")
        case $d in
        *.pftrace)
            printf '%s\t%s\t%s\n' "$(basename "$d")" perfetto \
                "not opened here: the Perfetto UI is not on the npm registry; open it at https://ui.perfetto.dev (Open trace file) or with trace_processor_shell"
            ;;
        *) docs+=("$d") ;;
        esac
    done
else
    [ -x "$build/scope-export" ] || BUILD_DIR=$build bash "$top/scripts/build.sh" >/dev/null
    x=$build/scope-export
    mkdir -p "$out/docs"
    g=$shared/golden
    if [ -f "$g/threads/run.h5" ]; then
        "$x" export "$g/threads/run.h5" -o "$out/docs/threads.speedscope.json" --format speedscope --quiet
        "$x" export "$g/threads/run.h5" -o "$out/docs/threads.speedscope.json.gz" --format speedscope --quiet
        "$x" export "$g/threads/run.h5" -o "$out/docs/threads.trace.json" --format chrome-trace --quiet
        "$x" export "$g/threads/run.h5" -o "$out/docs/threads.trace.json.gz" --format chrome-trace --quiet
        "$x" export "$g/mpi4_parallel/run.h5" -o "$out/docs/mpi4_parallel.speedscope.json" \
            --format speedscope --ranks 0-3 --quiet
        "$x" export "$g/mpi4_parallel/run.h5" -o "$out/docs/mpi4_parallel.trace.json" \
            --format chrome-trace --ranks 0-3 --quiet
        docs+=("$out/docs/threads.speedscope.json" "$out/docs/threads.speedscope.json.gz"
            "$out/docs/threads.trace.json" "$out/docs/threads.trace.json.gz"
            "$out/docs/mpi4_parallel.speedscope.json" "$out/docs/mpi4_parallel.trace.json")
    else
        echo "viewer_check: no reference runs in $g; synthetic runs only" >&2
    fi
    # random synthetic calls overlap, so speedscope refuses them: a Chrome trace only
    "$build/scope-export-synth" --ranks 2 --regions 4 --events 400 --columns all --lanes \
        --perf --unicode "$work/synth.h5"
    "$x" export "$work/synth.h5" -o "$out/docs/synth.trace.json" --format chrome-trace \
        --ranks 0-1 --quiet
    docs+=("$out/docs/synth.trace.json")
    # a large run whose calls nest, for both viewers: did they parse every event?
    if [ "$big_events" -gt 0 ]; then
        "$build/scope-export-synth" --ranks 8 --regions 20 --nest --events "$big_events" \
            "$work/big.h5"
        "$x" export "$work/big.h5" -o "$out/docs/big.speedscope.json" --format speedscope \
            --ranks 0-7 --quiet
        "$x" export "$work/big.h5" -o "$out/docs/big.trace.json" --format chrome-trace \
            --ranks 0-7 --quiet
        docs+=("$out/docs/big.speedscope.json" "$out/docs/big.trace.json")
    fi
fi
[ ${#docs[@]} -gt 0 ] || exit 0

# --- the format rules, checked here and not by our code ------------------------------------
# and what a viewer that parsed every event must show, worked out from the document
status=0
python3 - "$work/expect.json" "${docs[@]}" >"$work/formats" <<'EOF' || status=1
import gzip, json, sys

def num(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool)

def chrome(d):
    bad, count = [], {}
    ev = d.get("traceEvents")
    if not isinstance(ev, list):
        return ["no traceEvents list"], count
    if d.get("displayTimeUnit", "ms") not in ("ms", "ns"):
        bad.append("displayTimeUnit %r" % d.get("displayTimeUnit"))
    for i, e in enumerate(ev):
        if not isinstance(e, dict):
            bad.append("event %d is not an object" % i)
            continue
        ph = e.get("ph")
        count[ph] = count.get(ph, 0) + 1
        if not isinstance(e.get("name"), str) or not isinstance(ph, str):
            bad.append("event %d: name/ph not strings" % i)
        if not isinstance(e.get("pid"), int) or not isinstance(e.get("tid"), int):
            bad.append("event %d: pid/tid not integers" % i)
        args = e.get("args", {})
        if not isinstance(args, dict):
            bad.append("event %d: args not an object" % i)
            continue
        if ph == "X":
            if not num(e.get("ts")) or not num(e.get("dur")) or e["dur"] < 0:
                bad.append("event %d (%s): X without numeric ts and dur >= 0" % (i, e.get("name")))
        elif ph == "M":
            if e.get("name") in ("process_name", "thread_name") and not isinstance(args.get("name"), str):
                bad.append("event %d: M %s without args.name" % (i, e.get("name")))
        elif ph == "C":
            if not num(e.get("ts")) or not args or not all(num(v) for v in args.values()):
                bad.append("event %d (%s): C without ts or numeric args" % (i, e.get("name")))
        elif ph not in ("B", "E", "i", "I"):
            bad.append("event %d: phase %r" % (i, ph))
    named = {(e["pid"], e["tid"]) for e in ev if isinstance(e, dict) and e.get("name") == "thread_name"}
    for e in ev:
        if isinstance(e, dict) and e.get("ph") == "X" and (e.get("pid"), e.get("tid")) not in named:
            bad.append("X events on pid %s tid %s without a thread_name" % (e.get("pid"), e.get("tid")))
            break
    return bad, count

def speedscope(d):
    bad, count = [], {}
    frames = d.get("shared", {}).get("frames", [])
    if not all(isinstance(f, dict) and isinstance(f.get("name"), str) for f in frames):
        bad.append("a frame without a name")
    profiles = d.get("profiles", [])
    if not profiles or not 0 <= d.get("activeProfileIndex", 0) < len(profiles):
        bad.append("no profiles, or activeProfileIndex out of range")
    for p in profiles:
        name = p.get("name")
        if p.get("type") != "evented" or p.get("unit") not in ("seconds", "milliseconds", "microseconds", "nanoseconds", "none"):
            bad.append("profile %r: type/unit" % name)
            continue
        stack, last = [], p.get("startValue")
        for e in p.get("events", []):
            count[e.get("type")] = count.get(e.get("type"), 0) + 1
            f, at = e.get("frame"), e.get("at")
            if not isinstance(f, int) or not 0 <= f < len(frames) or not num(at):
                bad.append("profile %r: event with a bad frame or at" % name)
                break
            if at < last:
                bad.append("profile %r: 'at' goes back in time at %r" % (name, at))
                break
            last = at
            if e["type"] == "O":
                stack.append(f)
            elif e["type"] == "C":
                if not stack or stack.pop() != f:
                    bad.append("profile %r: close of frame %d does not match the open one" % (name, f))
                    break
            else:
                bad.append("profile %r: event type %r" % (name, e["type"]))
                break
        if stack:
            bad.append("profile %r: %d frames never closed" % (name, len(stack)))
        if num(p.get("endValue")) and last > p["endValue"]:
            bad.append("profile %r: events after endValue" % name)
    return bad, count

class Times:
    """Self and total time per name while a stack of names changes: self goes to the
    innermost, total once to every name on the stack (a name nested in itself counts once),
    weight is the time with anything on the stack."""
    def __init__(self, t):
        self.t, self.stack, self.on, self.self, self.total, self.weight = t, [], {}, {}, {}, 0.0
    def to(self, t):
        d = t - self.t
        if self.stack and d:
            self.weight += d
            top = self.stack[-1]
            self.self[top] = self.self.get(top, 0.0) + d
            for n in self.on:
                self.total[n] = self.total.get(n, 0.0) + d
        self.t = t
    def push(self, n):
        self.stack.append(n)
        self.on[n] = self.on.get(n, 0) + 1
    def pop(self):
        n = self.stack.pop()
        self.on[n] -= 1
        if not self.on[n]:
            del self.on[n]
    def frames(self):
        return {n: [self.self.get(n, 0.0), v] for n, v in self.total.items()}

def speedscope_expect(d):
    names = [f["name"] for f in d["shared"]["frames"]]
    out = []
    for p in d["profiles"]:
        start = p.get("startValue", 0)
        t, calls, zero, opened = Times(0.0), 0, 0, []
        for e in p["events"]:
            v = e["at"] - start  # as the viewer does: times from the profile's start
            t.to(v)
            if e["type"] == "O":
                t.push(names[e["frame"]])
                calls += 1
                opened.append(v)
            else:
                t.pop()
                zero += opened.pop() == v
        out.append({"name": p.get("name", ""), "unit": p["unit"], "calls": calls, "zero": zero,
                    "weight": t.weight, "frames": t.frames(), "nests": True})
    return out

def chrome_expect(d):
    tracks, thread = {}, {}
    for e in d["traceEvents"]:
        if e.get("ph") == "X":
            tracks.setdefault((e["pid"], e["tid"]), []).append(e)
        elif e.get("ph") == "M" and e.get("name") == "thread_name":
            thread[(e["pid"], e["tid"])] = e["args"]["name"]
    out = []
    for key in sorted(tracks):
        xs = sorted(tracks[key], key=lambda e: (e["ts"], -e["dur"]))
        t, ends, nests = Times(xs[0]["ts"]), [], True
        for e in xs:
            while ends and ends[-1] <= e["ts"]:
                t.to(ends.pop())
                t.pop()
            t.to(e["ts"])
            end = e["ts"] + e["dur"]
            if ends and end > ends[-1] + 1e-6:
                nests = False  # overlaps its parent: no stack, no expected times
            t.push(e["name"])
            ends.append(min(end, ends[-1]) if ends else end)
        while ends:
            t.to(ends.pop())
            t.pop()
        out.append({"name": "pid %d tid %d (%s)" % (key[0], key[1], thread.get(key, "")),
                    "unit": "microseconds", "calls": len(xs),
                    "zero": sum(1 for e in xs if e["dur"] == 0), "weight": t.weight,
                    "frames": t.frames(), "nests": nests})
    return out

failed = False
expect = {}
for path in sys.argv[2:]:
    opener = gzip.open if path.endswith(".gz") else open
    try:
        with opener(path, "rt", encoding="utf-8") as f:
            d = json.load(f)
    except (OSError, ValueError) as e:
        print("%s\tformat\tFAIL: not JSON: %s" % (path, e))
        failed = True
        continue
    kind = "speedscope" if "$schema" in d and "profiles" in d else "chrome"
    bad, count = (speedscope if kind == "speedscope" else chrome)(d)
    counts = ", ".join("%s %d" % (k, v) for k, v in sorted(count.items(), key=str))
    if bad:
        failed = True
        print("%s\t%s\tFAIL: %s%s" % (path, kind, "; ".join(bad[:5]), " ..." if len(bad) > 5 else ""))
    else:
        print("%s\t%s\tOK (%s)" % (path, kind, counts))
        expect[path] = (speedscope_expect if kind == "speedscope" else chrome_expect)(d)
    del d
with open(sys.argv[1], "w") as f:
    json.dump(expect, f)
sys.exit(1 if failed else 0)
EOF

# --- serve the app and the documents on 127.0.0.1 ------------------------------------------
mkdir -p "$work/site/docs" "$out/exported"
cp -r "$app/." "$work/site/"
for d in "${docs[@]}"; do ln -sf "$d" "$work/site/docs/"; done
(cd "$work/site" && exec python3 -u -m http.server --bind 127.0.0.1 0 >"$work/http.log" 2>&1) &
server=$!
port=
for _ in $(seq 50); do
    port=$(sed -n 's/.*port \([0-9][0-9]*\).*/\1/p' "$work/http.log" | head -n1)
    [ -n "$port" ] && break
    sleep 0.2
done
[ -n "$port" ] || {
    echo "viewer_check: the web server did not start" >&2
    exit 1
}

# --- the viewers, through playwright-core driving Debian's chromium ------------------------
cat >"$work/view.js" <<'EOF'
const { chromium } = require('playwright-core');
const fs = require('fs');
const path = require('path');
const [out, port, profileDir, expectFile, traceMB, ...jobs] = process.argv.slice(2);
const expected = JSON.parse(fs.readFileSync(expectFile, 'utf8'));
const base = `http://127.0.0.1:${port}`;
const flags = ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
  '--disable-background-networking', '--disable-component-update', '--disable-sync'];
let failed = false;

function say(doc, viewer, text) { console.log(`${path.basename(doc)}\t${viewer}\t${text}`); }
function secs(t0) { return ((Date.now() - t0) / 1000).toFixed(1); }
// how long to wait for a document: 30 s, and 2 s more per MB (speedscope's Trace Event
// importer needs ~1.3 s per MB on 2 cores)
function patience(doc) { return 30000 + 2000 * fs.statSync(doc).size / 1e6; }

function watch(page, log) {
  page.on('console', m => { if (!m.text().includes('GL Driver')) log.push(m.text().split('\n')[0]); });
  page.on('pageerror', e => log.push('page error: ' + e.message));
  page.on('dialog', d => { log.push('alert: ' + d.message()); d.dismiss().catch(() => {}); });
}

// a time as a viewer shows it ("3,962.5 ms", "16.08s", "1:05"), in seconds, with the
// half unit of its last digit
function shown(text) {
  let m = /^(\d+):(\d\d)$/.exec(text.trim());
  if (m) return { v: +m[1] * 60 + +m[2], tol: 1 };  // speedscope floors to whole seconds
  m = /^([\d,]+(?:\.(\d+))?)\s*(ns|µs|us|ms|s)$/.exec(text.trim());
  if (!m) return null;
  const scale = { ns: 1e-9, 'µs': 1e-6, us: 1e-6, ms: 1e-3, s: 1 }[m[3]];
  return { v: +m[1].replace(/,/g, '') * scale, tol: 0.5 * scale * Math.pow(10, -(m[2] || '').length) };
}
const unitSeconds = { seconds: 1, milliseconds: 1e-3, microseconds: 1e-6, nanoseconds: 1e-9, none: 1 };
function agrees(text, value) {  // value in seconds
  const s = shown(text);
  return s !== null && Math.abs(s.v - value) <= s.tol + 1e-9 * Math.abs(value);
}

// self and total time per frame name of one speedscope profile, as in the Python above
function replay(p, names) {
  const selfT = new Map(), total = new Map(), on = new Map(), stack = [];
  let last = 0, calls = 0;
  const start = p.startValue || 0;
  for (const e of p.events) {
    const v = e.at - start, d = v - last;
    if (stack.length && d) {
      const top = stack[stack.length - 1];
      selfT.set(top, (selfT.get(top) || 0) + d);
      for (const n of on.keys()) total.set(n, (total.get(n) || 0) + d);
    }
    last = v;
    const n = names[e.frame];
    if (e.type === 'O') {
      stack.push(n); on.set(n, (on.get(n) || 0) + 1); calls++;
    } else {
      stack.pop(); on.set(n, on.get(n) - 1); if (!on.get(n)) on.delete(n);
    }
  }
  return { calls, selfT, total };
}

async function speedscope(ctx, doc, kind) {
  const page = await ctx.newPage();
  const log = [];
  watch(page, log);
  const stem = path.basename(doc).replace(/\.json(\.gz)?$/, '') + (doc.endsWith('.gz') ? '-gz' : '') +
    (kind === 'speedscope' ? '' : '.trace-import');
  const url = `${base}/docs/${encodeURIComponent(path.basename(doc))}`;
  const t0 = Date.now();
  await page.goto(`${base}/index.html#profileURL=${encodeURIComponent(url)}`);
  try {
    await page.waitForFunction(() => document.title.endsWith(' - speedscope') ||
      document.body.innerText.includes('Something went wrong'), null, { timeout: patience(doc), polling: 200 });
  } catch (e) { /* reported below */ }
  const took = secs(t0);
  await page.waitForTimeout(500);
  await page.screenshot({ path: `${out}/${stem}.speedscope.png` });
  const title = await page.title();
  const body = await page.evaluate(() => document.body.innerText);
  if (!title.endsWith(' - speedscope')) {
    const why = log.filter(l => /fail|error|alert|unrecognized/i.test(l)).join(' / ') || `no profile after ${took} s`;
    const text = `NOT LOADED after ${took} s: "${body.split('\n').filter(l => /wrong|Unrecognized/.test(l)).join(' ') || title}" (${why.slice(0, 300)})`;
    if (doc.endsWith('.gz')) say(doc, 'speedscope', `the viewer's answer to a gzip document: ${text}`);
    else { failed = true; say(doc, 'speedscope', text); }
    await page.close();
    return;
  }
  const how = (log.find(l => l.startsWith('Importing as')) || '').replace('Importing as ', '');
  const exp = expected[doc] || [];
  // the profile list: # | name | total weight, one row per profile
  const list = await page.evaluate(() => [...document.querySelectorAll('tr')]
    .filter(r => r.cells.length === 3 && /^\d+$/.test(r.cells[0].innerText.trim()))
    .map(r => [r.cells[1].innerText.trim(), r.cells[2].innerText.trim()]));
  const label = () => page.evaluate(() => (document.body.innerText.split('\n')[1] || '').trim());
  const first = await label();
  const m = /\((\d+)\/(\d+)\)$/.exec(first);
  const count = m ? +m[2] : 1;
  const profiles = [first.replace(/ \(\d+\/\d+\)$/, '')];
  const checks = [];
  // speedscope orders a Chrome trace's profiles by pid and tid, as the expectation is;
  // calls that overlap have no one right answer, so no times then
  const overlap = exp.filter(x => !x.nests).length;
  if (overlap) {
    checks.push(`calls overlap on ${overlap} of the document's ${exp.length} tracks: times not compared`);
  } else if (exp.length === list.length) {
    const ok = list.filter(([, w], i) => agrees(w, exp[i].weight * unitSeconds[exp[i].unit])).length;
    checks.push(`profile list: total weight of ${ok}/${list.length} profiles agrees with the document's`);
    if (ok < list.length) failed = true;
  } else if (exp.length) {
    failed = true;
    checks.push(`profile list: ${list.length} profiles, the document has ${exp.length}`);
  }
  await page.keyboard.press('2');
  await page.waitForTimeout(300);
  await page.screenshot({ path: `${out}/${stem}.speedscope-left-heavy-1.png` });
  for (let i = 2; i <= count && i <= 16; i++) {
    await page.keyboard.press('n');
    await page.waitForTimeout(300);
    profiles.push((await label()).replace(/ \(\d+\/\d+\)$/, ''));
    await page.screenshot({ path: `${out}/${stem}.speedscope-left-heavy-${i}.png` });
  }
  if (count > 16) profiles.push('...');
  await page.keyboard.press('3');
  await page.waitForTimeout(500);
  await page.screenshot({ path: `${out}/${stem}.speedscope-sandwich.png` });
  // the Sandwich table's rows: total (percent), self (percent), symbol name; of the
  // profile shown last
  const rows = await page.evaluate(() => [...document.querySelectorAll('tr')]
    .filter(r => r.cells.length === 3 && /%\)/.test(r.cells[0].innerText))
    .map(r => [...r.cells].map(c => c.innerText.trim())));
  const names = rows.map(r => r[2]).filter(s => s);
  const short = [...new Set(names.map(n => n.split(' {')[0]))];
  const shownProfile = Math.min(count, 16) - 1;
  const e = exp[shownProfile];
  if (kind === 'speedscope' && e) {
    const unit = unitSeconds[e.unit];
    let ok = 0;
    for (const [tot, self, name] of rows) {
      const f = e.frames[name];
      if (f && agrees(tot.replace(/\s*\(.*/, ''), f[1] * unit) && agrees(self.replace(/\s*\(.*/, ''), f[0] * unit)) ok++;
    }
    const all = Object.keys(e.frames).length;
    checks.push(`Sandwich of profile ${shownProfile + 1}: total and self of ${ok}/${all} regions agree with the document's` +
      (rows.length < all ? ` (${rows.length} rows on screen)` : ''));
    if (ok < all) failed = true;
  }
  // Export: speedscope writes out every call it holds, so count them
  const file = `${out}/exported/${stem}.exported.speedscope.json`;
  try {
    const t1 = Date.now();
    const [dl] = await Promise.all([page.waitForEvent('download', { timeout: patience(doc) }),
      page.getByText('Export', { exact: false }).first().click()]);
    await dl.saveAs(file);
    const back = JSON.parse(fs.readFileSync(file, 'utf8'));
    const fnames = back.shared.frames.map(f => f.name);
    const got = back.profiles.map(p => replay(p, fnames));
    const calls = got.reduce((a, g) => a + g.calls, 0);
    const want = exp.reduce((a, x) => a + x.calls - x.zero, 0);
    const zero = exp.reduce((a, x) => a + x.zero, 0);
    let same = 0, timesOk = 0, timesAll = 0;
    got.forEach((g, i) => {
      const x = exp[i];
      if (!x) return;
      if (g.calls === x.calls - x.zero) same++;
      if (kind !== 'speedscope') return;
      const tol = 1e-7 * x.weight;
      for (const [n, [s, t]] of Object.entries(x.frames)) {
        timesAll++;
        if (Math.abs((g.selfT.get(n) || 0) - s) <= tol && Math.abs((g.total.get(n) || 0) - t) <= tol) timesOk++;
      }
    });
    checks.push(`Export (${secs(t1)} s) gives back ${calls} of the document's ${want} calls` +
      (zero ? ` with a length (${zero} of length 0 are not exported)` : '') +
      `, ${same}/${exp.length} profiles with every call` +
      (timesAll ? `, self and total of ${timesOk}/${timesAll} region-profile pairs equal to the document's (1e-7)` : ''));
    if (calls !== want || same !== exp.length || timesOk !== timesAll || got.length !== exp.length) failed = true;
  } catch (err) {
    failed = true;
    checks.push('Export failed: ' + err.message.split('\n')[0].slice(0, 200));
  }
  const names1 = profiles.length > 4 ? [...profiles.slice(0, 3), `... ${profiles[profiles.length - 1]}`] : profiles;
  say(doc, 'speedscope', `loaded as ${how || kind} in ${took} s: "${title}", ${count} profile(s) [${names1.join('; ')}]; ` +
    `Sandwich of profile ${shownProfile + 1}: ${names.length} symbol(s) on screen, regions ${short.slice(0, 8).join(', ')}` +
    (short.length > 8 ? ', ...' : '') +
    (short.length < names.length ? ' (one symbol per call: its args are part of the name)' : '') +
    (checks.length ? '; ' + checks.join('; ') : ''));
  await page.close();
}

// every row of DevTools' Bottom-up table (self time, total time, activity); the table
// draws only the rows in view, so scroll its data container half a view at a time
async function bottomUp(page) {
  const grid = page.locator('[role=treegrid], [role=grid], table').last();
  const box = page.locator('.data-container').last();
  const time = /^([\d,.]+\s*(?:ms|µs|s))\s*[\d.]*\s*%?$/;
  const rows = new Map();
  for (let i = 0; i < 1000; i++) {
    const toks = (await grid.innerText()).split('\n').map(s => s.trim()).filter(s => s &&
      !/^(Self time|Total time|Activity)/.test(s));
    for (let k = 0; k + 2 < toks.length; k++) {
      const a = time.exec(toks[k]), b = time.exec(toks[k + 1]);
      if (a && b && !time.test(toks[k + 2])) {
        rows.set(toks[k + 2], [a[1], b[1]]);
        k += 2;
      }
    }
    if (!(await box.count())) break;
    const moved = await box.evaluate(e => {
      const top = e.scrollTop;
      e.scrollTop = top + Math.max(1, e.clientHeight / 2);
      return e.scrollTop !== top;
    });
    if (!moved) break;
    await page.waitForTimeout(200);
  }
  return rows;
}

async function devtools(ctx, doc) {
  const page = await ctx.newPage();
  const log = [];
  watch(page, log);
  const stem = path.basename(doc).replace(/\.json(\.gz)?$/, '') + (doc.endsWith('.gz') ? '-gz' : '');
  await page.goto('devtools://devtools/bundled/trace_app.html?panel=timeline');
  const input = page.locator('input[type=file]').first();
  await input.waitFor({ state: 'attached', timeout: 30000 });
  await page.keyboard.press('Escape');
  const t0 = Date.now(), seen = log.length;
  await input.setInputFiles(doc);
  // it shows the Bottom-up tab once loaded; a failure goes to the console, and the panel
  // returns to its start page. DevTools parses ~10 MB/s here: 60 s and 0.2 s per MB.
  const tab = page.getByRole('tab', { name: 'Bottom-up' });
  const limit = 60000 + 200 * fs.statSync(doc).size / 1e6;
  let loaded = false;
  while (Date.now() - t0 < limit && !log.slice(seen).some(l => /error|fail/i.test(l))) {
    if (await tab.isVisible()) { loaded = true; break; }
    await page.waitForTimeout(250);
  }
  const took = secs(t0);
  await page.waitForTimeout(1500);
  await page.keyboard.press('Escape');
  await page.waitForTimeout(300);
  await page.screenshot({ path: `${out}/${stem}.devtools.png` });
  if (!loaded) {
    failed = true;
    const text = (await page.evaluate(() => document.body.innerText)).replace(/\s+/g, ' ').slice(0, 200);
    say(doc, 'devtools', `NOT LOADED after ${took} s: "${text}" (${log.slice(seen).filter(l => /error|fail/i.test(l)).join(' / ').slice(0, 300)})`);
    await page.close();
    return;
  }
  // open the first process track and select its first thread track: the flame chart and
  // its Bottom-up table. The track headers are drawn on a canvas, so by position, and a
  // process may start open or closed: click its header until the table fills.
  let rows = new Map();
  for (let attempt = 0; attempt < 3 && !rows.size; attempt++) {
    await page.waitForTimeout(1000);
    if (attempt) {
      await page.mouse.click(265, 129);
      await page.waitForTimeout(1500);
    }
    await page.mouse.click(300, 146);
    await page.waitForTimeout(800);
    await page.getByRole('tab', { name: 'Bottom-up' }).click();
    await page.waitForTimeout(1000);
    rows = await bottomUp(page);
  }
  await page.screenshot({ path: `${out}/${stem}.devtools-track.png` });
  let check = '';
  // which of the document's thread tracks is a table? The one whose times all agree.
  const all = expected[doc] || [];
  const exp = all.some(x => !x.nests) ? [] : all;
  const match = table => {
    let best = null, ok = -1;
    for (const x of exp) {
      let k = 0;
      for (const [n, [s, t]] of table) {
        const f = x.frames[n];
        if (f && agrees(s, f[0] * 1e-6) && agrees(t, f[1] * 1e-6)) k++;
      }
      if (k > ok) { best = x; ok = k; }
    }
    const n = best ? Object.keys(best.frames).length : 0;
    return { best, ok, n, right: best !== null && ok === n && table.size === n };
  };
  if (exp.length && rows.size) {
    const m = match(rows);
    check = `; self and total of ${m.ok}/${m.n} activities agree with the document's track ${m.best.name} ` +
      `(${m.best.calls} calls) at the table's precision` + (rows.size < m.n ? ` (${rows.size} rows read)` : '');
    if (!m.right) failed = true;
    // then the other thread tracks, through the keyboard of the flame chart: ArrowDown
    // goes to the next track, ArrowRight opens it and goes to its first child, ArrowUp to
    // the track above. Down and right to the end, so that every track is open, then up to
    // the top; every table read must agree with one of the document's tracks.
    const grid = page.locator('[role=treegrid], [role=grid], table').last();
    const seen = new Map([[m.best.name, m]]);
    await page.mouse.click(300, 146);
    let last = (await grid.innerText()).slice(0, 400);
    const keys = [];
    for (let i = 0; i < 4 * exp.length + 8; i++) keys.push(i % 2 ? 'ArrowRight' : 'ArrowDown');
    for (let i = 0; i < 4 * exp.length + 8; i++) keys.push('ArrowUp');
    for (const key of keys) {
      if (seen.size >= exp.length) break;
      await page.keyboard.press(key);
      await page.waitForTimeout(300);
      const now = (await grid.innerText()).slice(0, 400);
      if (!/\d/.test(now) || now === last) continue;
      const t = await bottomUp(page);
      last = (await grid.innerText()).slice(0, 400);
      const k = match(t);
      if (k.best && (!k.right || !seen.has(k.best.name))) seen.set(k.best.name, k);
    }
    const wrong = [...seen.values()].filter(k => !k.right);
    const calls = [...seen.values()].reduce((c, k) => c + k.best.calls, 0);
    const total = exp.reduce((c, x) => c + x.calls, 0);
    const missed = exp.filter(x => !seen.has(x.name)).map(x => x.name);
    check += `; the keyboard reached ${seen.size} of the document's ${exp.length} thread tracks ` +
      `(${calls} of its ${total} calls${missed.length ? '; not ' + missed.join(', ') : ''}): ` +
      (wrong.length ? 'DISAGREE on ' + wrong.map(k => `${k.best.name} (${k.ok}/${k.n})`).join(', ')
        : 'every table agrees');
    if (wrong.length) failed = true;
  } else if (all.length && !exp.length) {
    check = `; calls overlap on ${all.filter(x => !x.nests).length} of the document's ${all.length} tracks: times not compared`;
  }
  await page.screenshot({ path: `${out}/${stem}.devtools-tracks.png` });
  say(doc, 'devtools', `loaded in the Performance panel in ${took} s; Bottom-up of the thread track opened (screenshot): ` +
    (rows.size ? [...rows.keys()].slice(0, 8).join(', ') + (rows.size > 8 ? `, ... (${rows.size})` : '')
      : '(nothing read: the clicks by position missed; see the screenshots)') + check);
  await page.close();
}

(async () => {
  const ctx = await chromium.launchPersistentContext(profileDir, {
    executablePath: '/usr/bin/chromium', headless: true, args: flags, acceptDownloads: true,
    viewport: { width: 1400, height: 1200 },
  });
  for (const job of jobs) {
    const [kind, doc] = job.split('=');
    try {
      if (kind === 'speedscope') await speedscope(ctx, doc, kind);
      else {
        await devtools(ctx, doc);
        if (fs.statSync(doc).size <= +traceMB * 1e6) await speedscope(ctx, doc, 'Trace Event Format');
        else say(doc, 'speedscope', `not opened: larger than ${traceMB} MB (SX_VIEWER_SPEEDSCOPE_TRACE_MB); ` +
          'its Trace Event importer takes ~1.3 s per MB');
      }
    } catch (e) {
      failed = true;
      say(doc, kind === 'speedscope' ? 'speedscope' : 'devtools', 'DRIVER ERROR: ' + e.message.split('\n')[0].slice(0, 200));
    }
  }
  await ctx.close();
  process.exit(failed ? 1 : 0);
})();
EOF

jobs=()
while IFS=$'\t' read -r path kind result; do
    printf '%s\t%s\t%s\n' "$(basename "$path")" "format-$kind" "$result"
    jobs+=("$kind=$path")
done <"$work/formats"
NODE_PATH=$tools/node_modules timeout "${SX_VIEWER_TIMEOUT:-1800}" node --max-old-space-size=8192 "$work/view.js" \
    "$out" "$port" "$work/profile" "$work/expect.json" "${SX_VIEWER_SPEEDSCOPE_TRACE_MB:-50}" \
    "${jobs[@]}" || status=1
echo "screenshots in $out, speedscope's exports in $out/exported"
exit $status
