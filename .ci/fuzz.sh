#!/usr/bin/env bash
# Builds the libFuzzer targets (Fuzz/fuzz-protocol, Fuzz/fuzz-keyfile) with
# AddressSanitizer and LeakSanitizer, and runs each for a bounded time on a
# copy of its seed corpus (Fuzz/corpus/<name>; the committed corpus is never
# grown). Fails on a crash, a sanitizer report (leaks included), a timeout
# or an out-of-memory; the reproducer is left in fuzz-artifacts/.
#
#   FUZZ_SECONDS=60 bash .ci/fuzz.sh            # both, 60 s each (the default)
#   FUZZ_SECONDS=10 bash .ci/fuzz.sh keyfile    # one of them
#   .build-fuzz/release/fuzz-protocol fuzz-artifacts/crash-…   # replay a crash
#
# How it builds (both sanitizer spellings are needed):
# - SwiftPM's `--sanitize fuzzer --sanitize address` compiles the fuzzer's
#   main.swift as a library and links libFuzzer's `main`, which calls the
#   target's `@_cdecl("LLVMFuzzerTestOneInput")`. (With only -Xswiftc, SwiftPM
#   renames the executable's entry point to `main` with --defsym, which
#   clashes with libFuzzer's: gold dies with an internal error.)
# - but it hands the compiler `-sanitize=fuzzer -sanitize=address` as two
#   flags, and the last wins: the code gets ASan and no coverage counters.
#   `-Xswiftc -sanitize=fuzzer,address` gives every module both.
# `-DFUZZING` switches the fuzzer code on (without it main.swift is a stub
# that prints how to build it, so the normal build is unaffected). Its own
# --scratch-path keeps the instrumented objects away from .build.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/opt/swift/usr/bin:$PATH"

seconds="${FUZZ_SECONDS:-60}"
scratch="${FUZZ_SCRATCH:-.build-fuzz}"
artifacts="$PWD/fuzz-artifacts"
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(protocol keyfile)

# ASan's reports name Swift functions when a symbolizer is at hand.
if [ -x /opt/swift/usr/bin/llvm-symbolizer ]; then
  export ASAN_SYMBOLIZER_PATH=/opt/swift/usr/bin/llvm-symbolizer
fi
# Leaks are errors (libFuzzer runs LeakSanitizer after any input whose
# mallocs and frees do not balance); so is any other ASan report.
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1}"
# On a crash, Swift's own backtracer copies the stack from a helper thread,
# which ASan reports as a stack-buffer-underflow that hides the real error;
# libFuzzer's handler prints the stack instead.
export SWIFT_BACKTRACE=enable=no

# Dictionaries: the words of each grammar, so mutations splice whole tokens.
dictionary() {
  local words
  # Words are libFuzzer dictionary text: \" and \\ are escapes, not shell.
  # shellcheck disable=SC1003
  case "$1" in
    protocol)
      words=('{' '}' '[' ']' ':' ',' '\"' '\\' '\\u' '\\ud83d\\ude00' 'true' 'false' 'null'
        '-0' '1e999999' '9223372036854775808' '\"jsonrpc\":\"2.0\"' '\"id\":' '\"method\":'
        '\"params\":' 'get' 'list' 'set' 'toggle' 'reset' 'watch' 'unwatch' 'history'
        'lock' 'unlock' 'disable' 'enable' 'reload' 'status' '\"key\":\"wifi\"' '\"checked\":'
        '\"ifRevision\":' '\"prefix\":' '\"keys\":[' '\"since\":' '\"watch\":' '\"limit\":'
        '\"before\":' '\"reason\":' '.*' '\x00' '\xef\xbb\xbf' '\x0d\x0a' '\x0a')
      ;;
    keyfile)
      words=('[' ']' '=' '#' ';' '\x0a' '\x0d\x0a' '\xff' '\xef\xbb\xbf' '[Daemon]' 'Label='
        'Description=' 'Default=' 'CheckedIcon=' 'UncheckedIcon=' 'ReadOnly=' 'Disabled='
        'Checked=' 'Reason=' 'Socket=' 'Database=' 'AdminGroup=' 'Writers=' 'SocketMode='
        'MaxFrameBytes=' 'MaxConnections=' 'MaxQueuedBytes=' 'MaxWatchesPerConnection='
        'MaxHistoryPage=' 'MaxNestingDepth=' 'HistoryRetention=' 'LogLevel=' 'yes' 'no' 'on'
        'off' 'true' 'false' '0777' '/run/switchd/switchd.sock' 'Turn on ' 'Enable ')
      ;;
  esac
  for word in "${words[@]}"; do printf '"%s"\n' "$word"; done
}

