/* webcfg.c: the web configuration file (--web.config.file) as the server applies
 * it. As exporter-toolkit does, the file is read again for every request (basic
 * auth, response headers) and every new connection (TLS: the file and the
 * certificate, key and client CA files it names), so that a rotated certificate
 * or a changed password needs no restart; what was read is kept in a snapshot
 * that is rebuilt only when a byte changed. Verified credentials are cached (a
 * bcrypt check is slow by design) under a SHA-256 of user, stored hash and
 * password; the rate limit is a token bucket set up at start. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include "api_int.h"
#include "profd/config.h"

/* the most bytes read of a certificate, key or CA file */
#define WEB_MAX_PEM ((size_t)1 << 20)
#define WEB_CACHE 256 /* verified (user, password) pairs remembered */

struct api_web_snap {
	int refs; /* __atomic */
	struct pd_web_config *wc;
	uint8_t *text; /* the configuration file's bytes */
	size_t len;
	SSL_CTX *ctx; /* NULL until a connection needed it */
	uint8_t *pem[3]; /* cert, key, client CA as read when ctx was built */
	size_t pem_len[3];
};

struct cred {
	int used, ok;
	unsigned char key[32];
};

struct api_web {
	char *path;
	struct api_metrics *m;
	int tls; /* TLS was on at start: every connection is TLS */
	pthread_mutex_t mu;
	struct api_web_snap *cur;
	char last_err[PD_ERR_MSG_MAX];
	pthread_mutex_t bmu; /* one bcrypt check at a time: they are CPU-heavy */
	pthread_mutex_t cmu;
	struct cred cache[WEB_CACHE];
	size_t cnext;
	/* rate_limit: at most burst requests at once, one more every interval */
	pthread_mutex_t rmu;
	int limited;
	double tokens, burst, per_ns;
	int64_t last_ns;
};

