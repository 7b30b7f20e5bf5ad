#!/usr/bin/env bash
# netns_rig: emulated hosts on separate "machines" (issue 16). Two network namespaces the test
# creates, joined by a veth pair with 10.213.S.1/24 and 10.213.S.2/24 (addresses that exist only
# in those namespaces), one set of hosts in each (`rdmaemu up --hosts 1 --address A`, its own
# runtime dir), talking RoCE v2 over the veth as hosts on two machines would over a network.
# Unmodified ibv_rc_pingpong (--chk: the receiver checks the bytes) and ibv_ud_pingpong, each
# side as server and client, then ib_write_bw, ib_read_bw and ib_send_lat; under --drop 0.01 a
# pingpong whose server's NIC drops, each side once, and ib_send_bw with both NICs dropping. Every
# host's icrc_errors must stay 0 and its rx_packets must come from the other namespace. Then the
# same over IPv6: the veth's ends also hold fd13:<S>::1/64 and ::2 (nodad: no duplicate address
# detection to wait for), a set of one IPv6 host in each namespace (a host is of one IP version),
# ibv_rc_pingpong --chk and ibv_ud_pingpong with the hosts' IPv6 GIDs (-g 0), ib_write_bw both
# ways and ib_read_bw, every ICRC right in both captures, every captured packet IPv6. The
# programs' TCP side channels still go by IPv4: their servers listen on the first of
# getaddrinfo's passive answers, 0.0.0.0. The namespaces and the veth are removed at exit.
# Needs root (ip netns); skips (77) without.
#
# usage: netns_rig.sh RDMAEMU
set -euo pipefail
RDMAEMU=$1
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
[[ $(id -u) == 0 ]] || { echo "SKIP: needs root for ip netns"; exit 77; }
command -v ip >/dev/null || { echo "SKIP: no ip (iproute2)"; exit 77; }
for p in ibv_rc_pingpong ibv_ud_pingpong ib_write_bw ib_read_bw ib_send_bw ib_send_lat tshark; do
    command -v "$p" >/dev/null || fail "$p not installed (Debian ibverbs-utils, perftest)"
done

# Names and a subnet of our own: pid-based, so two runs side by side do not meet.
TAG=$(printf '%x' $$)
NS=(rdmaemu-rig-a-$TAG rdmaemu-rig-b-$TAG)
VETH=(rig${TAG}a rig${TAG}b)
S=$(($$ % 250 + 1))
ADDR=(10.213.$S.1 10.213.$S.2)
ADDR6=(fd13:$S::1 fd13:$S::2)
SHOW=("${ADDR[@]}") # the hosts' addresses, as the steps' lines name them
ICRC_CHECK=$(dirname "${BASH_SOURCE[0]}")/icrc_check.py
WORK=$(mktemp -d "${TMPDIR:-/tmp}/rdmaemu-rig.XXXXXX")
RUNTIME=("$WORK/a" "$WORK/b")
BG=()

cleanup() {
    local rc=$? i p
    set +e
    for p in "${BG[@]}"; do kill -KILL "$p" 2>/dev/null; done
    for i in 0 1; do
        if [[ -d ${RUNTIME[$i]} ]]; then
            ip netns exec "${NS[$i]}" env RDMAEMU_RUNTIME_DIR="${RUNTIME[$i]}" \
                timeout 20 "$RDMAEMU" down >/dev/null 2>&1
            if ((rc != 0)); then
                echo "==== last lines of ${RUNTIME[$i]}/host1/nicsimd.log" >&2
                tail -n 30 "${RUNTIME[$i]}/host1/nicsimd.log" >&2
            fi
        fi
        ip netns del "${NS[$i]}" 2>/dev/null # takes its end of the veth with it
    done
    rm -rf "$WORK"
    if ((rc == 0)); then echo "PASS"; else echo "FAILED (exit $rc)" >&2; fi
    exit "$rc"
}
trap cleanup EXIT

# ns_do I CMD...: CMD in namespace I with that side's runtime dir.
ns_do() {
    local i=$1
    shift
    ip netns exec "${NS[$i]}" env RDMAEMU_RUNTIME_DIR="${RUNTIME[$i]}" "$@"
}

step "two namespaces, a veth between them"
for i in 0 1; do ip netns add "${NS[$i]}"; done
ip link add "${VETH[0]}" netns "${NS[0]}" type veth peer name "${VETH[1]}" netns "${NS[1]}"
for i in 0 1; do
    ip -n "${NS[$i]}" link set lo up
    ip -n "${NS[$i]}" addr add "${ADDR[$i]}/24" dev "${VETH[$i]}"
    ip -n "${NS[$i]}" link set "${VETH[$i]}" up
    mkdir -m 700 "${RUNTIME[$i]}"
