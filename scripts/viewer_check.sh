#!/usr/bin/env bash
# viewer_check.sh - open our trace documents in real viewers, as a person would, and say
# what each showed (not part of the test suite; run by hand, as root on Debian 12)
#
#   bash scripts/viewer_check.sh OUTDIR [DOC.json ...]
#
# Without DOC arguments it exports the reference runs threads and mpi4_parallel (from
# ../shared/golden, or $SX_SHARED_DIR/golden) and a synthetic run (perf counters, non-ASCII
# names) with build/scope-export, in both trace formats. Every document gets a check against
# its format's rules (written here, independent of our code), then:
#   speedscope documents: the speedscope web app (npm package), served on 127.0.0.1, loads
#     it through #profileURL=; we read its title, profiles and Sandwich table;
#   Chrome trace documents: Chromium's own DevTools Performance panel (trace_app.html, as
#     "Load profile" does) and speedscope's Trace Event importer.
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
    echo "usage: $0 OUTDIR [DOC.json ...]" >&2
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
    for d in "$@"; do docs+=("$(cd "$(dirname "$d")" && pwd)/$(basename "$d")"); done
else
    [ -x "$build/scope-export" ] || BUILD_DIR=$build bash "$top/scripts/build.sh" >/dev/null
    x=$build/scope-export
    mkdir -p "$out/docs"
    g=$shared/golden
    if [ -f "$g/threads/run.h5" ]; then
        "$x" export "$g/threads/run.h5" -o "$out/docs/threads.speedscope.json" --format speedscope --quiet
        "$x" export "$g/threads/run.h5" -o "$out/docs/threads.trace.json" --format chrome-trace --quiet
        "$x" export "$g/threads/run.h5" -o "$out/docs/threads.trace.json.gz" --format chrome-trace --quiet
        "$x" export "$g/mpi4_parallel/run.h5" -o "$out/docs/mpi4_parallel.speedscope.json" \
            --format speedscope --ranks 0-3 --quiet
        "$x" export "$g/mpi4_parallel/run.h5" -o "$out/docs/mpi4_parallel.trace.json" \
            --format chrome-trace --ranks 0-3 --quiet
        docs+=("$out/docs/threads.speedscope.json" "$out/docs/threads.trace.json"
            "$out/docs/threads.trace.json.gz" "$out/docs/mpi4_parallel.speedscope.json"
            "$out/docs/mpi4_parallel.trace.json")
    else
        echo "viewer_check: no reference runs in $g; synthetic run only" >&2
    fi
    # random synthetic calls overlap, so speedscope refuses them: a Chrome trace only
    "$build/scope-export-synth" --ranks 2 --regions 4 --events 400 --columns all --lanes \
        --perf --unicode "$work/synth.h5"
    "$x" export "$work/synth.h5" -o "$out/docs/synth.trace.json" --format chrome-trace \
        --ranks 0-1 --quiet
    docs+=("$out/docs/synth.trace.json")
fi

# --- the format rules, checked here and not by our code ------------------------------------
status=0
python3 - "${docs[@]}" >"$work/formats" <<'EOF' || status=1
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

failed = False
for path in sys.argv[1:]:
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
sys.exit(1 if failed else 0)
EOF

# --- serve the app and the documents on 127.0.0.1 ------------------------------------------
mkdir -p "$work/site/docs"
cp -r "$app/." "$work/site/"
for d in "${docs[@]}"; do cp "$d" "$work/site/docs/"; done
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
const [out, port, profileDir, ...jobs] = process.argv.slice(2);
const base = `http://127.0.0.1:${port}`;
const flags = ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
  '--disable-background-networking', '--disable-component-update', '--disable-sync'];
let failed = false;

function say(doc, viewer, text) { console.log(`${path.basename(doc)}\t${viewer}\t${text}`); }

function watch(page, log) {
  page.on('console', m => { if (!m.text().includes('GL Driver')) log.push(m.text().split('\n')[0]); });
  page.on('pageerror', e => log.push('page error: ' + e.message));
  page.on('dialog', d => { log.push('alert: ' + d.message()); d.dismiss().catch(() => {}); });
}

