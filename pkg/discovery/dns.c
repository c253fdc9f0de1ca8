/* dns.c: the dns_sd provider, as Prometheus's discovery/dns: every
 * refresh_interval, each configured name is looked up (SRV, A, AAAA, MX or NS) with
 * c-ares, which reads the servers, search domains and ndots of /etc/resolv.conf (or
 * sends to the one server of --discovery.dns.server), follows CNAME chains and
 * retries over TCP when an answer is truncated. Each name gives one group, named by
 * the name, whose targets carry __meta_dns_name and the record's
 * __meta_dns_{srv,mx,ns}_record_* labels. A name whose lookup fails keeps the group
 * of its last good answer; "no such name" and "no records of that type" are good
 * answers without targets, as Prometheus takes them. The lookups of a refresh run
 * on one c-ares channel whose sockets the manager's loop polls, so a slow server
 * holds up nothing else; a refresh is cut off after refresh_interval. */
#include "discovery_int.h"

#include <arpa/inet.h>
#include <arpa/nameser.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* c-ares's ARES_GETSOCK_WRITABLE shifts a signed 1 by up to 31 places; these do it
 * unsigned */
#define SOCK_READABLE(bits, i) (((unsigned)(bits) >> (i)) & 1u)
#define SOCK_WRITABLE(bits, i) (((unsigned)(bits) >> ((i) + ARES_GETSOCK_MAXNUM)) & 1u)

static const char *const type_names[] = {"SRV", "A", "AAAA", "MX", "NS"};
static const int type_codes[] = {ns_t_srv, ns_t_a, ns_t_aaaa, ns_t_mx, ns_t_ns};

int pd_discovery_dns_type_parse(const char *s)
{
	if (!s)
		return PD_DISCOVERY_DNS_SRV;
	for (size_t i = 0; i < sizeof(type_names) / sizeof(type_names[0]); i++)
		if (!strcasecmp(s, type_names[i]))
			return (int)i;
	return -1;
}

int pd_discovery_dns_validate(const struct pd_discovery_dns_config *c, struct pd_err *err)
{
	int t;
	if (c->nnames == 0)
		return pd_err_set(err, PD_EINVAL,
		                  "DNS-SD config must contain at least one SRV record name");
	for (size_t i = 0; i < c->nnames; i++)
		if (!c->names[i])
			return pd_err_set(err, PD_EINVAL, "DNS-SD name %zu is missing", i);
	if ((t = pd_discovery_dns_type_parse(c->type)) < 0)
		return pd_err_set(err, PD_EINVAL, "invalid DNS-SD records type %s", c->type);
	if (t != PD_DISCOVERY_DNS_SRV && c->port == 0)
		return pd_err_set(err, PD_EINVAL,
		                  "a port is required in DNS-SD configs for all record types "
		                  "except SRV");
	return 0;
}

int pd_sd_dns_key(struct pd_buf *b, const struct pd_discovery_dns_config *c)
{
	int rc = pd_sd_key_str(b, "dns");
	if (!rc)
		rc = pd_sd_key_i64(b, pd_discovery_dns_type_parse(c->type));
	if (!rc)
		rc = pd_sd_key_i64(b, c->port);
	if (!rc)
		rc = pd_sd_key_i64(b, c->refresh_interval_ms > 0
		                          ? c->refresh_interval_ms
		                          : PD_DISCOVERY_DNS_REFRESH_DEFAULT_MS);
	if (!rc)
		rc = pd_sd_key_i64(b, (int64_t)c->nnames);
	for (size_t i = 0; i < c->nnames && !rc; i++)
		rc = pd_sd_key_str(b, c->names[i]);
	return rc;
}