done
ok "${NS[0]} ${ADDR[0]} <-veth-> ${NS[1]} ${ADDR[1]}"

# up I [OPTIONS...]: one host on side I's address.
up() {
    local i=$1
    shift
    ns_do "$i" timeout 60 "$RDMAEMU" up --hosts 1 --address "${ADDR[$i]}" "$@" >"$WORK/up.$i" 2>&1 ||
        { cat "$WORK/up.$i"; fail "rdmaemu up --address ${ADDR[$i]} in ${NS[$i]}"; }
    grep -qE "^1 +${ADDR[$i]//./\\.} +emu0 +::ffff:${ADDR[$i]//./\\.} " "$WORK/up.$i" ||
        { cat "$WORK/up.$i"; fail "rdmaemu up's table does not show host 1 on ${ADDR[$i]}"; }
}
down() { ns_do "$1" timeout 20 "$RDMAEMU" down >/dev/null; }

# counter I NAME: host 1's wire counter NAME on side I.
counter() {
    ns_do "$1" "$RDMAEMU" status --json >"$WORK/status.$1"
    python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["hosts"][0]["counters"][sys.argv[2]])' \
        "$WORK/status.$1" "$2"
}

# pair LABEL SERVER_SIDE SECS CMD...: CMD on the server side, then CMD <server address> on the
# other; both must exit 0. Output in $WORK/LABEL.server|client.
pair() {
    local label=$1 s=$2 secs=$3
    shift 3
    local c=$((1 - s)) port=$((20000 + RANDOM % 20000))
    ns_do "$s" timeout -k 5 "$secs" "$RDMAEMU" run --host 1 -- "$@" -p "$port" >"$WORK/$label.server" 2>&1 &
    local spid=$!
    BG+=("$spid")
    local k
    for k in $(seq 100); do
        [[ -n $(ip netns exec "${NS[$s]}" ss -Hltn "sport = :$port") ]] && break
        kill -0 "$spid" 2>/dev/null || break
        sleep 0.1
    done
    local crc=0 src=0
    ns_do "$c" timeout -k 5 "$secs" "$RDMAEMU" run --host 1 -- "$@" -p "$port" "${ADDR[$s]}" \
        >"$WORK/$label.client" 2>&1 || crc=$?
    wait "$spid" || src=$?
    if ((crc != 0 || src != 0)); then
        [[ -n ${PAIR_SOFT:-} ]] && return 1
        tail -n 20 "$WORK/$label.server" "$WORK/$label.client" >&2
        fail "$label: $* (server in ${NS[$s]}, client in ${NS[$c]}): server exited $src, client $crc"
    fi
}

both_sides() {
    local what=$1
    shift
    local s
    for s in 0 1; do
        pair "$what.$s" "$s" 60 "$@"
        "$CHECK" "$what.$s" "$*"
        ok "server ${SHOW[$s]}, client ${SHOW[$((1 - s))]}: $*"
    done
}

iters_line() {
    local side
    for side in server client; do
        grep -qE '^[0-9]+ iters in [0-9.]+ seconds' "$WORK/$1.$side" ||
            { cat "$WORK/$1.$side"; fail "$2: $side printed no 'iters in' line"; }
    done
}
perftest_row() {
    [[ -n $(perftest_rows "$WORK/$1.client") ]] ||
        { cat "$WORK/$1.client"; fail "$2: the client printed no results row"; }
}

step "rdmaemu up --address refuses what it cannot bind, and says why"
# refused WHY-REGEX UP-OPTIONS...: `rdmaemu up` in namespace 0 fails and says WHY.
refused() {
    local why=$1
    shift
    if ns_do 0 timeout 60 "$RDMAEMU" up "$@" >"$WORK/refused" 2>&1; then
        ns_do 0 "$RDMAEMU" down >/dev/null 2>&1
        fail "rdmaemu up $* started hosts"
    fi
    grep -qE "$why" "$WORK/refused" || { cat "$WORK/refused"; fail "rdmaemu up $*: no '$why'"; }
    ok "rdmaemu up $*: $(head -1 "$WORK/refused")"
}
refused "not an address of this machine or network namespace" --hosts 1 --address "${ADDR[1]}"
refused "mixes IPv4 .* and IPv6" --hosts 2 --address "${ADDR[0]},fd00::1"
refused "link-local" --hosts 1 --address fe80::1
refused "one per host" --hosts 2 --address "${ADDR[0]}"
refused "is given twice" --hosts 2 --address "${ADDR[0]},${ADDR[0]}"
refused "exclude each other" --hosts 1 --address "${ADDR[0]}" --subnet 3

