#!/usr/bin/env bash
# test_flamegraph.sh - --format flamegraph: one SVG per rank whose frames are the pstats
# call paths, each frame as wide as the path's inclusive time (ct) of the .prof made from
# the same calls, labelled and with a tooltip; the same files at 1 and 3 ranks; rendered by
# a headless Chromium when there is one
. "$(dirname "$0")/lib.sh"

[ -d "$SHARED/golden" ] || { echo "skip: no golden runs at $SHARED/golden"; exit 77; }
command -v python3 >/dev/null || { echo "skip: no python3 to read the SVG"; exit 77; }

bare() { env -u OMPI_COMM_WORLD_SIZE -u PMIX_RANK -u PMI_RANK -u PMI_SIZE -u PMI_FD \
    timeout 120 "$@"; }
# widths SVG PROF WIDTH: every frame's width is ct / total * (WIDTH - 20), its tooltip the
# path, and every path of the .prof has its frame; frames with room carry a label
widths() {
    python3 - "$@" <<'EOF_PY'
import marshal, re, sys, xml.etree.ElementTree as ET
svg, prof, width = sys.argv[1], sys.argv[2], float(sys.argv[3])
stats = marshal.load(open(prof, "rb"))
ct = {k[2]: v[3] for k, v in stats.items()}
root = [k[2] for k in stats if k[0] == "~" and k[2].startswith("<")][-1]
total = ct[root]
ns = "{http://www.w3.org/2000/svg}"
doc = ET.parse(svg).getroot()
assert doc.get("width") == str(int(width)), doc.get("width")
seen, labels = set(), 0
for g in doc.iter(ns + "g"):
    tip = g.find(ns + "title").text
    path = re.sub(r" \([^()]* s, [0-9.]+%, [0-9]+ calls?\)$", "", tip)
    w = float(g.find(ns + "rect").get("width"))
    want = ct[path] / total * (width - 20)
    assert abs(w - want) <= 1e-9 * max(1.0, want), (path, w, want)
    seen.add(path)
    labels += g.find(ns + "text") is not None
missing = set(ct) - seen
assert not missing, missing
assert labels >= 2, labels
EOF_PY
}

for case in basic_nested threads self_recursion mpi4_parallel; do
    d="$SHARED/golden/$case"
    bare "$X" export "$d/run.h5" -o "$TMP/$case/f.svg" -q --format flamegraph &&
        bare "$X" export "$d/run.h5" -o "$TMP/$case/p.prof" -q --format prof &&
        widths "$TMP/$case/f_rank0.svg" "$TMP/$case/p_rank0.prof" 1200 && ok ||
        bad "$case: the frames are not the pstats call paths"
done
d="$SHARED/golden/mpi4_parallel"
bare "$X" export "$d/run.h5" -o "$TMP/one/f" -q --format flamegraph --ranks 0-3 --width 700 &&
    run_np 3 "$X" export "$d/run.h5" -o "$TMP/three/f" -q --format flamegraph --ranks 0-3 \
        --width 700 && bare "$X" export "$d/run.h5" -o "$TMP/one/p" -q --format prof --ranks 2 &&
    widths "$TMP/one/f_rank2.svg" "$TMP/one/p_rank2.prof" 700 &&
    for r in 0 1 2 3; do cmp -s "$TMP/one/f_rank$r.svg" "$TMP/three/f_rank$r.svg" || exit 1; done &&
    ok || bad "every rank, --width 700, at 1 and 3 ranks"

# What a person sees: Chromium renders it, and the picture is not blank.
browser=$(command -v chromium chromium-browser 2>/dev/null | head -1)
if [ -n "$browser" ]; then
    timeout 60 "$browser" --headless --no-sandbox --disable-gpu --window-size=1200,200 \
        --screenshot="$TMP/shot.png" "file://$TMP/basic_nested/f_rank0.svg" >/dev/null 2>&1
    python3 - "$TMP/shot.png" <<'EOF_PY' && ok || bad "Chromium rendered no flame graph"
import sys, zlib, struct
b = open(sys.argv[1], "rb").read()
assert b[:8] == b"\x89PNG\r\n\x1a\n"
idat = b"".join(b[i + 8:i + 8 + struct.unpack(">I", b[i:i + 4])[0]]
                for i in range(8, len(b)) if b[i + 4:i + 8] == b"IDAT")
raw = zlib.decompress(idat)
assert len(set(raw)) > 20, "a blank picture"
EOF_PY
else
    echo "note: no chromium here; the rendering check did not run (Debian: apt-get install chromium)"
fi
finish
