#!/usr/bin/env bash
# Builds libsrtp2 against OpenSSL from Debian's own source package (the same 2.5.0 and Debian patches as
# libsrtp2-dev) into .deps/libsrtp2-openssl as a static library, and prints the PKG_CONFIG_PATH under which
# `swift build` picks it instead of Debian's binary. Why: Debian builds libsrtp2 on NSS, whose AES-GCM goes
# through the PKCS#11 softoken on every packet - half of the node's CPU in a profile (Benchmarks/README.md).
# Idempotent: a second call only prints the path. Needs network access to Debian's archive the first time.
set -euo pipefail
cd "$(dirname "$0")/.."
prefix=$PWD/.deps/libsrtp2-openssl
if [ ! -f "$prefix/lib/libsrtp2-openssl.a" ]; then
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  if ! grep -rqs "deb-src" /etc/apt/sources.list /etc/apt/sources.list.d/; then
    $sudo tee /etc/apt/sources.list.d/sfu-deb-src.sources > /dev/null <<'SRC'
Types: deb-src
URIs: http://deb.debian.org/debian
Suites: bookworm
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SRC
    $sudo apt-get update -qq >&2
  fi
  work=$(mktemp -d)
  (cd "$work" && apt-get source -qq --download-only libsrtp2 >&2 2>/dev/null)
  orig=$(ls "$work"/libsrtp2_*.orig.tar.gz)
  mkdir -p "$work/src"
  tar xzf "$orig" -C "$work/src"
  src=$(ls -d "$work"/src/libsrtp-*)
  tar xJf "$(ls "$work"/libsrtp2_*.debian.tar.xz)" -C "$src"
  for p in $(cat "$src/debian/patches/series"); do patch -d "$src" -p1 -s < "$src/debian/patches/$p"; done
  (cd "$src" && ./configure -q --enable-openssl --prefix="$prefix" CFLAGS="-O2 -fPIC" > /dev/null && make -s -j"$(nproc)" libsrtp2.a > /dev/null 2>&1)
  mkdir -p "$prefix/lib/pkgconfig" "$prefix/include/srtp2"
  cp "$src/libsrtp2.a" "$prefix/lib/libsrtp2-openssl.a"  # its own name: no -L order can pick Debian's libsrtp2.so instead
  cp "$src/include/srtp.h" "$src/crypto/include/auth.h" "$src/crypto/include/cipher.h" "$src/crypto/include/crypto_types.h" "$prefix/include/srtp2/"
  version=$(basename "$src" | sed 's/libsrtp-//')
  cat > "$prefix/lib/pkgconfig/libsrtp2.pc" <<PC
prefix=$prefix
libdir=\${prefix}/lib
includedir=\${prefix}/include

Name: libsrtp2
Description: libsrtp2 $version from Debian's source, on OpenSSL (static)
Version: $version
Libs: -L\${libdir} -lsrtp2-openssl -lcrypto
Cflags: -I\${includedir}
PC
  rm -rf "$work"
  echo "built libsrtp2 $version on OpenSSL into $prefix" >&2
fi
echo "$prefix/lib/pkgconfig"
