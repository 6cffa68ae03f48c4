#!/usr/bin/env bash
# test_python.sh - the Python module over the built shared library: exports equal to
# scope-profiler's text without MPI (comm=None, mpi4py never imported) and under
# mpirun -n 2 (mpi4py communicators); options equal the command's; errors raise with
# the library's message, rank and source on every rank and leave no output
. "$(dirname "$0")/lib.sh"

PY=$(sx_python)
if [ -z "$PY" ]; then
    echo "skip: no python3 with mpi4py (Debian: python3-mpi4py, see scripts/setup.sh)"
    exit 77
fi
export PYTHONPATH="$(cd "$(dirname "$0")/../../src/python" && pwd)"
export PYTHONDONTWRITEBYTECODE=1 # no __pycache__ in the source tree
export SCOPE_EXPORT_LIBRARY="$BIN/libscope_export.so"
G="$SHARED/golden"

# One process, no MPI: comm=None; mpi4py is not imported and MPI never initialized.
cat >"$TMP/alone.py" <<'PYEOF'
import sys
import scope_export as sx
g, out = sys.argv[1], sys.argv[2]
sx.export(None, g + "/basic_nested/run.h5", out + "/plain.json")
sx.export(None, g + "/basic_nested/run.h5", out + "/i2.json.gz", indent=2, block_size=2048)
sx.export(None, g + "/basic_nested/run.h5", out + "/s.json", summary=True)
sx.export(None, g + "/mpi4_parallel/run.h5", out + "/opts.json", ranks=[0, 2, 3],
          include=["compute", "rank.*", "last"], exclude="rank3", gzip_level=1)
sx.export(None, g + "/mpi4_parallel/run.h5", out + "/opts2.json.gz", ranks="0,2-3",
          include="compute", gzip_level=0, deflate="zlib")
sx.export(None, g + "/basic_nested/run.h5", out + "/p.prof", format="prof",
          call_paths=False)
sx.export(None, g + "/basic_nested/run.h5", out + "/st.json", format="region-statistics")
assert "mpi4py" not in sys.modules, "comm=None imported mpi4py"
print("ok")
PYEOF
if timeout 120 "${SX_SAN_ENV[@]}" "$PY" "$TMP/alone.py" "$G" "$TMP" >"$TMP/alone.out" 2>&1; then
    "$CMP" "$TMP/plain.json" "$G/basic_nested/run.json" && ok || bad "comm=None: default"
    "$CMP" "$TMP/i2.json.gz" "$G/basic_nested/run.indent2.json" && ok || bad "indent=2"
    "$CMP" "$TMP/s.json" "$G/basic_nested/run.summary.json" && ok || bad "summary=True"
    # the options mean what the command's mean
    "$X" export "$G/mpi4_parallel/run.h5" -o "$TMP/cli.json" -q --ranks 0,2,3 \
        --include compute --include 'rank.*' --include last --exclude rank3 &&
        cmp "$TMP/opts.json" "$TMP/cli.json" && ok || bad "ranks/include/exclude differ from the command's"
    ! cmp -s "$TMP/opts.json" "$G/mpi4_parallel/run.json" && ok || bad "options had no effect"
    "$X" export "$G/mpi4_parallel/run.h5" -o "$TMP/cli2.json" -q --ranks 0,2-3 \
        --include compute && gzip -dc "$TMP/opts2.json.gz" | cmp - "$TMP/cli2.json" && ok ||
        bad "ranks as a string differ from the command's"
    # format= and call_paths= as --format and --no-call-paths
    "$PY" -c 'import marshal, sys; a, b = (marshal.load(open(p, "rb")) for p in sys.argv[1:]); sys.exit(a != b)' \
        "$TMP/p_rank0.prof" "$G/basic_nested/run.nocallpaths.prof" && ok ||
        bad "format=\"prof\", call_paths=False"
    "$X" export "$G/basic_nested/run.h5" -o "$TMP/st_cli.json" -q --format region-statistics &&
        cmp "$TMP/st.json" "$TMP/st_cli.json" && ok || bad "format=\"region-statistics\""
else
    bad "comm=None exports failed: $(cat "$TMP/alone.out")"
fi

# Errors: the library's message, status, rank and source; no output; nothing destroyed.
cat >"$TMP/errors.py" <<'PYEOF'
import os, sys
import scope_export as sx
g, out = sys.argv[1], sys.argv[2]
keep = out + "/keep.json"
with open(keep, "w") as f:
    f.write("precious")
try:
    sx.export(None, out + "/missing.h5", keep)
    raise SystemExit("no exception for a missing input")
except sx.ExportError as e:
    assert e.status == 2 and "missing.h5" in str(e), (e.status, str(e))
    assert e.source.endswith("missing.h5") and e.rank == 0, (e.source, e.rank)
    assert "not found" in e.reason, e.reason
