# ccache.sh, sourced by the tests that build profd again in a fresh copy of the
# project (tests/integration/first_run.sh, dockerfile.sh). `make test` compiles its
# release build through ccache into PD_CCACHE_DIR (build/ccache) when ccache is
# installed (scripts/deps.sh --test installs it); `pd_ccache COPY` has the copy's
# build, configured by CMake from a new build folder, compile through the same
# cache, with paths under COPY taken relative to it (CCACHE_BASEDIR), so that the
# same sources with the same flags come from the cache instead of the compiler.
# The copy still configures, generates and links everything itself, and a source
# the release build did not compile the same way is compiled. Without
# PD_CCACHE_DIR (the test run by hand) or ccache, nothing changes.
pd_ccache() { # copy
	[ -n "${PD_CCACHE_DIR:-}" ] && command -v ccache >/dev/null 2>&1 || return 0
	export CCACHE_DIR=$PD_CCACHE_DIR CCACHE_BASEDIR=$1
	export CMAKE_C_COMPILER_LAUNCHER=ccache CMAKE_CXX_COMPILER_LAUNCHER=ccache
	echo "compiling through ccache ($CCACHE_DIR, base $1)"
}