static int64_t mono(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

void api_web_snap_put(struct api_web_snap *s)
{
	if (!s || __atomic_sub_fetch(&s->refs, 1, __ATOMIC_ACQ_REL) != 0)
		return;
	pd_web_config_destroy(s->wc);
	SSL_CTX_free(s->ctx);
	for (int i = 0; i < 3; i++) {
		if (s->pem[i])
			OPENSSL_cleanse(s->pem[i], s->pem_len[i]);
		free(s->pem[i]);
	}
	free(s->text);
	free(s);
}

const struct pd_web_config *api_web_snap_config(const struct api_web_snap *s)
{
	return s->wc;
}

SSL_CTX *api_web_snap_ctx(const struct api_web_snap *s)
{
	return s->ctx;
}

/* ---- the TLS context ------------------------------------------------------------ */

static int ssl_err(struct pd_err *err, const char *what)
{
	unsigned long e = ERR_peek_last_error();
	const char *r = e ? ERR_reason_error_string(e) : NULL;
	ERR_clear_error();
	return pd_err_set(err, PD_EINVAL, "%s: %s", what, r ? r : "no PEM data found");
}

/* Reads a PEM given inline (text) or as a file; *out NULL when neither is set. */
static int read_pem(const char *what, const char *text, const char *file, uint8_t **out,
                    size_t *len, struct pd_err *err)
{
	*out = NULL;
	*len = 0;
	if (text && *text) {
		*len = strlen(text);
		if (!(*out = (uint8_t *)strdup(text)))
			return pd_err_set(err, PD_ENOMEM, "out of memory");
		return 0;
	}
	if (!file || !*file)
		return 0;
	struct pd_err e = {0};
	if (pd_file_read(file, WEB_MAX_PEM, out, len, &e))
		return pd_err_set(err, PD_EINVAL, "failed to read %s (%s): %s", what, file, e.msg);
	return 0;
}

static int alpn_select(SSL *ssl, const unsigned char **out, unsigned char *outlen,
                       const unsigned char *in, unsigned int inlen, void *arg)
{
	(void)ssl;
	(void)arg;
	static const unsigned char ours[] = "\x08http/1.1";
	unsigned char *o;
	if (SSL_select_next_proto(&o, outlen, ours, sizeof(ours) - 1, in, inlen) !=
	    OPENSSL_NPN_NEGOTIATED)
		return SSL_TLSEXT_ERR_NOACK;
	*out = o;
	return SSL_TLSEXT_ERR_OK;
}

/* RequestClientCert and RequireAnyClientCert take any certificate unverified. */
static int accept_any(int ok, X509_STORE_CTX *x)
{
	(void)ok;
	(void)x;
	return 1;
}

/* Go's cipher suite names are IANA's, which OpenSSL calls standard names. TLS 1.3
 * suites are not configurable in Go and are left alone here too. */
static int set_ciphers(SSL_CTX *ctx, const struct pd_web_config *wc, struct pd_err *err)
{
	if (!wc->ncipher_suites)
		return 0;
	if (SSL_CTX_set_cipher_list(ctx, "ALL:@SECLEVEL=0") != 1)
		return ssl_err(err, "cipher_suites");
	STACK_OF(SSL_CIPHER) *all = SSL_CTX_get_ciphers(ctx);
	struct pd_buf b;
	pd_buf_init(&b, 0);
	for (size_t i = 0; i < wc->ncipher_suites; i++) {
		if (strncmp(wc->cipher_suites[i], "TLS_AES_", 8) == 0 ||
		    strncmp(wc->cipher_suites[i], "TLS_CHACHA20_", 13) == 0)
			continue;
		for (int k = 0; k < sk_SSL_CIPHER_num(all); k++) {
			const SSL_CIPHER *c = sk_SSL_CIPHER_value(all, k);
			const char *std = SSL_CIPHER_standard_name(c);
			if (std && strcmp(std, wc->cipher_suites[i]) == 0) {
				if (b.len)
					pd_buf_append(&b, ":", 1);
				pd_buf_append(&b, SSL_CIPHER_get_name(c), strlen(SSL_CIPHER_get_name(c)));
				break;
			}
		}
	}
	int rc = 0;
	if (b.len == 0) {
		/* only TLS 1.3 names (or none OpenSSL has): TLS 1.2 gets no suite */
		rc = SSL_CTX_set_cipher_list(ctx, "DEFAULT") == 1 ? 0 : ssl_err(err, "cipher_suites");
	} else {
		pd_buf_append(&b, "", 1);
		if (SSL_CTX_set_cipher_list(ctx, (const char *)b.data) != 1)
			rc = ssl_err(err, "cipher_suites");
	}
	pd_buf_fini(&b);
	return rc;
}

static int set_curves(SSL_CTX *ctx, const struct pd_web_config *wc, struct pd_err *err)
{
	if (!wc->ncurve_preferences)
		return 0;
	char list[128] = "";
	for (size_t i = 0; i < wc->ncurve_preferences; i++) {
		const char *c = wc->curve_preferences[i];
		const char *g = strcmp(c, "CurveP256") == 0   ? "P-256"
		                : strcmp(c, "CurveP384") == 0 ? "P-384"
		                : strcmp(c, "CurveP521") == 0 ? "P-521"
		                                              : "X25519";
		if (strlen(list) + strlen(g) + 2 > sizeof(list))
			break;
		if (*list)
			strcat(list, ":");
		strcat(list, g);
	}
	return SSL_CTX_set1_groups_list(ctx, list) == 1 ? 0 : ssl_err(err, "curve_preferences");
}

static int load_keypair(SSL_CTX *ctx, const uint8_t *cert, size_t clen, const uint8_t *key,
                        size_t klen, struct pd_err *err)
{
	BIO *b = BIO_new_mem_buf(cert, (int)clen);
	X509 *x = b ? PEM_read_bio_X509_AUX(b, NULL, NULL, NULL) : NULL;
	if (!x || SSL_CTX_use_certificate(ctx, x) != 1) {
		X509_free(x);
		BIO_free(b);
		return ssl_err(err, "failed to load X509KeyPair: certificate");
	}
	X509_free(x);
	X509 *extra;
	while ((extra = PEM_read_bio_X509(b, NULL, NULL, NULL)))
		if (SSL_CTX_add0_chain_cert(ctx, extra) != 1) {
			X509_free(extra);
			BIO_free(b);
			return ssl_err(err, "failed to load X509KeyPair: certificate chain");
		}
	ERR_clear_error(); /* the end of the chain */
	BIO_free(b);
	b = BIO_new_mem_buf(key, (int)klen);
	EVP_PKEY *k = b ? PEM_read_bio_PrivateKey(b, NULL, NULL, NULL) : NULL;
	BIO_free(b);
	if (!k || SSL_CTX_use_PrivateKey(ctx, k) != 1) {
		EVP_PKEY_free(k);
		return ssl_err(err, "failed to load X509KeyPair: private key");
	}
	EVP_PKEY_free(k);
	if (SSL_CTX_check_private_key(ctx) != 1) {
		ERR_clear_error();
		return pd_err_set(err, PD_EINVAL,
		                  "failed to load X509KeyPair: private key does not match public key");
	}
	return 0;
}

static int load_client_ca(SSL_CTX *ctx, const uint8_t *ca, size_t len, struct pd_err *err)
{
	BIO *b = BIO_new_mem_buf(ca, (int)len);
	X509_STORE *st = SSL_CTX_get_cert_store(ctx);
	STACK_OF(X509_NAME) *names = sk_X509_NAME_new_null();
	int n = 0;
	X509 *x;
	while (b && names && (x = PEM_read_bio_X509(b, NULL, NULL, NULL))) {
		X509_STORE_add_cert(st, x);
		X509_NAME *nm = X509_NAME_dup(X509_get_subject_name(x));
		if (nm && !sk_X509_NAME_push(names, nm))
			X509_NAME_free(nm);
		X509_free(x);
		n++;
	}
	ERR_clear_error();
	BIO_free(b);
	if (!n) {
		sk_X509_NAME_pop_free(names, X509_NAME_free);
		return pd_err_set(err, PD_EINVAL, "client_ca_file: no PEM certificate found");
	}
	SSL_CTX_set_client_CA_list(ctx, names); /* takes names */
	return 0;
}

static int build_ctx(struct api_web_snap *s, struct pd_err *err)
{
	const struct pd_web_config *wc = s->wc;
	if (!wc->tls_enabled || !s->pem[0] || !s->pem[1])
		return pd_err_set(err, PD_EINVAL,
		                  "TLS was on when profd started, and the web configuration now has "
		                  "no %s: give cert_file and key_file",
		                  !s->pem[0] ? "certificate (cert_file or cert)" : "key (key_file or key)");
	SSL_CTX *ctx = SSL_CTX_new(TLS_server_method());
	if (!ctx)
		return ssl_err(err, "TLS");
	int rc = 0;
	if (wc->min_version < PD_WEB_TLS12)
		SSL_CTX_set_security_level(ctx, 0); /* OpenSSL refuses TLS 1.0 and 1.1 otherwise */
	if (SSL_CTX_set_min_proto_version(ctx, wc->min_version) != 1 ||
	    SSL_CTX_set_max_proto_version(ctx, wc->max_version) != 1)
		rc = ssl_err(err, "min_version/max_version");
	SSL_CTX_set_options(ctx, SSL_OP_NO_RENEGOTIATION | SSL_OP_NO_COMPRESSION |
	                             (wc->prefer_server_cipher_suites ? SSL_OP_CIPHER_SERVER_PREFERENCE
	                                                              : 0));
	SSL_CTX_set_session_id_context(ctx, (const unsigned char *)"profd", 5);
	SSL_CTX_set_alpn_select_cb(ctx, alpn_select, NULL);
	if (!rc)
		rc = set_ciphers(ctx, wc, err);
	if (!rc)
		rc = set_curves(ctx, wc, err);
	if (!rc)
		rc = load_keypair(ctx, s->pem[0], s->pem_len[0], s->pem[1], s->pem_len[1], err);
	if (!rc && s->pem[2])
		rc = load_client_ca(ctx, s->pem[2], s->pem_len[2], err);
	if (!rc) {
		switch (wc->client_auth) {
		case PD_WEB_NO_CLIENT_CERT:
			SSL_CTX_set_verify(ctx, SSL_VERIFY_NONE, NULL);
			break;
		case PD_WEB_REQUEST_CLIENT_CERT:
			SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, accept_any);
			break;
		case PD_WEB_REQUIRE_ANY_CLIENT_CERT:
			SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, accept_any);
			break;
		case PD_WEB_VERIFY_CLIENT_CERT_IF_GIVEN:
			SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
			break;
		case PD_WEB_REQUIRE_AND_VERIFY_CLIENT_CERT:
			SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, NULL);
			break;
		}
	}
	if (rc) {
		SSL_CTX_free(ctx);
		return rc;
	}
	s->ctx = ctx;
	return 0;
}

