#!/usr/bin/env bash
# test_faults.sh - failures are loud, never hang and never lose data: damaged inputs, output
# faults, signals and injected MPI faults each give a non-zero exit, one error line that
# names the file, and no output (an existing output stays as it was, byte for byte)
. "$(dirname "$0")/lib.sh"
sx_leak_check 3

SYNTH="$BIN/scope-export-synth"
DAMAGE="$BIN/scope-export-damage"
XF="$BIN/tests/scope-export-faults" # the command with the test-only fault hooks (SX_FAULT)
for t in "$SYNTH" "$DAMAGE" "$XF"; do
    [ -x "$t" ] || { echo "FAIL: $t is not built" >&2; exit 1; }
done

# Mounts made here (tmpfs, read-only bind) are undone before $TMP is removed.
MOUNTS=()
cleanup() {
    local m
    for m in "${MOUNTS[@]}"; do umount "$m" 2>/dev/null; done
    rm -rf "$TMP"
}
trap cleanup EXIT

. "$(dirname "$0")/mpi_lib.sh"

# fails NAME NP OUT 'NEEDLE|NEEDLE...' -- ARGS...: 'scope-export export ARGS -o OUT' fails
# (NP 0: the bare command, without mpiexec and without MPI)
# with status $STATUS (default 1) within the time limit, prints exactly one line on stderr containing every
# needle, leaves OUT as it was (absent, or the same bytes) and no temporary file.
fails() {
    local name=$1 np=$2 out=$3 needles=$4
    shift 5
    local err="$TMP/err.txt" rc=0 why="" n before after
    before=$(state "$out")
    mpi "$np" "$X" export "$@" -o "$out" -q >"$TMP/stdout.txt" 2>"$err" || rc=$?
    after=$(state "$out")
    case $rc in
    0) why="; exit status 0" ;;
    124 | 137) why="; no result within ${LIMIT:-60} s (a hang)" ;;
    99) why="; $RANKS_AGREE" ;;
    "${STATUS:-1}") ;;
    *) why="; exit status $rc (${STATUS:-1} expected)" ;;
    esac
    n=$(grep -c '' "$err")
    [ "$n" = 1 ] || why="$why; $n lines on stderr (1 expected)"
    local -a list
    IFS='|' read -ra list <<<"$needles"
    for needle in "${list[@]}"; do
        grep -qF -- "$needle" "$err" || why="$why; the error does not say '$needle'"
    done
    [ "$before" = "$after" ] ||
        why="$why; the output changed ($before -> $after)"
    [ -z "$(leftovers "$out")" ] || why="$why; temporary file left: $(leftovers "$out")"
    if [ -z "$why" ]; then
        ok
    else
        bad "$name -n $np:${why#;} -- stderr: $(head -c 600 "$err")"
    fi
}

# ---------------------------------------------------------------------------------------
# Inputs: a valid run, its damaged copies, truncations (each at 1 and 3 ranks; under the
# sanitizers at one of them, in turn: sx_sample)
mkdir -p "$TMP/in" "$TMP/out"
base="$TMP/in/base.h5"
"$SYNTH" --ranks 3 --regions 6 --events 2000 "$base" >/dev/null ||
    { echo "FAIL: scope-export-synth failed" >&2; exit 1; }

# The messages of scope-profiler's reader (spec 1.0, 2.11) where the file is the subject.
NOT_READABLE="is not a readable HDF5 profiling file"

fails "missing file" 1 "$TMP/out/missing.json" "$TMP/in/nope.h5|HDF5 file not found" -- \
    "$TMP/in/nope.h5"
fails "missing file" 3 "$TMP/out/missing.json" "$TMP/in/nope.h5|HDF5 file not found" -- \
    "$TMP/in/nope.h5"
printf 'time,region\n1,solve\n' >"$TMP/in/text.h5"
for np in 1 3; do
    sx_sample 2 || continue
    fails "not HDF5 (a text file)" "$np" "$TMP/out/text.json" "$TMP/in/text.h5|$NOT_READABLE" \
        -- "$TMP/in/text.h5"
done
: >"$TMP/in/empty.h5"
for np in 1 3; do
    sx_sample 2 || continue
    fails "not HDF5 (an empty file)" "$np" "$TMP/out/empty.json" \
        "$TMP/in/empty.h5|$NOT_READABLE" -- "$TMP/in/empty.h5"