step "hosts on the namespaces' addresses"
up 0
up 1

step "ibv_rc_pingpong --chk (the receiver checks every byte), ibv_ud_pingpong"
CHECK=iters_line
for size in 1 4096 65536; do
    both_sides "rc.s$size" ibv_rc_pingpong -g 0 -n 50 -s "$size" --chk
done
both_sides ud ibv_ud_pingpong -g 0 -n 50 -s 1024

step "perftest across the veth"
CHECK=perftest_row
both_sides write_bw ib_write_bw -x 0 -n 200
pair read_bw 0 60 ib_read_bw -x 0 -n 200 && perftest_row read_bw ib_read_bw
ok "ib_read_bw -x 0 -n 200"
pair send_lat 1 60 ib_send_lat -x 0 -n 200 && perftest_row send_lat ib_send_lat
ok "ib_send_lat -x 0 -n 200"

step "counters: every packet came over the veth, none failed its ICRC"
for i in 0 1; do
    rx=$(counter "$i" rx_packets)
    icrc=$(counter "$i" icrc_errors)
    recovered=$(counter "$i" icrc_ipv4_id_recovered)
    ((rx > 1000)) || fail "${ADDR[$i]}: only $rx packets received"
    ((icrc == 0)) || fail "${ADDR[$i]}: $icrc ICRC errors"
    # Our hosts send IP ID 0: nothing to recover between them.
    ((recovered == 0)) || fail "${ADDR[$i]}: $recovered packets needed their IP ID recovered"
    ok "${ADDR[$i]}: rx_packets=$rx icrc_errors=0 icrc_ipv4_id_recovered=0"
done

# ibv_rc_pingpong's client exits as soon as its last receive completes, so a lost ACK for the
# server's last SEND can never be repaired: the client's QP is gone when the server sends it
# again, and the server ends in RETRY_EXC_ERR (on a lossy RoCE network too). So its client's NIC
# does not drop; ib_send_bw, whose two sides meet over TCP only after every completion, runs with
# both NICs dropping. The same holds the other way, less often: the server exits once its last
# SEND is acknowledged, and when its NIC dropped the ACK of the client's last SEND, the client
# resends to a QP that is gone (seen once in a fresh clone, 2026-12-06). That one case, the server
# done and the client out of retries, is run again with the next seed, twice at most.
step "a lossy wire: --drop 0.01 on the pingpong server's NIC, then on both"
drops=0
seed=3
lossy_up() {
    down 0
    down 1
    up 0 ${1:+--drop 0.01 --seed $seed}
    up 1 ${2:+--drop 0.01 --seed $((seed + 1))}
}
# lossy_server_up S: only namespace S's NIC drops.
lossy_server_up() { if (($1 == 0)); then lossy_up yes ""; else lossy_up "" yes; fi; }
lossy_drops() { drops=$((drops + $(counter 0 fault_drops) + $(counter 1 fault_drops))); }
# last_ack_lost LABEL: the server finished every iteration and the client ran out of retries.
last_ack_lost() {
    grep -qE '^[0-9]+ iters in' "$WORK/$1.server" &&
        grep -q 'transport retry counter exceeded' "$WORK/$1.client"
}
CHECK=iters_line
for s in 0 1; do
    for try in 1 2 3; do
        lossy_server_up "$s"
        soft=1
        ((try < 3)) || soft= # the last try fails the test
        PAIR_SOFT=$soft pair "lossy.$s" "$s" 60 ibv_rc_pingpong -g 0 -n 200 -s 65536 --chk && break
        last_ack_lost "lossy.$s" || {
            tail -n 20 "$WORK/lossy.$s.server" "$WORK/lossy.$s.client" >&2
            fail "lossy.$s: ibv_rc_pingpong -g 0 -n 200 -s 65536 --chk failed"
        }
        echo "note: lossy.$s: the ACK of the client's last SEND was dropped after the server" \
            "had finished (ibv_rc_pingpong's own race); again with the next seed"
        lossy_drops
        seed=$((seed + 10))
    done
    "$CHECK" "lossy.$s" "ibv_rc_pingpong -g 0 -n 200 -s 65536 --chk"
    lossy_drops
    ok "server ${ADDR[$s]} (dropping), client ${ADDR[$((1 - s))]}: ibv_rc_pingpong -g 0 -n 200 -s 65536 --chk"
