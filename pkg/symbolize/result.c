/* result.c: the frames one address resolved to, as the cache keeps them. */
#include "symbolize_int.h"

#include <stdlib.h>
#include <string.h>

void sym_result_fini(struct sym_result *r)
{
	for (size_t i = 0; i < r->n; i++) {
		free(r->f[i].name);
		free(r->f[i].system_name);
		free(r->f[i].file);
	}
	free(r->f);
	r->f = NULL;
	r->n = 0;
}

size_t sym_result_bytes(const struct sym_result *r)
{
	size_t b = r->n * sizeof(*r->f);
	for (size_t i = 0; i < r->n; i++)
		b += strlen(r->f[i].name) + strlen(r->f[i].system_name) + strlen(r->f[i].file) + 3;
	return b;
}

int sym_result_add(struct sym_result *r, const char *name, const char *system_name,
                   const char *file, int64_t line, int64_t start_line)
{
	struct sym_frame *f = realloc(r->f, (r->n + 1) * sizeof(*f));
	if (!f)
		return PD_ENOMEM;
	r->f = f;
	struct sym_frame *x = &f[r->n];
	x->name = strdup(name ? name : "");
	x->system_name = strdup(system_name ? system_name : "");
	x->file = strdup(file ? file : "");
	x->line = line;
	x->start_line = start_line;
	if (!x->name || !x->system_name || !x->file) {
		free(x->name);
		free(x->system_name);
		free(x->file);
		return PD_ENOMEM;
	}
	r->n++;
	return 0;
}