done
size=$(stat -c %s "$base")
for cut in $((size / 4)):25% $((size / 2)):50% $((size * 9 / 10)):90% $((size - 100)):-100B; do
    f="$TMP/in/cut${cut#*:}.h5"
    head -c "${cut%%:*}" "$base" >"$f"
    for np in 1 3; do
        sx_sample 2 || continue
        fails "truncated to ${cut#*:}" "$np" "$TMP/out/cut.json.gz" "$f|$NOT_READABLE" -- "$f"
    done
done

# mode|needles (besides the file name): the object, and the reader's wording where the
# spec gives one. Each damage is alone in its file.
while IFS='|' read -r mode needles; do
    f="$TMP/in/$mode.h5"
    if [ "$mode" = not-profile ]; then
        "$DAMAGE" not-profile "$f" || { bad "scope-export-damage $mode failed"; continue; }
    else
        "$DAMAGE" "$mode" "$base" "$f" || { bad "scope-export-damage $mode failed"; continue; }
    fi
    for np in 1 3; do
        sx_sample 2 || continue
        fails "damaged: $mode" "$np" "$TMP/out/$mode.json" "$f${needles:+|$needles}" -- "$f"
    done
done <<'EOF'
offsets-beyond|rank_region_index|recorded events but its event columns hold|truncated or damaged
overlap|rank_region_index|has overlapping region rows in its event index
index-lengths|rank_region_index/event_counts
region-id|rank_region_index|region_table/names
huge-claim|events/durations
wrong-dtype|events/durations
string-ints|rank_region_index/ranks
unknown-filter|events/durations|32000|LZF
schema-4|scope_profiler_schema|Unsupported scope-profiler HDF5 schema version 4
schema-float|scope_profiler_schema|must be an integer
not-profile|
EOF
# huge-claim: refused from the claim, not from a failed 8 TiB allocation
mpi 1 "$X" export "$TMP/in/huge-claim.h5" -o "$TMP/out/huge.json" -q 2>"$TMP/err.txt"
grep -qi 'out of memory' "$TMP/err.txt" && bad "huge-claim: refused by running out of memory" ||
    ok

# bad-utf8 is valid: invalid bytes become U+FFFD, as Python's errors="replace"
# (one U+FFFD per maximal invalid subsequence), the same at any rank count.
f="$TMP/in/bad-utf8.h5"
if "$DAMAGE" bad-utf8 "$base" "$f"; then
    for np in 1 3; do
        o="$TMP/out/bad-utf8.$np.json"
        if ! mpi "$np" "$X" export "$f" -o "$o" -q 2>"$TMP/err.txt"; then
            bad "bad-utf8 -n $np: export failed: $(head -c 300 "$TMP/err.txt")"
            continue
        fi
        for want in '"name": "bad\ufffd\ufffdname\ufffd\ufffd\ufffd\ufffd"' \
            '"bad_utf8": "a\ufffd\ufffd\ufffdb\ufffd(\ufffd"' \
            '"bad_utf8_list": ["caf\ufffd", "x\ufffd"]' '"name": "solve\ufffd("'; do
            grep -qF -- "$want" "$o" && ok || bad "bad-utf8 -n $np: no $want in the document"
        done
        names=$(grep -o '"name": "[^"]*"' "$o" | sort -u)
        [ "$(grep -c . <<<"$names")" = "$(grep -c 'ufffd' <<<"$names")" ] && ok ||
            bad "bad-utf8 -n $np: a region name lost its U+FFFD: $names"
        "$X" validate "$o" >/dev/null 2>&1 && ok || bad "bad-utf8 -n $np: validate rejects it"
    done
    cmp -s "$TMP/out/bad-utf8.1.json" "$TMP/out/bad-utf8.3.json" && ok ||
        bad "bad-utf8: -n 1 and -n 3 documents differ"
else
    bad "scope-export-damage bad-utf8 failed"
fi

# ---------------------------------------------------------------------------------------
# Output faults, at 1 and 2 ranks (under the sanitizers at one of them, in turn). As root,
# chmod 555 does not stop writes: an unwritable directory is a read-only bind mount (when
# mount works here), a path under /proc, and a path whose parent is a regular file.
ro="$TMP/ro"
mkdir -p "$ro"
echo precious >"$ro/out.json"
if mount --bind -o ro "$ro" "$ro" 2>/dev/null; then
    MOUNTS+=("$ro")
    if touch "$ro/probe" 2>/dev/null; then
        echo "SKIP: read-only bind mount is writable here"
        rm -f "$ro/probe"
    else
        for np in 1 2; do
            sx_sample 2 || continue
            fails "unwritable directory (read-only mount)" "$np" "$ro/out.json" \
                "$ro/out.json" -- "$base"
            fails "unwritable directory (read-only mount, new file)" "$np" "$ro/new.json.gz" \
                "$ro/new.json.gz" -- "$base"
        done
    fi
