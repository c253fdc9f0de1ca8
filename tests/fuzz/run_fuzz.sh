#!/usr/bin/env bash
# run_fuzz.sh: what the fuzz ctests run. First replays the regression inputs in
# CRASH_DIR that belong to this target (each must now pass): those named
# `<target>-*`, where FUZZER is `fuzz_<target>`. Then fuzzes for SECONDS from a
# fresh copy of the seed corpora made under WORK_DIR, so no source folder is ever
# written. Inputs the fuzzer finds go to WORK_DIR/corpus, crashes to
# WORK_DIR/artifacts/.
#
# PD_FUZZ_SEED_MAX (bytes, optional): seed files larger than this are left out
# (an input that takes seconds would spend the fuzzing time and near the limit).
#
# usage: run_fuzz.sh FUZZER SECONDS WORK_DIR CRASH_DIR SEED_DIR...
set -euo pipefail

if [ $# -lt 4 ]; then
	echo "usage: $0 FUZZER SECONDS WORK_DIR CRASH_DIR SEED_DIR..." >&2
	exit 2
fi
fuzzer=$1 seconds=$2 work=$3 crashes=$4
shift 4
name=$(basename "$fuzzer")
target=${name#fuzz_}
limits=(-timeout=10 -rss_limit_mb=2048)
# a stack for every sanitizer report, not just its summary line
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1}

# 1. regression inputs: this target's files (never a README); all are replayed,
# and any that fails again is listed, before the test fails without fuzzing
replayed=0
failed=()
if [ -d "$crashes" ]; then
	while IFS= read -r -d '' f; do
		case "$(basename "$f")" in
		README* | .*) continue ;;
		"$target"-*) ;;
		*) continue ;;
		esac
		replayed=$((replayed + 1))
		if ! "$fuzzer" "${limits[@]}" "$f" >"$work.replay.log" 2>&1; then
			grep -E 'runtime error|ERROR|BUG|SUMMARY|^    #[0-9] ' "$work.replay.log" | head -20 >&2
			failed+=("$f")
		fi
	done < <(find "$crashes" -type f -print0 | sort -z)
fi
rm -f "$work.replay.log"
echo "$name: replayed $replayed regression input(s) from $crashes/$target-*"
if [ ${#failed[@]} -gt 0 ]; then
	echo "$name: FAIL: ${#failed[@]} regression input(s) fail again:" >&2
	printf '  %s\n' "${failed[@]}" >&2
	echo "reproduce with: $fuzzer FILE" >&2
	exit 1
fi

# 2. fuzz from a copy of the seeds; each seed folder's files keep their names,
# prefixed with the folder's name so that two folders cannot collide
rm -rf "$work"
mkdir -p "$work/corpus" "$work/artifacts"
seeds=0
for d in "$@"; do
	[ -d "$d" ] || continue
	prefix=$(basename "$d")
	while IFS= read -r -d '' f; do
		case "$(basename "$f")" in README* | .*) continue ;; esac
		if [ -n "${PD_FUZZ_SEED_MAX:-}" ] && [ "$(stat -c %s "$f")" -gt "$PD_FUZZ_SEED_MAX" ]; then
			echo "$name: seed $f is over $PD_FUZZ_SEED_MAX bytes: left out"
			continue
		fi
		cp "$f" "$work/corpus/$prefix-$(basename "$f")"
		seeds=$((seeds + 1))
	done < <(find "$d" -type f -print0)
done
echo "$name: fuzzing for ${seconds}s from $seeds seed(s) in $work/corpus"

# libFuzzer runs every seed before its first mutation, whatever -max_total_time
# says; its "INITED" line marks the end of that replay, and the test asserts it
rc=0
"$fuzzer" "${limits[@]}" -max_total_time="$seconds" -print_final_stats=1 \
	-artifact_prefix="$work/artifacts/" "$work/corpus" 2>&1 | tee "$work/fuzz.log" >&2 ||
	rc=$?
if [ $rc -eq 0 ] && ! grep -qE '^#[0-9]+[[:space:]]+INITED ' "$work/fuzz.log"; then
	echo "$name: FAIL: the seed corpus was not replayed to its end (no INITED line)" >&2
	exit 1
fi
if [ $rc -ne 0 ]; then
	echo "$name: FAIL (exit $rc); the failing input(s):" >&2
	ls -l "$work/artifacts/" >&2
	echo "reproduce with: $fuzzer $work/artifacts/<file>; keep the input as a" \
		"regression test in testdata/fuzz/crashes/" >&2
	exit 1
fi
echo "$name: ok"
