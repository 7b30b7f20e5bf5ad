#!/usr/bin/env bash
# rsockets: rdma-core's socket API over RDMA (rsocket, rsend, riomap ...) in our librdmacm,
# between hosts 1 and 2 with the unmodified programs of rdmacm-utils: rstream (blocking,
# MSG_WAITALL, non-blocking, rpoll-driven, rdma_getaddrinfo, keepalive; up to 1 MiB transfers,
# data verified), riostream (riomap/riowrite), rcopy (a file, compared byte for byte) and udpong
# (datagram rsockets: blocking, non-blocking, rpoll-driven); the calls one by one (rs_api, one
# process talking to its own host); and plain TCP and UDP echo pairs (rs_echo, ds_echo) under
# rdma-core's librspreload.so, which must go over rsockets (a CM listener on the TCP port; the
# UDP datagrams as UD packets through host 1's NIC), not the kernel's sockets. Afterwards no CM
# ID is left on either host.
# usage: rsockets.sh RDMAEMU RS_API RS_ECHO DS_ECHO
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
emu_setup "$1"
RS_API=$2
RS_ECHO=$3
DS_ECHO=$4
for p in rstream riostream rcopy udpong; do
    command -v "$p" >/dev/null || fail "$p not installed (Debian package rdmacm-utils)"
done
RSPRELOAD=$(dpkg -L librdmacm1 2>/dev/null | grep '/librspreload\.so$' | head -1)
[[ -n $RSPRELOAD && -f $RSPRELOAD ]] || fail "librspreload.so not found (Debian package librdmacm1)"
emu_up 2
A1=$(emu_host 1 address)

# A result row of rstream/riostream: "custom  1m  100  1  200m  0.33s  5.01  1673.92".
result_row() { grep -E '^custom +[0-9.]+[kmg]? ' "$1" || true; }

rstream_pair() {
    local label=$1
    shift
    emu_cm_pair_ok "$label" 7471 rstream "$@" -- rstream -s "$A1" "$@"
    local side
    for side in server client; do
        [[ -n $(result_row "$EMU_WORK/$label.$side") ]] ||
            fail "$label: no result row from the $side: $(cat "$EMU_WORK/$label.$side")"
    done
    ok "$label: $(result_row "$EMU_WORK/$label.client" | tr -s ' ') (${PAIR_SECS}s)"
}

step "the rsocket calls one by one (rs_api on host 1, to its own address)"
rc=0
timeout 120 "$RDMAEMU" run --host 1 -- "$RS_API" "$A1" 7600 "$(emu_host 1 mtu)" >"$EMU_WORK/rs_api.out" 2>&1 || rc=$?
((rc == 0)) || { cat "$EMU_WORK/rs_api.out"; fail "rs_api exited $rc"; }
grep -c '^ok ' "$EMU_WORK/rs_api.out" | xargs -I{} echo "rs_api: {} checks passed"
grep -q '^PASS' "$EMU_WORK/rs_api.out" || { cat "$EMU_WORK/rs_api.out"; fail "rs_api did not pass"; }

step "rstream: 1 MiB transfers verified, blocking, non-blocking, rpoll, rdma_getaddrinfo, keepalive"
rstream_pair rstream_1m -S 1048576 -C 100 -T v
rstream_pair rstream_waitall -S 65536 -C 200 -T b
rstream_pair rstream_nonblock -S 1048576 -C 20 -T n -T v
rstream_pair rstream_async -S 65536 -C 100 -T a -T v
rstream_pair rstream_async_nonblock -S 4096 -C 200 -T a -T n
rstream_pair rstream_odd -S 1000001 -C 10 -T v -B 16384
rstream_pair rstream_rai -S 4096 -C 100 -T r
rstream_pair rstream_keepalive -S 16384 -C 100 -k 1
grep -q "Keepalive: ON" "$EMU_WORK/rstream_keepalive.client" || fail "rstream -k: keepalive not on"

step "riostream: riomap on both sides, riowrite into the peer's memory"
for variant in "-S 1048576 -C 20 -T v" "-S 65536 -C 50 -T a" "-S 4096 -C 100 -T n"; do
    label=riostream_$(echo "$variant" | tr -cd 'a-zA-Z0-9')
    # shellcheck disable=SC2086
    emu_cm_pair_ok "$label" 7471 riostream $variant -- riostream -s "$A1" $variant
    [[ -n $(result_row "$EMU_WORK/$label.client") ]] || fail "$label: no result row"
    ok "riostream $variant: $(result_row "$EMU_WORK/$label.client" | tr -s ' ')"
done

step "rcopy: a 5 MB file, byte for byte"
head -c 5000017 /dev/urandom >"$EMU_WORK/rcopy.src"
"$RDMAEMU" run --host 1 -- rcopy >"$EMU_WORK/rcopy.server" 2>&1 &
rcopy_server=$!
emu_bg_register "$rcopy_server"
wait_cm_listen 1 7427 20 "$rcopy_server" || fail "rcopy server did not listen"
timeout 60 "$RDMAEMU" run --host 2 -- rcopy "$EMU_WORK/rcopy.src" "$A1:$EMU_WORK/rcopy.dst" \
    >"$EMU_WORK/rcopy.client" 2>&1 || fail "rcopy exited $?: $(cat "$EMU_WORK/rcopy.client")"
cmp "$EMU_WORK/rcopy.src" "$EMU_WORK/rcopy.dst" || fail "rcopy's copy differs"
kill "$rcopy_server" 2>/dev/null || true # it serves forever
wait "$rcopy_server" 2>/dev/null || true
ok "rcopy: $(grep -o '[0-9]* bytes in.*' "$EMU_WORK/rcopy.client")"

