# Libraries loaded when first used (pkg/util/curl_dl.c, pkg/symbolize/debuginfod_dl.c):
# a profd command that neither scrapes nor asks a debuginfod server loads neither
# libcurl nor libdebuginfod (nor the libraries they pull in, which cost every
# process milliseconds at start), while the query API's symbolizer still finds
# debug files on debuginfod servers (unit_symbolize, integration_symbolize).
add_test(NAME unit_lazy_libs COMMAND sh -c [=[
set -e
profd=$1 profile=$2
needed=$(readelf -d "$profd" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p')
echo "$needed" | grep -q '^libc\.so' || { echo "readelf found no NEEDED entries: $needed"; exit 1; }
for l in libcurl libdebuginfod; do
	if echo "$needed" | grep "^$l"; then echo "profd links $l directly"; exit 1; fi
done
# what the dynamic loader opens for a command that reads a profile
LD_DEBUG=files "$profd" pprof top "$profile" >/dev/null 2>"${TMPDIR:-/tmp}/lazy_libs.$$" || {
	cat "${TMPDIR:-/tmp}/lazy_libs.$$"; rm -f "${TMPDIR:-/tmp}/lazy_libs.$$"; exit 1; }
opened=$(sed -n 's/.*file=\([^ ]*\) .*\(needed\|loaded\) by.*/\1/p' "${TMPDIR:-/tmp}/lazy_libs.$$" | sort -u)
rm -f "${TMPDIR:-/tmp}/lazy_libs.$$"
echo "$opened" | grep -q '^libc\.so' || { echo "LD_DEBUG listed no library"; exit 1; }
for l in libcurl libdebuginfod libgnutls libssh2 libldap; do
	if echo "$opened" | grep "^$l"; then echo "profd pprof top loaded $l"; exit 1; fi
done
echo "lazy libs: ok ($(echo "$opened" | wc -l) libraries loaded)"
]=] sh $<TARGET_FILE:profd> ${PD_TESTDATA}/profiles/goapp/heap.pb.gz)
set_tests_properties(unit_lazy_libs PROPERTIES LABELS unit TIMEOUT 60
  PASS_REGULAR_EXPRESSION "lazy libs: ok")