/* ---- snapshots ------------------------------------------------------------------ */

static int same_bytes(const uint8_t *a, size_t al, const uint8_t *b, size_t bl)
{
	return al == bl && (al == 0 || memcmp(a, b, al) == 0);
}

/* Builds a snapshot from the file's bytes (taken) and, with tls, the files it names
 * and a TLS context. */
static int snap_new(const char *path, uint8_t *text, size_t len, int tls,
                    struct api_web_snap **out, struct pd_err *err)
{
	struct api_web_snap *s = calloc(1, sizeof(*s));
	if (!s) {
		free(text);
		return pd_err_set(err, PD_ENOMEM, "out of memory");
	}
	s->refs = 1;
	s->text = text;
	s->len = len;
	char *dir = strdup(path);
	char *slash = dir ? strrchr(dir, '/') : NULL;
	if (slash)
		*slash = 0;
	int rc = pd_web_config_parse((const char *)text, len, path, slash ? dir : ".", &s->wc, err);
	free(dir);
	if (!rc && tls) {
		const struct pd_web_config *wc = s->wc;
		rc = read_pem("cert_file", wc->cert, wc->cert_file, &s->pem[0], &s->pem_len[0], err);
		if (!rc)
			rc = read_pem("key_file", wc->key, wc->key_file, &s->pem[1], &s->pem_len[1], err);
		if (!rc)
			rc = read_pem("client_ca_file", wc->client_ca, wc->client_ca_file, &s->pem[2],
			              &s->pem_len[2], err);
		if (!rc)
			rc = build_ctx(s, err);
	}
	if (rc) {
		api_web_snap_put(s);
		return rc;
	}
	*out = s;
	return 0;
}

