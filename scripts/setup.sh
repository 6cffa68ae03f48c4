#!/usr/bin/env bash
# setup.sh - install what scope-export needs to build, test and benchmark (Debian 12, as root)
set -euo pipefail
pkgs=(build-essential cmake pkg-config git
      libopenmpi-dev openmpi-bin libhdf5-openmpi-dev hdf5-tools
      libjansson-dev libpcre2-dev zlib1g-dev libisal-dev liburing-dev libdeflate-dev
      gfortran python3-mpi4py python3-numpy man-db
      pigz gzip time valgrind clang clang-format
      protobuf-compiler # protoc: the Perfetto test decodes the trace with it
      # --format otf2 writes through the OTF2 library; its test reads the archive back
      # with otf2-print and the Python reader
      libopen-trace-format2-dev otf2-tools python3-otf2
      chromium) # chromium: the flame graph test looks at the SVG as a browser draws it
missing=()
for p in "${pkgs[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
    SUDO=""
    [ "$(id -u)" -eq 0 ] || SUDO="sudo"
    echo "setup: installing ${missing[*]}"
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
