#!/usr/bin/env bash
# test_native_synth.sh - scope-export-native-synth writes native runs deterministically; their
# export does not depend on the rank count, the byte order or the path through import-native;
# examples/native_finalize.c (each rank passes its own file) gives the CLI's document; damaged
# trace headers fail cleanly, before memory is taken for them
. "$(dirname "$0")/lib.sh"
sx_leak_check 2

S="$BIN/scope-export-native-synth"
EX="$BIN/example_native_finalize"
for t in "$S" "$EX"; do
    [ -x "$t" ] || { echo "FAIL: $t is not built" >&2; exit 1; }
done
bare() { env -u OMPI_COMM_WORLD_SIZE -u PMIX_RANK -u PMI_RANK timeout 120 "$@"; }

# Deterministic: the same options give the same bytes (a second later: no times in them).
for fmt in "h5 little" "spt big" "mixed mixed"; do
    set -- $fmt
    for k in a b; do
        mkdir -p "$TMP/det$k.$1"
        "$S" --prefix "$TMP/det$k.$1/run" --ranks 3 --events 5000 --format "$1" --endian "$2" \
            --seed 7 || bad "synth --format $1 failed"
        [ "$k" = a ] && sleep 1.1
    done
    diff -r "$TMP/deta.$1" "$TMP/detb.$1" >/dev/null && ok || bad "synth --format $1 not deterministic"
done

# A mixed run (both formats, both byte orders, an empty rank): the same document at any
# rank count, and through import-native.
mkdir -p "$TMP/mix"
"$S" --prefix "$TMP/mix/run" --ranks 5 --events 20000 --regions 6 --format mixed \
    --endian mixed --empty-ranks 1 --seed 3 || bad "synth mixed"
bare "$X" export --native "$TMP/mix" -o "$TMP/ref.json" --label L -q || bad "bare export"
grep -q '"num_ranks": 4,' "$TMP/ref.json" && ok || bad "an empty highest rank is not dropped"
# Its .h5 files' events read through HDF5 (the reads around it switched off) and at 3 ranks
# (rows of files another rank indexed): the same document.
SCOPE_EXPORT_DIRECT_READS=0 bare "$X" export --native "$TMP/mix" -o "$TMP/off.json" --label L \
    -q && "$CMP" "$TMP/off.json" "$TMP/ref.json" && ok || bad "direct reads off: another document"
SCOPE_EXPORT_DIRECT_READS=0 run_np 3 "$X" export --native "$TMP/mix" -o "$TMP/off3.json" \
    --label L -q && "$CMP" "$TMP/off3.json" "$TMP/ref.json" && ok ||
    bad "direct reads off at -n 3: another document"
for np in 1 2 3 6; do
    sx_sample 2 || continue
    run_np "$np" "$X" export --native "$TMP/mix" -o "$TMP/m.$np.json.gz" --label L -q \
        --block-size 4096 && "$CMP" "$TMP/m.$np.json.gz" "$TMP/ref.json" && ok ||
        bad "mixed run at -n $np differs"
done
for np in 0 2; do
    rm -f "$TMP/L.h5"
    if [ "$np" = 0 ]; then bare "$X" import-native "$TMP/mix" -o "$TMP/L.h5" >/dev/null
    else run_np "$np" "$X" import-native "$TMP/mix" -o "$TMP/L.h5" >/dev/null; fi &&
        "$X" export "$TMP/L.h5" -o "$TMP/imp.json" -q && "$CMP" "$TMP/imp.json" "$TMP/ref.json" &&
        ok || bad "import-native -n $np then export differs"
done

# Byte order and format: little- and big-endian traces give the same document; v2 traces
# and .h5 files the same regions (the .h5 files add their metadata); v1 has no sources.
for e in little big; do
    mkdir -p "$TMP/spt.$e"
    "$S" --prefix "$TMP/spt.$e/run" --ranks 3 --events 3000 --format spt --endian "$e" ||
        bad "synth spt $e"
    bare "$X" export --native "$TMP/spt.$e" -o "$TMP/spt.$e.json" --label L -q || bad "export $e"
