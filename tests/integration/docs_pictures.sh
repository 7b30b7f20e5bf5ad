#!/usr/bin/env bash
# docs_pictures: the pictures the lessons show are there, well-formed SVG, referenced from
# docs/learn; the captured exchanges were drawn by rdmaemu timeline from real runs
# (tools/docs-pictures.sh): packets, DMA, and on the lossy one the fault injector's drops.
#
# usage: docs_pictures.sh REPO
set -euo pipefail
repo=$1
fail() { echo "FAIL: $*" >&2; exit 1; }
for pic in qp-states send-recv lossy-pingpong; do
    f=$repo/docs/pictures/$pic.svg
    [[ -s $f ]] || fail "docs/pictures/$pic.svg is missing"
    xmllint --noout "$f" || fail "$pic.svg is not well-formed"
    grep -q "](../pictures/$pic.svg)" "$repo"/docs/learn/*.md || fail "no lesson shows $pic.svg"
done
count() { xmllint --xpath "count(//*[local-name()=\"g\"][@class=\"ev $2\"])" "$repo/docs/pictures/$1.svg"; }
grep -q 'class="rdmaemu-timeline"' "$repo/docs/pictures/send-recv.svg" || fail "send-recv.svg was not drawn by rdmaemu timeline"
(($(count send-recv packet) >= 1 && $(count send-recv dma) >= 1 && $(count send-recv ack) >= 1)) ||
    fail "send-recv.svg lacks its SEND, DMA or ACK"
(($(count lossy-pingpong dropped) >= 1)) || fail "lossy-pingpong.svg shows no drop"
grep -q 'dropped by the fault injector' "$repo/docs/pictures/lossy-pingpong.svg" || fail "the drops lack the capture's comment"
for s in RESET INIT RTR RTS ERR; do
    grep -q ">$s</text>" "$repo/docs/pictures/qp-states.svg" || fail "qp-states.svg lacks $s"
done
echo PASS
