#!/usr/bin/env bash
# rdmacm_ipv6: two emulated hosts on IPv6 addresses (issue 16), `rdmaemu up --address` on
# loopback: in a network namespace of the test's own (unshare -n), lo holds fd5e:<S>::1 and ::2
# (::1 is one address, and two hosts need two), added with nodad. rdma_cm programs connect by
# IPv6 address: rping 100 times 4096 bytes validated (-V) with every line checked, ucmatose
# (RC, 5 connections), udaddy (UD found by SIDR), rdma_server/rdma_client (rdma_getaddrinfo,
# rdma_create_ep), mckey joining ff0e::db8:<S> (the group is the packets' IPv6 destination, MAC
# 33:33:...); then the hosts' counters (no ICRC error, no packet from a wrong source, CM
# connections made), their capture (every packet IPv6, every ICRC right: icrc_check.py) and
# the refusals: an IPv4 address from an IPv6 host is EAFNOSUPPORT, said in the NIC's log.
# perftest -R is not run: perftest 4.5 resolves its server's name with AF_INET hints, so
# `ib_send_bw -R <IPv6 address>` fails in getaddrinfo, before any rdma_cm call.
# Needs root (unshare -n, ip addr); skips (77) without.
#
# usage: rdmacm_ipv6.sh RDMAEMU
set -euo pipefail
if [[ -z ${RDMAEMU_IPV6_NETNS:-} ]]; then
    [[ $(id -u) == 0 ]] || { echo "SKIP: needs root for a network namespace of its own"; exit 77; }
    command -v unshare >/dev/null || { echo "SKIP: no unshare (util-linux)"; exit 77; }
    command -v ip >/dev/null || { echo "SKIP: no ip (iproute2)"; exit 77; }
    exec env RDMAEMU_IPV6_NETNS=1 unshare -n bash "$0" "$@"
fi
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
ICRC_CHECK=$(dirname "${BASH_SOURCE[0]}")/icrc_check.py
emu_setup "$1"
for p in rping ucmatose udaddy rdma_server rdma_client mckey tshark; do
    command -v "$p" >/dev/null || fail "$p not installed (Debian packages rdmacm-utils, tshark)"
done

step "a namespace of our own: lo up, two IPv6 addresses on it"
S=$(printf '%x' $(($$ % 65000 + 1)))
A1=fd5e:$S::1
A2=fd5e:$S::2
ip link set lo up
ip -6 addr add "$A1/128" dev lo nodad
ip -6 addr add "$A2/128" dev lo nodad
ok "lo: $A1 $A2"

step "rdmaemu up --address $A1,$A2"
emu_up 2 --address "$A1,$A2" --pcap "$EMU_WORK/pcap"
grep -qE "^1 +$A1 +emu0 +$A1 " "$EMU_WORK/up.out" || fail "up's table does not show host 1 on $A1"
[[ $(emu_host 1 address) == "$A1" && $(emu_host 2 gid) == "$A2" ]] ||
    fail "status: host 1 is $(emu_host 1 address), host 2's GID $(emu_host 2 gid)"
"$RDMAEMU" status >"$EMU_WORK/status.txt"
grep -q "icrc: checked whole for every peer (IPv6" "$EMU_WORK/status.txt" ||
    fail "status does not say how an IPv6 host checks ICRCs: $(cat "$EMU_WORK/status.txt")"
ok "hosts on $A1 and $A2, GIDs the addresses"

step "rping -a $A1: 100 pings of 4096 bytes, validated"
emu_cm_pair_ok rping 7174 rping -s -a "$A1" -p 7174 -C 100 -S 4096 -V -v -- \
    rping -c -a "$A1" -p 7174 -C 100 -S 4096 -V -v
for f in rping.client rping.server; do
    n=$(grep -c 'ping data: rdma-ping-' "$EMU_WORK/$f" || true)
    ((n == 100)) || fail "$f: $n data lines, expected 100"
done
grep -q "data mismatch" "$EMU_WORK/rping.client" && fail "rping -V found a data mismatch"
ok "rping: 100 x 4096 bytes validated on both sides"

step "ucmatose (RC, 5 connections), udaddy (UD, SIDR), rdma_server/rdma_client"
emu_cm_pair_ok ucmatose 7471 ucmatose -c 5 -b "$A1" -- ucmatose -c 5 -s "$A1"
grep -qx "test complete" "$EMU_WORK/ucmatose.client" || fail "ucmatose: no 'test complete'"
emu_cm_pair_ok udaddy 7174 udaddy -b "$A1" -- udaddy -s "$A1"
grep -qx "test complete" "$EMU_WORK/udaddy.client" || fail "udaddy: no 'test complete'"
emu_cm_pair_ok rdma_client 7471 rdma_server -s "$A1" -- rdma_client -s "$A1"

