#!/usr/bin/env bash
# Installs what a fresh Debian 12 needs to build and test cudamux.
# Idempotent and quiet: prints nothing and changes nothing when all is installed.
#   scripts/setup-debian.sh           install what is missing (uses sudo if not root)
#   scripts/setup-debian.sh --check   list what is missing; exit 1 if anything is
set -euo pipefail

packages=(
  # toolchain
  build-essential g++ cmake ninja-build pkg-config clang-format
  python3          # the API generator
  python3-venv     # a test runs NVIDIA's cuda-python bindings (PyPI) in a venv
  ca-certificates  # ...which pip fetches over HTTPS
  # libraries
  libboost-dev libboost-filesystem-dev libboost-context-dev
  libspdlog-dev libfmt-dev libtomlplusplus-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  libzstd-dev liblz4-dev  # NVIDIA fat binaries' compressed entries (issue 14)
  clang-14 libclang-rt-14-dev  # the API-sequence fuzzer (libFuzzer; issue 9, tests/fuzz)
  libamdhip64-dev  # ROCm HIP 5.2 headers + runtime (with hipRTC): the hip backend (issue 5)
)

check_only=0
case "${1:-}" in
  --check) check_only=1 ;;
  "") ;;
  *) echo "usage: $0 [--check]" >&2; exit 2 ;;
esac

if ! command -v dpkg-query >/dev/null 2>&1 || ! command -v apt-get >/dev/null 2>&1; then
  echo "setup-debian: this script needs a Debian (12) system with apt-get" >&2
  exit 1
fi
if [[ -r /etc/debian_version && "$(cut -d. -f1 /etc/debian_version)" != "12" ]]; then
  echo "setup-debian: note: written for Debian 12, this is $(cat /etc/debian_version)" >&2
fi

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q '^install ok installed$'; then
    missing+=("$p")
  fi
done

if ((${#missing[@]} == 0)); then
  exit 0
fi
if ((check_only)); then
  echo "setup-debian: missing: ${missing[*]}"
  exit 1
fi

sudo=()
if [[ "$(id -u)" != 0 ]]; then
  if ! command -v sudo >/dev/null 2>&1; then
    echo "setup-debian: not root and no sudo; as root run: apt-get install ${missing[*]}" >&2
    exit 1
  fi
  sudo=(sudo)
fi

echo "setup-debian: installing ${missing[*]}"
"${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -qq
"${sudo[@]}" env DEBIAN_FRONTEND=noninteractive \
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "setup-debian: done"
