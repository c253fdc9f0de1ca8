/* jfr_meta.c: the JFR reader's metadata: a chunk's metadata event, whose tree of
 * elements declares each class (its id, its name, and its fields with their class,
 * constant pool and dimension), resolved into the reader's classes and fields; the
 * fields the converter reads are then bound to their roles by name and type, in
 * the event types it reads, the pools it keeps and the stack frame class. */
#include <string.h>

#include "jfr_parse_int.h"

static const char *const pool_names[NPOOL] = {"jdk.types.Symbol",      "java.lang.Class",
                                              "jdk.types.Method",      "jdk.types.StackTrace",
                                              "jdk.types.ThreadState", "java.lang.String"};

static const char *const event_names[JFR_EV_COUNT] = {
    "jdk.ExecutionSample",
    "profiler.WallClockSample",
    "jdk.ObjectAllocationInNewTLAB",
    "jdk.ObjectAllocationOutsideTLAB",
    "jdk.ObjectAllocationSample",
    "profiler.LiveObject",
    "jdk.JavaMonitorEnter",
    "jdk.ThreadPark",
    "profiler.Malloc",
    "jdk.ActiveSetting",
};

enum { E_TOP, E_ROOT, E_METADATA, E_CLASS, E_FIELD, E_OTHER };

static int str_is(const struct jfr_str *s, const char *lit)
{
	size_t n = strlen(lit);
	return s->len == n && memcmp(s->s, lit, n) == 0;
}

static int parse_num(const struct jfr_str *s, uint64_t *v)
{
	uint64_t x = 0;
	if (s->len == 0 || s->len > 19)
		return -1;
	for (uint32_t i = 0; i < s->len; i++) {
		if (s->s[i] < '0' || s->s[i] > '9')
			return -1;
		x = x * 10 + (uint64_t)(s->s[i] - '0');
	}
	*v = x;
	return 0;
}

static int element(struct jfr_parser *p, struct rd *r, int parent, int depth)
{
	size_t at = r->pos;
	uint32_t name = 0, nattr = 0, nchild = 0;
	if (depth >= MAX_DEPTH)
		return jfr_fail(p, at, PD_EINVAL, "metadata elements nest deeper than %d",
		                MAX_DEPTH);
	if (jfr_work(p, r, 1) || jfr_varint(p, r, 32, &name))
		return p->rc;
	if (name >= p->nstrs)
		return jfr_fail(p, at, PD_EINVAL,
		                "metadata element name %u is not among the %u strings", name,
		                p->nstrs);
	const struct jfr_str *nm = &p->strs[name];
	int kind = E_OTHER;
	if (parent == E_TOP) {
		if (!str_is(nm, "root"))
			return jfr_fail(p, at, PD_EINVAL,
			                "the metadata does not start with its root");
		kind = E_ROOT;
	} else if (parent == E_ROOT && str_is(nm, "metadata")) {
		kind = E_METADATA;
	} else if (parent == E_METADATA && str_is(nm, "class")) {
		kind = E_CLASS;
	} else if (parent == E_CLASS && str_is(nm, "field")) {
		kind = E_FIELD;
	}
	const struct jfr_str *a_id = NULL, *a_name = NULL, *a_class = NULL, *a_cp = NULL,
	                     *a_dim = NULL;
	if (jfr_count(p, r, "metadata attribute", &nattr))
		return p->rc;
	for (uint32_t i = 0; i < nattr; i++) {
		uint32_t k = 0, v = 0;
		size_t kat = r->pos;
		if (jfr_work(p, r, 1) || jfr_varint(p, r, 32, &k) || jfr_varint(p, r, 32, &v))
			return p->rc;
		if (k >= p->nstrs || v >= p->nstrs)
			return jfr_fail(p, kat, PD_EINVAL,
			                "a metadata attribute refers to string %u of %u",
			                k >= p->nstrs ? k : v, p->nstrs);
		const struct jfr_str *ks = &p->strs[k], *vs = &p->strs[v];
		if (str_is(ks, "id"))
			a_id = vs;
		else if (str_is(ks, "name"))
			a_name = vs;
		else if (str_is(ks, "class"))
			a_class = vs;
		else if (str_is(ks, "constantPool"))
			a_cp = vs;
		else if (str_is(ks, "dimension"))
			a_dim = vs;
	}
	if (kind == E_CLASS) {
		uint64_t id = 0;
		if (!a_id || parse_num(a_id, &id))
			return jfr_fail(p, at, PD_EINVAL, "a metadata class has no numeric id");
		if (!a_name || !a_name->len)
			return jfr_fail(p, at, PD_EINVAL, "metadata class %llu has no name",
			                (unsigned long long)id);
		if (jfr_grow(p, (void **)&p->cls, &p->cap_cls, p->ncls, sizeof(*p->cls), at))
			return p->rc;
		p->cls[p->ncls++] = (struct cls){.id = id,
		                                 .name = a_name->s,
		                                 .name_len = a_name->len,
		                                 .first = (uint32_t)p->nfields};
	} else if (kind == E_FIELD) {
		uint64_t type = 0;
		if (!a_class || parse_num(a_class, &type))
			return jfr_fail(p, at, PD_EINVAL, "a metadata field has no numeric class");
		if (!a_name || !a_name->len)
			return jfr_fail(p, at, PD_EINVAL, "a metadata field has no name");
		if (a_dim && a_dim->len && !str_is(a_dim, "1"))
			return jfr_fail(p, at, PD_EINVAL,
			                "field %.*s has dimension %.*s (only 1 is known)",
			                (int)a_name->len, a_name->s, (int)a_dim->len, a_dim->s);
		if (jfr_grow(p, (void **)&p->fields, &p->cap_fields, p->nfields, sizeof(*p->fields),
		             at))
			return p->rc;
		p->fields[p->nfields++] = (struct field){
		    .name = a_name->s,
		    .name_len = a_name->len,
		    .type = type,
		    .cp = a_cp && str_is(a_cp, "true"),
		    .array = a_dim && a_dim->len,
		};
		p->cls[p->ncls - 1].nf++;
	}
	if (jfr_count(p, r, "metadata child", &nchild))
		return p->rc;
	for (uint32_t i = 0; i < nchild; i++)
		if (element(p, r, kind, depth + 1))
			return p->rc;
	return 0;
}

