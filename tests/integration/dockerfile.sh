#!/usr/bin/env bash
# dockerfile.sh: the Dockerfile's steps, run on this machine without Docker.
#
# 1. The Dockerfile is read into stages (continuation lines joined, comments dropped).
#    The runtime stage is the last one; the build stage is the one its
#    `COPY --from=NAME` names.
# 2. The build context is the project minus .dockerignore (plain paths and globs;
#    `!` exceptions are refused as not understood here).
# 3. The build stage runs in a temporary root: WORKDIR /src is TMP/root/src, COPY
#    copies from the context as Docker does (a directory's contents, a file to a file
#    or into a directory), ENV and ARG defaults are exported, and each RUN line runs
#    with sh -c in the current WORKDIR. Lines that install packages (apt-get, or
#    scripts/deps.sh which calls it) run only as root; otherwise they are skipped
#    with a message.
# 4. The runtime stage: every COPY source exists (in the build stage's root or in the
#    context); the binary runs --version; the configuration copied in passes
#    `profd check config`; every shared library the binary links (ldd), every library
#    the sources dlopen (and libgcc_s.so.1 when they call backtrace(), which loads
#    it) is provided (dpkg -S on this machine) by a package the
#    runtime stage's apt-get install names (libc6 comes with every Debian image); it
#    runs as a user other than root, has VOLUME /data and EXPOSE 10902, and its CMD
#    reads the copied configuration.
#
#   dockerfile.sh PROJECT_ROOT
set -euo pipefail

