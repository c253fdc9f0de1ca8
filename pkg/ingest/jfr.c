/* jfr.c: JFR recordings (placeholder until the converter lands). */
#include "ingest_int.h"

int ingest_jfr(const struct ingest_meta *m, const uint8_t *body, size_t len,
	       const char *content_type, const struct pd_ingest_limits *lim,
	       struct pd_ingest_batch *out, struct pd_err *err)
{
	return pd_err_set(err, PD_EINCOMPAT, "format=jfr is not built yet");
}
