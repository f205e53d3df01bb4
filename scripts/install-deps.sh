#!/usr/bin/env bash
# Installs the Debian packages the project needs (C libraries it wraps - libavformat writes recordings -, FFmpeg
# for composing them, speech for test fixtures).
# With --tests, also what only the tests use: Chromium for the demo's browser test, Janus for the check of the
# benchmark's Janus client, iptables for the shaped-link test's random loss, nginx with its RTMP module for the live-streaming test, coturn and Firefox ESR for the reach test, PostgreSQL for the cluster
# registry's tests (they start a private server of their own; the package's default one is not used). With --bench, Janus (the peer SFU
# `sfu bench --against janus` compares with).
set -euo pipefail
packages=(libsrtp2-dev libopus-dev libvpx-dev libssl-dev libavformat-dev ffmpeg pkg-config espeak-ng sox python3 python3-venv iproute2 curl patch make xz-utils)
[ "${1:-}" = "--tests" ] && packages+=(chromium fonts-dejavu-core janus iptables postgresql nginx libnginx-mod-rtmp coturn firefox-esr)
[ "${1:-}" = "--bench" ] && packages+=(janus)
missing=()
for p in "${packages[@]}"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
[ ${#missing[@]} -eq 0 ] && exit 0
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "installed: ${missing[*]}"
