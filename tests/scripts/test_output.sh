#!/usr/bin/env bash
# test_output.sh - the outputs as a shell's > would treat them: a replaced file keeps its
# mode and owner, a link's target is written, a read-only file is refused; a size limit or
# a full disk is one line and exit 1 (import included, and a host process of the library
# lives on); SIGKILL leaves no temporary file; messages stay one line; output names and
# inputs that cannot be meant are refused
. "$(dirname "$0")/lib.sh"
sx_leak_check 2
. "$(dirname "$0")/mpi_lib.sh"

SYNTH="$BIN/scope-export-synth"
MOUNTS=()
cleanup() {
    local m
    for m in "${MOUNTS[@]}"; do umount "$m" 2>/dev/null; done
    rm -rf "$TMP"
}
trap cleanup EXIT

# one_line NAME RC WANT_RC ERRFILE NEEDLE: exit status WANT_RC and one line holding NEEDLE
one_line() {
    local name=$1 rc=$2 want=$3 errf=$4 needle=$5 n
    n=$(grep -c '' "$errf")
    if [ "$rc" = "$want" ] && [ "$n" = 1 ] && grep -qF -- "$needle" "$errf"; then
        ok
    else
        bad "$name: status $rc ($want expected), $n lines ('$needle' expected): $(head -c 400 "$errf")"
    fi
}
# no_temp NAME DIR: nothing but the listed names in DIR (no temporary file)
no_temp() {
    local left
    left=$(find "$2" -maxdepth 1 -name '.*' ! -name . 2>/dev/null | head -3 | tr '\n' ' ')
    [ -z "$left" ] && ok || bad "$1: temporary file left: $left"
}
mode_of() { stat -c %a "$1"; }

mkdir -p "$TMP/in" "$TMP/out"
run="$TMP/in/run.h5"
"$SYNTH" --ranks 2 --regions 4 --events 20000 "$run" >/dev/null || { bad "synth"; finish; exit; }
"$X" export "$run" -o "$TMP/in/run.json" -q || bad "export of the input"
mkdir -p "$TMP/in/native"
"$BIN/scope-export-native-synth" --prefix "$TMP/in/native/app" --ranks 2 --regions 3 \
    --events 30000 >/dev/null 2>&1 || bad "native synth"