# Under ThreadSanitizer (make tsan) a program with librspreload.so preloaded crashes before main:
# the sanitizer's runtime and librspreload both interpose the socket calls. The ASan build and
# make test run these steps.
if [[ ${RDMAEMU_SANITIZER_RUNTIME:-} == *libtsan* ]]; then
    RSPRELOAD_STEPS=no
    echo "not run under ThreadSanitizer: the two librspreload.so steps (its interposers and TSan's collide)"
fi

if [[ ${RSPRELOAD_STEPS:-yes} == yes ]]; then
step "a plain TCP echo pair under librspreload.so ($RSPRELOAD)"
# LD_PRELOAD is added to, not replaced: rdmaemu run may preload its own (ASan builds).
preloaded() { echo "export LD_PRELOAD=\${LD_PRELOAD:+\$LD_PRELOAD:}$RSPRELOAD; exec \"\$@\""; }
emu_cm_pair_ok rs_echo 7500 bash -c "$(preloaded)" rs_echo "$RS_ECHO" -s 7500 -- \
    bash -c "$(preloaded)" rs_echo "$RS_ECHO" -c "$A1" 7500 3000000
grep -q "echoed 3000000 bytes ok, EOF seen" "$EMU_WORK/rs_echo.client" ||
    fail "rs_echo: $(cat "$EMU_WORK/rs_echo.client" "$EMU_WORK/rs_echo.client.err")"
grep -q "server echoed 3000000 bytes, then EOF" "$EMU_WORK/rs_echo.server" ||
    fail "rs_echo server: $(cat "$EMU_WORK/rs_echo.server" "$EMU_WORK/rs_echo.server.err")"
# emu_cm_pair started the client only once host 1 had a CM listener on 7500: rsockets, not TCP.
ok "rs_echo: 3000000 bytes echoed over rsockets through librspreload.so"
fi

step "udpong: datagram rsockets, 10000 datagrams of 1000 bytes, each way of waiting"
# udpong's server serves until killed. (Its echo tests resend after 1 ms and can chase stale
# answers for ever on a loaded machine, whatever the transport: ds_echo below echoes instead.)
"$RDMAEMU" run --host 1 -- udpong -b "$A1" -p 7610 >"$EMU_WORK/udpong.server" 2>&1 &
upid=$!
emu_bg_register "$upid"
sleep 0.5
for mode in n b a; do
    timeout 60 "$RDMAEMU" run --host 2 -- udpong -s "$A1" -p 7610 -S 1000 -C 10000 -T "$mode" \
        >"$EMU_WORK/udpong.$mode" 2>&1 || fail "udpong -T $mode exited $?: $(cat "$EMU_WORK/udpong.$mode")"
    row=$(grep -E '^custom +1000 ' "$EMU_WORK/udpong.$mode") ||
        fail "udpong -T $mode: no result row: $(cat "$EMU_WORK/udpong.$mode")"
    echo "udpong -T $mode: $row"
done
kill "$upid" 2>/dev/null || true
wait "$upid" 2>/dev/null || true
ok "udpong: non-blocking, blocking and rpoll-driven runs"

if [[ ${RSPRELOAD_STEPS:-yes} == yes ]]; then
step "a plain UDP echo pair under librspreload.so: datagram rsockets"
emu_status >/dev/null
rx_before=$(emu_json "host(1)['hw_counters']['rcvd_pkts']")
"$RDMAEMU" run --host 1 -- bash -c "$(preloaded)" ds_echo "$DS_ECHO" -s 7620 \
    >"$EMU_WORK/ds_echo.server" 2>&1 &
dpid=$!
emu_bg_register "$dpid"
wait_for_file "$EMU_WORK/ds_echo.server" 20 "$dpid" && grep -q "bound to" "$EMU_WORK/ds_echo.server" ||
    fail "ds_echo server did not bind: $(cat "$EMU_WORK/ds_echo.server")"
timeout 120 "$RDMAEMU" run --host 2 -- bash -c "$(preloaded)" ds_echo "$DS_ECHO" -c "$A1" 7620 2000 \
    >"$EMU_WORK/ds_echo.client" 2>&1 || fail "ds_echo client exited $?: $(cat "$EMU_WORK/ds_echo.client")"
timeout 20 tail --pid="$dpid" -f /dev/null || fail "ds_echo server still runs after the client's bye"
wait "$dpid" || fail "ds_echo server exited $?: $(cat "$EMU_WORK/ds_echo.server")"
grep -q "echoed 2000 datagrams ok" "$EMU_WORK/ds_echo.client" ||
    fail "ds_echo: $(cat "$EMU_WORK/ds_echo.client")"
grep -q "bound to $A1:7620" "$EMU_WORK/ds_echo.server" ||
    fail "ds_echo server not bound to host 1's address: $(cat "$EMU_WORK/ds_echo.server")"
emu_status >/dev/null
rx_after=$(emu_json "host(1)['hw_counters']['rcvd_pkts']")
((rx_after - rx_before >= 1990)) ||
    fail "host 1's NIC received $((rx_after - rx_before)) packets for 2000 datagrams: not over UD"
ok "ds_echo: $(grep -o 'echoed.*' "$EMU_WORK/ds_echo.client"); host 1's NIC took $((rx_after - rx_before)) packets"
fi

step "nothing left behind"
for h in 1 2; do
    left=
    for _ in $(seq 50); do
        emu_status >/dev/null
        left=$(emu_json "[s for s in host($h)['sessions'] if s.get('kind') == 'cm']")
        [[ $left == "[]" ]] && break
        sleep 0.1
    done
    [[ $left == "[]" ]] || fail "host $h still has CM sessions: $left"
done
conns=$(emu_json "host(1)['cm']['cm_connections']")
echo "host 1: $conns CM connections"
ok "no CM session left"
