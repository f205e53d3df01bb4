# Sourced by the other scripts. Builds link libsrtp2 on OpenSSL (scripts/build-libsrtp.sh builds it once from
# Debian's source package); SFU_SRTP=debian keeps Debian's NSS-backed libsrtp2 (slower, same API and results).
if [ "${SFU_SRTP:-openssl}" = "openssl" ]; then
  PKG_CONFIG_PATH="$(scripts/build-libsrtp.sh)${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
  export PKG_CONFIG_PATH
fi
