#!/usr/bin/env bash
# run_checks.sh: boots the rdmaemu VM once (tools/vm/rxe-vm) and runs checks.sh in it against a
# build tree; the ctest test vm_run. The build tree is shared at its own path (read-only), this
# directory at /rdmaemu-tests. Results: OUTDIR/out/results.txt (one "VMCHECK name PASS|FAIL ..."
# line per check) and OUTDIR/out/<check>.log, read by check_result.sh (the vm_<check> tests).
#
# usage: run_checks.sh BUILD_DIR OUTDIR [CHECK...]
# Exits 0 when the VM ran the checks (whatever their verdicts: each vm_<check> test reports its
# own), non-zero with the reason when it could not (no qemu, no image, no boot, timeout).
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
rxe_vm=$here/../../tools/vm/rxe-vm
build=$(realpath "${1:?usage: run_checks.sh BUILD_DIR OUTDIR [CHECK...]}")
outdir=${2:?usage: run_checks.sh BUILD_DIR OUTDIR [CHECK...]}
shift 2
for f in lib/libibverbs.so.1 bin/rdmaemu bin/nicsimd; do
    [ -e "$build/$f" ] || { echo "run_checks.sh: $build/$f missing: build the project first"; exit 1; }
done
# The VM's tooling (qemu, debootstrap, a kernel) is installed here, for the VM tests only, not by
# every `make test` (tools/install-deps.sh vm; a machine without network says so below).
"$here/../../tools/install-deps.sh" vm || echo "run_checks.sh: could not install the VM tooling (tools/install-deps.sh vm)"
# Below vm_run's ctest TIMEOUT (1500 s), so that rxe-vm says why when the VM hangs.
export RDMAEMU_VM_TIMEOUT=${RDMAEMU_VM_TIMEOUT:-1200}
rm -rf "$outdir"
mkdir -p "$outdir"
echo "run_checks.sh: VM checks of $build (results in $outdir/out)"
# interop_tshark runs here, after the VM (below); the rest in the guest.
guest_checks=()
for c in "$@"; do [ "$c" = interop_tshark ] || guest_checks+=("$c"); done
"$rxe_vm" run --share "$build=$build" --share "$here=/rdmaemu-tests" \
    --share "$here/../integration=/rdmaemu-it" --out "$outdir" \
    "$here/checks.sh" "$build" ${guest_checks[@]+"${guest_checks[@]}"}
rc=$?
if [ ! -s "$outdir/out/results.txt" ]; then
    echo "run_checks.sh: FAILED: the VM did not run the checks (rxe-vm exit $rc; see above)."
    echo "  The VM tests need qemu-system-x86, debootstrap, linux-image-amd64 and e2fsprogs"
    echo "  (tools/install-deps.sh vm), root for the first image build, and network for debootstrap."
    exit 1
fi
# interop_tshark, on the host (the guest has no tshark): our capture of the exchange with rxe1
# decodes as RoCE from both sides with no malformed packet. Heuristic dissectors that claim
# short payloads (RPC-over-RDMA, CRTP for a 2-byte RDMA WRITE) are off, as docs/interop.md says.
pcap=$outdir/out/interop.pcap
if grep -q '^VMCHECK interop_counters ' "$outdir/out/results.txt"; then
    if ! command -v tshark >/dev/null; then
        echo "VMCHECK interop_tshark FAIL tshark is not installed on the host" >>"$outdir/out/results.txt"
    elif [ ! -s "$pcap" ]; then
        echo "VMCHECK interop_tshark FAIL the guest left no interop.pcap" >>"$outdir/out/results.txt"
    else
        off=(--disable-protocol rpcordma --disable-protocol crtp)
        fields=$(tshark -r "$pcap" "${off[@]}" -Y infiniband -T fields -e ip.src 2>/dev/null | sort | uniq -c | tr -s ' ' | tr '\n' ';')
        bad=$(tshark -r "$pcap" "${off[@]}" -Y '_ws.malformed || _ws.expert.severity == error' 2>/dev/null | wc -l)
        {
            echo "\$ tshark -r $pcap ${off[*]}: RoCE packets per source: $fields malformed: $bad"
        } >"$outdir/out/interop_tshark.log"
        # And the IPv6 exchange (interop_ipv6), when it ran: both sides, none malformed.
        pcap6=$outdir/out/interop6.pcap fields6="" bad6=0 six=ok
        if [ -s "$pcap6" ]; then
            fields6=$(tshark -r "$pcap6" "${off[@]}" -Y infiniband -T fields -e ipv6.src 2>/dev/null | sort | uniq -c | tr -s ' ' | tr '\n' ';')
            bad6=$(tshark -r "$pcap6" "${off[@]}" -Y '_ws.malformed || _ws.expert.severity == error' 2>/dev/null | wc -l)
            echo "\$ tshark -r $pcap6 ${off[*]}: RoCE packets per source: $fields6 malformed: $bad6" >>"$outdir/out/interop_tshark.log"
            { ((bad6 == 0)) && grep -q 'fd14::1' <<<"$fields6" && grep -q 'fd14::2' <<<"$fields6"; } || six=bad
            fields="$fields IPv6: $fields6"
        fi
        if ((bad == 0)) && [ "$six" = ok ] && grep -q '10.214.0.1' <<<"$fields" && grep -q '10.214.0.2' <<<"$fields"; then
            echo "VMCHECK interop_tshark PASS tshark decodes every packet of both sides, none malformed: $fields" >>"$outdir/out/results.txt"
        else
            echo "VMCHECK interop_tshark FAIL $((bad + bad6)) malformed packets, or one side missing: $fields" >>"$outdir/out/results.txt"
        fi
    fi
fi
echo "run_checks.sh: payload exit $rc; $(grep -c ' PASS ' "$outdir/out/results.txt") passed, $(grep -c ' FAIL ' "$outdir/out/results.txt") failed"
exit 0