build() {
  swift build -c release --scratch-path "$scratch" --product "fuzz-$1" \
    -Xswiftc -DFUZZING -Xswiftc -sanitize=fuzzer,address --sanitize fuzzer --sanitize address 2>&1 |
    grep -v "Cannot export local symbol" || true
  # grep hides gold's noise about ASan's local symbols; the binary decides.
  [ -x "$bin/fuzz-$1" ] || { echo "fuzz-$1 did not build" >&2; exit 1; }
}

bin="$(swift build -c release --scratch-path "$scratch" --show-bin-path)"
mkdir -p "$artifacts"
failed=0
summary=()
for name in "${targets[@]}"; do
  printf '\n--> fuzz-%s: build\n' "$name"
  rm -f "$bin/fuzz-$name"
  build "$name"

  work="$(mktemp -d /tmp/switchd-fuzz-XXXXXX)"
  cp -R "Fuzz/corpus/$name" "$work/corpus"
  dictionary "$name" >"$work/dict"
  seeds="$(find "$work/corpus" -type f | wc -l)"
  printf -- '--> fuzz-%s: %s s on a copy of %s seed files (%s)\n' \
    "$name" "$seconds" "$seeds" "$work/corpus"
  set +e
  # The outer timeout catches a fuzzer that hangs outside an input.
  timeout --signal=KILL $((seconds + 120)) "$bin/fuzz-$name" "$work/corpus" \
    -max_total_time="$seconds" -rss_limit_mb=2048 -timeout=10 -detect_leaks=1 \
    -print_final_stats=1 -artifact_prefix="$artifacts/$name-" -dict="$work/dict" \
    >"$work/log" 2>&1
  status=$?
  set -e
  runs="$(sed -n 's/^stat::number_of_executed_units: *//p' "$work/log" | tail -1)"
  rate="$(sed -n 's/^stat::average_exec_per_sec: *//p' "$work/log" | tail -1)"
  added="$(sed -n 's/^stat::new_units_added: *//p' "$work/log" | tail -1)"
  rss="$(sed -n 's/^stat::peak_rss_mb: *//p' "$work/log" | tail -1)"
  line="fuzz-$name: ${runs:-?} executions in ${seconds} s, ${rate:-?} exec/s"
  line+=" (~$(( ${rate:-0} * 60 )) a minute), ${added:-?} new inputs, peak RSS ${rss:-?} MB"
  # A build without coverage counters "fuzzes" blind at a great rate: refuse it.
  if [ "$status" -eq 0 ] && ! grep -q 'inline 8-bit counters' "$work/log"; then
    echo "fuzz-$name has no coverage instrumentation" >&2
    status=1
  fi
  if [ "$status" -ne 0 ]; then
    failed=1
    line+=" -- FAILED (exit $status)"
    # The report: the sanitizer or libFuzzer error and its stack.
    grep -v '^"' "$work/log" | grep -E -A40 'ERROR|==[0-9]+==|Fatal error|invariant|deadly|timeout|out-of-memory' |
      head -80 || tail -40 "$work/log"
    find "$artifacts" -name "$name-*" -newer "$work/dict" | sed 's/^/    reproducer: /'
  fi
  echo "$line"
  summary+=("$line")
  rm -rf "$work"
done

printf '\n'
printf '%s\n' "${summary[@]}"
exit "$failed"