int pd_sd_dns_init(struct pd_sd_provider *p, const struct pd_discovery_dns_config *c)
{
	struct pd_buf d;
	p->kind = PD_SD_DNS;
	p->qtype = (enum pd_discovery_dns_type)pd_discovery_dns_type_parse(c->type);
	p->port = c->port;
	p->interval_ms = c->refresh_interval_ms > 0 ? c->refresh_interval_ms
	                                            : PD_DISCOVERY_DNS_REFRESH_DEFAULT_MS;
	if (!(p->names = calloc(c->nnames, sizeof(*p->names))) ||
	    !(p->dns = calloc(c->nnames, sizeof(*p->dns))))
		return PD_ENOMEM;
	p->nnames = c->nnames;
	for (size_t i = 0; i < c->nnames; i++) {
		p->dns[i].p = p;
		p->dns[i].index = i;
		if (!(p->names[i] = strdup(c->names[i])))
			return PD_ENOMEM;
	}
	pd_buf_init(&d, 0);
	if (pd_buf_printf(&d, "%s:", type_names[p->qtype]))
		goto nomem;
	for (size_t i = 0; i < c->nnames; i++)
		if (pd_buf_printf(&d, "%s%s", i ? ", " : " ", c->names[i]))
			goto nomem;
	if (pd_buf_append(&d, "", 1))
		goto nomem;
	p->detail = (char *)pd_buf_steal(&d, NULL);
	return 0;
nomem:
	pd_buf_fini(&d);
	return PD_ENOMEM;
}

/* ---- building groups from answers ------------------------------------------------ */

void pd_discovery_dns_group_fini(struct pd_target_group *g)
{
	free(g->source);
	for (size_t i = 0; i < g->ntargets; i++)
		pd_labels_destroy(g->targets[i]);
	free(g->targets);
	pd_labels_destroy(g->labels);
	memset(g, 0, sizeof(*g));
}

struct builder {
	struct pd_target_group *g;
	struct pd_labels_builder *b;
	const char *name;
	size_t cap;
	struct pd_err *err;
};

/* Go's net.JoinHostPort: brackets around a host with a colon. */
static void join_host_port(char *dst, size_t cap, const char *host, int64_t port)
{
	snprintf(dst, cap, strchr(host, ':') ? "[%s]:%lld" : "%s:%lld", host, (long long)port);
}

/* Adds one target: address from host and port, with label meta (may be NULL) set
 * to value. */
static int add_target(struct builder *bd, const char *host, int64_t port, const char *meta,
                      const char *value)
{
	char addr[NI_MAXHOST + 32], *h = NULL;
	size_t n = strlen(host);
	int rc;

	/* miekg/dns names are rooted; Prometheus trims the final dots for the address */
	while (n && host[n - 1] == '.')
		n--;
	if (!(h = strndup(host, n)))
		return pd_err_set(bd->err, PD_ENOMEM, "out of memory");
	if (strlen(h) > NI_MAXHOST) {
		free(h);
		return pd_err_set(bd->err, PD_EINVAL, "DNS name longer than %d bytes", NI_MAXHOST);
	}
	join_host_port(addr, sizeof(addr), h, port);
	free(h);
	if (bd->g->ntargets == bd->cap) {
		size_t ncap = bd->cap ? 2 * bd->cap : 8;
		struct pd_labels **t = realloc(bd->g->targets, ncap * sizeof(*t));
		if (!t)
			return pd_err_set(bd->err, PD_ENOMEM, "out of memory");
		bd->g->targets = t;
		bd->cap = ncap;
	}
	pd_labels_builder_reset(bd->b, NULL);
	pd_labels_builder_set(bd->b, "__address__", addr);
	pd_labels_builder_set(bd->b, "__meta_dns_name", bd->name);
	if (meta)
		pd_labels_builder_set(bd->b, meta, value);
	if ((rc = pd_labels_builder_finish(bd->b, &bd->g->targets[bd->g->ntargets], bd->err)))
		return rc;
	bd->g->ntargets++;
	return 0;
}

/* A name as miekg/dns presents it: rooted, with its final dot. */
static int add_named(struct builder *bd, const char *host, int64_t port, const char *meta,
                     const char *port_meta, unsigned port_value)
{
	char rooted[NI_MAXHOST + 2], pbuf[16];
	int rc;
	snprintf(rooted, sizeof(rooted), "%s%s", host,
	         *host && host[strlen(host) - 1] == '.' ? "" : ".");
	if ((rc = add_target(bd, host, port, meta, rooted)))
		return rc;
	if (port_meta) {
		struct pd_labels *ls = bd->g->targets[bd->g->ntargets - 1], *nls = NULL;
		snprintf(pbuf, sizeof(pbuf), "%u", port_value);
		pd_labels_builder_reset(bd->b, ls);
		pd_labels_builder_set(bd->b, port_meta, pbuf);
		if ((rc = pd_labels_builder_finish(bd->b, &nls, bd->err)))
			return rc;
		pd_labels_destroy(ls);
		bd->g->targets[bd->g->ntargets - 1] = nls;
	}
	return 0;
}

