#!/usr/bin/env bash
# Installs the Debian packages rdmaemu builds and tests with, when any is missing.
#   tools/install-deps.sh            what `make test` builds and runs with (make deps)
#   tools/install-deps.sh vm         the Soft-RoCE VM's tooling: only the VM tests need it, and
#                                    they install it themselves (tests/vm/run_checks.sh)
#   tools/install-deps.sh browser    headless Chromium: only the web page's test (tests/integration/ui_page.sh)
#   tools/install-deps.sh --list [GROUP]   the group's packages, one a line; installs nothing
set -euo pipefail
base=(
  cmake g++ make pkg-config
  libboost-dev libspdlog-dev catch2 libibverbs-dev librdmacm-dev libisal-dev nlohmann-json3-dev libcli11-dev
  ibverbs-utils ibverbs-providers perftest rdmacm-utils qperf python3-pyverbs sockperf iperf3
  tshark iproute2 procps strace libxml2-utils
  # the larger stacks of real_stacks (docs/real-stacks.md): UCX, Open MPI over UCX, libfabric
  ucx-utils libucx0 openmpi-bin libopenmpi-dev netpipe-openmpi libfabric-bin
  python3-matplotlib linux-perf # bench/: its plots, and syscall counts that do not slow the app
  # the fuzz targets (make fuzz): clang with libFuzzer and the sanitizer runtimes; the format and
  # clang-tidy checks
  clang-14 libclang-rt-14-dev clang-format-14 clang-tidy-14
)
# The Soft-RoCE VM of the vm tests (tools/vm/rxe-vm): qemu, its root filesystem, a kernel to boot.
# Hundreds of MiB: not for every `make test`.
vm=(qemu-system-x86 debootstrap linux-image-amd64 e2fsprogs)
browser=(chromium)

list=0
if [ "${1:-}" = --list ]; then
  list=1
  shift
fi
group=${1:-base}
case $group in
  base) packages=("${base[@]}") ;;
  vm) packages=("${vm[@]}") ;;
  browser) packages=("${browser[@]}") ;;
  *) echo "usage: install-deps.sh [--list] [base|vm|browser]" >&2; exit 2 ;;
esac
if ((list)); then
  printf '%s\n' "${packages[@]}"
  exit 0
fi
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
((${#missing[@]})) || exit 0
echo "rdmaemu: installing ${missing[*]}"
sudo=""
[ "$(id -u)" -eq 0 ] || sudo=sudo
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -q --no-install-recommends "${missing[@]}"
