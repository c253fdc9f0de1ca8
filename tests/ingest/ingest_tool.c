/* ingest_tool.c: a request body from a file through pd_ingest_otlp or
 * pd_ingest_connect_push, for tests/ingest/otlp_test.sh, which builds the bodies
 * with an independent client (otlp_client.py). Each converted profile is written
 * uncompressed to OUT.<i>.pb and its series labels printed as one line
 * "<i> name=value ..."; the rejected count and reason, when any, on a line
 * "rejected <n> <reason>". Usage:
 *   ingest_tool otlp|connect bin|json BODY OUT */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "profd/ingest.h"
#include "profd/labels.h"

static int read_file(const char *path, unsigned char **buf, size_t *len)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return -1;
	size_t cap = 1 << 16, n = 0;
	unsigned char *b = malloc(cap);
	while (b) {
		size_t r = fread(b + n, 1, cap - n, f);
		n += r;
		if (n < cap)
			break;
		unsigned char *nb = realloc(b, cap * 2);
		if (!nb) {
			free(b);
			b = NULL;
			break;
		}
		b = nb;
		cap *= 2;
	}
	fclose(f);
	*buf = b;
	*len = n;
	return b ? 0 : -1;
}

int main(int argc, char **argv)
{
	if (argc != 5 || (strcmp(argv[1], "otlp") && strcmp(argv[1], "connect")) ||
	    (strcmp(argv[2], "bin") && strcmp(argv[2], "json"))) {
		fprintf(stderr, "usage: ingest_tool otlp|connect bin|json BODY OUT\n");
		return 2;
	}
	unsigned char *body;
	size_t len;
	if (read_file(argv[3], &body, &len)) {
		fprintf(stderr, "ingest_tool: cannot read %s\n", argv[3]);
		return 1;
	}
	int json = strcmp(argv[2], "json") == 0;
	struct pd_ingest_batch b = {0};
	struct pd_err err = {0};
	int rc = strcmp(argv[1], "otlp") == 0
	             ? pd_ingest_otlp(body, len, json, NULL, 0, &b, &err)
	             : pd_ingest_connect_push(body, len, json, NULL, 0, &b, &err);
	free(body);
	if (rc) {
		fprintf(stderr, "ingest_tool: %s\n", err.msg);
		return 1;
	}
	for (size_t i = 0; i < b.n; i++) {
		char path[4096];
		snprintf(path, sizeof path, "%s.%zu.pb", argv[4], i);
		FILE *f = fopen(path, "wb");
		if (!f || fwrite(b.v[i].pprof, 1, b.v[i].len, f) != b.v[i].len || fclose(f)) {
			fprintf(stderr, "ingest_tool: cannot write %s\n", path);
			return 1;
		}
		printf("%zu", i);
		for (size_t k = 0; k < pd_labels_len(b.v[i].labels); k++) {
			const struct pd_label *l = pd_labels_at(b.v[i].labels, k);
			printf(" %s=%s", l->name, l->value);
		}
		printf("\n");
	}
	if (b.rejected)
		printf("rejected %zu %s\n", b.rejected, b.rejected_msg);
	pd_ingest_batch_fini(&b);
	return 0;
}