/* Go's net.IP.String: an IPv4-mapped IPv6 address prints as IPv4. */
static void ip_string(int family, const void *addr, char *dst, size_t cap)
{
	const unsigned char *a = addr;
	static const unsigned char mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
	if (family == AF_INET6 && !memcmp(a, mapped, 12))
		inet_ntop(AF_INET, a + 12, dst, (socklen_t)cap);
	else
		inet_ntop(family, addr, dst, (socklen_t)cap);
}

static int parse_answer(struct builder *bd, enum pd_discovery_dns_type type, int64_t port,
                        const unsigned char *msg, int len)
{
	struct hostent *host = NULL;
	int st, rc = 0;

	switch (type) {
	case PD_DISCOVERY_DNS_SRV: {
		struct ares_srv_reply *srv = NULL;
		if ((st = ares_parse_srv_reply(msg, len, &srv)) != ARES_SUCCESS)
			break;
		for (struct ares_srv_reply *r = srv; r && !rc; r = r->next)
			rc = add_named(bd, r->host, r->port, "__meta_dns_srv_record_target",
			               "__meta_dns_srv_record_port", r->port);
		ares_free_data(srv);
		return rc;
	}
	case PD_DISCOVERY_DNS_MX: {
		struct ares_mx_reply *mx = NULL;
		if ((st = ares_parse_mx_reply(msg, len, &mx)) != ARES_SUCCESS)
			break;
		for (struct ares_mx_reply *r = mx; r && !rc; r = r->next)
			rc = add_named(bd, r->host, port, "__meta_dns_mx_record_target", NULL, 0);
		ares_free_data(mx);
		return rc;
	}
	case PD_DISCOVERY_DNS_NS:
		if ((st = ares_parse_ns_reply(msg, len, &host)) != ARES_SUCCESS)
			break;
		for (char **a = host->h_aliases; a && *a && !rc; a++)
			rc = add_named(bd, *a, port, "__meta_dns_ns_record_target", NULL, 0);
		ares_free_hostent(host);
		return rc;
	case PD_DISCOVERY_DNS_A:
	case PD_DISCOVERY_DNS_AAAA:
		st = type == PD_DISCOVERY_DNS_A
		         ? ares_parse_a_reply(msg, len, &host, NULL, NULL)
		         : ares_parse_aaaa_reply(msg, len, &host, NULL, NULL);
		if (st != ARES_SUCCESS)
			break;
		for (char **a = host->h_addr_list; a && *a && !rc; a++) {
			char ip[INET6_ADDRSTRLEN];
			ip_string(host->h_addrtype, *a, ip, sizeof(ip));
			rc = add_target(bd, ip, port, NULL, NULL);
		}
		ares_free_hostent(host);
		return rc;
	default:
		return pd_err_set(bd->err, PD_EINVAL, "unknown DNS-SD record type %d", (int)type);
	}
	/* a response with no records of the type is an answer without targets */
	if (st == ARES_ENODATA)
		return 0;
	if (st == ARES_ENOMEM)
		return pd_err_set(bd->err, PD_ENOMEM, "out of memory");
	return pd_err_set(bd->err, PD_EINVAL, "cannot read the DNS response: %s",
	                  ares_strerror(st));
}

/* A group with no targets yet: source name, empty common labels. */
static int group_init(struct pd_target_group *g, const char *name, struct pd_labels_builder *b,
                      struct pd_err *err)
{
	memset(g, 0, sizeof(*g));
	if (!(g->source = strdup(name)))
		return pd_err_set(err, PD_ENOMEM, "out of memory");
	pd_labels_builder_reset(b, NULL);
	return pd_labels_builder_finish(b, &g->labels, err);
}

