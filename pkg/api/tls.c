/* tls.c: TLS for the HTTP server. libmicrohttpd takes its TLS settings once per
 * daemon, while exporter-toolkit's web configuration is read again for every
 * connection (a rotated certificate needs no restart) and has client
 * certificate policies and allowed SANs that libmicrohttpd does not offer. So
 * profd ends TLS itself, with OpenSSL: each accepted connection gets one thread
 * that makes the handshake with the SSL_CTX current at accept time, then copies
 * bytes between the client and one end of a socket pair whose other end is the
 * connection libmicrohttpd serves in plain HTTP. Either side closing ends both.
 *
 * A plain-HTTP request on the TLS port gets the answer Go's server gives it
 * (400, "Client sent an HTTP request to an HTTPS server."). */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include "api_int.h"
#include "profd/config.h"

#define TLS_BUF (16 * 1024)

struct pump {
	struct api_tls_pool *pool;
	SSL *ssl;
	struct api_web *web;
	struct api_web_snap *snap; /* the configuration for the handshake, released after it */
	int cfd;                   /* the client's TCP socket */
	int pfd;                   /* our end of the pair; libmicrohttpd has the other */
	int64_t deadline_ns;       /* for the handshake */
	char peer[64];
	unsigned char up[TLS_BUF];   /* from the client, for libmicrohttpd */
	unsigned char down[TLS_BUF]; /* from libmicrohttpd, for the client */
};

static int64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void set_nonblock(int fd)
{
	int fl = fcntl(fd, F_GETFL);
	if (fl >= 0)
		fcntl(fd, F_SETFL, fl | O_NONBLOCK);
}

/* Waits until the client is ready as asked (POLLIN or POLLOUT), the plain side
 * closes or has data (it never should before the handshake ends: then it was cut
 * off), or the deadline passes. 0: ready; -1: give up. */
static int wait_client(struct pump *p, short ev)
{
	int64_t left = p->deadline_ns - now_ns();
	if (left <= 0)
		return -1;
	struct pollfd pf[2] = {{p->cfd, ev, 0}, {p->pfd, POLLIN, 0}};
	int ms = (int)(left / 1000000) + 1;
	int n = poll(pf, 2, ms > 1000 ? 1000 : ms);
	if (n < 0)
		return errno == EINTR ? 0 : -1;
	if (pf[1].revents)
		return -1;
	if (pf[0].revents & (POLLERR | POLLNVAL))
		return -1;
	return 0;
}

/* The first bytes of a TLS connection are a handshake record (22); an HTTP
 * request starts with a method's letters. Answers plain HTTP as Go does. */
static int plain_http(struct pump *p)
{
	unsigned char b[5];
	for (;;) {
		ssize_t n = recv(p->cfd, b, sizeof(b), MSG_PEEK);
		if (n > 0) {
			if (b[0] == 22 || b[0] < 'A' || b[0] > 'Z')
				return 0;
			static const char msg[] = "HTTP/1.0 400 Bad Request\r\n\r\n"
			                          "Client sent an HTTP request to an HTTPS server.\n";
			ssize_t w = send(p->cfd, msg, sizeof(msg) - 1, MSG_NOSIGNAL);
			(void)w;
			/* read what the client sent before closing, or the close would reset
			 * the connection and the client might lose the answer */
			shutdown(p->cfd, SHUT_WR);
			char sink[4096];
			while (wait_client(p, POLLIN) == 0 && recv(p->cfd, sink, sizeof(sink), 0) > 0)
				;
			return 1;
		}
		if (n == 0)
			return -1;
		if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
			return -1;
		if (wait_client(p, POLLIN))
			return -1;
	}
}

/* exporter-toolkit's client_allowed_sans: the client certificate must name one of
 * them as a DNS name, email address, IP address or URI. */
