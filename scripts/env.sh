# Variables only: `source scripts/env.sh` before a hand-run `swift build` links libsrtp2 on OpenSSL once
# scripts/build-libsrtp.sh has built it (the scripts do, through scripts/lib.sh). SFU_SRTP=debian, or no such
# build yet, keeps Debian's NSS-backed libsrtp2 (slower, same API and results; the node warns at start-up).
_sfu_srtp_pc="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/.deps/libsrtp2-openssl/lib/pkgconfig"
if [ "${SFU_SRTP:-openssl}" = "openssl" ] && [ -f "$_sfu_srtp_pc/libsrtp2.pc" ]; then
  case ":${PKG_CONFIG_PATH:-}:" in
    *":$_sfu_srtp_pc:"*) ;;
    *) export PKG_CONFIG_PATH="$_sfu_srtp_pc${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}" ;;
  esac
fi
unset _sfu_srtp_pc
