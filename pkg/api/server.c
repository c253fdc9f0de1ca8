/* server.c: the HTTP server on libmicrohttpd: its options and their defaults,
 * binding the listen address, and starting and stopping the two daemons and the
 * acceptor (conn.c) that feeds them; also the handlers' names for /metrics and
 * the clocks the server's files share. Requests are routed and handled in
 * request.c, their responses built and sent in response.c, and the lifecycle
 * endpoints and the pages outside the API served by lifecycle.c. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <microhttpd.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "server_int.h"
#include "profd/config.h"

#ifndef PD_VERSION
#define PD_VERSION "unknown"
#endif

const char *const api_handler_names[API_NHANDLERS] = {
    "/api/v1/query_range",
    "/api/v1/query",
    "/api/v1/series",
    "/api/v1/labels",
    "/api/v1/label/:name/values",
    "/api/v1/targets",
    "/api/v1/status/config",
    "/api/v1/status/flags",
    "/api/v1/status/tsdb",
    "/api/v1/status/buildinfo",
    "/api/v1/profiles",
    "/api/v1/admin/tsdb/delete_series",
    "/api/v1/admin/tsdb/clean_tombstones",
    "/api/v1/admin/tsdb/snapshot",
    "/-/healthy",
    "/-/ready",
    "/-/reload",
    "/-/quit",
    "/metrics",
    "/debug/pprof/",
    "/prometheus/api/v1/query_range",
    "/prometheus/api/v1/query",
    "/prometheus/api/v1/series",
    "/prometheus/api/v1/labels",
    "/prometheus/api/v1/label/:name/values",
    "/prometheus/api/v1/metadata",
    "/prometheus/api/v1/status/buildinfo",
    "/ingest",
    "/push.v1.PusherService/Push",
    "/v1development/profiles",
    "/api/v1/debuginfo/:build_id",
    "/api/v1/status/symbolizer",
    "/querier.v1.QuerierService/",
    "/",
    "other",
};

int64_t api_now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int64_t api_mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void mhd_log(void *cls, const char *fmt, va_list ap)
{
	char buf[512];
	vsnprintf(buf, sizeof(buf), fmt, ap);
	size_t n = strlen(buf);
	while (n && (buf[n - 1] == '\n' || buf[n - 1] == '\r'))
		buf[--n] = '\0';
	/* connections profd cut off (timeouts, the reserve) look to MHD like clients that left */
	/* ... and the plain end of a TLS connection (a UNIX socket, tls.c) has no TCP
	 * options to set */
	if (strstr(buf, "closed by remote side") || strstr(buf, "Connection reset") ||
	    ((strstr(buf, "TCP_NODELAY") || strstr(buf, "TCP_CORK") ||
	      strstr(buf, "push the data from buffers")) &&
	     cls && ((struct pd_api_server *)cls)->web))
		pd_log_debug("api", "libmicrohttpd", "err=%s", buf);
	else
		pd_log_warn("api", "libmicrohttpd", "err=%s", buf);
}

/* ---- listening ------------------------------------------------------------------------ */

/* Splits "host:port", ":port", "[v6]:port" into host ("" for any) and port. */
static int split_address(const char *addr, char *host, size_t hsize, char *port, size_t psize)
{
	const char *colon;
	if (addr[0] == '[') {
		const char *close = strchr(addr, ']');
		if (!close || close[1] != ':')
			return -1;
		if ((size_t)(close - addr - 1) >= hsize)
			return -1;
		memcpy(host, addr + 1, (size_t)(close - addr - 1));
		host[close - addr - 1] = '\0';
		colon = close + 1;
	} else {
		colon = strrchr(addr, ':');
		if (!colon || (size_t)(colon - addr) >= hsize)
			return -1;
		memcpy(host, addr, (size_t)(colon - addr));
		host[colon - addr] = '\0';
		if (strchr(host, ':'))
			return -1; /* a bare IPv6 address needs brackets */
	}
	if (!colon[1] || strlen(colon + 1) >= psize)
		return -1;
	snprintf(port, psize, "%s", colon + 1);
	return 0;
}