static int san_allowed(X509 *cert, const struct pd_web_config *wc)
{
	if (!wc->nclient_allowed_sans)
		return 1;
	if (!cert)
		return 0;
	GENERAL_NAMES *names = X509_get_ext_d2i(cert, NID_subject_alt_name, NULL, NULL);
	if (!names)
		return 0;
	int ok = 0;
	for (int i = 0; i < sk_GENERAL_NAME_num(names) && !ok; i++) {
		const GENERAL_NAME *g = sk_GENERAL_NAME_value(names, i);
		char buf[INET6_ADDRSTRLEN + 1] = {0};
		const char *s = NULL;
		size_t len = 0;
		if (g->type == GEN_DNS || g->type == GEN_EMAIL || g->type == GEN_URI) {
			s = (const char *)ASN1_STRING_get0_data(g->d.ia5);
			len = (size_t)ASN1_STRING_length(g->d.ia5);
		} else if (g->type == GEN_IPADD) {
			int l = ASN1_STRING_length(g->d.ip);
			const unsigned char *ip = ASN1_STRING_get0_data(g->d.ip);
			if ((l == 4 && inet_ntop(AF_INET, ip, buf, sizeof(buf))) ||
			    (l == 16 && inet_ntop(AF_INET6, ip, buf, sizeof(buf)))) {
				s = buf;
				len = strlen(buf);
			}
		}
		for (size_t k = 0; s && k < wc->nclient_allowed_sans && !ok; k++)
			ok = strlen(wc->client_allowed_sans[k]) == len &&
			     memcmp(wc->client_allowed_sans[k], s, len) == 0;
	}
	GENERAL_NAMES_free(names);
	return ok;
}

static const char *ssl_why(void)
{
	unsigned long e = ERR_peek_last_error();
	const char *r = e ? ERR_reason_error_string(e) : NULL;
	return r ? r : "connection closed";
}

static int handshake(struct pump *p)
{
	SSL_set_mode(p->ssl, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
	int r = plain_http(p);
	if (r) {
		if (r > 0)
			pd_log_debug("api", "an HTTP request on the TLS port", "remote=%s",
			             p->peer);
		return -1;
	}
	for (;;) {
		ERR_clear_error();
		int rc = SSL_accept(p->ssl);
		if (rc == 1)
			break;
		int e = SSL_get_error(p->ssl, rc);
		if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) {
			if (wait_client(p, e == SSL_ERROR_WANT_READ ? POLLIN : POLLOUT) == 0)
				continue;
			pd_log_debug("api", "TLS handshake error", "remote=%s err=%s", p->peer,
			             "timed out or cut off");
			return -1;
		}
		pd_log_debug("api", "TLS handshake error", "remote=%s err=%s", p->peer, ssl_why());
		return -1;
	}
	X509 *cert = SSL_get1_peer_certificate(p->ssl);
	int ok = san_allowed(cert, api_web_snap_config(p->snap));
	X509_free(cert);
	if (!ok) {
		pd_log_debug("api", "TLS handshake error", "remote=%s err=%s", p->peer,
		             "could not find allowed SANs in client cert");
		return -1;
	}
	return 0;
}

/* Copies bytes both ways until either side ends. */
static void pump(struct pump *p)
{
	unsigned char *up = p->up, *down = p->down;
	size_t ulen = 0, uoff = 0; /* from the client, for libmicrohttpd */
	size_t dlen = 0, doff = 0; /* from libmicrohttpd, for the client */
	int plain_eof = 0;
	for (;;) {
		short cev = 0, pev = 0;
		int progress = 0;
		/* client → plain */
		if (ulen == 0) {
			ERR_clear_error();
			int n = SSL_read(p->ssl, up, TLS_BUF);
			if (n > 0) {
				ulen = (size_t)n;
				uoff = 0;
				progress = 1;
			} else {
				int e = SSL_get_error(p->ssl, n);
				if (e == SSL_ERROR_WANT_READ)
					cev |= POLLIN;
				else if (e == SSL_ERROR_WANT_WRITE)
					cev |= POLLOUT;
				else
					return; /* closed, or an error */
			}
		}
		if (ulen) {
			ssize_t w = send(p->pfd, up + uoff, ulen - uoff, MSG_NOSIGNAL);
			if (w > 0) {
				uoff += (size_t)w;
				if (uoff == ulen)
					ulen = uoff = 0;
				progress = 1;
			} else if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
				pev |= POLLOUT;
			} else if (w < 0 && errno != EINTR) {
				return;
			}
		}
		/* plain → client */
		if (dlen == 0 && !plain_eof) {
			ssize_t n = recv(p->pfd, down, TLS_BUF, 0);
			if (n > 0) {
				dlen = (size_t)n;
				doff = 0;
				progress = 1;
			} else if (n == 0) {
				plain_eof = 1;
			} else if (errno == EAGAIN || errno == EWOULDBLOCK) {
				pev |= POLLIN;
			} else if (errno != EINTR) {
				plain_eof = 1;
			}
		}
		if (dlen) {
			ERR_clear_error();
			int w = SSL_write(p->ssl, down + doff, (int)(dlen - doff));
			if (w > 0) {
				doff += (size_t)w;
				if (doff == dlen)
					dlen = doff = 0;
				progress = 1;
			} else {
				int e = SSL_get_error(p->ssl, w);
				if (e == SSL_ERROR_WANT_WRITE)
					cev |= POLLOUT;
				else if (e == SSL_ERROR_WANT_READ)
					cev |= POLLIN;
				else
					return;
			}
		}
		if (plain_eof && dlen == 0) {
			ERR_clear_error();
			SSL_shutdown(p->ssl); /* close_notify; no wait for the client's */
			return;
		}
		if (progress)
			continue;
		struct pollfd pf[2] = {{p->cfd, cev, 0}, {p->pfd, pev, 0}};
		if (poll(pf, 2, -1) < 0 && errno != EINTR)
			return;
		if ((pf[0].revents & (POLLERR | POLLNVAL)) || (pf[1].revents & (POLLERR | POLLNVAL)))
			return;
		if ((pf[0].revents & POLLHUP) && !(pf[0].revents & POLLIN) && !(cev & POLLOUT))
			return;
	}
}

