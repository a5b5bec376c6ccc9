/*
 * find.c - observe's find (docs/protocol.md, "Find in the outline"): the
 * outline's lines that hold a text or match a regular expression, each with a
 * few lines around it and the lines above it that it sits in (its path from
 * the document), so an agent locates an element and its ref without reading
 * the whole outline.
 *
 * Text is matched without regard to case, for any script: both sides are
 * lowered code point by code point in the C.UTF-8 locale. A regular
 * expression is glibc's POSIX extended one, with what agents write out of
 * habit from JavaScript: "/re/i" for no case, \d and \D, (?:...), and \d \s \w
 * inside brackets. Back-references are refused (glibc's matcher is
 * exponential with them), and so are repetitions that would make glibc's
 * compiled form huge: it copies an atom once for each count
 * ((a{100}){100}{100}) and twice for each '+' (a+++...+ doubles with every
 * '+', which the fuzzer found). The pattern's size once unrolled is bounded,
 * so a bad pattern costs a refusal, not the worker's memory.
 *
 * Pure functions of their arguments: any thread (uselocale is per thread).
 */
#define _GNU_SOURCE
#include "registry/registry.h"
#include "registry/reg_int.h"

#include <limits.h>
#include <locale.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <wchar.h>
#include <wctype.h>

#define FIND_PATTERN_MAX 1000 /* bytes of a text or a regex */
/* A regex's atoms once its repetitions are unrolled: what glibc compiles, and
   what its matcher may walk for each character of the outline (500 atoms
   over a 5,000-line outline stays well under a second at worst) */
#define FIND_UNROLLED_MAX 500
#define FIND_SNIPPETS_MAX 100   /* snippets in one answer; the rest are counted */
#define FIND_BUDGET_MS 1000     /* a regex's time over one outline (checked between lines) */

struct reg_find {
    int regex;
    regex_t re;
    char *lowered; /* the text, lowered */
    size_t n_lowered;
    locale_t utf8; /* C.UTF-8, or 0 where it is missing (ASCII case only) */
};

/* ---- lowering ---- */

/* s (n bytes) lowered into b, code point by code point; bytes that are not
   UTF-8 are kept as they are. ASCII only without the locale. */
static int lower_into(locale_t utf8, const char *s, size_t n, rg_buf *b)
{
    rg_buf_reset(b);
    locale_t old = utf8 ? uselocale(utf8) : 0;
    mbstate_t st;
    memset(&st, 0, sizeof st);
    size_t i = 0;
    while (i < n) {
        unsigned char c0 = (unsigned char)s[i];
        if (c0 < 0x80 || !utf8) {
            char c = c0 >= 'A' && c0 <= 'Z' ? (char)(c0 + 32) : (char)c0;
            rg_buf_append(b, &c, 1);
            i++;
            continue;
        }
        wchar_t wc;
        size_t k = mbrtowc(&wc, s + i, n - i, &st);
        if (k == (size_t)-1 || k == (size_t)-2 || k == 0) {
            rg_buf_append(b, s + i, 1);
            memset(&st, 0, sizeof st);
            i++;
            continue;
        }
        char out[MB_LEN_MAX];
        mbstate_t ost;
        memset(&ost, 0, sizeof ost);
        size_t m = wcrtomb(out, (wchar_t)towlower((wint_t)wc), &ost);
        if (m == (size_t)-1)
            rg_buf_append(b, s + i, k);
        else
            rg_buf_append(b, out, m);
        i += k;
    }
    if (utf8)
        uselocale(old);
    return b->failed ? -1 : 0;
}

/* ---- the regex ---- */

/* Past the bracket expression at s ('['): its ']', which may come first
   ("[]a]", "[^]a]"), and the classes in it ("[[:alpha:]]") taken whole. */
static const char *bracket_end(const char *s)
{
    s++;
    if (*s == '^')
        s++;
    if (*s == ']')
        s++;
    while (*s && *s != ']') {
        if (*s == '[' && (s[1] == ':' || s[1] == '.' || s[1] == '=')) {
            const char *e = strchr(s + 2, s[1]);
            while (e && e[1] != ']')
                e = strchr(e + 1, s[1]);
            if (!e)
                return s + strlen(s);
            s = e + 2;
            continue;
        }
        s++;
    }
    return *s ? s + 1 : s;
}

