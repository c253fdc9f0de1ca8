/* otlp.c: OTLP profiles (placeholder until the converter lands). */
#include "ingest_int.h"

int pd_ingest_otlp(const uint8_t *body, size_t len, int json, const struct pd_ingest_limits *lim,
		   int64_t now_ms, struct pd_ingest_batch *b, struct pd_err *err)
{
	return pd_err_set(err, PD_EINCOMPAT, "OTLP profiles are not built yet");
}
