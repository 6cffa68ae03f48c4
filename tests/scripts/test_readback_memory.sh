#!/usr/bin/env bash
# test_readback_memory.sh - validate and import read a JSON profile in bounded memory: a
# ~440 MB document is validated and imported under address-space limits far below its size
# and below the HDF5 file import writes (HDF5 writes it where it goes, through the writer's
# own driver); the imported run exports back to the document, and the file is the one the
# memory driver builds whole (SCOPE_EXPORT_H5_IN_MEMORY=1)
#
# The limit (ulimit -v) of each command is the address space the same command needs for a
# 100-event document (the least limit under which it succeeds, found by bisection: its
# libraries, its threads' stacks) plus 200 MiB for validate, 128 MiB for import: room for a
# reader's buffers (a 64 MiB one with room to spare) and HDF5's caches, not for the
# document, nor for import's file. A 5 MB document runs under the same limits
# first: the limits leave room to work, it is the document's size that must not matter. An
# address-space limit, not a resident one: a reader that maps the whole document fails it as
# one that reads it whole does.
# Without MPI (SCOPE_EXPORT_MPI=0, no mpiexec): under an address-space limit Open MPI's
# start-up passes or fails by turns as the limit grows (a singleton's validate of the 5 MB
# document passed under 150 MiB, failed under 200 and 250, passed under 305), and under
# mpiexec a rank that cannot map a library can leave mpiexec waiting for ever. Every rank's
# memory in a parallel validate is the benchmark's to show (scripts/bench.sh, read-back).
# Making the document and exporting the imported run back run without a limit. Not in the
# sanitizer build: AddressSanitizer reserves terabytes of address space.
. "$(dirname "$0")/lib.sh"
sx_normal_build_only "AddressSanitizer reserves terabytes of address space: no ulimit -v holds it"
SYNTH="$BIN/scope-export-synth"
export SCOPE_EXPORT_MPI=0
headroom=$((200 * 1024)) # KiB above the command's own need
headroom_i=$((128 * 1024)) # import's: below the file it writes

# as_needed CMD...: the least address-space limit (KiB, to 1 MiB) under which CMD succeeds;
# 0 when it fails even under 8 GiB (or no limit can be set)
as_needed() {
    local lo=0 hi=$((8 * 1024 * 1024)) mid
    (ulimit -v "$hi" && exec timeout -k 5 60 "$@") >/dev/null 2>&1 || { echo 0; return; }
    while [ $((hi - lo)) -gt 1024 ]; do
        mid=$(((lo + hi) / 2))
        if (ulimit -v "$mid" && exec timeout -k 5 60 "$@") >/dev/null 2>&1; then
            hi=$mid
        else
            lo=$mid
        fi
    done
    echo "$hi"
}
# limited KIB OUT CMD...: CMD under an address-space limit of KIB KiB, its stdout in OUT,
# its stderr in OUT.err, its peak RSS (KiB) in OUT.rss where /usr/bin/time is
limited() {
    local kib=$1 out=$2 t=()
    shift 2
    [ -x /usr/bin/time ] && t=(/usr/bin/time -f %M -o "$out.rss")
    (ulimit -v "$kib" && exec "${t[@]}" timeout -k 5 300 "$@") >"$out" 2>"$out.err"
}
mib() { echo $((($1 + 1023) / 1024)); }
rss() { [ -s "$1.rss" ] && echo ", peak RSS $(mib "$(tail -1 "$1.rss")") MiB"; }
said_ok() { [ "$(grep -c . "$1")" = 1 ] && grep -qw OK "$1" && ! grep -q INVALID "$1"; }
why() { echo "status $1: $(head -c 300 "$2" "$2.err" 2>/dev/null | grep -v '^==>' | tr '\n' ' ')"; }