/* The index of the last class named name, or -1. */
static int class_named(const struct jfr_parser *p, const char *name)
{
	size_t n = strlen(name);
	for (size_t i = p->ncls; i-- > 0;)
		if (p->cls[i].name_len == n && memcmp(p->cls[i].name, name, n) == 0)
			return (int)i;
	return -1;
}

int jfr_class_by_id(const struct jfr_parser *p, uint64_t id)
{
	uint32_t v;
	if (id == UINT64_MAX || !pd_u64map_get(&p->cls_ids, id + 1, &v))
		return -1;
	return (int)v;
}

struct role_def {
	const char *field, *type;
	uint8_t cp, array, role;
};

static const struct role_def event_roles[] = {
    {"stackTrace", "jdk.types.StackTrace", 1, 0, R_STACK_TRACE},
    {"state", "jdk.types.ThreadState", 1, 0, R_STATE},
    {"contextId", "long", 0, 0, R_CONTEXT_ID},
    {"spanId", "long", 0, 0, R_SPAN_ID},
    {"spanName", "long", 0, 0, R_SPAN_NAME},
    {"samples", "int", 0, 0, R_SAMPLES},
    {"tlabSize", "long", 0, 0, R_TLAB_SIZE},
    {"allocationSize", "long", 0, 0, R_ALLOCATION_SIZE},
    {"weight", "long", 0, 0, R_WEIGHT},
    {"duration", "long", 0, 0, R_DURATION},
    {"size", "long", 0, 0, R_SIZE},
    {"name", "java.lang.String", 0, 0, R_NAME},
    {"value", "java.lang.String", 0, 0, R_VALUE},
};

static const struct role_def pool_roles[][2] = {
    [POOL_SYMBOL] = {{"string", "java.lang.String", 0, 0, R_STRING}, {0}},
    [POOL_CLASS] = {{"name", "jdk.types.Symbol", 1, 0, R_CLASS_NAME}, {0}},
    [POOL_METHOD] = {{"type", "java.lang.Class", 1, 0, R_METHOD_TYPE},
                     {"name", "jdk.types.Symbol", 1, 0, R_METHOD_NAME}},
    [POOL_STACK] = {{"frames", "jdk.types.StackFrame", 0, 1, R_FRAMES}, {0}},
    [POOL_STATE] = {{"name", "java.lang.String", 0, 0, R_NAME}, {0}},
    [POOL_STRING] = {{0}, {0}},
};

static const struct role_def frame_roles[] = {
    {"method", "jdk.types.Method", 1, 0, R_FRAME_METHOD},
    {"lineNumber", "int", 0, 0, R_FRAME_LINE},
};

/* Marks the fields of class ci that match one of defs (name, type, constant
 * pool and array all as expected). */
static void bind(struct jfr_parser *p, int ci, const struct role_def *defs, size_t n)
{
	if (ci < 0)
		return;
	const struct cls *c = &p->cls[ci];
	for (uint32_t i = 0; i < c->nf; i++) {
		struct field *f = &p->fields[c->first + i];
		for (size_t j = 0; j < n; j++) {
			const struct role_def *d = &defs[j];
			if (!d->field)
				continue;
			int t = class_named(p, d->type);
			if (f->name_len == strlen(d->field) &&
			    memcmp(f->name, d->field, f->name_len) == 0 && t >= 0 &&
			    f->type == p->cls[t].id && f->cp == d->cp && f->array == d->array)
				f->role = d->role;
		}
	}
}

