/* lex.h: the PromQL lexer's tokens and the parser state it advances, shared by
 * the lexer (lex.c) and the parser (parse.c). Private to pkg/promql. */
#ifndef PROFD_PROMQL_LEX_H
#define PROFD_PROMQL_LEX_H

#include <stddef.h>
#include <stdint.h>

#include "promql_int.h"

enum tt {
	T_EOF = 0,
	T_IDENT,
	T_NUMBER,
	T_DURATION,
	T_STRING,
	T_LPAREN,
	T_RPAREN,
	T_LBRACE,
	T_LBRACKET,
	T_RBRACKET,
	T_COMMA,
	T_COLON,
	T_AT,
	T_OP,
	T_BAD,
};

struct tok {
	enum tt type;
	size_t pos, len;
	int op;      /* T_OP: enum pd_pq_op */
	double num;  /* T_NUMBER */
	int64_t dur; /* T_DURATION, ms */
};

struct parser {
	const char *s;
	size_t len;
	size_t i; /* lexer position */
	struct tok tok;
	size_t depth, max_depth;
	struct pd_promql_err *err;
	int failed;
};

/* Records a parse error at byte offset pos, as Prometheus's ParseErr prints it
 * ("line:col: parse error: ..."), the first one only; returns PD_EINVAL. */
int pd_pq_perr(struct parser *p, size_t pos, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Reads the next token into p->tok: T_BAD, with the reason in tok.op, for input
 * that is not a token (pd_pq_unexpected reports it). */
void pd_pq_next(struct parser *p);
/* 1 when the current token is the identifier word (case-insensitive, as keywords are). */
int pd_pq_tok_is(const struct parser *p, const char *word);
/* Records "unexpected <token> in <context>" at the current token; PD_EINVAL. */
int pd_pq_unexpected(struct parser *p, const char *context);
/* The current T_STRING token unquoted (Go's strconv.Unquote rules) into *out,
 * malloc'd; an error is recorded on bad escapes. */
int pd_pq_unquote(struct parser *p, char **out);

#endif