# The documents: 100 events (the commands' own need), 100k (~5 MB) and 10M (~440 MB).
t0=$SECONDS
for doc in "tiny|--ranks 2 --regions 2 --events 100" \
    "small|--ranks 8 --regions 20 --events 100000 --columns meta" \
    "big|--ranks 8 --regions 20 --events 10000000 --columns meta"; do
    name=${doc%%|*}
    # shellcheck disable=SC2086
    "$SYNTH" ${doc#*|} "$TMP/$name.h5" >/dev/null && "$X" export "$TMP/$name.h5" -o "$TMP/$name.json" -q ||
        { bad "cannot make the $name document"; finish; exit; }
    rm -f "$TMP/$name.h5"
done
size=$(stat -c %s "$TMP/big.json")
echo "documents made in $((SECONDS - t0)) s; the large one $((size / 1000000)) MB"

need_v=$(as_needed "$X" validate "$TMP/tiny.json")
need_i=$(as_needed "$X" import "$TMP/tiny.json" -o "$TMP/tiny.h5")
if [ "$need_v" = 0 ] || [ "$need_i" = 0 ]; then
    echo "skip: validate or import of a 100-event document fails under any address-space" \
        "limit up to 8 GiB (ulimit -v $(ulimit -v)): this host cannot limit them"
    exit 77
fi
lim_v=$((need_v + headroom)) lim_i=$((need_i + headroom_i))
echo "address space for a 100-event document: validate $(mib "$need_v") MiB, import" \
    "$(mib "$need_i") MiB; limits $(mib "$lim_v") MiB and $(mib "$lim_i") MiB"
# the test tells a reader that holds the document from one that does not only when the
# document is well above the limits
big=$lim_v
[ "$lim_i" -gt "$big" ] && big=$lim_i
[ $((big * 1024 * 4)) -le $((size * 3)) ] && ok ||
    bad "the document ($((size / 1000000)) MB) is not well above the limit ($(mib "$big") MiB)"

# The limits leave room to work: both commands read a 5 MB document under them.
limited "$lim_v" "$TMP/small.out" "$X" validate "$TMP/small.json"
rc=$?
[ "$rc" = 0 ] && said_ok "$TMP/small.out" && ok ||
    bad "validate of a 5 MB document under $(mib "$lim_v") MiB: $(why "$rc" "$TMP/small.out")"
limited "$lim_i" "$TMP/small_i.out" "$X" import "$TMP/small.json" -o "$TMP/small.h5" -q
rc=$?
[ "$rc" = 0 ] && [ -s "$TMP/small.h5" ] && ok ||
    bad "import of a 5 MB document under $(mib "$lim_i") MiB: $(why "$rc" "$TMP/small_i.out")"
rm -f "$TMP/small.h5"

# The large document under the same limits.
limited "$lim_v" "$TMP/big.out" "$X" validate "$TMP/big.json"
rc=$?
echo "validate: status $rc under $(mib "$lim_v") MiB$(rss "$TMP/big.out")"
[ "$rc" = 0 ] && said_ok "$TMP/big.out" && ok ||
    bad "validate of the $((size / 1000000)) MB document under an address-space limit of" \
        "$(mib "$lim_v") MiB: $(why "$rc" "$TMP/big.out")"
# import: its own need and the headroom, not the file it writes
lim_b=$lim_i
limited "$lim_b" "$TMP/big_i.out" "$X" import "$TMP/big.json" -o "$TMP/big.h5" -q
rc=$?
h5=$((($(stat -c %s "$TMP/big.h5" 2>/dev/null || echo 0) + 1023) / 1024))
echo "import: status $rc under $(mib "$lim_b") MiB$(rss "$TMP/big_i.out"); its file $(mib "$h5") MiB"
if [ "$rc" = 0 ] && [ -s "$TMP/big.h5" ]; then
    ok
    [ "$h5" -gt $((lim_b - need_i)) ] && ok ||
        bad "the HDF5 file ($(mib "$h5") MiB) is not above the import's headroom: the test proves nothing"
    # the run it wrote is the document's: it exports back to the same text
    "$X" export "$TMP/big.h5" -o "$TMP/back.json" -q && cmp -s "$TMP/back.json" "$TMP/big.json" &&
        ok || bad "the run imported under the limit does not export back to the document"
    # and the file is the memory driver's, byte for byte: HDF5 records the objects'
    # modification times (whole seconds), so both imports run at one fixed second
    # (an LD_PRELOAD shim of time and gettimeofday)
    same=no
    if gcc -shared -fPIC -O1 -o "$TMP/fixtime.so" "$(dirname "$0")/../support/sx_fixtime.c" 2>"$TMP/cc.err"; then
        LD_PRELOAD="$TMP/fixtime.so" "$X" import "$TMP/big.json" -o "$TMP/a.h5" -q &&
            LD_PRELOAD="$TMP/fixtime.so" SCOPE_EXPORT_H5_IN_MEMORY=1 \
                "$X" import "$TMP/big.json" -o "$TMP/m.h5" -q &&
            cmp -s "$TMP/a.h5" "$TMP/m.h5" && same=yes
    else
        echo "cannot build the time shim: $(head -1 "$TMP/cc.err")"
    fi
    [ $same = yes ] && ok || bad "import through the writer's driver and in memory: other files"
    rm -f "$TMP/a.h5" "$TMP/m.h5"
else
    bad "import of the $((size / 1000000)) MB document under an address-space limit of" \
        "$(mib "$lim_b") MiB: $(why "$rc" "$TMP/big_i.out")"
fi
finish
