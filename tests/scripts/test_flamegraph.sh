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

# What a person sees: Chromium renders the SVG, and in its screenshot every frame is a bar
# of its colour where the SVG puts it, and every label is drawn on its bar. Debian's
# chromium (scripts/setup.sh installs it); without it the check is skipped, and says so.
browser=$(command -v chromium chromium-browser 2>/dev/null | head -1)
shot() { # SVG PNG: a screenshot the SVG's size, one pixel a unit
    local size
    size=$(grep -o '<svg [^>]*' "$1" | sed -E 's/.* width="([0-9]+)" height="([0-9]+)".*/\1,\2/')
    timeout 60 "$browser" --headless --no-sandbox --disable-gpu --hide-scrollbars \
        --force-device-scale-factor=1 --window-size="$size" --screenshot="$2" "file://$1" \
        >/dev/null 2>&1
}
# seen SVG PNG: the frames and labels of SVG are in the picture PNG
seen() {
    python3 - "$@" <<'EOF_PY'
import re, struct, sys, zlib, xml.etree.ElementTree as ET
svg, png = sys.argv[1], sys.argv[2]
b = open(png, "rb").read()
assert b[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
pos, idat, head = 8, b"", None
while pos < len(b):
    n, kind = struct.unpack(">I4s", b[pos:pos + 8])
    if kind == b"IHDR":
        head = struct.unpack(">IIBBBBB", b[pos + 8:pos + 21])
    elif kind == b"IDAT":
        idat += b[pos + 8:pos + 8 + n]
    pos += 12 + n
W, H, depth, ctype, _, _, lace = head
assert depth == 8 and ctype in (2, 6) and lace == 0, head
bpp = 3 if ctype == 2 else 4
raw, stride, rows, prev = zlib.decompress(idat), W * bpp, [], bytearray(W * bpp)
for y in range(H):
    f, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
    for i in range(stride):
        a = line[i - bpp] if i >= bpp else 0
        c = prev[i - bpp] if i >= bpp else 0
        up = prev[i]
        if f == 1: line[i] = (line[i] + a) & 255
        elif f == 2: line[i] = (line[i] + up) & 255
        elif f == 3: line[i] = (line[i] + (a + up) // 2) & 255
        elif f == 4:
            p = a + up - c
            pa, pb, pc = abs(p - a), abs(p - up), abs(p - c)
            line[i] = (line[i] + (a if pa <= pb and pa <= pc else up if pb <= pc else c)) & 255
    rows.append(line)
    prev = line
px = lambda x, y: tuple(rows[y][x * bpp:x * bpp + 3])
near = lambda p, q, tol=10: all(abs(u - v) <= tol for u, v in zip(p, q))
ns = "{http://www.w3.org/2000/svg}"
doc = ET.parse(svg).getroot()
assert (W, H) == (int(doc.get("width")), int(doc.get("height"))), (W, H)
frames = labels = 0
for g in doc.iter(ns + "g"):
    r, t = g.find(ns + "rect"), g.find(ns + "text")
    x, y, w = float(r.get("x")), int(r.get("y")), float(r.get("width"))
    fill = tuple(int(v) for v in re.findall(r"\d+", r.get("fill")))
    xs = range(int(x) + 3, int(x + w) - 3)
    if len(xs) < 2:
        continue
    # the bar: its colour along its top rows (above any glyph)
    bar = sum(near(px(i, y + 1), fill) for i in xs)
    assert bar >= 0.9 * len(xs), (g.find(ns + "title").text, "bar", bar, len(xs), px(xs[0], y + 1))
    frames += 1
    if t is not None:
        # the label: ink (far from the bar's colour) in the text's box, on the bar
        tx, n = float(t.get("x")), len(t.text)
        ink = sum(not near(px(i, j), fill, 60)
                  for i in range(int(tx), min(int(tx + 7.2 * n), W)) for j in range(y + 3, y + 14))
        assert ink >= 4 * n, (t.text, "ink", ink)
        labels += 1
assert frames >= 2 and labels >= 2, (frames, labels)
EOF_PY
}
if [ -n "$browser" ]; then
    for f in "$TMP/basic_nested/f_rank0.svg" "$TMP/one/f_rank2.svg" "$TMP/threads/f_rank0.svg"; do
        rm -f "$TMP/shot.png"
        shot "$f" "$TMP/shot.png" && seen "$f" "$TMP/shot.png" && ok ||
            bad "Chromium's picture of ${f#"$TMP"/} does not show its frames and labels"
    done
    # and the check sees a picture that is not the SVG's: a blank page of the same size
    sed -E 's|<g class="frame">.*</g>||' "$TMP/basic_nested/f_rank0.svg" >"$TMP/blank.svg"
    shot "$TMP/blank.svg" "$TMP/blank.png" && ! seen "$TMP/basic_nested/f_rank0.svg" \
        "$TMP/blank.png" 2>/dev/null && ok || bad "the picture check passes a page without frames"
else
    echo "note: no chromium here; the rendering check did not run (Debian: apt-get install chromium)"
fi
finish