static int try_bind(const struct addrinfo *ai, int *fd_out, int *eno)
{
	int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
	if (fd < 0) {
		*eno = errno;
		return -1;
	}
	int one = 1, zero = 0;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (ai->ai_family == AF_INET6)
		setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero));
	if (bind(fd, ai->ai_addr, ai->ai_addrlen) < 0 || listen(fd, 128) < 0) {
		*eno = errno;
		close(fd);
		return -1;
	}
	*fd_out = fd;
	return 0;
}

static int open_listener(const char *addr, int *fd_out, unsigned *port_out, struct pd_err *err)
{
	char host[256], port[32];
	if (split_address(addr, host, sizeof(host), port, sizeof(port)))
		return pd_err_set(
		    err, PD_EINVAL,
		    "listen tcp %s: the address must be host:port, :port or [ipv6]:port", addr);
	struct addrinfo hints = {0}, *res = NULL;
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_PASSIVE;
	int g = getaddrinfo(host[0] ? host : NULL, port, &hints, &res);
	if (g)
		return pd_err_set(err, PD_EINVAL, "listen tcp %s: %s", addr, gai_strerror(g));
	int fd = -1, eno = 0;
	/* for every interface, prefer one dual-stack IPv6 socket */
	for (int pass = 0; pass < 2 && fd < 0; pass++)
		for (struct addrinfo *ai = res; ai && fd < 0; ai = ai->ai_next) {
			if (!host[0] && (pass == 0) != (ai->ai_family == AF_INET6))
				continue;
			if (host[0] && pass == 1)
				break;
			try_bind(ai, &fd, &eno);
		}
	freeaddrinfo(res);
	if (fd < 0)
		return pd_err_set(err, PD_EIO, "listen tcp %s: bind: %s", addr, strerror(eno));
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	unsigned p = 0;
	if (getsockname(fd, (struct sockaddr *)&ss, &sl) == 0) {
		if (ss.ss_family == AF_INET)
			p = ntohs(((struct sockaddr_in *)&ss)->sin_port);
		else if (ss.ss_family == AF_INET6)
			p = ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
	}
	*fd_out = fd;
	*port_out = p;
	return 0;
}

/* ---- the server ---------------------------------------------------------------------- */

void pd_api_opts_init(struct pd_api_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->listen_address = PD_API_DEFAULT_LISTEN_ADDRESS;
	o->lookback_ms = PD_API_DEFAULT_LOOKBACK_MS;
	o->max_range_ms = PD_API_DEFAULT_MAX_RANGE_MS;
	o->max_merge_profiles = PD_API_DEFAULT_MAX_MERGE_PROFILES;
	o->max_merge_bytes = PD_API_DEFAULT_MAX_MERGE_BYTES;
	o->max_push_body = PD_API_DEFAULT_MAX_PUSH_BODY;
	o->max_form_body = PD_API_DEFAULT_MAX_FORM_BODY;
	o->max_response = PD_API_DEFAULT_MAX_RESPONSE;
	o->max_response_memory = PD_API_DEFAULT_MAX_RESPONSE_MEMORY;
	o->max_connections = PD_API_DEFAULT_MAX_CONNECTIONS;
	o->max_connections_per_client = PD_API_DEFAULT_MAX_CONNECTIONS_PER_CLIENT;
	o->read_header_timeout_ms = PD_API_DEFAULT_READ_HEADER_TIMEOUT_MS;
	o->read_timeout_ms = PD_API_DEFAULT_READ_TIMEOUT_MS;
	o->max_concurrent_queries = PD_API_DEFAULT_MAX_CONCURRENT_QUERIES;
	o->max_concurrent_pushes = PD_API_DEFAULT_MAX_CONCURRENT_PUSHES;
	o->push_max_ratio = PD_PPROF_STORE_MAX_RATIO;
	o->push_max_memory = PD_PPROF_STORE_MAX_MEMORY;
	o->push_max_samples = PD_PPROF_STORE_MAX_SAMPLES;
	o->push_max_sample_labels = PD_PPROF_STORE_MAX_SAMPLE_LABELS;
	o->query_timeout_ms = PD_API_DEFAULT_QUERY_TIMEOUT_MS;
	o->query_max_samples = PD_API_DEFAULT_QUERY_MAX_SAMPLES;
	o->query_lookback_ms = PD_API_DEFAULT_QUERY_LOOKBACK_MS;
	o->callgraph_timeout_ms = PD_API_DEFAULT_CALLGRAPH_TIMEOUT_MS;
	o->callgraph_max_memory = PD_API_DEFAULT_CALLGRAPH_MAX_MEMORY;
	o->callgraph_max_concurrency = PD_API_DEFAULT_CALLGRAPH_MAX_CONCURRENCY;
	o->callgraph_layout_exe = PD_API_DEFAULT_CALLGRAPH_LAYOUT_EXE;
	o->max_debuginfo_size = PD_API_DEFAULT_MAX_DEBUGINFO_SIZE;
	o->max_debuginfo_total = PD_API_DEFAULT_MAX_DEBUGINFO_TOTAL;
}

