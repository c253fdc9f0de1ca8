/* pyroscope.c: Pyroscope's /ingest (placeholder until the converters land). */
#include "ingest_int.h"

int pd_ingest_pyroscope(const struct pd_ingest_params *q, const uint8_t *body, size_t len,
                        const struct pd_ingest_limits *lim, struct pd_ingest_batch *b,
                        struct pd_err *err)
{
	return pd_err_set(err, PD_EINCOMPAT, "/ingest is not built yet");
}
