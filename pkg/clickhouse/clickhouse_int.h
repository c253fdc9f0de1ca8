/* clickhouse_int.h: what the files of pkg/clickhouse share and nobody else sees. */
#ifndef PROFD_CLICKHOUSE_INT_H
#define PROFD_CLICKHOUSE_INT_H

#include "profd/clickhouse.h"

struct pd_clickhouse {
	char *url;      /* without a trailing '/' */
	char *database;
	char *cluster;  /* NULL: one server */
	char *user;     /* NULL: no credentials */
	char *password;
	long timeout_ms;
	size_t max_response;
	int no_compress;
};

/* Runs a SELECT whose result is in RowBinary (sql must end in FORMAT RowBinary). */
int ch_select(struct pd_clickhouse *c, const char *sql, struct pd_buf *resp, struct pd_err *err);

#endif