static void server_free(struct pd_api_server *s)
{
	for (size_t i = 0; i < s->nflags; i++) {
		free(s->flag_names[i]);
		free(s->flag_values[i]);
	}
	free(s->flag_names);
	free(s->flag_values);
	free(s->listen_address);
	free(s->version);
	free(s->cg_exe);
	free(s->prefix);
	free(s->debuginfo_dir);
	free(s->conns);
	api_tls_pool_wait(&s->tls);
	api_web_close(s->web);
	pthread_mutex_destroy(&s->cmu);
	pthread_mutex_destroy(&s->qmu);
	pthread_cond_destroy(&s->qcv);
	pthread_mutex_destroy(&s->m.mu);
	free(s);
}

int pd_api_start(struct pd_api_server **out, const struct pd_api_opts *opts, struct pd_err *err)
{
	*out = NULL;
	if (!opts || !opts->db)
		return pd_err_set(err, PD_EINVAL, "the API needs a store");
	struct pd_api_server *s = calloc(1, sizeof(*s));
	if (!s)
		return pd_err_set(err, PD_ENOMEM, "out of memory");
	pthread_mutex_init(&s->cmu, NULL);
	s->listen_fd = s->wake_fd = -1;
	pthread_mutex_init(&s->qmu, NULL);
	pthread_cond_init(&s->qcv, NULL);
	pthread_mutex_init(&s->m.mu, NULL);
	s->o = *opts;
	struct pd_api_opts d;
	pd_api_opts_init(&d);
#define DEF(f)                                                                                     \
	if (!s->o.f)                                                                               \
		s->o.f = d.f;
	DEF(listen_address);
	DEF(lookback_ms);
	DEF(max_range_ms);
	DEF(max_merge_profiles);
	DEF(max_merge_bytes);
	DEF(max_push_body);
	DEF(max_form_body);
	DEF(max_response);
	DEF(max_response_memory);
	s->resp_budget.max = s->o.max_response_memory;
	s->resp_budget.free_each = PD_API_RESPONSE_FREE_EACH;
	DEF(max_connections);
	DEF(max_connections_per_client);
	DEF(read_header_timeout_ms);
	DEF(read_timeout_ms);
	DEF(max_concurrent_queries);
	DEF(max_concurrent_pushes);
	DEF(push_max_ratio);
	DEF(push_max_memory);
	DEF(push_max_samples);
	DEF(push_max_sample_labels);
	DEF(query_timeout_ms);
	DEF(query_max_samples);
	DEF(query_lookback_ms);
	DEF(callgraph_timeout_ms);
	DEF(callgraph_max_memory);
	DEF(callgraph_max_concurrency);
	DEF(callgraph_layout_exe);
	DEF(max_debuginfo_size);
	DEF(max_debuginfo_total);
#undef DEF
	if (s->o.lookback_ms < 0)
		s->o.lookback_ms = 0;
	s->listen_address = strdup(s->o.listen_address);
	s->version = strdup(opts->version ? opts->version : PD_VERSION);
	s->o.listen_address = s->listen_address;
	s->o.version = s->version;
	s->cg_exe = strdup(s->o.callgraph_layout_exe);
	s->o.callgraph_layout_exe = s->cg_exe;
	/* "/" and "" are no prefix; a trailing slash is not part of one */
	const char *pp = opts->route_prefix ? opts->route_prefix : "";
	size_t pn = strlen(pp);
	while (pn && pp[pn - 1] == '/')
		pn--;
	s->prefix = strndup(pp, pn);
	s->prefix_len = pn;
	s->o.route_prefix = s->prefix;
	s->debuginfo_dir = opts->debuginfo_dir ? strdup(opts->debuginfo_dir) : NULL;
	s->o.debuginfo_dir = s->debuginfo_dir;
	s->nflags = opts->nflags;
	s->flag_names = calloc(s->nflags + 1, sizeof(char *));
	s->flag_values = calloc(s->nflags + 1, sizeof(char *));
	int rc = 0;
	if (!s->listen_address || !s->version || !s->cg_exe || !s->prefix || !s->flag_names ||
	    !s->flag_values)
		rc = PD_ENOMEM;
	for (size_t i = 0; i < s->nflags && !rc; i++) {
		s->flag_names[i] = strdup(opts->flag_names[i] ? opts->flag_names[i] : "");
		s->flag_values[i] = strdup(opts->flag_values[i] ? opts->flag_values[i] : "");
		if (!s->flag_names[i] || !s->flag_values[i])
			rc = PD_ENOMEM;
	}
	s->o.flag_names = (const char *const *)s->flag_names;
	s->o.flag_values = (const char *const *)s->flag_values;
	if (rc) {
		server_free(s);
		return pd_err_set(err, PD_ENOMEM, "out of memory");
	}
	s->ready = 1;
	s->m.c.last_reload_ok = 1;
	s->started_ms = api_now_ms();
	s->m.c.last_reload_ms = s->started_ms;
	if (s->prefix_len && s->prefix[0] != '/') {
		server_free(s);
		return pd_err_set(err, PD_EINVAL,
		                  "the route prefix %s must start with \"/\" (see "
		                  "pd_api_route_prefix)",
		                  opts->route_prefix);
	}
	if (s->o.read_header_timeout_ms < 0 || s->o.read_timeout_ms < 0) {
		server_free(s);
		return pd_err_set(err, PD_EINVAL, "the HTTP read timeouts must not be negative");
	}
	if (s->o.read_header_timeout_ms > s->o.read_timeout_ms)
		s->o.read_header_timeout_ms = s->o.read_timeout_ms;
	/* killed connections keep their slot until MHD closes them: room for a reserve's worth */
	s->nconns = (size_t)s->o.max_connections + 2 * PD_API_RESERVE_CONNECTIONS;
	s->conns = calloc(s->nconns, sizeof(*s->conns));
	if (!s->conns) {
		server_free(s);
		return pd_err_set(err, PD_ENOMEM, "out of memory");
	}
	api_tls_pool_init(&s->tls, &s->m);
	if (opts->web_config_file && *opts->web_config_file &&
	    (rc = api_web_open(opts->web_config_file, &s->m, &s->web, err))) {
		server_free(s);
		return rc;
	}
	if ((rc = open_listener(s->listen_address, &s->listen_fd, &s->port, err))) {
		server_free(s);
		return rc;
	}
	/* a connection reset between poll and accept must not block the acceptor */
	fcntl(s->listen_fd, F_SETFL, fcntl(s->listen_fd, F_GETFL) | O_NONBLOCK);
	/* MHD's own inactivity timeout (whole seconds) backs ours and covers clients that
	 * stop reading a response */
	intptr_t idle_s = (intptr_t)((s->o.read_timeout_ms + 999) / 1000);
	/* options as one array: the form mhd_dl.c forwards to the loaded library */
	struct MHD_OptionItem ops[] = {
		{MHD_OPTION_EXTERNAL_LOGGER, (intptr_t)mhd_log, s},
		{MHD_OPTION_NOTIFY_COMPLETED, (intptr_t)api_on_completed, s},
		{MHD_OPTION_NOTIFY_CONNECTION, (intptr_t)api_on_connection, s},
		{MHD_OPTION_URI_LOG_CALLBACK, (intptr_t)api_on_uri, s},
		{MHD_OPTION_CONNECTION_LIMIT, (intptr_t)s->nconns, NULL},
		{MHD_OPTION_CONNECTION_TIMEOUT, idle_s, NULL},
		{MHD_OPTION_CONNECTION_MEMORY_LIMIT, 256 * 1024, NULL},
		{MHD_OPTION_END, 0, NULL},
	};
	/* MHD_USE_POLL: with select(), a connection whose descriptor is 1024 or
	 * more is refused, and a profd scraping thousands of targets holds that
	 * many descriptors */
	const unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION |
	                       MHD_USE_POLL | MHD_USE_ERROR_LOG | MHD_USE_NO_LISTEN_SOCKET |
	                       MHD_USE_ITC;
	s->mhd = MHD_start_daemon(flags, 0, NULL, NULL, api_on_request, s, MHD_OPTION_ARRAY, ops,
	                          MHD_OPTION_END);
	if (s->mhd)
		s->mhd_reserve = MHD_start_daemon(flags, 0, NULL, NULL, api_on_request, s,
		                                  MHD_OPTION_ARRAY, ops, MHD_OPTION_END);
	if (s->mhd_reserve)
		s->wake_fd = eventfd(0, EFD_CLOEXEC);
	if (s->wake_fd >= 0 && pthread_create(&s->acceptor, NULL, api_acceptor_main, s) == 0)
		s->acceptor_started = 1;
	if (!s->acceptor_started) {
		if (s->mhd_reserve)
			MHD_stop_daemon(s->mhd_reserve);
		if (s->mhd)
			MHD_stop_daemon(s->mhd);
		if (s->wake_fd >= 0)
			close(s->wake_fd);
		close(s->listen_fd);
		server_free(s);
		return pd_err_set(err, PD_EIO, "listen tcp %s: starting the HTTP server failed",
		                  opts->listen_address ? opts->listen_address
		                                       : PD_API_DEFAULT_LISTEN_ADDRESS);
	}
	pd_log_info("api", "listening", "address=%s port=%u tls=%s", s->listen_address, s->port,
	            s->web && api_web_tls(s->web) ? "on" : "off");
	*out = s;
	return 0;
}

unsigned pd_api_port(const struct pd_api_server *s)
{
	return s ? s->port : 0;
}

void pd_api_set_ready(struct pd_api_server *s, int ready)
{
	if (s)
		__atomic_store_n(&s->ready, ready ? 1 : 0, __ATOMIC_RELEASE);
}

void pd_api_stop(struct pd_api_server *s)
{
	if (!s)
		return;
	__atomic_store_n(&s->stopping, 1, __ATOMIC_RELEASE);
	uint64_t one = 1;
	if (write(s->wake_fd, &one, sizeof(one)) < 0)
		pd_log_warn("api", "waking the acceptor failed", "err=%s", strerror(errno));
	pthread_join(s->acceptor, NULL);
	close(s->listen_fd);
	MHD_stop_daemon(s->mhd_reserve);
	MHD_stop_daemon(s->mhd);
	close(s->wake_fd);
	for (size_t i = 0; i < s->nconns; i++)
		if (s->conns[i].in_use) /* never started by MHD */
			close(s->conns[i].dupfd);
	server_free(s);
}