done
cmp -s "$TMP/spt.little.json" "$TMP/spt.big.json" && ok || bad "big-endian traces differ"
mkdir -p "$TMP/h5" "$TMP/v1"
"$S" --prefix "$TMP/h5/run" --ranks 3 --events 3000 --format h5 || bad "synth h5"
"$S" --prefix "$TMP/v1/run" --ranks 3 --events 3000 --format spt --version 1 || bad "synth v1"
bare "$X" export --native "$TMP/h5" -o "$TMP/h5.json" --label L -q || bad "export h5"
bare "$X" export --native "$TMP/v1" -o "$TMP/v1.json" --label L -q || bad "export v1"
regions() { sed 's/.*"regions": //' "$1"; }
[ "$(regions "$TMP/h5.json")" = "$(regions "$TMP/spt.little.json")" ] && ok ||
    bad ".h5 and .spt v2 of the same run give different regions"
grep -q source_file "$TMP/v1.json" && bad "a v1 trace has sources" || ok
grep -q '"hostname": "synth"' "$TMP/h5.json" && ! grep -q hostname "$TMP/spt.little.json" &&
    ok || bad "metadata: .h5 files supply it, traces do not"

# Descriptors kept between rows: 40 files, each read in six blocks. With a limit of 48
# descriptors a quarter (12) is kept and the other files are opened again for each row;
# the document is the same either way, and as HDF5 reads it.
mkdir -p "$TMP/keep"
"$S" --prefix "$TMP/keep/run" --ranks 40 --events 400000 --regions 8 --format h5 ||
    bad "synth keep"
bare "$X" export --native "$TMP/keep" -o "$TMP/keep.json" --label L -q || bad "export keep"
(ulimit -n 48 && bare "$X" export --native "$TMP/keep" -o "$TMP/keep48.json" --label L -q) ||
    bad "export keep, 48 descriptors"
SCOPE_EXPORT_DIRECT_READS=0 bare "$X" export --native "$TMP/keep" -o "$TMP/keep0.json" \
    --label L -q || bad "export keep, direct reads off"
# A caller that holds most of its descriptors (100 of 128): the 32 the reader would keep
# are not there; it gives back the ones it kept and goes on opening per row.
(
    ulimit -n 128 || exit 1
    for _ in $(seq 100); do exec {fd}</dev/null; done
    bare "$X" export --native "$TMP/keep" -o "$TMP/keep100.json" --label L -q 2>"$TMP/err"
) || bad "export keep, 100 of 128 descriptors taken: $(head -c 300 "$TMP/err" 2>/dev/null)"
cmp -s "$TMP/keep.json" "$TMP/keep48.json" && cmp -s "$TMP/keep.json" "$TMP/keep0.json" &&
    cmp -s "$TMP/keep.json" "$TMP/keep100.json" && ok ||
    bad "kept descriptors: the documents differ"

# The example: every rank passes its own <prefix>_rank<NNNNN>.h5.
mkdir -p "$TMP/ex"
"$S" --prefix "$TMP/ex/run" --ranks 2 --events 10000 || bad "synth for the example"
run_np 2 "$EX" "$TMP/ex/run" "$TMP/L.json.gz" >"$TMP/ex.out" 2>&1 || bad "example: $(cat "$TMP/ex.out")"
run_np 2 "$X" export --native "$TMP/ex" -o "$TMP/cli.json" --label L -q || bad "cli export"
"$CMP" "$TMP/L.json.gz" "$TMP/cli.json" && ok || bad "the example's document differs from the CLI's"