/* Logs an error the first time it is seen in a row, so that a broken file does not
 * flood the log with one line per request. */
static void log_once(struct api_web *w, const char *msg)
{
	pthread_mutex_lock(&w->m->mu);
	w->m->c.web_config_failures++;
	pthread_mutex_unlock(&w->m->mu);
	pthread_mutex_lock(&w->mu);
	int fresh = strcmp(w->last_err, msg) != 0;
	if (fresh)
		snprintf(w->last_err, sizeof(w->last_err), "%s", msg);
	pthread_mutex_unlock(&w->mu);
	if (fresh)
		pd_log_error("api", "unable to apply the web configuration", "err=%s", msg);
}

struct api_web_snap *api_web_get(struct api_web *w, int for_connection)
{
	int tls = for_connection && w->tls;
	struct pd_err err = {0};
	uint8_t *text;
	size_t len;
	if (pd_file_read(w->path, PD_CONFIG_MAX_FILE_SIZE, &text, &len, &err)) {
		log_once(w, err.msg);
		return NULL;
	}
	pthread_mutex_lock(&w->mu);
	struct api_web_snap *cur = w->cur;
	int same = cur && same_bytes(cur->text, cur->len, text, len);
	if (same && !tls) {
		__atomic_add_fetch(&cur->refs, 1, __ATOMIC_ACQ_REL);
		pthread_mutex_unlock(&w->mu);
		free(text);
		return cur;
	}
	if (same && cur->ctx) {
		/* the same file: did a certificate, key or CA change? */
		const struct pd_web_config *wc = cur->wc;
		const char *files[3] = {wc->cert_file, wc->key_file, wc->client_ca_file};
		const char *inl[3] = {wc->cert, wc->key, wc->client_ca};
		int unchanged = 1;
		for (int i = 0; i < 3 && unchanged; i++) {
			if ((inl[i] && *inl[i]) || !files[i] || !*files[i])
				continue; /* inline PEM lives in the file already compared */
			uint8_t *b;
			size_t bl;
			struct pd_err e = {0};
			if (pd_file_read(files[i], WEB_MAX_PEM, &b, &bl, &e)) {
				unchanged = 0;
				break;
			}
			unchanged = same_bytes(b, bl, cur->pem[i], cur->pem_len[i]);
			OPENSSL_cleanse(b, bl);
			free(b);
		}
		if (unchanged) {
			__atomic_add_fetch(&cur->refs, 1, __ATOMIC_ACQ_REL);
			pthread_mutex_unlock(&w->mu);
			free(text);
			return cur;
		}
	}
	pthread_mutex_unlock(&w->mu);
	struct api_web_snap *s;
	if (snap_new(w->path, text, len, tls, &s, &err)) {
		log_once(w, err.msg);
		return NULL;
	}
	pthread_mutex_lock(&w->mu);
	w->last_err[0] = 0;
	struct api_web_snap *old = w->cur;
	/* a snapshot without a TLS context does not replace one with it for the
	 * same file: the next connection would only build it again */
	if (!(old && !s->ctx && old->ctx && same_bytes(old->text, old->len, s->text, s->len))) {
		__atomic_add_fetch(&s->refs, 1, __ATOMIC_ACQ_REL);
		w->cur = s;
	} else {
		old = NULL;
	}
	pthread_mutex_unlock(&w->mu);
	api_web_snap_put(old);
	return s;
}

