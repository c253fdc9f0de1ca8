/* test_pprof_names.c: unit tests of pkg/pprof's report names (names.c) and of
 * drop_frames/keep_frames pruning (nodes.c). The expected names are what go tool
 * pprof 1.19 prints for the same functions (tests/golden/names_golden.sh checks the
 * whole of testdata/names against it); here also the cases a profile cannot
 * carry to go tool pprof (NUL bytes) and the reports other than top. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "profd/pprof.h"
#include "profd/util.h"

struct name_case {
	const char *name, *sys;
	enum pd_pprof_names mode;
	const char *want;
};

#define D PD_PPROF_NAMES_DEFAULT
#define T PD_PPROF_NAMES_TEMPLATES
#define F PD_PPROF_NAMES_FULL
#define N PD_PPROF_NAMES_DEMANGLE_NONE
#define R PD_PPROF_NAMES_RAW

static const struct name_case cases[] = {
    /* C++ system names (g++ -O2), no name */
    {"", "_ZL6clonedii.constprop.0", D, "cloned"},
    {"", "_ZL6clonedii.constprop.0", F, "cloned(int, int)"},
    {"", "_ZL6clonedii.constprop.0", N, "cloned(int, int) [clone .constprop.0]"},
    {"", "_ZN12_GLOBAL__N_16hiddenEi", D, "(anonymous namespace)::hidden"},
    {"", "_ZN2nslsERSoRKNS_3StrE", D, "ns::operator<<"},
    {"", "_ZNK2ns3BoxIiE4convIlEET_v.isra.0", D, "ns::Box::conv"},
    {"", "_ZNK2ns3BoxIiE4convIlEET_v.isra.0", T, "ns::Box<int>::conv<long>"},
    {"", "_ZNK2ns3BoxIiE4convIlEET_v.isra.0", F, "long ns::Box<int>::conv<long>() const"},
    {"", "_ZNSt17_Function_handlerIFiiEZ4mainEUliE_E9_M_invokeERKSt9_Any_dataOi", D,
     "std::_Function_handler::_M_invoke"},
    {"_ZZ4mainENKUliE_clEi", "_ZZ4mainENKUliE_clEi", D, "main::{lambda(int)#1}::operator()"},
    {"_ZZN2ns3runEvENKUlRKSt6vectorIiSaIiEEE0_clES4_",
     "_ZZN2ns3runEvENKUlRKSt6vectorIiSaIiEEE0_clES4_", D,
     "ns::run()::{lambda(std::vector const&)#2}::operator()"},
    {"_ZNK2ns3BoxIiEltERKS1_", "_ZNK2ns3BoxIiEltERKS1_", D, "ns::Box::operator<"},
    {"_ZN2ns3BoxIiEaSERKS1_", "_ZN2ns3BoxIiEaSERKS1_", D, "ns::Box::operator="},
    {"_ZNK2ns3BoxIiEclEv", "_ZNK2ns3BoxIiEclEv", D, "ns::Box::operator()"},
    {"", "_ZN3fooE", D, "foo"},
    {"", "_Znot_really", D, "_Znot_really"},
    /* names a tool demangled already */
    {"std::vector<int, std::allocator<int> >::push_back(int const&)",
     "std::vector<int, std::allocator<int> >::push_back(int const&)", D, "std::vector::push_back"},
    {"(anonymous namespace)::hidden(int)", "(anonymous namespace)::hidden(int)", D, "::hidden"},
    {"main::{lambda(int)#1}::operator()(int) const", "main::{lambda(int)#1}::operator()(int) const",
     D, "main::{lambda#1}::operator const"},
    {"main::{lambda(int)#1}::operator()(int) const", "main::{lambda(int)#1}::operator()(int) const",
     F, "main::{lambda(int)#1}::operator()(int) const"},
    {"<alloc::vec::Vec<T,A> as core::fmt::Debug>::fmt",
     "<alloc::vec::Vec<T,A> as core::fmt::Debug>::fmt", D, "::fmt"},
    {"a::b(int))c<d>", "a::b(int))c<d>", D, "a::b)c"},
    {"x::y<int", "x::y<int", D, "x::y<int"},
    /* a name beside a different system name is the name, but for the forcing modes */
    {"ns::twice<int>(int)", "_ZN2ns5twiceIiEET_S1_", D, "ns::twice<int>(int)"},
    {"ns::twice<int>(int)", "_ZN2ns5twiceIiEET_S1_", T, "ns::twice<int>"},
    {"ns::twice<int>(int)", "_ZN2ns5twiceIiEET_S1_", F, "int ns::twice<int>(int)"},
    {"only_a_name(int)", "", F, "only_a_name(int)"},
    /* Rust: legacy and v0, shown whole */
    {"", "_ZN1r7generic17h4c870fae4cae811fE", D, "r::generic"},
    {"", "_ZN3std2rt10lang_start28_$u7b$$u7b$closure$u7d$$u7d$17ha86af84d9cc65291E", D,
     "std::rt::lang_start::{{closure}}"},
    {"", "_RINvCs6GmmlP4bgsG_1r7genericINtNtCslNYArtu3iFV_5alloc3vec3VechEEB2_", D,
     "r::generic::<alloc::vec::Vec<u8>>"},
    /* Go and Java names stay */
    {"main.(*List[...]).Push", "main.(*List[...]).Push", D, "main.(*List[...]).Push"},
    {"main.Map[...].func1", "main.Map[...].func1", D, "main.Map[...].func1"},
    {"example.com/m/v2/pkg.(*T).M", "example.com/m/v2/pkg.(*T).M", D,
     "example.com/m/v2/pkg.(*T).M"},
    {"java.util.HashMap.<init>", "java.util.HashMap.<init>", D, "java.util.HashMap.<init>"},
    /* none: as stored */
    {"", "_ZN2ns5twiceIdEET_S1_", R, ""},
    {"_ZN2ns5twiceIdEET_S1_", "_ZN2ns5twiceIdEET_S1_", R, "_ZN2ns5twiceIdEET_S1_"},
    {"", "", D, ""},
};