else
    echo "SKIP: unwritable directory (read-only mount): mount --bind -o ro is not permitted"
fi
for np in 1 2; do
    sx_sample 2 || continue
    fails "unwritable directory (/proc)" "$np" /proc/sx-fault-test/out.json \
        /proc/sx-fault-test -- "$base"
done
echo "a file, not a directory" >"$TMP/out/plainfile"
for np in 1 2; do
    sx_sample 2 || continue
    fails "output parent is a regular file" "$np" "$TMP/out/plainfile/out.json" \
        "$TMP/out/plainfile" -- "$base"
done

# A full disk: a 64 KiB tmpfs, a document of ~800 KB, an existing output in the way.
full="$TMP/full"
mkdir -p "$full"
"$SYNTH" --ranks 2 --regions 4 --events 20000 "$TMP/in/mid.h5" >/dev/null
if mount -t tmpfs -o size=64k tmpfs "$full" 2>/dev/null; then
    MOUNTS+=("$full")
    echo precious >"$full/out.json"
    echo precious >"$full/out.json.gz"
    for np in 1 2; do
        sx_sample 2 || continue
        fails "disk full (.json)" "$np" "$full/out.json" "$full/out.json" -- "$TMP/in/mid.h5"
        fails "disk full (.json.gz)" "$np" "$full/out.json.gz" "$full/out.json.gz" -- \
            "$TMP/in/mid.h5"
        fails "disk full (new file)" "$np" "$full/new.json" "$full/new.json" -- \
            "$TMP/in/mid.h5"
    done
else
    echo "SKIP: disk full: mount -t tmpfs -o size=64k is not permitted here"
fi

# A character device (a private node with /dev/full's numbers): writing it fails (ENOSPC);
# renaming a regular file over it would destroy the node (think -o /dev/null as root).
if mknod "$TMP/out/dev.json" c 1 7 2>/dev/null; then
    for np in 1 2; do
        sx_sample 2 || continue
        mpi "$np" "$X" export "$base" -o "$TMP/out/dev.json" -q 2>"$TMP/err.txt"
        rc=$?
        [ -c "$TMP/out/dev.json" ] && ok ||
            bad "output is a character device -n $np: the device node was replaced by a file"
        [ "$rc" != 0 ] && ok ||
            bad "output is a character device (full) -n $np: exit status 0 for a failed write"
        [ -z "$(leftovers "$TMP/out/dev.json")" ] && ok ||
            bad "output is a character device -n $np: temporary file left"
        rm -f "$TMP/out/dev.json"
        mknod "$TMP/out/dev.json" c 1 7
    done
else
    echo "SKIP: output is a character device: mknod is not permitted here"
fi

mkdir -p "$TMP/out/dir.json"
for np in 1 2; do
    sx_sample 2 || continue
    fails "output is a directory" "$np" "$TMP/out/dir.json" "$TMP/out/dir.json" -- "$base"
done
[ -d "$TMP/out/dir.json" ] && [ -z "$(ls -A "$TMP/out/dir.json")" ] && ok ||
    bad "output is a directory: the directory changed"

# Refusing to overwrite the input is a usage error: exit status 2.
cp "$base" "$TMP/in/same.h5"
for np in 1 2; do
    sx_sample 2 || continue
    STATUS=2 fails "input and output the same file" "$np" "$TMP/in/same.h5" "$TMP/in/same.h5" -- \
        "$TMP/in/same.h5"
    STATUS=2 fails "input and output the same file (another spelling)" "$np" \
        "$TMP/in/../in/same.h5" "same.h5" -- "$TMP/in/same.h5"
done
ln "$TMP/in/same.h5" "$TMP/in/hardlink.h5"
STATUS=2 fails "input and output the same file (a hard link)" 2 "$TMP/in/hardlink.h5" \
    "$TMP/in/hardlink.h5" -- "$TMP/in/same.h5"
cmp -s "$base" "$TMP/in/same.h5" && ok || bad "input and output the same file: input changed"