# Damaged headers: refused with one line naming the file, without taking the memory a
# size in the header asks for (the address space is limited to 1 GiB).
t="$TMP/spt.little/run_rank00000.spt"
patch() { # patch FILE OFFSET HEXBYTES -> a copy in $TMP/bad/
    mkdir -p "$TMP/bad"
    cp "$1" "$TMP/bad/x.spt"
    printf "$3" | dd of="$TMP/bad/x.spt" bs=1 seek="$2" conv=notrunc status=none
}
check_bad() { # check_bad WHAT EXPECTED-TEXT
    # AddressSanitizer reserves terabytes of address space: there its allocator is limited
    if [ -n "$SX_SAN_FLAGS" ]; then
        (export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}max_allocation_size_mb=1024:allocator_may_return_null=1"
            bare "$X" export --native "$TMP/bad/x.spt" -o "$TMP/bad.json" 2>"$TMP/bad.err")
    else
        (ulimit -v 1048576; bare "$X" export --native "$TMP/bad/x.spt" -o "$TMP/bad.json" \
            2>"$TMP/bad.err")
    fi
    local rc=$?
    [ "$rc" = 1 ] && [ "$(grep -c . "$TMP/bad.err")" = 1 ] && grep -qF "$2" "$TMP/bad.err" &&
        [ ! -e "$TMP/bad.json" ] && ok || bad "$1: status $rc: $(cat "$TMP/bad.err")"
}
patch "$t" 12 '\375\377\377\377'
check_bad "negative rank" "$TMP/bad/x.spt: negative rank -3 in the trace header"
patch "$t" 16 '\377\377\377\377\377\377\377\377'
check_bad "negative region count" "negative number of regions"
patch "$t" 24 '\377\377\377\377'
check_bad "negative name length" "negative name length -1"
# region 0: name "main" (4 + 4), source "src/r000.c" (4 + 10), line (4): its count at 50
patch "$t" 50 '\377\377\377\377\377\377\377\177'
check_bad "huge call count" "truncated trace file (buffer is smaller than requested size)"
patch "$t" 50 '\000\000\000\000\000\000\000\200'
check_bad "negative call count" "negative call count"
run_np 2 "$X" export --native "$TMP/bad/x.spt" "$TMP/spt.big" -o "$TMP/bad.json" 2>"$TMP/bad.err"
[ $? -ne 0 ] && [ "$(grep -c '^scope-export: error:' "$TMP/bad.err")" = 1 ] &&
    [ ! -e "$TMP/bad.json" ] && ok || bad "a damaged file among others at -n 2: $(cat "$TMP/bad.err")"

# Error precedence is the reference's, at any rank count: files are read in path order, so
# a damaged file sorting before a duplicate rank wins, and a duplicate before it wins.
mkdir -p "$TMP/prec1" "$TMP/prec2"
head -c 100 "$TMP/spt.little/run_rank00001.spt" >"$TMP/prec1/a_rank00009.spt"
cp "$TMP/spt.little"/run_rank0000[01].spt "$TMP/prec1/"
cp "$TMP/spt.little/run_rank00001.spt" "$TMP/prec1/z_rank00001.spt"
cp "$TMP/spt.little"/run_rank0000[01].spt "$TMP/prec2/"
cp "$TMP/spt.little/run_rank00000.spt" "$TMP/prec2/b_rank00000.spt"
cp "$TMP/prec1/a_rank00009.spt" "$TMP/prec2/x_rank00009.spt"
# (the first failing file is the second: at -n 2 another rank than rank 0 reads it)
mkdir -p "$TMP/prec3"
cp "$TMP/spt.little/run_rank00000.spt" "$TMP/prec3/a_rank00000.spt"
cp "$TMP/prec1/a_rank00009.spt" "$TMP/prec3/b_rank00009.spt"
printf 'not a trace at all, no' >"$TMP/prec3/c_rank00003.spt"
for np in 0 1 2 3; do
    for k in 1 2 3; do
        sx_sample 3 || continue
        case $k in
            1) want="prec1/a_rank00009.spt: truncated trace file" ;;
            2) want="prec2/run_rank00000.spt and prec2/b_rank00000.spt both claim rank 0" ;;
            3) want="prec3/b_rank00009.spt: truncated trace file" ;;
        esac
        if [ "$np" = 0 ]; then
            (cd "$TMP" && bare "$X" export --native "prec$k" -o "$TMP/p.json" 2>"$TMP/p.err")
        else
            (cd "$TMP" && run_np "$np" "$X" export --native "prec$k" -o "$TMP/p.json" \
                2>"$TMP/p.err")
        fi
        [ $? -ne 0 ] && grep -q "^scope-export: error: $want" "$TMP/p.err" && [ ! -e "$TMP/p.json" ] &&
            ok || bad "precedence prec$k -n $np: $(grep error "$TMP/p.err")"
    done
done
finish