int pd_discovery_dns_group(const char *name, enum pd_discovery_dns_type type, int64_t port,
                           const unsigned char *msg, size_t len, struct pd_target_group *out,
                           struct pd_err *err)
{
	struct builder bd = {.g = out, .name = name, .err = err};
	int rc;

	memset(out, 0, sizeof(*out));
	if (len > 65535) /* a DNS message is at most 64 KiB, even over TCP */
		return pd_err_set(err, PD_EINVAL, "DNS response of %zu bytes is too long", len);
	if (!(bd.b = pd_labels_builder_create(NULL)))
		return pd_err_set(err, PD_ENOMEM, "out of memory");
	if (!(rc = group_init(out, name, bd.b, err)))
		rc = parse_answer(&bd, type, port, msg, (int)len);
	pd_labels_builder_destroy(bd.b);
	if (rc)
		pd_discovery_dns_group_fini(out);
	return rc;
}

/* ---- the server of --discovery.dns.server ------------------------------------------ */

/* Normalises server into "IP:PORT" / "[IP6]:PORT" for c-ares (out may be NULL). */
static int parse_server(const char *arg, char *out, size_t cap, struct pd_err *err)
{
	const char *server = arg;
	char host[INET6_ADDRSTRLEN + 1];
	const char *port = NULL, *end;
	unsigned char addr[16];
	int v6 = 0;
	long pn = 53;

	if (server[0] == '[') {
		end = strchr(server, ']');
		if (!end || (end[1] && end[1] != ':'))
			goto bad;
		v6 = 1;
		port = end[1] ? end + 2 : NULL;
		server++;
	} else {
		end = strrchr(server, ':');
		if (end && strchr(server, ':') != end) { /* a bare IPv6 address */
			end = server + strlen(server);
			v6 = 1;
		} else if (end) {
			port = end + 1;
		} else {
			end = server + strlen(server);
		}
	}
	if ((size_t)(end - server) >= sizeof(host) || end == server)
		goto bad;
	memcpy(host, server, (size_t)(end - server));
	host[end - server] = '\0';
	if (inet_pton(v6 ? AF_INET6 : AF_INET, host, addr) != 1)
		goto bad;
	if (port) {
		char *e;
		pn = strtol(port, &e, 10);
		if (!*port || *e || pn < 1 || pn > 65535 || *port == '+' || *port == '-')
			goto bad;
	}
	if (out)
		snprintf(out, cap, v6 ? "[%s]:%ld" : "%s:%ld", host, pn);
	return 0;
bad:
	return pd_err_set(err, PD_EINVAL,
	                  "DNS server \"%s\" is not an IP address with an optional port, as "
	                  "127.0.0.1:53 or [::1]:5353",
	                  arg);
}

int pd_discovery_dns_server_check(const char *server, struct pd_err *err)
{
	return parse_server(server, NULL, 0, err);
}

int pd_sd_dns_server_norm(const char *server, char *out, size_t cap, struct pd_err *err)
{
	return parse_server(server, out, cap, err);
}

/* ---- refreshes ---------------------------------------------------------------------- */

static void on_answer(void *arg, int status, int timeouts, unsigned char *abuf, int alen)
{
	struct pd_sd_dns_name *n = arg;
	struct pd_sd_provider *p = n->p;
	const char *name = p->names[n->index];
	struct pd_err err = {0};
	char msg[PD_ERR_MSG_MAX + 128];
	int rc;

	if (status == ARES_EDESTRUCTION || n->done)
		return; /* the provider is being freed */
	n->done = 1;
	p->pending--;
	if (status == ARES_SUCCESS) {
		rc = pd_discovery_dns_group(name, p->qtype, p->port, abuf,
		                            alen > 0 ? (size_t)alen : 0, &n->next, &err);
		if (rc) {
			snprintf(msg, sizeof(msg), "could not resolve \"%s\": %s", name, err.msg);
			n->error = strdup(msg);
			if (!n->error)
				n->error = strdup("out of memory");
		}
		return;
	}
	if (status == ARES_ENODATA || status == ARES_ENOTFOUND) {
		/* the name has no such records, or does not exist: no targets */
		struct pd_labels_builder *b = pd_labels_builder_create(NULL);
		if (!b || group_init(&n->next, name, b, &err)) {
			pd_discovery_dns_group_fini(&n->next);
			n->error = strdup("out of memory");
		}
		pd_labels_builder_destroy(b);
		return;
	}
	if (status == ARES_ECANCELLED) {
		char d[32];
		snprintf(d, sizeof(d), "%llds", (long long)(p->interval_ms / 1000));
		if (p->interval_ms % 1000)
			snprintf(d, sizeof(d), "%lldms", (long long)p->interval_ms);
		snprintf(msg, sizeof(msg),
		         "could not resolve \"%s\": no answer within the refresh interval (%s)",
		         name, d);
	} else {
		snprintf(msg, sizeof(msg), "could not resolve \"%s\": %s", name,
		         ares_strerror(status));
	}
	n->error = strdup(msg);
}