async function speedscope(ctx, doc, kind) {
  const page = await ctx.newPage();
  const log = [];
  watch(page, log);
  const stem = path.basename(doc).replace(/\.json(\.gz)?$/, '');
  const url = `${base}/docs/${encodeURIComponent(path.basename(doc))}`;
  await page.goto(`${base}/index.html#profileURL=${encodeURIComponent(url)}`);
  try {
    await page.waitForFunction(() => document.title.endsWith(' - speedscope') ||
      document.body.innerText.includes('Something went wrong'), null, { timeout: 30000 });
  } catch (e) { /* reported below */ }
  await page.waitForTimeout(500);
  await page.screenshot({ path: `${out}/${stem}.speedscope.png` });
  const title = await page.title();
  const body = await page.evaluate(() => document.body.innerText);
  if (!title.endsWith(' - speedscope')) {
    failed = true;
    const why = log.filter(l => /fail|error|alert|unrecognized/i.test(l)).join(' / ') || 'no profile after 30 s';
    say(doc, 'speedscope', `NOT LOADED: "${body.split('\n').filter(l => /wrong|Unrecognized/.test(l)).join(' ') || title}" (${why.slice(0, 300)})`);
    await page.close();
    return;
  }
  const how = (log.find(l => l.startsWith('Importing as')) || '').replace('Importing as ', '');
  const label = () => page.evaluate(() => (document.body.innerText.split('\n')[1] || '').trim());
  const first = await label();
  const m = /\((\d+)\/(\d+)\)$/.exec(first);
  const count = m ? +m[2] : 1;
  const profiles = [first.replace(/ \(\d+\/\d+\)$/, '')];
  await page.keyboard.press('2');
  await page.waitForTimeout(300);
  await page.screenshot({ path: `${out}/${stem}.speedscope-left-heavy-1.png` });
  for (let i = 2; i <= count; i++) {
    await page.keyboard.press('n');
    await page.waitForTimeout(300);
    profiles.push((await label()).replace(/ \(\d+\/\d+\)$/, ''));
    await page.screenshot({ path: `${out}/${stem}.speedscope-left-heavy-${i}.png` });
  }
  await page.keyboard.press('3');
  await page.waitForTimeout(500);
  await page.screenshot({ path: `${out}/${stem}.speedscope-sandwich.png` });
  // the Sandwich table's rows: total (percent), self (percent), symbol name
  const names = await page.evaluate(() => [...document.querySelectorAll('tr')]
    .filter(r => r.cells.length === 3 && /%\)/.test(r.cells[0].innerText))
    .map(r => r.cells[2].innerText.trim()).filter(s => s));
  const short = [...new Set(names.map(n => n.split(' {')[0]))];
  say(doc, 'speedscope', `loaded as ${how || kind}: "${title}", ${count} profile(s) [${profiles.join('; ')}]; ` +
    `Sandwich of profile ${count}: ${names.length} symbol(s), regions ${short.join(', ')}` +
    (short.length < names.length ? ' (one symbol per call: its args are part of the name)' : ''));
  await page.close();
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
  await input.setInputFiles(doc);
  let loaded = true;
  try {
    await page.getByRole('tab', { name: 'Bottom-up' }).waitFor({ timeout: 30000 });
  } catch (e) { loaded = false; }
  await page.waitForTimeout(1500);
  await page.keyboard.press('Escape');
  await page.waitForTimeout(300);
  await page.screenshot({ path: `${out}/${stem}.devtools.png` });
  if (!loaded) {
    failed = true;
    const text = (await page.evaluate(() => document.body.innerText)).replace(/\s+/g, ' ').slice(0, 200);
    say(doc, 'devtools', `NOT LOADED: "${text}" (${log.filter(l => /error|fail/i.test(l)).join(' / ').slice(0, 300)})`);
    await page.close();
    return;
  }
  // open the first process track and select its first thread track: the flame chart and
  // its Bottom-up table. The track headers are drawn on a canvas, so by position, and a
  // process may start open or closed: click its header until the table fills.
  const grid = page.locator('[role=treegrid], [role=grid], table').last();
  let rows = [];
  for (let attempt = 0; attempt < 3 && !rows.length; attempt++) {
    await page.waitForTimeout(1000);
    if (attempt) {
      await page.mouse.click(265, 129);
      await page.waitForTimeout(1500);
    }
    await page.mouse.click(300, 146);
    await page.waitForTimeout(800);
    await page.getByRole('tab', { name: 'Bottom-up' }).click();
    await page.waitForTimeout(1000);
    // the grid sits in shadow roots: read its text, keep what is neither a header nor a time
    rows = (await grid.innerText()).split('\n').map(s => s.trim()).filter(s => s &&
      !/^(Self time|Total time|Activity)/.test(s) && !/^[\d.]+\s*(ms|µs|s)?\s*[\d.]*\s*%?$/.test(s));
  }
  await page.screenshot({ path: `${out}/${stem}.devtools-track.png` });
  say(doc, 'devtools', `loaded in the Performance panel; Bottom-up of the thread track opened (screenshot): ` +
    (rows.length ? [...new Set(rows)].join(', ') : '(nothing read: the clicks by position missed; see the screenshots)'));
  await page.close();
}

(async () => {
  const ctx = await chromium.launchPersistentContext(profileDir, {
    executablePath: '/usr/bin/chromium', headless: true, args: flags,
    viewport: { width: 1400, height: 900 },
  });
  for (const job of jobs) {
    const [kind, doc] = job.split('=');
    try {
      if (kind === 'speedscope') await speedscope(ctx, doc, kind);
      else {
        await devtools(ctx, doc);
        if (!doc.endsWith('.gz')) await speedscope(ctx, doc, 'Trace Event Format');
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
NODE_PATH=$tools/node_modules timeout 900 node "$work/view.js" "$out" "$port" \
    "$work/profile" "${jobs[@]}" || status=1
echo "screenshots in $out"
exit $status