static void test_report_names(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const struct name_case *c = &cases[i];
		size_t len = 99;
		char *got = pd_pprof_report_name(c->name, strlen(c->name), c->sys, strlen(c->sys),
		                                 c->mode, &len);
		assert_non_null(got);
		if (strcmp(got, c->want) != 0 || len != strlen(c->want))
			fail_msg("case %zu (%s | %s, %s): got \"%s\" (%zu bytes), want \"%s\"", i,
			         c->name, c->sys, pd_pprof_names_string(c->mode), got, len,
			         c->want);
		free(got);
	}
}

/* A name with NUL bytes is kept whole, and never handed to the demangler. */
static void test_nul_bytes(void **state)
{
	(void)state;
	static const char name[] = "a\0b<c>::d(e)";
	size_t len = 0;
	char *got = pd_pprof_report_name("", 0, name, sizeof(name) - 1, D, &len);
	assert_non_null(got);
	/* simplified as pprof would: the bytes after the NUL count too */
	assert_int_equal(len, 6);
	assert_memory_equal(got, "a\0b::d", 6);
	free(got);
	static const char mangled[] = "_ZN3fooE\0x";
	got = pd_pprof_report_name(mangled, sizeof(mangled) - 1, mangled, sizeof(mangled) - 1, D,
	                           &len);
	assert_int_equal(len, sizeof(mangled) - 1);
	assert_memory_equal(got, mangled, len);
	free(got);
}

static void test_parse(void **state)
{
	(void)state;
	struct {
		const char *s;
		enum pd_pprof_names want;
	} ok[] = {{NULL, D},
	          {"", D},
	          {"none", R},
	          {"false", R},
	          {"true", D},
	          {"demangle=templates", T},
	          {"demangle=full", F},
	          {"demangle=none", N},
	          {"demangle=default", D},
	          {"none:demangle=full", R},
	          {"demangle=full:none", R},
	          {"demangle=none:demangle=templates", T}};
	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		enum pd_pprof_names m = R;
		struct pd_err err = {0};
		assert_int_equal(pd_pprof_names_parse(ok[i].s, &m, &err), 0);
		assert_int_equal(m, ok[i].want);
		if (ok[i].s && strchr(ok[i].s, '=') && !strchr(ok[i].s, ':'))
			assert_string_equal(pd_pprof_names_string(m), ok[i].s);
	}
	const char *bad[] = {
	    "local", "demangle=", "demangle=yes", "none:x",
	    "demangle=full:demangle=full:demangle=full:demangle=full:demangle=full"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		enum pd_pprof_names m;
		struct pd_err err = {0};
		assert_int_equal(pd_pprof_names_parse(bad[i], &m, &err), PD_EINVAL);
		assert_non_null(strstr(err.msg, "symbolize"));
	}
	enum pd_pprof_names m;
	struct pd_err err = {0};
	assert_int_equal(pd_pprof_names_parse("demangle=yes", &m, &err), PD_EINVAL);
	assert_non_null(strstr(err.msg, "\"demangle=yes\""));
}