assert open(keep).read() == "precious", "an existing output was destroyed"
for bad in ({"gzip_level": 12}, {"indent": -3}, {"ranks": "1-"}, {"deflate": "gzip"},
            {"block_size": 10}):
    try:
        sx.export(None, g + "/basic_nested/run.h5", out + "/never.json", **bad)
        raise SystemExit("no exception for %r" % bad)
    except ValueError as e:
        assert isinstance(e, sx.UsageError) and e.status == 1, bad
        assert list(bad)[0].replace("_", "-") in str(e), str(e)
for bad in ({"ranks": [0, "x"]}, {"include": 3}):
    try:
        sx.export(None, g + "/basic_nested/run.h5", out + "/never.json", **bad)
        raise SystemExit("no exception for %r" % bad)
    except TypeError:
        pass
try:
    sx.export(0, g + "/basic_nested/run.h5", out + "/never.json")
    raise SystemExit("no exception for comm=0")
except TypeError as e:
    assert "mpi4py" in str(e)
assert not os.path.exists(out + "/never.json"), "a failed export wrote its output"
print("ok")
PYEOF
timeout 120 "${SX_SAN_ENV[@]}" "$PY" "$TMP/errors.py" "$G" "$TMP" >"$TMP/errors.out" 2>&1 && ok ||
    bad "errors: $(cat "$TMP/errors.out")"

# Two exports in one process give what two processes give: one interrupted (the
# library's sx_request_stop as a C signal handler, signalled from a thread while the
# export runs), then a good one; a stop asked for between exports stops nothing.
cat >"$TMP/two.py" <<'PYEOF'
import ctypes, os, signal, sys, threading, time
import scope_export as sx
g, out = sys.argv[1], sys.argv[2]
libc = ctypes.CDLL(None)
libc.signal.restype = ctypes.c_void_p
libc.signal.argtypes = [ctypes.c_int, ctypes.c_void_p]
libc.signal(signal.SIGUSR1, ctypes.cast(sx._lib.sx_request_stop, ctypes.c_void_p))
run = g + "/gen_schema3_allcols/run.h5"
interrupted = False
for attempt in range(50):
    done = threading.Event()
    def poke():
        while not done.is_set():
            os.kill(os.getpid(), signal.SIGUSR1)
            time.sleep(0.0005)
    t = threading.Thread(target=poke)
    t.start()
    try:
        sx.export(None, run, out + "/two_stopped.json")
    except sx.ExportError as e:
        assert e.status == 11, (e.status, str(e))
        interrupted = True
    finally:
        done.set()
        t.join()
    if interrupted:
        break
assert interrupted, "no export was interrupted"
assert not os.path.exists(out + "/two_stopped.json"), "an interrupted export wrote"
sx.export(None, run, out + "/two_a.json")
os.kill(os.getpid(), signal.SIGUSR1)  # a stop between exports
sx.export(None, run, out + "/two_b.json")
print("ok")
PYEOF
if timeout 120 "${SX_SAN_ENV[@]}" "$PY" "$TMP/two.py" "$G" "$TMP" >"$TMP/two.out" 2>&1; then
    "$X" export "$G/gen_schema3_allcols/run.h5" -o "$TMP/two_cli.json" -q &&
        cmp "$TMP/two_a.json" "$TMP/two_cli.json" && cmp "$TMP/two_b.json" "$TMP/two_cli.json" &&
        ok || bad "two exports in one process differ from a process's"
else
    bad "two exports in one process: $(cat "$TMP/two.out")"
fi

# Under mpirun -n 2: COMM_WORLD and a communicator of the profiler's own; a failure
# raises the same error on every rank.
cat >"$TMP/mpi.py" <<'PYEOF'
import sys
from mpi4py import MPI
import scope_export as sx
g, out = sys.argv[1], sys.argv[2]
world = MPI.COMM_WORLD
sx.export(world, g + "/mpi4_parallel/run.h5", out + "/w.json.gz", block_size=2048)
mine = world.Split(0, world.Get_size() - world.Get_rank())  # ranks in reverse order
sx.export(mine, g + "/gen_schema3_allcols/run.h5", out + "/m.json", indent=2)
mine.Free()
try:
    sx.export(world, out + "/missing.h5", out + "/x.json")
except sx.ExportError as e:
    print("rank %d: status %d: %s" % (world.Get_rank(), e.status, e), flush=True)
PYEOF
if run_np 2 "${SX_SAN_ENV[@]}" "$PY" "$TMP/mpi.py" "$G" "$TMP" >"$TMP/mpi.out" 2>&1; then
    "$CMP" "$TMP/w.json.gz" "$G/mpi4_parallel/run.json" && ok || bad "-n 2 COMM_WORLD"
    run_np 1 "$X" export "$G/gen_schema3_allcols/run.h5" -o "$TMP/m1.json" -q --indent 2 &&
        cmp "$TMP/m.json" "$TMP/m1.json" && ok || bad "-n 2 own communicator differs"
    [ "$(grep -o 'status 2: [^[]*missing.h5' "$TMP/mpi.out" | wc -l)" -eq 2 ] && ok ||
        bad "-n 2: the error was not raised on both ranks: $(cat "$TMP/mpi.out")"