# ---------------------------------------------------------------------------------------
# SIGTERM and SIGINT to mpiexec in the middle of a long export (-n 2, .gz at level 9:
# several seconds; at level 6 it ends in under 2 s, before the signal reaches the ranks).
# mpiexec passes the signal on to the ranks (as SIGTERM) about 1 s later, and kills them
# with SIGKILL 1 s after that: the line must not wait for the export to unwind, which
# takes longer on a loaded machine, and always does with one block of the whole document
# (INT:slow: the stop is seen only after that block is deflated).
big="$TMP/in/big.h5"
"$SYNTH" --ranks 2 --regions 8 --events 3000000 "$big" >/dev/null
for case in TERM INT INT:slow; do
    sig=${case%%:*}
    slow=()
    [ "$case" = INT:slow ] && slow=(--block-size 1073741824)
    d="$TMP/sig${case/:/}"
    out="$d/out.json.gz"
    mkdir -p "$d"
    echo "precious $sig" >"$out"
    before=$(state "$out")
    timeout -k 5 120 "$MPIEXEC" --quiet --oversubscribe -n 2 "$X" export "$big" -o "$out" \
        -q --gzip-level 9 "${slow[@]}" 2>"$d.err" </dev/null &
    tpid=$!
    started=no
    mpid=$(mid_export "$tpid" "$out") && started=yes
    [ -n "$mpid" ] && kill -"$sig" "$mpid" 2>/dev/null
    wait "$tpid"
    rc=$?
    why=""
    [ "$started" = yes ] || why="; the export never started writing (or ended within 20 s)"
    case $rc in
    0) why="$why; exit status 0" ;;
    124 | 137) why="$why; still running 120 s later (a hang)" ;;
    esac
    [ "$(state "$out")" = "$before" ] || why="$why; the existing output was changed"
    [ -z "$(leftovers "$out")" ] || why="$why; temporary file left: $(leftovers "$out")"
    # (mpiexec's libevent may add "[warn] Epoll ... failed" while its ranks go away under
    # load: Open MPI's line, not ours)
    nl=$(grep -vc '^\[warn\] Epoll ' "$d.err")
    [ "$nl" = 1 ] || why="$why; $nl lines on stderr"
    if [ -z "$why" ]; then ok; else bad "SIG$case during an export:${why#;} ($(head -c 300 "$d.err"))"; fi
    grep -qF "$out" "$d.err" && ok ||
        bad "SIG$case during an export: the error does not name the output ($(head -c 300 "$d.err"))"
done

# ---------------------------------------------------------------------------------------
# Batch scripts: under Open MPI's mpirun with -q (as the README's examples), or with
# OMPI_MCA_orte_execute_quiet=1, a failed export prints its one line and nothing of
# mpirun's ("Primary job terminated normally, but 1 process returned..."), exit status 1.
for how in "-q" "OMPI_MCA_orte_execute_quiet=1"; do
    q=()
    e=()
    case $how in -q) q=(-q) ;; *) e=("$how") ;; esac
    env "${e[@]}" timeout -k 5 60 "$MPIEXEC" "${q[@]}" --oversubscribe -n 2 "$X" export \
        "$TMP/none.h5" -o "$TMP/none.json" </dev/null >/dev/null 2>"$TMP/quiet.err"
    rc=$?
    n=$(grep -c '' "$TMP/quiet.err")
    [ "$rc" = 1 ] && [ "$n" = 1 ] && grep -q 'none.h5' "$TMP/quiet.err" && ok ||
        bad "mpirun $how, a failed export: status $rc, $n lines on stderr (1 expected): $(head -c 600 "$TMP/quiet.err")"
done

# ---------------------------------------------------------------------------------------
# Injected MPI faults: every stage, the first and the last rank; the run fails within 30 s,
# rank 0 prints the error once, naming the failing rank; no output is left.
for np in 2 4; do
    for r in 0 $((np - 1)); do
        for stage in open read format compress send write; do
            sx_sample 3 || continue
            rm -f "$TMP/out/inj.json.gz"
            SX_FAULT="stage:$stage:$r" X="$XF" LIMIT=30 fails \
                "injected $stage fault on rank $r" "$np" "$TMP/out/inj.json.gz" \
                "rank $r|$stage" -- "$base" --block-size 1024
        done
    done
done

# The installed command has no fault hooks: the flags of old are unknown options.
rc=0
mpi 0 "$X" export "$base" -o "$TMP/out/flags.json" --fail-rank 0 2>"$TMP/err.txt" || rc=$?
[ "$rc" = 2 ] && grep -q 'unknown option: --fail-rank' "$TMP/err.txt" &&
    [ ! -e "$TMP/out/flags.json" ] && ok || bad "--fail-rank: status $rc, $(head -c 300 "$TMP/err.txt")"

