# over_limit.sh, sourced by the golden tests: over_limit PROFD FILE succeeds for a
# gzip'd file that inflates past profd's limit on a profile's size (256 MiB;
# testdata's edge/gzip-bomb.pb.gz inflates to 320 MiB, as gzip -l reads from its
# trailer) and that profd refuses for that reason. go tool pprof refuses such a
# file too, but only after seconds of inflating it; pprof_golden.sh's validity
# mode and parity.sh check that both refuse it, and the other golden checks,
# which compare what both tools make of the files they read, leave it out.
over_limit() { # profd file
	case $2 in *.gz) ;; *) return 1 ;; esac
	local n
	n=$(gzip -l "$2" 2>/dev/null | awk 'NR == 2 {print $2}')
	[ -n "$n" ] && [ "$n" -gt 268435456 ] || return 1
	"$1" pprof validate "$2" 2>&1 | grep -q 'exceeds the limit of 268435456 bytes'
}