int jfr_read_metadata(struct jfr_parser *p, size_t chunk, size_t chunk_end, size_t off)
{
	struct rd r = {.b = p->buf, .pos = chunk + off, .end = chunk_end};
	size_t at = r.pos;
	uint32_t size = 0, type = 0;
	uint64_t skip = 0;
	if (jfr_varint(p, &r, 32, &size))
		return p->rc;
	if (size < 1 || size > chunk_end - at)
		return jfr_fail(p, at, PD_EINVAL,
		                "the metadata event of %u bytes does not fit its chunk", size);
	r.end = at + size;
	if (jfr_varint(p, &r, 32, &type) || jfr_varlong(p, &r, &skip) ||
	    jfr_varlong(p, &r, &skip) || jfr_varlong(p, &r, &skip))
		return p->rc;
	if (type != 0)
		return jfr_fail(p, at, PD_EINVAL,
		                "the metadata offset points at an event of type %u", type);
	if (jfr_count(p, &r, "metadata string", &p->nstrs))
		return p->rc;
	p->strs = jfr_arena_alloc(p, (size_t)p->nstrs * sizeof(*p->strs), at);
	if (!p->strs)
		return p->rc;
	for (uint32_t i = 0; i < p->nstrs; i++)
		if (jfr_work(p, &r, 1) || jfr_string(p, &r, 0, &p->strs[i]))
			return p->rc;
	if (element(p, &r, E_TOP, 0))
		return p->rc;
	/* resolve */
	for (size_t i = 0; i < p->ncls; i++) {
		static const struct {
			const char *n;
			int prim;
		} prims[] = {
		    {"boolean", P_BOOLEAN}, {"byte", P_BYTE},     {"char", P_CHAR},
		    {"short", P_SHORT},     {"int", P_INT},       {"long", P_LONG},
		    {"float", P_FLOAT},     {"double", P_DOUBLE}, {"java.lang.String", P_STRING}};
		struct cls *c = &p->cls[i];
		for (size_t j = 0; j < sizeof(prims) / sizeof(prims[0]); j++)
			if (c->name_len == strlen(prims[j].n) &&
			    memcmp(c->name, prims[j].n, c->name_len) == 0)
				c->prim = prims[j].prim;
		if (c->id != UINT64_MAX && pd_u64map_put(&p->cls_ids, c->id + 1, (uint32_t)i))
			return jfr_fail(p, at, PD_ENOMEM, "out of memory");
	}
	for (size_t i = 0; i < p->nfields; i++) {
		struct field *f = &p->fields[i];
		f->cls = jfr_class_by_id(p, f->type);
		int prim = f->cls >= 0 ? p->cls[f->cls].prim : -1;
		f->fast = f->cp || prim == P_LONG ? 1 : prim == P_INT ? 2 : 0;
		static const uint8_t ops[] = {
		    [P_BOOLEAN] = OP_BYTE, [P_BYTE] = OP_BYTE,     [P_CHAR] = OP_SHORT,
		    [P_SHORT] = OP_SHORT,  [P_INT] = OP_INT,       [P_LONG] = OP_LONG,
		    [P_FLOAT] = OP_FLOAT,  [P_DOUBLE] = OP_DOUBLE, [P_STRING] = OP_NONE,
		    [P_STRUCT] = OP_NONE};
		f->op = f->array ? OP_NONE : f->cp ? OP_LONG : prim >= 0 ? ops[prim] : OP_NONE;
	}
	for (size_t i = 0; i < p->ncls; i++) {
		struct cls *c = &p->cls[i];
		c->flat = c->prim == P_STRUCT && c->nf <= FLAT_MAX;
		c->ints = c->flat;
		for (uint32_t j = 0; j < c->nf && c->flat; j++) {
			uint8_t op = p->fields[c->first + j].op;
			c->flat = op != OP_NONE;
			c->ints = c->ints && (op == OP_LONG || op == OP_INT);
		}
		c->ints = c->ints && c->flat;
	}
	for (int e = 0; e < JFR_EV_COUNT; e++) {
		p->ev_cls[e] = class_named(p, event_names[e]);
		bind(p, p->ev_cls[e], event_roles, sizeof(event_roles) / sizeof(event_roles[0]));
	}
	for (int k = 0; k < NPOOL; k++) {
		p->pool_cls[k] = class_named(p, pool_names[k]);
		bind(p, p->pool_cls[k], pool_roles[k], 2);
	}
	p->stack_frame_cls = class_named(p, "jdk.types.StackFrame");
	bind(p, p->stack_frame_cls, frame_roles, 2);
	p->frame_nf = 0;
	if (p->stack_frame_cls >= 0) {
		const struct cls *c = &p->cls[p->stack_frame_cls];
		uint32_t nf = c->nf <= FRAME_MAX_FIELDS ? c->nf : 0;
		for (uint32_t i = 0; i < nf; i++) {
			const struct field *f = &p->fields[c->first + i];
			if (f->array || !f->fast) {
				nf = 0;
				break;
			}
			p->frame_fast[i] = f->fast;
			p->frame_role[i] = f->role;
		}
		p->frame_nf = nf;
	}
	return 0;
}