static struct pd_pprof_profile *read_names(const char *file)
{
	char path[512];
	snprintf(path, sizeof(path), "%s/names/%s", PD_TESTDATA, file);
	struct pd_pprof_profile *p = NULL;
	struct pd_err err = {0};
	if (pd_pprof_read_file(&p, path, NULL, &err))
		fail_msg("%s", err.msg);
	return p;
}

static const struct pd_pprof_top_row *row(const struct pd_pprof_top *t, const char *name)
{
	for (size_t i = 0; i < t->nrows; i++)
		if (strcmp(t->rows[i].name, name) == 0)
			return &t->rows[i];
	return NULL;
}

static int flame_has(const struct pd_pprof_flame_node *n, const char *name)
{
	if (strcmp(n->name, name) == 0)
		return 1;
	for (size_t i = 0; i < n->nchildren; i++)
		if (flame_has(&n->children[i], name))
			return 1;
	return 0;
}

/* drop_frames.pb.gz: go tool pprof -top's rows (its flat and cum), and the flame
 * graph and call graph pruned the same way. */
static void test_drop_frames(void **state)
{
	(void)state;
	struct pd_pprof_profile *p = read_names("drop_frames.pb.gz");
	struct pd_pprof_top *t = NULL;
	struct pd_err err = {0};
	assert_int_equal(pd_pprof_top(p, 0, &t, &err), 0);
	struct {
		const char *name;
		int64_t flat, cum;
	} want[] = {{"main.work", 1200, 2300}, {"tc_malloc_internal", 1100, 1100},
	            {"main.main", 800, 3100},  {"std::vector::reserve", 400, 400},
	            {"main.leaf", 100, 100},   {"malloc", 0, 500},
	            {"malloc_keep", 0, 600}};
	assert_int_equal(t->nrows, sizeof(want) / sizeof(want[0]));
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		const struct pd_pprof_top_row *r = row(t, want[i].name);
		if (!r)
			fail_msg("no row %s", want[i].name);
		assert_int_equal(r->flat, want[i].flat);
		assert_int_equal(r->cum, want[i].cum);
	}
	pd_pprof_top_destroy(t);

	struct pd_pprof_flame *f = NULL;
	assert_int_equal(pd_pprof_flame(p, 0, &f, &err), 0);
	assert_false(flame_has(&f->root, "operator new(unsigned long)"));
	assert_true(flame_has(&f->root, "malloc_keep"));
	assert_int_equal(f->root.total, 3600);
	pd_pprof_flame_destroy(f);

	struct pd_pprof_graph *g = NULL;
	struct pd_pprof_graph_opts go = {.nodecount = 0, .nodefraction = 0, .edgefraction = 0};
	assert_int_equal(pd_pprof_graph(p, 0, &go, &g, &err), 0);
	struct pd_buf b;
	pd_buf_init(&b, 0);
	assert_int_equal(pd_pprof_graph_dot(g, "t", NULL, 0, &b), 0);
	assert_int_equal(pd_buf_append(&b, "", 1), 0);
	assert_null(strstr((const char *)b.data, "operator new"));
	assert_non_null(strstr((const char *)b.data, "main.work"));
	pd_buf_fini(&b);
	pd_pprof_graph_destroy(g);

	/* raw names: the same pruning, on the names as stored */
	pd_pprof_set_names(p, PD_PPROF_NAMES_RAW);
	assert_int_equal(pd_pprof_top(p, 0, &t, &err), 0);
	assert_non_null(row(t, "std::vector<int>::reserve(unsigned long)"));
	assert_null(row(t, "operator new(unsigned long)"));
	pd_pprof_top_destroy(t);
	pd_pprof_destroy(p);

	/* a drop_frames that does not compile prunes nothing, as in pprof */
	p = read_names("bad_regex.pb.gz");
	assert_int_equal(pd_pprof_top(p, 0, &t, &err), 0);
	assert_non_null(row(t, "operator new(unsigned long)"));
	assert_int_equal(row(t, "tc_malloc_internal")->flat, 2000);
	pd_pprof_top_destroy(t);
	pd_pprof_destroy(p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_report_names),
	    cmocka_unit_test(test_nul_bytes),
	    cmocka_unit_test(test_parse),
	    cmocka_unit_test(test_drop_frames),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