/* The unrolled size of one level of a pattern, from *p to its ')' or end; -1
   when it passes max. Escapes and bracket expressions count as one atom. */
static long unrolled(const char **p, long max)
{
    long total = 0, last = 0;
    while (**p && **p != ')') {
        const char *s = *p;
        if (*s == '(') {
            (*p)++;
            last = unrolled(p, max);
            if (last < 0)
                return -1;
            if (**p == ')')
                (*p)++;
            total += last;
        } else if (*s == '{') {
            /* {m}, {m,} or {m,n}: the last atom m (or n) times over, m+1 when open */
            char *e;
            long m = strtol(s + 1, &e, 10), n;
            if (m > max) /* strtol's LONG_MAX included: refused below */
                m = max + 1;
            n = m;
            if (*e == ',' && e[1] == '}')
                n = m + 1;
            else if (*e == ',')
                n = strtol(e + 1, &e, 10);
            while (**p && **p != '}')
                (*p)++;
            if (**p)
                (*p)++;
            long times = n > m ? n : m;
            if (times < 1)
                times = 1;
            if (times > max || (last > 0 && times > max / last))
                return -1;
            total += last * (times - 1);
            last *= times;
        } else if (*s == '[') {
            *p = bracket_end(s);
            last = 1;
            total++;
        } else if (*s == '+') {
            /* glibc compiles x+ as x x*: the last atom twice, and x++ four times */
            (*p)++;
            if (last > max / 2)
                return -1;
            total += last;
            last *= 2;
        } else {
            *p += *s == '\\' && s[1] ? 2 : 1;
            last = strchr("*?|", *s) ? (*s == '|' ? 0 : last) : 1;
            total += strchr("*?|", *s) ? 0 : 1;
        }
        if (total > max)
            return -1;
    }
    return total;
}

static int is_quantifier(const char *s)
{
    return *s == '*' || *s == '+' || *s == '?' || (*s == '{' && s[1] >= '0' && s[1] <= '9');
}

/*
 * JavaScript habits into POSIX ERE: \d and \D, (?:...), lazy quantifiers (the
 * '?' dropped: whether a line matches is the same), \d \s \w inside
 * brackets. RG_EBADREQ for a back-reference, and for a quantifier right after
 * another (a++, a*{2}): glibc's compiler takes minutes over a few of those.
 */
static int translate(const char *in, rg_buf *out, char *err, size_t errlen)
{
    int quant = 0; /* 1 after a quantifier, 2 after a lazy one */
    for (const char *s = in; *s;) {
        if (is_quantifier(s)) {
            if (quant == 1 && *s == '?') { /* lazy */
                quant = 2;
                s++;
                continue;
            }
            if (quant) {
                return rg_errf(err, errlen, RG_EBADREQ,
                               "args.find: a quantifier right after another (%.8s) is not "
                               "supported",
                               s);
            }
            const char *e = *s == '{' ? strchr(s, '}') : NULL;
            size_t n = e ? (size_t)(e - s) + 1 : *s == '{' ? strlen(s) : 1;
            rg_buf_append(out, s, n);
            s += n;
            quant = 1;
            continue;
        }
        quant = 0;
        if (*s == '[') {
            const char *e = bracket_end(s);
            for (; s < e; s++) {
                if (*s == '\\' && (s[1] == 'd' || s[1] == 's' || s[1] == 'w') && s + 1 < e) {
                    rg_buf_puts(out, s[1] == 'd'   ? "0-9"
                                     : s[1] == 's' ? "[:space:]"
                                                   : "[:alnum:]_");
                    s++;
                } else {
                    rg_buf_append(out, s, 1);
                }
            }
            continue;
        }
        if (*s == '(' && s[1] == '?' && s[2] == ':') { /* a group that captures nothing */
            rg_buf_puts(out, "(");
            s += 3;
        } else if (*s == '\\' && s[1] >= '1' && s[1] <= '9') {
            return rg_errf(err, errlen, RG_EBADREQ,
                           "args.find: back-references (\\%c) are not supported", s[1]);
        } else if (*s == '\\' && (s[1] == 'd' || s[1] == 'D')) {
            rg_buf_puts(out, s[1] == 'd' ? "[0-9]" : "[^0-9]");
            s += 2;
        } else {
            size_t n = *s == '\\' && s[1] ? 2 : 1;
            rg_buf_append(out, s, n);
            s += n;
        }
    }
    return out->failed ? RG_ENOMEM : 0;
}