/* The refresh is over: keep the new answers, and the last good groups of the names
 * that failed. */
static void finish(struct pd_sd_provider *p, struct pd_sd_counters *c)
{
	struct pd_target_group *view = NULL;
	struct pd_buf errs;
	size_t total = 0;
	int changed, nomem = 0;

	if (p->channel) {
		ares_destroy(p->channel); /* no query is left: calls nothing */
		p->channel = NULL;
	}
	c->refreshes++;
	pd_buf_init(&errs, 0);
	if (p->nnames && !(view = calloc(p->nnames, sizeof(*view))))
		nomem = 1;
	for (size_t i = 0; i < p->nnames; i++) {
		struct pd_sd_dns_name *n = &p->dns[i];
		int fresh = n->done && !n->error && n->next.source;
		if (!fresh) {
			c->dns_lookup_failures++;
			if (errs.len < 16 * 1024)
				pd_buf_printf(&errs, "%s%s", errs.len ? "; " : "",
				              n->error ? n->error : "no answer");
		}
		if (view && fresh)
			view[total++] = n->next;
		else if (view && n->has_group)
			view[total++] = n->group;
	}
	if (nomem) { /* keep everything as it was */
		for (size_t i = 0; i < p->nnames; i++)
			pd_discovery_dns_group_fini(&p->dns[i].next);
		pd_sd_provider_set_result(p, "out of memory");
		goto out;
	}
	/* the old view still points at the old groups */
	changed = !pd_sd_groups_equal(p->groups, p->ngroups, view, total);
	for (size_t i = 0; i < p->nnames; i++) {
		struct pd_sd_dns_name *n = &p->dns[i];
		if (n->done && !n->error && n->next.source) {
			pd_discovery_dns_group_fini(&n->group);
			n->group = n->next;
			memset(&n->next, 0, sizeof(n->next));
			n->has_group = 1;
		}
	}
	free(p->groups);
	p->groups = view;
	p->ngroups = total;
	if (changed)
		p->changed = 1;
	if (pd_buf_append(&errs, "", 1) == 0 && errs.len > 1)
		pd_sd_provider_set_result(p, (const char *)errs.data);
	else
		pd_sd_provider_set_result(p, NULL);
out:
	for (size_t i = 0; i < p->nnames; i++) {
		free(p->dns[i].error);
		p->dns[i].error = NULL;
		p->dns[i].done = 0;
	}
	pd_buf_fini(&errs);
}

void pd_sd_dns_start(struct pd_sd_provider *p, const char *server, int64_t now,
                     struct pd_sd_counters *c)
{
	struct ares_options o = {0};
	char msg[PD_ERR_MSG_MAX];
	int st;

	if (p->channel)
		return; /* the previous refresh is still running */
	for (size_t i = 0; i < p->nnames; i++) {
		p->dns[i].done = 0;
		p->dns[i].error = NULL;
	}
	o.timeout = PD_DISCOVERY_DNS_QUERY_TIMEOUT_MS;
	o.tries = 1; /* each server once, as Prometheus asks them */
	st = ares_init_options(&p->channel, &o, ARES_OPT_TIMEOUTMS | ARES_OPT_TRIES);
	if (st == ARES_SUCCESS && server)
		st = ares_set_servers_ports_csv(p->channel, server);
	if (st != ARES_SUCCESS) {
		if (p->channel)
			ares_destroy(p->channel);
		p->channel = NULL;
		snprintf(msg, sizeof(msg), "could not set up the DNS resolver: %s",
		         ares_strerror(st));
		for (size_t i = 0; i < p->nnames; i++) {
			c->dns_lookups++;
			p->dns[i].done = 1;
			p->dns[i].error = strdup(msg);
		}
		finish(p, c);
		return;
	}
	p->deadline = now + p->interval_ms;
	p->pending = p->nnames;
	for (size_t i = 0; i < p->nnames; i++) {
		c->dns_lookups++;
		/* may answer at once (a malformed name) */
		ares_search(p->channel, p->names[i], ns_c_in, type_codes[p->qtype], on_answer,
		            &p->dns[i]);
	}
	if (!p->pending)
		finish(p, c);
}

