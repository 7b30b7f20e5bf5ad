#!/usr/bin/env bash
# install_groups: what `make test` installs (tools/install-deps.sh, no group) holds no VM tooling
# and no browser; those are installed by the tests that need them (the vm group by
# tests/vm/run_checks.sh, the browser group by ui_page.sh). Reads the lists only: installs nothing.
#
# usage: install_groups.sh REPO
set -euo pipefail
repo=$1
deps=$repo/tools/install-deps.sh
fail() { echo "FAIL: $*" >&2; exit 1; }
base=$("$deps" --list)
vm=$("$deps" --list vm)
browser=$("$deps" --list browser)
for p in qemu-system-x86 debootstrap linux-image-amd64 chromium; do
    grep -qx "$p" <<<"$base" && fail "make test's install step installs $p"
done
for p in qemu-system-x86 debootstrap linux-image-amd64 e2fsprogs; do
    grep -qx "$p" <<<"$vm" || fail "the vm group lacks $p"
done
grep -qx chromium <<<"$browser" || fail "the browser group lacks chromium"
for p in cmake g++ libboost-dev tshark perftest libxml2-utils; do
    grep -qx "$p" <<<"$base" || fail "make test's install step lacks $p"
done
grep -q 'install-deps.sh" vm' "$repo/tests/vm/run_checks.sh" || fail "the VM tests do not install their tooling"
grep -q 'install-deps.sh" browser' "$repo/tests/integration/ui_page.sh" || fail "ui_page does not install chromium"
rc=0
"$deps" --list nonsense >/dev/null 2>&1 || rc=$?
((rc == 2)) || fail "an unknown group is not refused (exit $rc)"
echo "PASS: base $(wc -l <<<"$base") packages, vm $(wc -l <<<"$vm"), browser $(wc -l <<<"$browser")"