done
lossy_up yes yes
pair "lossy.both" 0 60 ib_send_bw -x 0 -n 200 -s 65536 && perftest_row lossy.both ib_send_bw
lossy_drops
ok "both NICs dropping: ib_send_bw -x 0 -n 200 -s 65536"
((drops > 0)) || fail "--drop 0.01 dropped nothing"
ok "$drops packets dropped, the transport recovered them all"

step "IPv6: the veth's ends also hold ${ADDR6[0]} and ${ADDR6[1]}; one IPv6 host on each"
down 0
down 1
for i in 0 1; do
    ip -n "${NS[$i]}" -6 addr add "${ADDR6[$i]}/64" dev "${VETH[$i]}" nodad
done
up6() {
    local i=$1
    ns_do "$i" timeout 60 "$RDMAEMU" up --hosts 1 --address "${ADDR6[$i]}" --pcap "$WORK/pcap6.$i" \
        >"$WORK/up6.$i" 2>&1 || { cat "$WORK/up6.$i"; fail "rdmaemu up --address ${ADDR6[$i]}"; }
    grep -qE "^1 +${ADDR6[$i]} +emu0 +${ADDR6[$i]} " "$WORK/up6.$i" ||
        { cat "$WORK/up6.$i"; fail "rdmaemu up's table does not show host 1 on ${ADDR6[$i]}"; }
}
up6 0
up6 1
SHOW=("${ADDR6[@]}")
ok "hosts on ${ADDR6[0]} and ${ADDR6[1]}, GIDs the addresses"

# Both ends of a pingpong said they used the IPv6 GIDs (local and remote address lines).
ipv6_gids() {
    local side
    for side in server client; do
        grep -q "GID ${ADDR6[0]}\$" "$WORK/$1.$side" && grep -q "GID ${ADDR6[1]}\$" "$WORK/$1.$side" ||
            { cat "$WORK/$1.$side"; fail "$1: the $side did not use the IPv6 GIDs"; }
    done
}
CHECK=iters_line
for s in 0 1; do
    pair "rc6.$s" "$s" 60 ibv_rc_pingpong -g 0 -n 50 -s 65536 --chk
    iters_line "rc6.$s" "ibv_rc_pingpong over IPv6"
    ipv6_gids "rc6.$s"
    ok "server ${ADDR6[$s]}, client ${ADDR6[$((1 - s))]}: ibv_rc_pingpong -g 0 -n 50 -s 65536 --chk"
done
both_sides ud6 ibv_ud_pingpong -g 0 -n 50 -s 1024
CHECK=perftest_row
both_sides write_bw6 ib_write_bw -x 0 -n 200
pair read_bw6 0 60 ib_read_bw -x 0 -n 200 && perftest_row read_bw6 ib_read_bw
ok "ib_read_bw -x 0 -n 200 over IPv6"

step "IPv6 counters and captures: no ICRC error, every packet IPv6, every ICRC right"
for i in 0 1; do
    rx=$(counter "$i" rx_packets)
    icrc=$(counter "$i" icrc_errors)
    wrong=$(counter "$i" wrong_source)
    ((rx > 1000)) || fail "${ADDR6[$i]}: only $rx packets received"
    ((icrc == 0)) || fail "${ADDR6[$i]}: $icrc ICRC errors"
    ((wrong == 0)) || fail "${ADDR6[$i]}: $wrong packets from a wrong source"
    ok "${ADDR6[$i]}: rx_packets=$rx icrc_errors=0 wrong_source=0"
done
down 0
down 1
for i in 0 1; do
    f=$WORK/pcap6.$i/host1.pcap
    python3 "$ICRC_CHECK" "$f" >"$WORK/icrc6.$i" || { cat "$WORK/icrc6.$i"; fail "icrc_check.py: $f"; }
    v4=$(tshark -r "$f" -Y ip 2>/dev/null | wc -l)
    v6=$(tshark -r "$f" -Y "ipv6.src == ${ADDR6[$((1 - i))]} && infiniband" 2>/dev/null | wc -l)
    ((v4 == 0 && v6 > 1000)) || fail "$f: $v4 IPv4 packets, $v6 RoCE packets from ${ADDR6[$((1 - i))]}"
    ok "${ADDR6[$i]}'s capture: $v6 RoCE v2 packets over IPv6 from ${ADDR6[$((1 - i))]}, every ICRC right"
done
