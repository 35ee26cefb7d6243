#!/bin/bash
# SPDX-License-Identifier: MIT
# Installs what credisson needs from Debian (when missing) and builds it.
# Safe to run again: it only does what is not done yet.
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(build-essential autoconf automake libtool pkg-config
          libhiredis-dev uthash-dev libcmocka-dev valgrind
          redis-server redis-sentinel redis-tools
          libssl-dev openssl libevent-dev libuv1-dev libev-dev
          clang libclang-rt-14-dev iproute2 zsh groff-base
          # The real Java Redisson client for the cross-implementation
          # tests (tests/java/redisson.sh builds it from Redisson's sources
          # with the jars that ../shared/redisson-java/build.sh --apt names).
          openjdk-17-jdk-headless libnetty-java libjackson2-databind-java
          libjackson2-core-java libjackson2-annotations-java
          libbyte-buddy-java libreactive-streams-java libslf4j-java
          libcaffeine-java libyaml-snake-java libspring-beans-java
          libprotobuf-java libobjenesis-java)
missing=()
for p in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
        missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
    sudo=; [ "$(id -u)" -eq 0 ] || sudo=sudo
    echo "installing: ${missing[*]}"
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
fi

[ -x configure ] || autoreconf -fi >/dev/null
[ -f Makefile ] || ./configure -q
make -j"$(nproc)" >/dev/null
make -j"$(nproc)" examples/counter_demo >/dev/null