# --- Item: mode, owner, links, read-only ----------------------------------------------
for cmd in export import; do
    if [ $cmd = export ]; then src="$run" ext=json; else src="$TMP/in/run.json" ext=h5; fi
    o="$TMP/out/m600.$ext"
    echo old >"$o"
    chmod 600 "$o"
    "$X" $cmd "$src" -o "$o" -q 2>"$TMP/err" || bad "$cmd over a 0600 file: $(cat "$TMP/err")"
    [ "$(mode_of "$o")" = 600 ] && ok || bad "$cmd: a 0600 file became $(mode_of "$o")"
    [ "$(head -c 3 "$o")" != old ] && ok || bad "$cmd: the 0600 file was not replaced"
    # as root: the owner stays (nobody)
    if [ "$(id -u)" = 0 ] && id nobody >/dev/null 2>&1; then
        o="$TMP/out/owned.$ext"
        echo old >"$o"
        chown nobody "$o"
        chmod 640 "$o"
        "$X" $cmd "$src" -o "$o" -q || bad "$cmd over nobody's file"
        [ "$(stat -c %U "$o")" = nobody ] && ok ||
            bad "$cmd: the owner nobody became $(stat -c %U "$o")"
        [ "$(mode_of "$o")" = 640 ] && ok || bad "$cmd: nobody's 0640 became $(mode_of "$o")"
    fi
    # a symbolic link: its target is written and keeps its mode; the link stays a link
    t="$TMP/out/target.$ext" l="$TMP/out/link.$ext"
    echo old >"$t"
    chmod 640 "$t"
    ln -sfn "$t" "$l"
    "$X" $cmd "$src" -o "$l" -q || bad "$cmd through a link"
    [ -L "$l" ] && ok || bad "$cmd: the symbolic link was replaced by a file"
    [ "$(mode_of "$t")" = 640 ] && ok || bad "$cmd: the link's 0640 target became $(mode_of "$t")"
    [ "$(head -c 3 "$t")" != old ] && ok || bad "$cmd: the link's target was not written"
    # read-only: refused, unchanged (root too: nobody may write a 0444 file)
    o="$TMP/out/ro.$ext"
    echo precious >"$o"
    chmod 444 "$o"
    rc=0
    "$X" $cmd "$src" -o "$o" -q 2>"$TMP/err" || rc=$?
    one_line "$cmd over a 0444 file" $rc 1 "$TMP/err" "read-only"
    [ "$(cat "$o")" = precious ] && [ "$(mode_of "$o")" = 444 ] && ok ||
        bad "$cmd: the 0444 file changed"
    no_temp "$cmd over a 0444 file" "$TMP/out"
    # a new file: 0666 under the umask, as > makes it
    o="$TMP/out/new.$ext"
    (umask 027 && "$X" $cmd "$src" -o "$o" -q) || bad "$cmd of a new file"
    [ "$(mode_of "$o")" = 640 ] && ok || bad "$cmd: a new file under umask 027 is $(mode_of "$o")"
    rm -f "$TMP"/out/*
done

# --- Item: a size limit (ulimit -f) and a full disk: one line, exit 1, nothing left ------
limited() { # limited NAME NEEDLE CMD...: under a 64 KiB limit
    local name=$1 needle=$2 rc=0
    shift 2
    (ulimit -f 64 && exec "$@") >"$TMP/stdout" 2>"$TMP/err" || rc=$?
    one_line "$name" $rc 1 "$TMP/err" "$needle"
    [ ! -s "$TMP/stdout" ] && ok || bad "$name: printed $(head -c 200 "$TMP/stdout")"
    no_temp "$name" "$TMP/out"
    [ -z "$(ls "$TMP/out")" ] && ok || bad "$name: output left: $(ls "$TMP/out")"
}
limited "import under ulimit -f" "File too large" "$X" import "$TMP/in/run.json" -o "$TMP/out/lim.h5"
grep -qF "$TMP/out/lim.h5" "$TMP/err" && ok || bad "import under ulimit -f: the output is not named"
limited "import-native under ulimit -f" "File too large" \
    "$X" import-native "$TMP/in/native" -o "$TMP/out/lim.h5"
limited "export under ulimit -f" "File too large" "$X" export "$run" -o "$TMP/out/lim.json"

full="$TMP/full"
mkdir -p "$full"
if mount -t tmpfs -o size=64k tmpfs "$full" 2>/dev/null; then
    MOUNTS+=("$full")
    for cmd in import import-native; do
        if [ $cmd = import ]; then src="$TMP/in/run.json"; else src="$TMP/in/native"; fi
        rc=0
        "$X" $cmd "$src" -o "$full/x.h5" >"$TMP/stdout" 2>"$TMP/err" || rc=$?
        one_line "$cmd to a full disk" $rc 1 "$TMP/err" "No space left on device"
        [ -z "$(ls -A "$full")" ] && ok || bad "$cmd to a full disk: left $(ls -A "$full")"
    done
else
    echo "SKIP: full disk: mount -t tmpfs is not permitted here"
fi

# The MPI-IO writer on a full disk: its space is reserved before any event is written,
# so every rank exits 1 with one line, Open MPI reports no failed write of its own, HDF5
# does not crash at exit on a half-closed file, nothing is left and an existing output
# is kept. The import's output (~500 KB) does not fit in 256 KiB.
fullmpi="$TMP/fullmpi"
mkdir -p "$fullmpi"
if mount -t tmpfs -o size=256k tmpfs "$fullmpi" 2>/dev/null; then
    MOUNTS+=("$fullmpi")
    for old in none kept; do
        name="import-native -n 2 to a full disk ($old output)"
        rm -f "$fullmpi"/*
        [ $old = none ] || head -c 65536 /dev/urandom >"$fullmpi/x.h5"
        before=$(state "$fullmpi/x.h5")
        rc=0
        mpi 2 "$X" import-native "$TMP/in/native" -o "$fullmpi/x.h5" >"$TMP/stdout" \
            2>"$TMP/err" || rc=$?
        [ "$RANKS_AGREE" = yes ] && ok || bad "$name: $RANKS_AGREE"
        one_line "$name" $rc 1 "$TMP/err" "No space left on device"
        [ "$(state "$fullmpi/x.h5")" = "$before" ] && ok || bad "$name: the output changed"
        no_temp "$name" "$fullmpi"
        [ $old = kept ] || [ -z "$(ls -A "$fullmpi")" ] && ok ||
            bad "$name: left $(ls -A "$fullmpi")"
    done
else
    echo "SKIP: full disk under MPI: mount -t tmpfs is not permitted here"
fi

# Every amount of free space between "the first write fails" and "the file fits", page by
# page: near the top the data fits and HDF5's own close (its metadata) is what fails, which
# leaves a half-closed file that libhdf5 crashed on in MPI_Finalize or at exit (a second
# line, "crashed (SIGSEGV)"). Each run: the output whole, or status 1 on every rank with
# one line and nothing left.
band="$TMP/band"
mkdir -p "$band"
if mount -t tmpfs -o size=64k tmpfs "$band" 2>/dev/null && umount "$band"; then
    for cmd in import-native import; do
        if [ $cmd = import ]; then src="$TMP/in/run.json"; else src="$TMP/in/native"; fi
        "$X" $cmd "$src" -o "$TMP/out/fits.h5" >/dev/null || bad "$cmd to a disk"
        kb=$((($(stat -c %s "$TMP/out/fits.h5") + 1023) / 1024))
        rm -f "$TMP/out/fits.h5"
        for np in 0 2; do
            [ $cmd = import ] && [ $np = 2 ] && continue # import is one process's work
            # (under the sanitizers the MPI writer only, where the crash was)
            [ "$SX_SAN" = 1 ] && [ $cmd = import-native ] && [ $np = 0 ] && continue
            wrote=0 failed=0
            for ((size = kb - 28; size <= kb + 8; size += 4)); do
                name="$cmd -n $np to a disk of $size KiB (the file: $kb KiB)"
                mount -t tmpfs -o size=${size}k tmpfs "$band" || { bad "mount $size KiB"; break; }
                MOUNTS+=("$band")
                rc=0
                mpi $np "$X" $cmd "$src" -o "$band/x.h5" >/dev/null 2>"$TMP/err" || rc=$?
                [ "$RANKS_AGREE" = yes ] && ok || bad "$name: $RANKS_AGREE"
                if [ $rc = 0 ] && [ ! -s "$TMP/err" ] &&
                    "$X" export "$band/x.h5" -o "$TMP/band.json" -q; then
                    wrote=$((wrote + 1))
                    ok
                else
                    failed=$((failed + 1))
                    one_line "$name" $rc 1 "$TMP/err" "No space left on device"
                    [ -z "$(ls -A "$band")" ] && ok || bad "$name: left $(ls -A "$band")"
                fi
                umount "$band"
            done
            # the sweep spans both ends: some sizes fail, the largest fit
            [ $wrote -gt 0 ] && [ $failed -gt 0 ] && ok ||
                bad "$cmd -n $np: $wrote of the sizes wrote and $failed failed (both expected)"
        done
    done
else
    echo "SKIP: free space page by page: mount -t tmpfs is not permitted here"
fi

# The library in a host process: a failed import returns an error, and the host lives on
# to exit 0 (libhdf5 crashed at exit on the half-closed file). Python ignores SIGXFSZ.
PY=$(command -v python3 || true)
if [ -n "$PY" ]; then
    rc=0
    "${SX_SAN_ENV[@]}" "$PY" - "$BIN/libscope_export.so" "$TMP/in/run.json" "$TMP/out/py.h5" \
        >"$TMP/stdout" 2>"$TMP/err" <<'EOF' || rc=$?
import ctypes, resource, sys
lib = ctypes.CDLL(sys.argv[1])
err = ctypes.create_string_buffer(1 << 16)
resource.setrlimit(resource.RLIMIT_FSIZE, (64 << 10, resource.getrlimit(resource.RLIMIT_FSIZE)[1]))
st = lib.sx_import(sys.argv[2].encode(), sys.argv[3].encode(), err)
print("status", st)
sys.exit(0 if st != 0 else 3)
EOF
    [ "$rc" = 0 ] && ok || bad "a Python host after a failed import: exit status $rc: $(head -c 300 "$TMP/err")"
    no_temp "a Python host after a failed import" "$TMP/out"
else
    echo "SKIP: host process: no python3"
fi

# --- Item: SIGKILL leaves nothing (an unnamed temporary file) -------------------------
big="$TMP/in/big.h5"
"$SYNTH" --ranks 4 --regions 8 --events 400000 "$big" >/dev/null || bad "synth big"
killed() { # killed NAME NP: kill -9 the export (bare, or its mpiexec) while it writes
    local name=$1 np=$2 pid t found=""
    echo old >"$TMP/out/k.json.gz"
    chmod 600 "$TMP/out/k.json.gz"
    if [ "$np" = 0 ]; then
        env -u OMPI_COMM_WORLD_SIZE -u PMIX_RANK "$X" export "$big" -o "$TMP/out/k.json.gz" \
            --gzip-level 9 -q 2>/dev/null &
    else
        # the ranks' shared-memory files in the test's own room: the ranks of a killed
        # mpiexec cannot remove them, and in /dev/shm they stayed until a reboot
        mkdir -p "$TMP/shm"
        "$MPIEXEC" --quiet --oversubscribe -n "$np" --mca btl_vader_backing_directory \
            "$TMP/shm" "$X" export "$big" -o "$TMP/out/k.json.gz" --gzip-level 9 -q \
            2>/dev/null &
    fi
    pid=$!
    # writing: a process of the job holds a file of the output's directory open
    for _ in $(seq 200); do
        for t in $pid $(pgrep -P $pid); do
            ls -l "/proc/$t/fd" 2>/dev/null | grep -qF "$TMP/out/" && found=$t
        done
        [ -n "$found" ] && break
        sleep 0.05
    done
    sleep 0.2
    kill -KILL $pid 2>/dev/null
    wait $pid 2>/dev/null
    sleep 0.5 # the ranks of a killed mpiexec end on their own
    [ -n "$found" ] || echo "note: $name: the export was not seen writing"
    [ "$(ls -A "$TMP/out")" = k.json.gz ] && ok || bad "$name: left $(ls -A "$TMP/out" | tr '\n' ' ')"
    [ "$(cat "$TMP/out/k.json.gz")" = old ] && ok || bad "$name: the old output changed"
    rm -f "$TMP"/out/*
}
killed "SIGKILL of the export" 0
killed "SIGKILL of mpiexec" 2
# and the committed file has its name and the mode of the one it replaced
echo old >"$TMP/out/k.json.gz"
chmod 600 "$TMP/out/k.json.gz"
"$X" export "$run" -o "$TMP/out/k.json.gz" -q || bad "export after the kills"
[ "$(mode_of "$TMP/out/k.json.gz")" = 600 ] && [ "$(ls -A "$TMP/out")" = k.json.gz ] && ok ||
    bad "commit: $(ls -lA "$TMP/out")"
rm -f "$TMP"/out/*

# --- Item: one line whatever a name holds ---------------------------------------------
nl=$'evil\nscope-export: error: forged'
cp "$run" "$TMP/in/$nl.h5"
rc=0
"$X" export "$TMP/in/$nl.h5" -o "$TMP/out/$nl.json" >"$TMP/stdout" 2>&1 || rc=$?
[ "$rc" = 0 ] && [ "$(grep -c '' "$TMP/stdout")" = 1 ] && grep -qF 'evil\nscope-export' "$TMP/stdout" &&
    ok || bad "a name with a newline: $(cat "$TMP/stdout")"
rc=0
"$X" validate "$TMP/in/$nl.h5" >"$TMP/stdout" 2>&1 || rc=$?
[ "$(grep -c '' "$TMP/stdout")" = 1 ] && ok || bad "validate of a name with a newline: $(cat "$TMP/stdout")"
printf 'not json' >"$TMP/in/$nl.json"
rc=0
"$X" import "$TMP/in/$nl.json" -o "$TMP/out/x.h5" 2>"$TMP/err" || rc=$?
one_line "import of a name with a newline" $rc 1 "$TMP/err" 'evil\nscope-export'
rm -f "$TMP"/out/*

# a libhdf5 crash on a damaged file, every rank crashing: one line, not one per rank
gzip -dc "$(dirname "$0")/../fuzz/hdf5_known/h5hg_read_segv_vlen_attr.h5.gz" >"$TMP/in/segv.h5"
rc=0
mpi 3 "$X" export "$TMP/in/segv.h5" -o "$TMP/out/segv.json" -q 2>"$TMP/err" || rc=$?
one_line "libhdf5 crash at -n 3" $rc 1 "$TMP/err" "$TMP/in/segv.h5"
rm -f "$TMP"/out/*

# --- Item: output names and inputs that cannot be meant ---------------------------------
usage() { # usage NAME CMD...: a usage error (status 2), nothing written
    local name=$1 rc=0
    shift
    (cd "$TMP/out" && timeout 20 "$@") >"$TMP/stdout" 2>"$TMP/err" || rc=$?
    [ "$rc" = 2 ] && grep -q '^scope-export: ' "$TMP/err" && ok ||
        bad "$name: status $rc (2 expected): $(head -c 300 "$TMP/err")"
    [ -z "$(ls -A "$TMP/out")" ] && ok || bad "$name: wrote $(ls -A "$TMP/out")"
    rm -rf "${TMP:?}"/out/* "$TMP"/out/.[!.]*
}
mkdir -p "$TMP/out"
usage "export -o ''" "$X" export "$run" -o ""
usage "import -o ''" "$X" import "$TMP/in/run.json" -o ""
usage "export -o dir/" "$X" export "$run" -o sub/
usage "import -o dir/" "$X" import "$TMP/in/run.json" -o sub/
usage "export -o /dev/null" "$X" export "$run" -o /dev/null
usage "import-native -o /dev/null" "$X" import-native "$TMP/in/native" -o /dev/null
[ ! -e /dev/null.json ] && ok || bad "-o /dev/null wrote /dev/null.json"
usage "--ranks ''" "$X" export "$run" -o r.json --ranks ""
cp "$TMP/in/run.json" "$TMP/in/self.json"
ln -sfn "$TMP/in/self.json" "$TMP/in/self-link.json"
before=$(cksum <"$TMP/in/self.json")
usage "import X.json -o X.json" "$X" import "$TMP/in/self.json" -o "$TMP/in/self.json"
usage "import X.json -o a link to X.json" "$X" import "$TMP/in/self.json" -o "$TMP/in/self-link.json"
[ "$(cksum <"$TMP/in/self.json")" = "$before" ] && ok || bad "import overwrote its input"
# -q, and --help after any subcommand
for cmd in import import-native; do
    if [ $cmd = import ]; then src="$TMP/in/run.json"; else src="$TMP/in/native"; fi
    "$X" $cmd "$src" -o "$TMP/out/q.h5" -q >"$TMP/stdout" 2>"$TMP/err" && [ ! -s "$TMP/stdout" ] &&
        ok || bad "$cmd -q: $(cat "$TMP/err" "$TMP/stdout")"
done
for cmd in export validate import import-native; do
    "$X" $cmd --help >"$TMP/stdout" 2>"$TMP/err" && grep -q '^usage: ' "$TMP/stdout" && ok ||
        bad "$cmd --help: $(cat "$TMP/err")"
done
# a FIFO and a device are not inputs (they blocked or never ended)
mkfifo "$TMP/in/fifo.json"
for args in "validate $TMP/in/fifo.json" "import $TMP/in/fifo.json -o $TMP/out/f.h5" \
    "validate /dev/zero" "import /dev/zero -o $TMP/out/f.h5"; do
    rc=0
    # shellcheck disable=SC2086
    timeout 10 "$X" $args >"$TMP/stdout" 2>&1 || rc=$?
    [ "$rc" = 1 ] && grep -qF "not a regular file" "$TMP/stdout" && ok ||
        bad "$args: status $rc: $(head -c 300 "$TMP/stdout")"
done
rm -f "$TMP"/out/*
# a NUL in a region name would merge regions: a format error
"${PY:-python3}" - "$TMP/in/run.json" "$TMP/in/nul.json" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
d["regions"][0]["name"] = d["regions"][1]["name"] + "\u0000tail"
json.dump(d, open(sys.argv[2], "w"))
EOF
rc=0
"$X" import "$TMP/in/nul.json" -o "$TMP/out/nul.h5" 2>"$TMP/err" || rc=$?
one_line "a NUL in a region name" $rc 1 "$TMP/err" "NUL"
# trailing bytes after the gzip members (members may follow each other)
gzip -c "$TMP/in/run.json" >"$TMP/in/two.json.gz"
cp "$TMP/in/two.json.gz" "$TMP/in/junk.json.gz"
gzip -c </dev/null >>"$TMP/in/two.json.gz"
printf 'junk' >>"$TMP/in/junk.json.gz"
"$X" validate "$TMP/in/two.json.gz" >/dev/null && ok || bad "two gzip members are refused"
rc=0
"$X" import "$TMP/in/junk.json.gz" -o "$TMP/out/j.h5" 2>"$TMP/err" || rc=$?
one_line "trailing junk after gzip" $rc 1 "$TMP/err" "$TMP/in/junk.json.gz"
# Out of descriptors: with the fewest the command starts with at all, HDF5 gets the
# run's and the reads around it find none, so they fall back to HDF5's: the run is read
# all the same. Wherever the open itself fails it says why (it once said "interrupted
# while writing"), never anything else.
said=""
for n in 4 5 6 7 8 9 10 11 12; do
    (ulimit -n $n && exec "$X" validate "$run") >"$TMP/stdout" 2>&1
    grep -q 'error while loading shared libraries' "$TMP/stdout" && continue
    said=$(cat "$TMP/stdout")
    break
done
case $said in
"$run: OK" | *"cannot open $run: Too many open files"*) ok ;;
*) bad "EMFILE: $said" ;;
esac
finish