step "mckey: 20 datagrams to the IPv6 group ff0e::db8:$S"
G=ff0e::db8:$S
"$RDMAEMU" run --host 1 -- stdbuf -oL mckey -m "$G" -b "$A1" -C 20 >"$EMU_WORK/mckey.recv" 2>&1 &
mpid=$!
emu_bg_register "$mpid"
for _ in $(seq 100); do grep -q "receiving data" "$EMU_WORK/mckey.recv" && break; sleep 0.1; done
grep -q "receiving data" "$EMU_WORK/mckey.recv" || fail "mckey receiver did not join: $(cat "$EMU_WORK/mckey.recv")"
timeout 60 "$RDMAEMU" run --host 2 -- mckey -m "$G" -b "$A2" -s -C 20 >"$EMU_WORK/mckey.send" 2>&1 ||
    fail "mckey sender exited $?: $(cat "$EMU_WORK/mckey.send")"
for _ in $(seq 50); do kill -0 "$mpid" 2>/dev/null || break; sleep 0.1; done
kill -0 "$mpid" 2>/dev/null && fail "mckey receiver still waits: $(cat "$EMU_WORK/mckey.recv")"
wait "$mpid" || fail "mckey receiver exited $?"
grep -qx "test complete" "$EMU_WORK/mckey.recv" || fail "mckey receiver: no 'test complete'"
grep -q "joined dgid: $G" "$EMU_WORK/mckey.send" || fail "mckey: not the group $G"
ok "mckey: 20 datagrams to $G received"

step "the hosts' counters: CM connections, no ICRC error, no foreign source"
emu_status >/dev/null
for h in 1 2; do
    read -r icrc wrong rx conns < <(emu_json "' '.join(str(x) for x in (host($h)['counters']['icrc_errors'], host($h)['counters']['wrong_source'], host($h)['counters']['rx_packets'], host($h)['cm']['cm_connections']))")
    ((icrc == 0)) || fail "host $h: icrc_errors=$icrc"
    ((wrong == 0)) || fail "host $h: wrong_source=$wrong"
    ((rx > 200)) || fail "host $h: only $rx packets received"
    ((conns >= 3)) || fail "host $h: cm_connections=$conns"
    ok "host $h: rx_packets=$rx cm_connections=$conns icrc_errors=0 wrong_source=0"
done

step "an IPv6 host resolves no IPv4 address, and says why"
if "$RDMAEMU" run --host 2 -- timeout 20 rping -c -a 127.0.0.1 -p 7175 -C 1 \
    >"$EMU_WORK/mixed.out" 2>&1; then
    fail "rping from an IPv6 host to 127.0.0.1 succeeded"
fi
grep -q "rdma_resolve_addr.*Address family not supported" "$EMU_WORK/mixed.out" ||
    fail "rping to 127.0.0.1: $(cat "$EMU_WORK/mixed.out")"
grep -q "cannot resolve 127.0.0.1: an IPv4 address, and this host ($A2) is IPv6" \
    "$RDMAEMU_RUNTIME_DIR/host2/nicsimd.log" || fail "host 2's log does not say why"
ok "rdma_resolve_addr: EAFNOSUPPORT; the log: cannot resolve 127.0.0.1: an IPv4 address ..."

step "the capture: every packet IPv6, every ICRC right (icrc_check.py)"
timeout 20 "$RDMAEMU" down >/dev/null # the captures complete
for h in 1 2; do
    f=$EMU_WORK/pcap/host$h.pcap
    python3 "$ICRC_CHECK" "$f" || fail "icrc_check.py: $f"
    v4=$(tshark -r "$f" -Y ip 2>/dev/null | wc -l)
    v6=$(tshark -r "$f" -Y 'ipv6 && infiniband' 2>/dev/null | wc -l)
    ((v4 == 0 && v6 > 200)) || fail "$f: $v4 IPv4 packets, $v6 IPv6 RoCE packets"
    ok "host$h.pcap: $v6 RoCE v2 packets over IPv6, none over IPv4"
done
# The group's packets: to the group's address and its MAC (RFC 2464: 33:33 and its last 4 bytes).
n=$(tshark -r "$EMU_WORK/pcap/host1.pcap" -Y "ipv6.dst == $G && eth.dst[0:2] == 33:33" 2>/dev/null | wc -l)
((n == 20)) || fail "host1.pcap: $n packets to $G with a 33:33 MAC, expected 20"
ok "host1.pcap: the 20 datagrams to $G, Ethernet 33:33:..."