int api_web_tls(const struct api_web *w)
{
	return w->tls;
}

int api_web_open(const char *path, struct api_metrics *m, struct api_web **out,
                 struct pd_err *err)
{
	*out = NULL;
	struct api_web *w = calloc(1, sizeof(*w));
	if (!w || !(w->path = strdup(path))) {
		free(w);
		return pd_err_set(err, PD_ENOMEM, "out of memory");
	}
	w->m = m;
	pthread_mutex_init(&w->mu, NULL);
	pthread_mutex_init(&w->bmu, NULL);
	pthread_mutex_init(&w->cmu, NULL);
	pthread_mutex_init(&w->rmu, NULL);
	uint8_t *text;
	size_t len;
	struct api_web_snap *s = NULL;
	int rc = pd_file_read(path, PD_CONFIG_MAX_FILE_SIZE, &text, &len, err);
	if (!rc)
		rc = snap_new(path, text, len, 0, &s, err);
	if (!rc && s->wc->tls_enabled) {
		api_web_snap_put(s);
		s = NULL;
		w->tls = 1;
		rc = pd_file_read(path, PD_CONFIG_MAX_FILE_SIZE, &text, &len, err);
		if (!rc)
			rc = snap_new(path, text, len, 1, &s, err);
	}
	if (rc) {
		api_web_close(w);
		return rc;
	}
	w->cur = s;
	if (s->wc->rate_limit_interval_ms > 0) {
		w->limited = 1;
		w->burst = w->tokens = (double)s->wc->rate_limit_burst;
		w->per_ns = (double)s->wc->rate_limit_interval_ms * 1e6;
		w->last_ns = mono();
	}
	*out = w;
	return 0;
}

