# mpi_lib.sh - running the command under mpiexec in script tests (sourced after lib.sh)

# mpi NP CMD...: mpiexec with a time limit. Every rank must finish on its own: with
# orte_abort_on_non_zero_status off, mpiexec does not kill the other ranks when one exits
# with status 1, so a rank stuck in a collective is a hang, not hidden. mpiexec then exits
# 0 whatever the ranks return, so each rank's status is written to $RCDIR/rank<R> by a
# wrapper and mpi returns the ranks' common status (99 when they differ or one is missing).
# --quiet drops Open MPI's banners: stderr holds what scope-export prints. --foreground: a
# signal from timeout reaches mpiexec once (on a second one Open MPI exits at once and
# orphans the ranks). mpiexec forwards stdin to rank 0: it gets /dev/null.
RCDIR="$TMP/rc"
mkdir -p "$RCDIR"
cat >"$TMP/rankrc.sh" <<'EOF_WRAP'
#!/bin/sh
echo "$$" >"$SX_RC_DIR/pid$OMPI_COMM_WORLD_RANK"
"$@"
rc=$?
echo "$rc" >"$SX_RC_DIR/rank$OMPI_COMM_WORLD_RANK"
exit "$rc"
EOF_WRAP
RANKS_AGREE=""
mpi() {
    local np=$1 r rc first=""
    shift
    sx_leak_next
    if [ "$np" = 0 ]; then # bare: one process, no launcher, no MPI
        RANKS_AGREE=yes
        env -u OMPI_COMM_WORLD_SIZE -u PMIX_RANK -u PMI_RANK -u PMI_SIZE -u PMI_FD \
            timeout -k 5 "${LIMIT:-60}" "$@" </dev/null
        return
    fi
    rm -f "$RCDIR"/rank* "$RCDIR"/pid*
    SX_RC_DIR="$RCDIR" OMPI_MCA_orte_abort_on_non_zero_status=0 \
        timeout --foreground -k 5 "${LIMIT:-60}" "$MPIEXEC" --quiet --oversubscribe \
        -n "$np" sh "$TMP/rankrc.sh" "$@" </dev/null
    rc=$?
    if [ "$rc" = 124 ] || [ "$rc" = 137 ]; then
        # a hang: mpiexec is gone; its ranks (each leads its own process group) may not be
        for r in "$RCDIR"/pid*; do
            [ -f "$r" ] && kill -KILL -- "-$(cat "$r")" 2>/dev/null
        done
        return "$rc"
    fi
    RANKS_AGREE=yes
    for ((r = 0; r < np; r++)); do
        if [ ! -f "$RCDIR/rank$r" ]; then
            RANKS_AGREE="rank $r did not finish"
            return 99
        fi
        rc=$(cat "$RCDIR/rank$r")
        [ -n "$first" ] || first=$rc
        [ "$rc" = "$first" ] || RANKS_AGREE="ranks exit with $(cat "$RCDIR"/rank* | tr '\n' ' ')"
    done
    [ "$RANKS_AGREE" = yes ] || return 99
    return "$first"
}

state() { if [ -e "$1" ] || [ -L "$1" ]; then cksum <"$1" 2>/dev/null || echo "not a file"; else echo absent; fi; }

# Temporary files .<name>.XXXXXX left beside OUT.
leftovers() {
    local dir base
    dir=$(dirname "$1")
    base=$(basename "$1")
    find "$dir" -maxdepth 1 -name ".$base.*" 2>/dev/null | head -3 | tr '\n' ' '
}

# The processes started under PID, at any depth.
descendants() {
    local p
    for p in $(pgrep -P "$1"); do
        echo "$p"
        descendants "$p"
    done
}

# unnamed_open TPID OUT: a process under TPID holds an unnamed file (O_TMPFILE) open in
# OUT's directory: the output's temporary file where the file system has them.
unnamed_open() {
    local dir p
    dir=$(cd "$(dirname "$2")" && pwd)
    for p in $(descendants "$1"); do
        ls -l "/proc/$p/fd" 2>/dev/null | grep -qF -- "$dir/#" && return 0
    done
    return 1
}

# mid_export TPID OUT [RANK]: wait (up to 20 s) for the export run by 'timeout' TPID to
# write its temporary file beside OUT (named, or unnamed), then 0.3 s more; print the pid of its mpiexec, or
# with RANK of that rank's process. Status 1 when it never started writing.
mid_export() {
    local tpid=$1 out=$2 rank=${3:-} pid="" m p
    for _ in $(seq 400); do
        if [ -z "$pid" ]; then
            pid=$(pgrep -P "$tpid" | head -1)
            if [ -n "$rank" ] && [ -n "$pid" ]; then # a child of mpiexec, by its rank
                m=$pid pid=""
                for p in $(pgrep -P "$m"); do
                    tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null |
                        grep -qx "OMPI_COMM_WORLD_RANK=$rank" && pid=$p
                done
            fi
        fi
        if [ -n "$pid" ] && { [ -n "$(leftovers "$out")" ] || unnamed_open "$tpid" "$out"; }; then
            sleep 0.3
            echo "$pid"
            return 0
        fi
        kill -0 "$tpid" 2>/dev/null || break
        sleep 0.05
    done
    echo "$pid"
    return 1
}