static int compile_regex(reg_find *f, const char *pattern, char *err, size_t errlen)
{
    /* "/re/flags", as JavaScript writes it: i is honoured, the others mean
       nothing for one line at a time */
    const char *body = pattern;
    size_t len = strlen(pattern);
    int icase = 0;
    char *slashed = NULL;
    const char *close = len > 1 && pattern[0] == '/' ? strrchr(pattern, '/') : NULL;
    if (close && close != pattern && strspn(close + 1, "gimsuy") == strlen(close + 1)) {
        icase = strchr(close + 1, 'i') != NULL;
        if (!(slashed = strndup(pattern + 1, (size_t)(close - pattern - 1))))
            return RG_ENOMEM;
        body = slashed;
    }
    const char *scan = body;
    long size = unrolled(&scan, FIND_UNROLLED_MAX);
    while (size >= 0 && *scan == ')') { /* an unbalanced ')': regcomp says so below */
        scan++;
        size = unrolled(&scan, FIND_UNROLLED_MAX);
    }
    if (size < 0) {
        free(slashed);
        snprintf(err, errlen,
                 "args.find: the regex is too large once its repetitions are unrolled "
                 "(at most %d atoms)",
                 FIND_UNROLLED_MAX);
        return RG_EBADREQ;
    }
    rg_buf ere;
    rg_buf_init(&ere);
    int rc = translate(body, &ere, err, errlen);
    free(slashed);
    if (rc < 0) {
        rg_buf_destroy(&ere);
        return rc;
    }
    locale_t old = f->utf8 ? uselocale(f->utf8) : 0;
    int flags = REG_EXTENDED | REG_NOSUB | (icase ? REG_ICASE : 0);
    int e = regcomp(&f->re, ere.data ? ere.data : "", flags);
    if (e) {
        char why[160];
        regerror(e, &f->re, why, sizeof why);
        snprintf(err, errlen, "args.find is not a valid regular expression (POSIX extended): %s",
                 why);
    }
    if (f->utf8)
        uselocale(old);
    rg_buf_destroy(&ere);
    return e ? RG_EBADREQ : 0;
}

int reg_find_new(const char *pattern, int regex, reg_find **out, char *err, size_t errlen)
{
    *out = NULL;
    size_t len = strlen(pattern);
    if (!len || len > FIND_PATTERN_MAX) {
        snprintf(err, errlen, "args.find must be 1 to %d bytes", FIND_PATTERN_MAX);
        return RG_EBADREQ;
    }
    reg_find *f = calloc(1, sizeof *f);
    if (!f)
        return RG_ENOMEM;
    f->regex = regex;
    f->utf8 = newlocale(LC_CTYPE_MASK, "C.UTF-8", (locale_t)0);
    int rc = 0;
    if (regex) {
        rc = compile_regex(f, pattern, err, errlen);
        if (rc < 0)
            f->regex = 0; /* nothing compiled to free */
    } else {
        rg_buf b;
        rg_buf_init(&b);
        rc = lower_into(f->utf8, pattern, len, &b) < 0 ? RG_ENOMEM : 0;
        f->n_lowered = b.len;
        f->lowered = rc == 0 ? rg_buf_steal(&b) : NULL;
        rg_buf_destroy(&b);
        if (rc == 0 && !f->lowered)
            rc = RG_ENOMEM;
    }
    if (rc < 0) {
        reg_find_free(f);
        return rc;
    }
    *out = f;
    return 0;
}

void reg_find_free(reg_find *f)
{
    if (!f)
        return;
    if (f->regex)
        regfree(&f->re);
    if (f->utf8)
        freelocale(f->utf8);
    free(f->lowered);
    free(f);
}

/* ---- the lines ---- */

static int line_matches(const reg_find *f, const char *s, size_t n, rg_buf *scratch)
{
    if (f->regex) {
        rg_buf_reset(scratch);
        if (rg_buf_append(scratch, s, n) < 0)
            return -1;
        locale_t old = f->utf8 ? uselocale(f->utf8) : 0;
        int hit = regexec(&f->re, scratch->data ? scratch->data : "", 0, NULL, 0) == 0;
        if (f->utf8)
            uselocale(old);
        return hit;
    }
    if (lower_into(f->utf8, s, n, scratch) < 0)
        return -1;
    if (scratch->len < f->n_lowered)
        return 0;
    return memmem(scratch->data, scratch->len, f->lowered, f->n_lowered) != NULL;
}