static void *pump_main(void *arg)
{
	struct pump *p = arg;
	/* the web configuration and the files it names, read again for this connection */
	p->snap = api_web_get(p->web, 1);
	if (p->snap && (p->ssl = SSL_new(api_web_snap_ctx(p->snap))) &&
	    SSL_set_fd(p->ssl, p->cfd) == 1 && handshake(p) == 0) {
		api_web_snap_put(p->snap);
		p->snap = NULL;
		pump(p);
	} else {
		pthread_mutex_lock(&p->pool->m->mu);
		p->pool->m->c.tls_handshake_errors++;
		pthread_mutex_unlock(&p->pool->m->mu);
	}
	api_web_snap_put(p->snap);
	SSL_free(p->ssl);
	close(p->cfd);
	close(p->pfd);
	struct api_tls_pool *pool = p->pool;
	free(p);
	pthread_mutex_lock(&pool->mu);
	if (--pool->running == 0)
		pthread_cond_broadcast(&pool->cv);
	pthread_mutex_unlock(&pool->mu);
	return NULL;
}

void api_tls_pool_init(struct api_tls_pool *pool, struct api_metrics *m)
{
	pool->m = m;
	pthread_mutex_init(&pool->mu, NULL);
	pthread_cond_init(&pool->cv, NULL);
	pool->running = 0;
}

void api_tls_pool_wait(struct api_tls_pool *pool)
{
	pthread_mutex_lock(&pool->mu);
	while (pool->running)
		pthread_cond_wait(&pool->cv, &pool->mu);
	pthread_mutex_unlock(&pool->mu);
	pthread_cond_destroy(&pool->cv);
	pthread_mutex_destroy(&pool->mu);
}

int api_tls_start(struct api_tls_pool *pool, struct api_web *web, int cfd,
                  const struct sockaddr_storage *addr, int64_t deadline_ns, int *plain_fd)
{
	int sv[2];
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
		return -1;
	struct pump *p = calloc(1, sizeof(*p));
	if (!p) {
		close(sv[0]);
		close(sv[1]);
		return -1;
	}
	set_nonblock(cfd);
	set_nonblock(sv[0]);
	p->pool = pool;
	p->web = web;
	p->cfd = cfd;
	p->pfd = sv[0];
	p->deadline_ns = deadline_ns;
	if (addr->ss_family == AF_INET) {
		const struct sockaddr_in *a = (const struct sockaddr_in *)addr;
		char ip[INET_ADDRSTRLEN] = "?";
		inet_ntop(AF_INET, &a->sin_addr, ip, sizeof(ip));
		snprintf(p->peer, sizeof(p->peer), "%s:%u", ip, ntohs(a->sin_port));
	} else if (addr->ss_family == AF_INET6) {
		const struct sockaddr_in6 *a = (const struct sockaddr_in6 *)addr;
		char ip[INET6_ADDRSTRLEN] = "?";
		inet_ntop(AF_INET6, &a->sin6_addr, ip, sizeof(ip));
		snprintf(p->peer, sizeof(p->peer), "[%s]:%u", ip, ntohs(a->sin6_port));
	}
	pthread_attr_t at;
	pthread_attr_init(&at);
	pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
	pthread_attr_setstacksize(&at, 256 * 1024);
	pthread_mutex_lock(&pool->mu);
	pool->running++;
	pthread_mutex_unlock(&pool->mu);
	pthread_t t;
	int rc = pthread_create(&t, &at, pump_main, p);
	pthread_attr_destroy(&at);
	if (rc) {
		pthread_mutex_lock(&pool->mu);
		pool->running--;
		pthread_mutex_unlock(&pool->mu);
		free(p);
		close(sv[0]);
		close(sv[1]);
		return -1;
	}
	*plain_fd = sv[1];
	return 0;
}
