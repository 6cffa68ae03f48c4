#!/usr/bin/env bash
# test_validate_parts.sh - `validate` under mpiexec reads a large plain document in parts, a
# part a rank: every rank agrees, and the answer is the one process's, byte for byte (OK, or
# the document's first error with its element number, line and column), wherever the error
# lies (in the first part, a later one, the rows after the regions), and when a look-alike
# of a row's start (event metadata with a "name" key) sits where a part would begin.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/mpi_lib.sh"
SYNTH="$BIN/scope-export-synth"

"$SYNTH" --ranks 16 --regions 12 --lanes --columns call,parent,meta --events 250000 \
    --seed 5 "$TMP/run.h5" >/dev/null && "$X" export "$TMP/run.h5" -o "$TMP/run.json" -q ||
    { bad "generator"; finish; exit 1; }

python3 - "$TMP/run.json" "$TMP" <<'EOF_PY' || bad "making the damaged documents"
import re, sys
src, tmp = sys.argv[1], sys.argv[2]
s = open(src, "rb").read()
n = len(s)
def row_after(frac):
    return s.find(b'}, {"name": ', int(n * frac)) + 3
def put(name, text):
    open(f"{tmp}/{name}.json", "wb").write(text)
# a row's rank a string, in each third of the document
for k, frac in enumerate((0.1, 0.5, 0.9)):
    j = s.find(b'"rank": ', row_after(frac))
    m = re.compile(rb'"rank": -?[0-9]+').match(s, j)
    put(f"rank{k}", s[:j] + b'"rank": "x"' + s[m.end():])
# a syntax error inside a column, late
k = s.find(b", ", row_after(0.7) + 200)
put("syntax", s[:k] + b",, " + s[k + 2:])
# columns of different lengths, late
j = s.find(b'"end_times_ns": [', row_after(0.6)) + len(b'"end_times_ns": [')
put("lengths", s[:j] + b"1, " + s[j:])
# an error after the regions: a thread row without its name
j = s.find(b'"threads": ')
t = s.find(b'"name": ', j)
put("threads", s[:t] + b'"nome": ' + s[t + 8:])
# look-alikes of a row's start (a key of a row the reader ignores, holding objects with a
# "name") just after where the parts of 2, 3 and 4 ranks would start: valid; the chain of
# parts must refuse these starts (some are checked to be look-alikes below)
look = b', "zz": [{}, {"name": "x"}]'
cuts = sorted({n // p * r for p in (2, 3, 4) for r in range(1, p)})
out, last = [], 0
for c in cuts:
    j = s.find(b'], "', c) + 1
    if j > last:
        out += [s[last:j], look]
        last = j
out.append(s[last:])
doc = b"".join(out)
put("lookalike", doc)
false_starts = 0
for np_ in (2, 3, 4):
    parts = min(np_, len(doc) // (1 << 20))
    for r in range(1, parts):
        g = doc.find(b'}, {"name": ', len(doc) // parts * r) + 3
        false_starts += doc.startswith(b'{"name": "x"}', g)
if false_starts == 0:
    sys.exit("no part starts on a look-alike")
# the format after the rows: valid, and read by rank 0 alone
j = s.find(b'"format": "scope-profiler-profile", ')
r = s.find(b'"regions": ')
body = s[:j] + s[j + len(b'"format": "scope-profiler-profile", '):]
put("format_late", body[:-1] + b', "format": "scope-profiler-profile"}')
EOF_PY

for doc in run rank0 rank1 rank2 syntax lengths threads lookalike format_late; do
    f="$TMP/$doc.json"
    [ -f "$f" ] || { bad "$doc: not made"; continue; }
    rc1=0
    mpi 1 "$X" validate "$f" >"$TMP/one.out" 2>"$TMP/one.err" || rc1=$?
    case $doc in
        run | lookalike | format_late) want=0 ;;
        *) want=1 ;;
    esac
    [ "$rc1" = "$want" ] && ok || bad "$doc -n 1: exit $rc1, not $want: $(head -c 300 "$TMP/one.out")"
    for np in 2 3 4; do
        rc=0
        mpi "$np" "$X" validate "$f" >"$TMP/n.out" 2>"$TMP/n.err" || rc=$?
        if [ "$rc" = "$rc1" ] && cmp -s "$TMP/one.out" "$TMP/n.out"; then
            ok
        else
            bad "$doc -n $np: exit $rc ($RANKS_AGREE), said: $(head -c 300 "$TMP/n.out") / -n 1: $(head -c 300 "$TMP/one.out")"
        fi
    done
done
# the damaged documents name their element: the parts numbered them as the document does
mpi 1 "$X" validate "$TMP/rank2.json" >"$TMP/r2.out" 2>&1
grep -q "regions\[[1-9][0-9]*\] (.*): 'rank' must be an integer" "$TMP/r2.out" && ok ||
    bad "rank2: $(head -c 300 "$TMP/r2.out")"
finish
