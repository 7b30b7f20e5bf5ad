#!/usr/bin/env bash
# Fails when a tracked C or C++ file differs from what clang-format (.clang-format) makes of it;
# lists the files. Fix with: git ls-files '*.c' '*.cpp' '*.h' | xargs clang-format-14 -i
# One clang-format per 50 files, two at a time: one per file took minutes on 2 CPUs.
set -euo pipefail
cd "$(dirname "$0")/.."
mapfile -t files < <(git ls-files '*.c' '*.cpp' '*.h')
# A file that differs gets "FILE:LINE:COL: error: code should be clang-formatted" lines.
rc=0
said=$(printf '%s\0' "${files[@]}" |
  xargs -0 -n 50 -P 2 clang-format-14 --dry-run -Werror 2>&1 >/dev/null) || rc=$?
mapfile -t unformatted < <(sed -n 's/^\(.*\):[0-9]*:[0-9]*: error: code should be clang-formatted.*/\1/p' <<<"$said" | sort -u)
if ((${#unformatted[@]})); then
  echo "check-format: not as clang-format-14 formats them (clang-format-14 -i FILE):" >&2
  printf '  %s\n' "${unformatted[@]}" >&2
  exit 1
fi
if ((rc)); then
  printf 'check-format: clang-format-14 failed (exit %d):\n%s\n' "$rc" "$said" >&2
  exit 1
fi
echo "check-format: ${#files[@]} files as clang-format formats them"