src=$(cd "$1" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
note() { echo "dockerfile: $*"; }
dockerfile=$src/Dockerfile
[ -f "$dockerfile" ] || fail "no Dockerfile in $src"

# ---- 1. instructions, one a line: "<stage index> <KEYWORD> <arguments>" ----------
awk '
	/^[ \t]*#/ { next }                   # comments (also inside continuations)
	{
		line = $0
		cont = sub(/\\[ \t]*$/, "", line)
		buf = buf line
		if (cont) next
		if (buf ~ /^[ \t]*$/) { buf = ""; next }
		sub(/^[ \t]+/, "", buf)
		print buf
		buf = ""
	}
	END { if (buf != "") print buf }
' "$dockerfile" >"$tmp/instructions"

nstages=0
names=()
: >"$tmp/staged"
while IFS= read -r line; do
	kw=${line%%[ 	]*}
	kw=${kw^^}
	args=${line#"${line%%[ 	]*}"}
	args=${args#"${args%%[! 	]*}"}
	if [ "$kw" = FROM ]; then
		nstages=$((nstages + 1))
		name=$(awk '{ for (i = 1; i < NF; i++) if (toupper($i) == "AS") print $(i + 1) }' <<<"$args")
		names+=("${name:-$((nstages - 1))}")
	fi
	[ "$nstages" -gt 0 ] || fail "an instruction before the first FROM: $line"
	printf '%s\t%s\t%s\n' "$((nstages - 1))" "$kw" "$args" >>"$tmp/staged"
done <"$tmp/instructions"
[ "$nstages" -ge 2 ] || fail "the Dockerfile has $nstages stage(s); a build stage and a runtime stage are wanted"
runtime=$((nstages - 1))
instr() { # stage keyword: the arguments of each such instruction, one a line
	awk -F '\t' -v s="$1" -v k="$2" '$1 == s && $2 == k { print $3 }' "$tmp/staged"
}
from_name=$(instr "$runtime" COPY | sed -n 's/.*--from=\([^ ]*\).*/\1/p' | sort -u)
[ "$(wc -w <<<"$from_name")" = 1 ] || fail "the runtime stage copies from '$from_name'; one build stage is wanted"
build=
for i in "${!names[@]}"; do [ "${names[$i]}" = "$from_name" ] && build=$i; done
[ -n "$build" ] || fail "no stage named $from_name"
note "stages: ${names[*]}; build stage '${names[$build]}', runtime stage $runtime ($(instr "$runtime" FROM))"

# ---- 2. the build context -------------------------------------------------------
excludes=()
if [ -f "$src/.dockerignore" ]; then
	while IFS= read -r pat; do
		pat=${pat%%#*}
		pat=$(sed 's/^[ \t]*//; s/[ \t]*$//' <<<"$pat")
		[ -n "$pat" ] || continue
		case "$pat" in !*) fail ".dockerignore: exceptions ($pat) are not understood by this test" ;; esac
		pat=${pat#/}
		pat=${pat%/}
		excludes+=("--exclude=./$pat")
	done <"$src/.dockerignore"
fi
mkdir -p "$tmp/context" "$tmp/root"
# the build stage's compilations through make test's ccache, when there is one
# shellcheck source=../support/ccache.sh
. "$(dirname "$0")/../support/ccache.sh"
pd_ccache "$tmp/root"
tar -C "$src" --anchored ${excludes[@]+"${excludes[@]}"} -cf - . | tar -C "$tmp/context" -xf -
for d in .git build data; do
	[ ! -e "$tmp/context/$d" ] || fail ".dockerignore lets $d/ into the build context"
done
note "context: $(du -sh "$tmp/context" | cut -f1) after .dockerignore"

# copy SRC... DEST as Docker's COPY does; $1: where sources are, $2: the WORKDIR
docker_copy() {
	local from=$1 wd=$2
	shift 2
	local -a words=()
	local w
	for w in "$@"; do case "$w" in --*) ;; *) words+=("$w") ;; esac; done
	[ ${#words[@]} -ge 2 ] || fail "COPY needs a source and a destination: $*"
	local dest=${words[-1]}
	unset 'words[-1]'
	case "$dest" in /*) ;; *) dest=$wd/$dest ;; esac
	local to=$tmp/root$dest s
	for s in "${words[@]}"; do
		local path=$from/${s#/}
		[ -e "$path" ] || fail "COPY source $s does not exist (in ${from#"$tmp/"})"
		if [ -d "$path" ]; then
			mkdir -p "$to"
			cp -a "$path/." "$to/"
		elif [ "${dest: -1}" = / ] || [ -d "$to" ] || [ ${#words[@]} -gt 1 ]; then
			mkdir -p "$to"
			cp -a "$path" "$to/"
		else
			mkdir -p "$(dirname "$to")"
			cp -a "$path" "$to"
		fi
	done
}

# ---- 3. the build stage ---------------------------------------------------------
wd=/
start=$(date +%s)
while IFS=$'\t' read -r stage kw args; do
	[ "$stage" = "$build" ] || continue
	case "$kw" in
	FROM | LABEL | EXPOSE | VOLUME | USER | CMD | ENTRYPOINT | SHELL | STOPSIGNAL | HEALTHCHECK) ;;
	WORKDIR)
		case "$args" in /*) wd=$args ;; *) wd=$wd/$args ;; esac
		mkdir -p "$tmp/root$wd"
		;;
	ENV | ARG)
		if [[ "$args" == *=* ]]; then
			for kv in $args; do export "${kv%%=*}=$(eval "echo ${kv#*=}")"; done
		elif [ "$kw" = ENV ]; then
			export "${args%% *}=${args#* }"
		fi
		;;
	COPY | ADD)
		[[ "$args" != *--from=* ]] || fail "the build stage copies from another stage: $args"
		read -r -a words <<<"$args"
		docker_copy "$tmp/context" "$wd" "${words[@]}"
		;;
	RUN)
		case "$args" in \[*) fail "RUN in exec form is not run by this test: $args" ;; esac
		case "$args" in /*) fail "a RUN line starts with an absolute path; keep it relative to WORKDIR: $args" ;; esac
		if grep -q 'apt-get\|deps\.sh' <<<"$args" && [ "$(id -u)" != 0 ]; then
			note "skipped (not root): RUN $args"
			continue
		fi
		note "RUN $args"
		(cd "$tmp/root$wd" && sh -c "$args") || fail "RUN failed: $args"
		;;
	*) fail "the build stage has an instruction this test does not know: $kw $args" ;;
	esac
done <"$tmp/staged"
note "build stage done in $(($(date +%s) - start)) s"

# ---- 4. the runtime stage -------------------------------------------------------
bin=
config=
while read -r args; do
	read -r -a words <<<"$args"
	from=$tmp/context
	for w in "${words[@]}"; do case "$w" in --from=*) from=$tmp/root ;; esac; done
	srcs=()
	for w in "${words[@]}"; do case "$w" in --*) ;; *) srcs+=("$w") ;; esac; done
	dest=${srcs[-1]}
	unset 'srcs[-1]'
	for s in "${srcs[@]}"; do
		[ -e "$from/${s#/}" ] || fail "runtime COPY source $s does not exist (${from#"$tmp/"})"
		case "$s" in */profd) bin=$from/${s#/}; bin_dest=$dest ;; *.yml | *.yaml) config=$from/${s#/}; config_dest=$dest ;; esac
	done
done < <(instr "$runtime" COPY)
[ -n "$bin" ] || fail "the runtime stage copies no profd binary"
"$bin" --version >"$tmp/version" || fail "the built binary does not run --version"
note "binary: $(cat "$tmp/version") -> $bin_dest"
if [ -n "$config" ]; then
	"$bin" check config "$config" >"$tmp/check" 2>&1 || fail "the configuration copied in fails check config: $(cat "$tmp/check")"
	cmd=$(instr "$runtime" CMD)
	grep -q -- "--config.file=$config_dest" <<<"$cmd" || fail "CMD does not read $config_dest: $cmd"
	note "configuration: ${config#"$tmp/context/"} -> $config_dest, valid, read by CMD"
fi

# the packages the runtime stage installs
pkgs=$(instr "$runtime" RUN | tr ';&|' '\n\n\n' | awk '
	{ for (i = 1; i <= NF; i++) {
		if ($i == "install" && i > 1 && $(i - 1) ~ /apt(-get)?$/) { on = 1; continue }
		if (on && $i !~ /^-/) print $i
	  }
	  on = 0 }' | sort -u)
[ -n "$pkgs" ] || fail "the runtime stage installs no packages"
note "runtime packages: $(tr '\n' ' ' <<<"$pkgs")"

owner() { # library path: the Debian package that has it on this machine
	local f=$1 c real
	real=$(readlink -f "$f")
	for c in "$f" "$real" "${f#/usr}" "/usr$f" "${real#/usr}" "/usr$real"; do
		if out=$(dpkg -S "$c" 2>/dev/null); then
			echo "${out%%:*}"
			return
		fi
	done
}
check_lib() { # what (for messages), path
	local pkg
	pkg=$(owner "$2")
	[ -n "$pkg" ] || fail "$1 ($2) belongs to no Debian package here"
	if [ "$pkg" != libc6 ] && ! grep -qx "$pkg" <<<"$pkgs"; then
		fail "$1 comes from package $pkg, which the runtime stage does not install"
	fi
	echo "  $1 -> $pkg"
}
ldd "$bin" >"$tmp/ldd" || fail "ldd $bin"
! grep -q 'not found' "$tmp/ldd" || fail "unresolved libraries: $(grep 'not found' "$tmp/ldd")"
while read -r name _ path _; do
	check_lib "$name" "$path"
done < <(grep '=> /' "$tmp/ldd")
interp=$(awk '$1 ~ /^\// { print $1 }' "$tmp/ldd")
[ -z "$interp" ] || check_lib "$(basename "$interp")" "$interp"
sonames=$(grep -rhoE 'dlopen\("[^"]+"' "$src/pkg" "$src/cmd" | sed 's/dlopen("//; s/"$//' | sort -u)
[ -n "$sonames" ] || fail "no dlopen'd libraries found in the sources (pkg/, cmd/)"
# glibc's backtrace() loads libgcc's unwinder with dlopen on its first call
if grep -rqE '\bbacktrace\(' "$src/pkg" "$src/cmd"; then
	sonames+=$'\n'libgcc_s.so.1
fi
for so in $sonames; do
	# awk reads all of ldconfig's output: exiting at the first match could kill
	# ldconfig with SIGPIPE, and pipefail would then end this script without a word
	path=$(ldconfig -p | awk -v l="$so" '$1 == l && p == "" { p = $NF } END { print p }')
	[ -n "$path" ] || fail "dlopen'd $so is not installed on this machine"
	check_lib "$so (dlopen)" "$path"
done
for p in $pkgs; do
	dpkg-query -W "$p" >/dev/null 2>&1 || apt-cache show "$p" >/dev/null 2>&1 ||
		fail "runtime package $p is neither installed here nor known to apt"
done

# how it runs
user=$(instr "$runtime" USER | tail -1)
[ -n "$user" ] && [ "$user" != root ] && [ "${user%%:*}" != 0 ] || fail "the image runs as root (USER '$user')"
instr "$runtime" VOLUME | grep -q '/data' || fail "no VOLUME /data"
instr "$runtime" EXPOSE | grep -qw 10902 || fail "no EXPOSE 10902"
instr "$runtime" ENTRYPOINT | grep -q "$bin_dest" || fail "ENTRYPOINT does not start $bin_dest"
note "runs as $user, VOLUME /data, EXPOSE 10902, ENTRYPOINT $(instr "$runtime" ENTRYPOINT)"
