#!/usr/bin/env bash
# cmake --install and cpack -G DEB from a built tree, into temporary roots: the programs, the desktop
# entry, the icons and the AppStream metainfo are where a desktop looks for them, both validate, the
# package names its library dependencies, and the installed programs start (the embedded demo rendered
# offscreen by the installed ckpt-atlas, which starts the installed ckpt-atlas-gui beside it).
# Usage: tests/install_package.sh BUILD_DIR
set -euo pipefail
build=$(cd "$1" && pwd)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/atlas-install.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
id=org.checkpointatlas.CheckpointAtlas
fail() { echo "install_package: $*" >&2; exit 1; }

check_tree() { # ROOT: the files an installed Checkpoint Atlas must have under ROOT/usr
    local root=$1
    for f in bin/ckpt-atlas bin/ckpt-atlas-gui; do
        [ -x "$root/usr/$f" ] || fail "$f is not installed (or not executable) under $root"
    done
    for f in share/applications/$id.desktop share/metainfo/$id.metainfo.xml \
             share/icons/hicolor/scalable/apps/$id.svg; do
        [ -s "$root/usr/$f" ] || fail "$f is missing under $root"
    done
    for size in 16 24 32 48 64 128 256 512; do
        local png=$root/usr/share/icons/hicolor/${size}x${size}/apps/$id.png
        [ -s "$png" ] || fail "the ${size}x${size} icon is missing under $root"
        # A PNG of that size: the signature, then the IHDR width and height (big-endian).
        [ "$(head -c 8 "$png" | od -An -tx1 | tr -d ' \n')" = 89504e470d0a1a0a ] || fail "$png is not a PNG"
        local wh
        wh=$(od -An -tu1 -j16 -N8 "$png" | awk '{print $1*16777216+$2*65536+$3*256+$4, $5*16777216+$6*65536+$7*256+$8}')
        [ "$wh" = "$size $size" ] || fail "$png is $wh, not $size x $size"
    done
    desktop-file-validate "$root/usr/share/applications/$id.desktop" || fail "the desktop entry does not validate"
    grep -q "^Icon=$id\$" "$root/usr/share/applications/$id.desktop" || fail "the desktop entry names another icon"
    appstreamcli validate --no-net "$root/usr/share/metainfo/$id.metainfo.xml" ||
        fail "the AppStream metainfo does not validate"
    "$root/usr/bin/ckpt-atlas" --version | grep -q "0\.1\.0" || fail "the installed ckpt-atlas does not start"
    # The installed command line starts the installed desktop part beside it, which renders the demo.
    QT_QPA_PLATFORM=offscreen "$root/usr/bin/ckpt-atlas" figures --out "$root/figures" >/dev/null ||
        fail "the installed ckpt-atlas figures failed on the embedded demo"
    [ -s "$root/figures/00-window.png" ] || fail "the installed figures wrote no 00-window.png"
}

echo "install_package: cmake --install into $tmp/install"
cmake --install "$build" --prefix "$tmp/install/usr" >/dev/null
check_tree "$tmp/install"

echo "install_package: cpack -G DEB"
(cd "$tmp" && cpack -G DEB --config "$build/CPackConfig.cmake" -B "$tmp/package" >/dev/null) ||
    fail "cpack -G DEB failed"
deb=$(ls "$tmp"/package/*.deb 2>/dev/null | head -1)
[ -n "$deb" ] || fail "cpack wrote no .deb"
dpkg-deb --info "$deb" >"$tmp/info"
grep -q "^ Package: ckpt-atlas$" "$tmp/info" || fail "the package is not named ckpt-atlas"
for lib in libqt6widgets6 libqt6svg6 libcurl4 libc6; do
    grep "^ Depends:" "$tmp/info" | grep -q "$lib" || fail "the package does not depend on $lib"
done
dpkg-deb --extract "$deb" "$tmp/root"
check_tree "$tmp/root"
echo "install_package: $(basename "$deb") installs and starts"