void api_web_close(struct api_web *w)
{
	if (!w)
		return;
	api_web_snap_put(w->cur);
	OPENSSL_cleanse(w->cache, sizeof(w->cache));
	pthread_mutex_destroy(&w->mu);
	pthread_mutex_destroy(&w->bmu);
	pthread_mutex_destroy(&w->cmu);
	pthread_mutex_destroy(&w->rmu);
	free(w->path);
	free(w);
}

/* ---- requests ------------------------------------------------------------------- */

int api_web_rate_ok(struct api_web *w)
{
	if (!w->limited)
		return 1;
	pthread_mutex_lock(&w->rmu);
	int64_t now = mono();
	w->tokens += (double)(now - w->last_ns) / w->per_ns;
	if (w->tokens > w->burst)
		w->tokens = w->burst;
	w->last_ns = now;
	int ok = w->tokens >= 1;
	if (ok)
		w->tokens -= 1;
	pthread_mutex_unlock(&w->rmu);
	return ok;
}

int api_web_authorized(struct api_web *w, const struct api_web_snap *s, const char *authorization)
{
	const struct pd_web_config *wc = s->wc;
	if (!wc->nusers)
		return 1;
	char raw[1024];
	const char *user, *pass;
	if (api_basic_auth_parse(authorization, raw, sizeof(raw), &user, &pass))
		return 0;
	const char *hash = "";
	for (size_t i = 0; i < wc->nusers; i++)
		if (strcmp(wc->users[i].name, user) == 0)
			hash = wc->users[i].hash;
	/* the cache key: user, the hash it is checked against, password */
	unsigned char key[32];
	unsigned int kl = 0;
	EVP_MD_CTX *md = EVP_MD_CTX_new();
	int hashed = md && EVP_DigestInit_ex(md, EVP_sha256(), NULL) == 1 &&
	             EVP_DigestUpdate(md, user, strlen(user) + 1) == 1 &&
	             EVP_DigestUpdate(md, hash, strlen(hash) + 1) == 1 &&
	             EVP_DigestUpdate(md, pass, strlen(pass)) == 1 &&
	             EVP_DigestFinal_ex(md, key, &kl) == 1 && kl == sizeof(key);
	EVP_MD_CTX_free(md);
	if (hashed) {
		pthread_mutex_lock(&w->cmu);
		for (size_t i = 0; i < WEB_CACHE; i++)
			if (w->cache[i].used && memcmp(w->cache[i].key, key, sizeof(key)) == 0) {
				int ok = w->cache[i].ok;
				pthread_mutex_unlock(&w->cmu);
				OPENSSL_cleanse(raw, sizeof(raw));
				return ok;
			}
		pthread_mutex_unlock(&w->cmu);
	}
	pthread_mutex_lock(&w->bmu);
	int ok = pd_web_config_check_password(wc, user, pass);
	pthread_mutex_unlock(&w->bmu);
	pthread_mutex_lock(&w->m->mu);
	w->m->c.bcrypt_checks++;
	pthread_mutex_unlock(&w->m->mu);
	OPENSSL_cleanse(raw, sizeof(raw));
	if (hashed) {
		pthread_mutex_lock(&w->cmu);
		struct cred *c = &w->cache[w->cnext];
		w->cnext = (w->cnext + 1) % WEB_CACHE;
		c->used = 1;
		c->ok = ok;
		memcpy(c->key, key, sizeof(key));
		pthread_mutex_unlock(&w->cmu);
	}
	return ok;
}

const struct pd_web_user *api_web_user(const struct api_web_snap *s, const char *authorization)
{
	const struct pd_web_config *wc = s->wc;
	char raw[1024];
	const char *user, *pass;
	const struct pd_web_user *u = NULL;
	if (!wc->nusers || api_basic_auth_parse(authorization, raw, sizeof(raw), &user, &pass))
		return NULL;
	for (size_t i = 0; i < wc->nusers; i++)
		if (strcmp(wc->users[i].name, user) == 0)
			u = &wc->users[i];
	OPENSSL_cleanse(raw, sizeof(raw));
	return u;
}