# The bare command (no mpiexec, no MPI): the same failures, the same one line naming the
# file and rank 0, the same untouched output.
echo "precious" >"$TMP/out/bare.json.gz"
fails "bare: missing file" 0 "$TMP/out/bare.json.gz" "$TMP/in/nope.h5|HDF5 file not found|rank 0" \
    -- "$TMP/in/nope.h5"
fails "bare: not HDF5" 0 "$TMP/out/bare.json.gz" "$TMP/in/text.h5|$NOT_READABLE" -- \
    "$TMP/in/text.h5"
for stage in open read format compress write; do
    SX_FAULT="stage:$stage:0" X="$XF" fails "bare: injected $stage fault" 0 \
        "$TMP/out/bare.json.gz" "rank 0|$stage" -- "$base" --block-size 1024
done

# Files on which libhdf5 1.10 itself crashes or loops (tests/fuzz/hdf5_known): a crash
# gives one line naming the file, exit 1 and no output, bare and on every rank; a loop
# ends within the stop's grace after one SIGTERM, with the same. (A libhdf5 that reads
# them cleanly passes too: one line, exit 1, no output.)
known="$(dirname "$0")/../fuzz/hdf5_known"
gzip -dc "$known/h5hg_read_segv_vlen_attr.h5.gz" >"$TMP/in/segv.h5"
gzip -dc "$known/h5hg_protect_hang.h5.gz" >"$TMP/in/loop.h5"
echo "precious" >"$TMP/out/crash.json"
fails "libhdf5 crash (bare)" 0 "$TMP/out/crash.json" "$TMP/in/segv.h5" -- "$TMP/in/segv.h5"
before=$(state "$TMP/out/crash.json")
mpi 2 "$X" export "$TMP/in/segv.h5" -o "$TMP/out/crash.json" -q 2>"$TMP/err.txt"
rc=$?
why=""
[ "$rc" = 1 ] || why="; status $rc (1 on every rank expected; $RANKS_AGREE)"
[ "$(state "$TMP/out/crash.json")" = "$before" ] || why="$why; the output changed"
[ -z "$(leftovers "$TMP/out/crash.json")" ] || why="$why; temporary file left"
grep -q "$TMP/in/segv.h5" "$TMP/err.txt" || why="$why; no line names the file"
if [ -z "$why" ]; then ok; else bad "libhdf5 crash -n 2:${why#;}: $(head -c 400 "$TMP/err.txt")"; fi

echo "precious" >"$TMP/out/loop.json"
before=$(state "$TMP/out/loop.json")
env -u OMPI_COMM_WORLD_SIZE -u PMIX_RANK -u PMI_RANK timeout -k 5 60 \
    "$X" export "$TMP/in/loop.h5" -o "$TMP/out/loop.json" -q 2>"$TMP/err.txt" &
lpid=$!
sleep 1
t0=$SECONDS
kill -0 "$lpid" 2>/dev/null && pkill -TERM -P "$lpid" -x scope-export
wait "$lpid"
rc=$?
why=""
[ "$rc" = 1 ] || why="; status $rc (1 expected)"
[ $((SECONDS - t0)) -le 20 ] || why="$why; took $((SECONDS - t0)) s after SIGTERM"
[ "$(grep -c '' "$TMP/err.txt")" = 1 ] || why="$why; $(grep -c '' "$TMP/err.txt") lines on stderr"
grep -q "$TMP/in/loop.h5" "$TMP/err.txt" || why="$why; the line does not name the file"
[ "$(state "$TMP/out/loop.json")" = "$before" ] || why="$why; the output changed"
if [ -z "$why" ]; then ok; else bad "libhdf5 loop, one SIGTERM:${why#;}: $(head -c 400 "$TMP/err.txt")"; fi

# More ranks than rows: the compat fixture has one row; -n 4 gives the -n 1 document,
# and a fault on a rank without a block still fails the run.
compat="$SHARED/fixtures/compat/hdf5-schema-3.h5"
if [ -f "$compat" ]; then
    for ext in json json.gz; do
        mpi 1 "$X" export "$compat" -o "$TMP/out/c1.$ext" -q &&
            mpi 4 "$X" export "$compat" -o "$TMP/out/c4.$ext" -q --block-size 1024 &&
            "$CMP" "$TMP/out/c4.$ext" "$TMP/out/c1.json" && ok ||
            bad "more ranks than rows: -n 4 on $(basename "$compat") ($ext)"
    done
    SX_FAULT=stage:read:3 X="$XF" LIMIT=30 fails "more ranks than rows, fault on rank 3" 4 \
        "$TMP/out/c.json" "rank 3" -- "$compat"
else
    echo "SKIP: more ranks than rows: no $compat"
fi

finish
