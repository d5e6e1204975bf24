#!/bin/sh
# Installs the release archive of one architecture, checksum first: the
# image's install step (Dockerfile) and its rehearsal in CI
# (scripts/release-rehearsal) run this same file.
#
#   install-longtx.sh ARCH DIST_DIR PREFIX [BIN_DIR]
#
# ARCH is Docker's name (amd64, arm64); DIST_DIR holds the archives and
# their .sha256 files; the archive is unpacked as PREFIX/longtx, and
# BIN_DIR (default /usr/local/bin) gets a link to its binary.
set -eu
arch=$1 dist=$2 prefix=$3 bin=${4:-/usr/local/bin}
case "$arch" in
    amd64 | x86_64) triple=x86_64-unknown-linux-gnu ;;
    arm64 | aarch64) triple=aarch64-unknown-linux-gnu ;;
    *) echo "install-longtx: no release archive for architecture $arch" >&2; exit 1 ;;
esac
set -- "$dist"/longtx-*-"$triple".tar.gz
if [ "$#" -ne 1 ] || [ ! -f "$1" ]; then
    echo "install-longtx: expected one longtx-*-$triple.tar.gz in $dist" >&2
    exit 1
fi
archive=$1
# A damaged or swapped archive stops the build here.
(cd "$(dirname "$archive")" && sha256sum -c "$(basename "$archive").sha256")
mkdir -p "$prefix" "$bin"
tar -xzf "$archive" -C "$prefix"
rm -rf "$prefix/longtx"
mv "$prefix/$(basename "$archive" .tar.gz)" "$prefix/longtx"
ln -sf "$prefix/longtx/longtx" "$bin/longtx"
"$bin/longtx" --version