static size_t indent_of(const reg_line *l)
{
    size_t k = 0;
    while (k < l->n && l->s[k] == ' ')
        k++;
    return k;
}

static void put_line(rg_buf *b, const reg_line *l)
{
    rg_buf_append(b, l->s, l->n);
    rg_buf_puts(b, "\n");
}

/* "..." at the indent of the line that follows it: lines left out. */
static void put_gap(rg_buf *b, const reg_line *next)
{
    rg_buf_printf(b, "%*s...\n", (int)indent_of(next), "");
}

/* One snippet: the lines from..to, after the lines above `from` that hold it. */
static void put_snippet(rg_buf *b, const reg_line *v, size_t from, size_t to)
{
    size_t chain[64], n = 0, ind = indent_of(&v[from]);
    for (size_t i = from; i-- > 0 && ind > 0 && n < 64;) {
        size_t k = indent_of(&v[i]);
        if (k < ind && v[i].n > k) {
            chain[n++] = i;
            ind = k;
        }
    }
    size_t prev = (size_t)-1;
    while (n--) {
        if (prev != (size_t)-1 && chain[n] != prev + 1)
            put_gap(b, &v[chain[n]]);
        put_line(b, &v[chain[n]]);
        prev = chain[n];
    }
    if (prev != (size_t)-1 && from != prev + 1)
        put_gap(b, &v[from]);
    for (size_t i = from; i <= to; i++)
        put_line(b, &v[i]);
}

/* A snippet built: written after a blank line, or counted past the most shown. */
static void flush(rg_buf *b, const reg_line *v, size_t from, size_t to, size_t *snippets,
                  size_t *left)
{
    if (*snippets >= FIND_SNIPPETS_MAX) {
        (*left)++;
        return;
    }
    if ((*snippets)++)
        rg_buf_puts(b, "\n");
    put_snippet(b, v, from, to);
}

int reg_find_lines(const reg_find *f, const char *outline, int context, char **out,
                   size_t *n_matches, char *err, size_t errlen)
{
    size_t n = 0, hits = 0, snippets = 0, left = 0;
    *n_matches = 0;
    *out = NULL;
    reg_line *v = reg_split_lines(outline, &n);
    if (!v)
        return RG_ENOMEM;
    rg_buf b, scratch;
    rg_buf_init(&b);
    rg_buf_init(&scratch);
    if (context < 0)
        context = 0;
    size_t ctx = (size_t)context, from = 0, to = 0;
    int open = 0, rc = 0;
    int64_t deadline = rg_now_ms() + FIND_BUDGET_MS;
    for (size_t i = 0; i < n && rc == 0; i++) {
        if (f->regex && rg_now_ms() > deadline) {
            rc = rg_errf(err, errlen, RG_EBADREQ,
                         "args.find: the regex did not go through the outline within %d ms "
                         "(%zu of %zu lines); simplify it (a .* inside a repetition is slow)",
                         FIND_BUDGET_MS, i, n);
            break;
        }
        int m = line_matches(f, v[i].s, v[i].n, &scratch);
        if (m < 0)
            rc = RG_ENOMEM;
        if (m <= 0)
            continue;
        hits++;
        size_t a = i > ctx ? i - ctx : 0, z = i + ctx < n ? i + ctx : n - 1;
        if (open && a <= to + 1) { /* overlaps or touches the snippet being built */
            to = z;
            continue;
        }
        if (open)
            flush(&b, v, from, to, &snippets, &left);
        from = a;
        to = z;
        open = 1;
    }
    if (open)
        flush(&b, v, from, to, &snippets, &left);
    if (left)
        rg_buf_printf(&b, "\n... %zu more snippets not shown: narrow the search\n", left);
    free(v);
    rg_buf_destroy(&scratch);
    if (rc == 0 && b.failed)
        rc = RG_ENOMEM;
    if (rc < 0) {
        rg_buf_destroy(&b);
        return rc;
    }
    *n_matches = hits;
    *out = rg_buf_steal(&b);
    return 0;
}