void pd_sd_dns_step(struct pd_sd_provider *p, int64_t now, struct pd_sd_counters *c)
{
	ares_socket_t socks[ARES_GETSOCK_MAXNUM];
	struct pollfd fds[ARES_GETSOCK_MAXNUM];
	int bits, n = 0;

	if (!p->channel)
		return;
	bits = ares_getsock(p->channel, socks, ARES_GETSOCK_MAXNUM);
	for (int i = 0; i < ARES_GETSOCK_MAXNUM; i++) {
		short ev = (short)((SOCK_READABLE(bits, i) ? POLLIN : 0) |
		                   (SOCK_WRITABLE(bits, i) ? POLLOUT : 0));
		if (!ev)
			continue;
		fds[n].fd = socks[i];
		fds[n].events = ev;
		fds[n].revents = 0;
		n++;
	}
	if (n && poll(fds, (nfds_t)n, 0) > 0) {
		for (int i = 0; i < n; i++) {
			short r = fds[i].revents;
			if (!r)
				continue;
			ares_process_fd(p->channel,
			                r & (POLLIN | POLLERR | POLLHUP) ? fds[i].fd
			                                                 : ARES_SOCKET_BAD,
			                r & POLLOUT ? fds[i].fd : ARES_SOCKET_BAD);
		}
	}
	ares_process_fd(p->channel, ARES_SOCKET_BAD, ARES_SOCKET_BAD); /* timeouts */
	if (p->pending && now >= p->deadline)
		ares_cancel(p->channel); /* answers ECANCELLED to what is left */
	if (!p->pending)
		finish(p, c);
}

size_t pd_sd_dns_wait(struct pd_sd_provider *p, struct curl_waitfd *w, int64_t now, int64_t *next)
{
	ares_socket_t socks[ARES_GETSOCK_MAXNUM];
	struct timeval tv, *t;
	size_t n = 0;
	int bits;

	if (!p->channel)
		return 0;
	bits = ares_getsock(p->channel, socks, ARES_GETSOCK_MAXNUM);
	for (int i = 0; i < ARES_GETSOCK_MAXNUM; i++) {
		short ev = (short)((SOCK_READABLE(bits, i) ? CURL_WAIT_POLLIN : 0) |
		                   (SOCK_WRITABLE(bits, i) ? CURL_WAIT_POLLOUT : 0));
		if (!ev)
			continue;
		w[n].fd = socks[i];
		w[n].events = ev;
		w[n].revents = 0;
		n++;
	}
	if ((t = ares_timeout(p->channel, NULL, &tv))) {
		int64_t at = now + (int64_t)t->tv_sec * 1000 + (t->tv_usec + 999) / 1000;
		if (at < *next)
			*next = at;
	}
	if (p->deadline < *next)
		*next = p->deadline;
	return n;
}

void pd_sd_dns_free(struct pd_sd_provider *p)
{
	if (p->channel) {
		ares_destroy(p->channel); /* answers EDESTRUCTION, which on_answer ignores */
		p->channel = NULL;
	}
	for (size_t i = 0; i < p->nnames; i++) {
		free(p->names ? p->names[i] : NULL);
		if (p->dns) {
			pd_discovery_dns_group_fini(&p->dns[i].group);
			pd_discovery_dns_group_fini(&p->dns[i].next);
			free(p->dns[i].error);
		}
	}
	free(p->names);
	free(p->dns);
	p->names = NULL;
	p->dns = NULL;
	p->nnames = 0;
}
