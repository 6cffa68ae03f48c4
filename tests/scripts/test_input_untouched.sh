#!/usr/bin/env bash
# test_input_untouched.sh - an export reads its input and writes nothing beside it: under
# mpiexec -n 2 the input's directory keeps its listing and its modification time (a file
# created and deleted there, as MPI-IO's lock tests do, changes the time), and an input in
# a read-only directory (a read-only bind mount, where mount works here) exports alike
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/mpi_lib.sh"

G="$SHARED/golden"
in="$TMP/in"
mkdir -p "$in" "$TMP/out"
cp "$G/mpi4_parallel/run.h5" "$in/run.h5"
cp -r "$SHARED/golden-native/h5_2ranks_basic/ranks" "$in/ranks"
snap() { (cd "$1" && find . -printf '%p %s %T@\n' | sort); }
sleep 0.05
before=$(snap "$in")
for np in 1 2; do
    fmts="json"
    [ "$np" = 2 ] && fmts="json chrome-trace"
    for fmt in $fmts; do
        mpi "$np" "$X" export "$in/run.h5" -o "$TMP/out/r$np.$fmt.json" --format "$fmt" \
            --ranks 0-3 -q && ok || bad "export --format $fmt -n $np failed"
    done
    if [ "$np" = 2 ]; then
        mpi "$np" "$X" export "$in/run.h5" -o "$TMP/out/s$np.json" --summary -q && ok ||
            bad "export --summary -n $np failed"
        mpi "$np" "$X" export --native "$in/ranks" -o "$TMP/out/n$np.json" -q && ok ||
            bad "export --native -n $np failed"
    fi
    after=$(snap "$in")
    [ "$before" = "$after" ] && ok ||
        bad "-n $np: the input's directory changed: $(diff <(echo "$before") <(echo "$after") | tr '\n' ' ')"
done
"$CMP" "$TMP/out/r2.json.json" "$G/mpi4_parallel/run.json" && ok || bad "the -n 2 document differs"

# A read-only directory (as root, permissions do not stop writes: a read-only bind mount)
if mount --bind -o ro "$in" "$in" 2>/dev/null; then
    trap 'umount "$in" 2>/dev/null; rm -rf "$TMP"' EXIT
    if touch "$in/probe" 2>/dev/null; then
        rm -f "$in/probe"
        echo "skip: a read-only bind mount is writable here"
    else
        mpi 2 "$X" export "$in/run.h5" -o "$TMP/out/ro.json" -q 2>"$TMP/ro.err" &&
            "$CMP" "$TMP/out/ro.json" "$G/mpi4_parallel/run.json" && [ ! -s "$TMP/ro.err" ] &&
            ok || bad "an input in a read-only directory, -n 2: $(head -c 600 "$TMP/ro.err")"
    fi
    umount "$in"
else
    echo "skip: mount --bind -o ro is not permitted: no read-only directory"
fi
finish