else
    bad "-n 2 exports failed: $(cat "$TMP/mpi.out")"
fi
# load(): what json.load gives for every golden document (.json and .json.gz), with each
# event column an int64 array (a memoryview "q" without numpy: both are tried), the keys in
# the document's order; an invalid profile raises validate's message.
cat >"$TMP/load.py" <<'PYEOF'
import glob, gzip, json, os, sys
no_numpy = sys.argv[2] == "no-numpy"
if no_numpy:
    sys.modules["numpy"] = None  # import numpy fails: the module falls back
import scope_export as sx
COLS = ("start_times_ns", "end_times_ns", "gpu_durations_ns", "call_ids", "parent_ids",
        "thread_ids", "task_ids", "await_ns")
def plain(x, key=None):
    if key in COLS and not isinstance(x, (list, type(None))):
        if no_numpy:
            assert isinstance(x, memoryview) and x.format == "q", (key, type(x))
        else:
            assert type(x).__name__ == "ndarray" and str(x.dtype) == "int64", (key, type(x))
        return list(x.tolist())
    if isinstance(x, dict):
        return {k: plain(v, k) for k, v in x.items()}
    if isinstance(x, list):
        return [plain(v) for v in x]
    return x
n = cols = 0
for doc in sorted(glob.glob(sys.argv[1] + "/*/run.json*")):
    opener = gzip.open if doc.endswith(".gz") else open
    with opener(doc, "rt", encoding="utf-8") as f:
        want = json.load(f)
    got = sx.load(doc)
    assert json.dumps(plain(got)) == json.dumps(want), doc
    cols += sum(1 for r in got.get("regions", []) for k in COLS if k in r)
    n += 1
assert n >= 10 and cols > 0, (n, cols)
# shapes the golden documents lack: a row with every column and event metadata, one the
# fast reader leaves as text (nested metadata, after columns it had read) among rows it
# takes, and "regions" twice
# (json.load keeps the last list; the library's places of its columns do not hold then)
base = json.load(open(sys.argv[1] + "/basic_nested/run.json"))
rows = [r for r in base["regions"] if r.get("start_times_ns")]
assert len(rows) >= 2, len(rows)
every = dict(rows[0])
k = len(every["start_times_ns"])
for c in COLS[2:]:
    every[c] = list(range(k))
every["event_metadata"] = [{"i": j} if j % 2 else {} for j in range(k)]
nested = dict(rows[1])
nested["event_metadata"] = [{"a": {"b": [j]}} for j in range(len(nested["start_times_ns"]))]
shapes = dict(base)
shapes["regions"] = [every, nested] + base["regions"] + [nested]
cases = [json.dumps(shapes)]
text = json.dumps(base)
cases.append(text[:-1] + ', "regions": ' + json.dumps(base["regions"][1:]) + "}")
for i, t in enumerate(cases):
    path = sys.argv[3] + ".shape%d.json" % i
    with open(path, "w") as f:
        f.write(t)
    got = sx.load(path)
    assert json.dumps(plain(got)) == json.dumps(json.loads(t)), ("shape", i)
    n += 1
# a column outlives the document it came with (it views the library's buffer, which must
# live as long as it does); the cyclic collector is as the caller left it, on errors too
import gc
doc = sys.argv[1] + "/basic_nested/run.json"
want = [r["start_times_ns"] for r in json.load(open(doc))["regions"] if r.get("start_times_ns")]
got = [r["start_times_ns"] for r in sx.load(doc)["regions"] if "start_times_ns" in r]
last = got[-1]
del got
gc.collect()
junk = [bytearray(4096) for _ in range(4096)]  # memory a freed buffer would be reused for
assert list(last.tolist()) == want[-1], "a column changed after its document was dropped"
for enabled in (True, False):
    gc.enable() if enabled else gc.disable()
    sx.load(doc)
    try:
        sx.load(sys.argv[3] + ".missing.json")
    except sx.ExportError:
        pass
    assert gc.isenabled() == enabled, ("collector", enabled)
gc.enable()
bad = sys.argv[3]
with open(bad, "w") as f:
    f.write('{"format": "scope-profiler-profile", "regions": [{"name": "a", "rank": "x"}]}')
try:
    sx.load(bad)
    raise SystemExit("an invalid profile loaded")
except sx.ExportError as e:
    assert "'rank' must be an integer" in str(e), str(e)
print("loaded", n, "documents")
PYEOF
for mode in numpy no-numpy; do
    if [ $mode = numpy ] && ! "$PY" -c "import numpy" 2>/dev/null; then
        echo "load() with numpy: skipped, no numpy (Debian: python3-numpy)"
        continue
    fi
    "${SX_SAN_ENV[@]}" "$PY" "$TMP/load.py" "$G" $mode "$TMP/bad.json" >"$TMP/load.out" 2>&1 &&
        ok || bad "load() ($mode): $(tail -5 "$TMP/load.out")"
done
finish
