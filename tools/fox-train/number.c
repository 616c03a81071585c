#include "number.h"

#include <ctype.h>
#include <float.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "why.h"


/* The shape of a number as written. */
typedef struct lexed {
    int negative;   /* a leading '-' */
    int integer;    /* digits only: no fraction, no exponent */
    int nonzero;    /* a digit of the mantissa other than 0 */
} lexed;

/* The rules every option shares; `want` says what the option takes ("an
 * integer", "a number") in the message for anything that is not one. */
static int lex(const char *opt, const char *s, const char *want, lexed *l, char *why,
               size_t why_len)
{
    *l = (lexed){0};
    if (!*s)
        return why_fail(why, why_len, "%s: the value is empty; give %s", opt, want);
    if (isspace((unsigned char)s[0]))
        return why_fail(why, why_len, "%s: '%s' has a blank before the number; give the number "
                    "alone", opt, s);
    const char *p = s;
    if (*p == '+')
        return why_fail(why, why_len, "%s: '%s': write the number without '+'", opt, s);
    l->negative = *p == '-';
    p += l->negative;
    if (!strncasecmp(p, "inf", 3) || !strncasecmp(p, "nan", 3))
        return why_fail(why, why_len, "%s: '%s' is not a finite number; give %s", opt, s, want);
    int digits = 0;
    for (; isdigit((unsigned char)*p); p++, digits++)
        l->nonzero |= *p != '0';
    int fraction = *p == '.', exponent = 0;
    if (fraction)
        for (p++; isdigit((unsigned char)*p); p++, digits++)
            l->nonzero |= *p != '0';
    if (digits && (*p == 'e' || *p == 'E')) {
        const char *e = p + 1 + (p[1] == '+' || p[1] == '-');
        if (isdigit((unsigned char)*e)) {
            for (p = e; isdigit((unsigned char)*p); p++)
                ;
            exponent = 1;
        }
    }
    if (*p && isspace((unsigned char)*p) && !p[strspn(p, " \t\n\v\f\r")])
        return why_fail(why, why_len, "%s: '%s' has a blank after the number; give the number "
                    "alone", opt, s);
    if (!digits || *p)
        return why_fail(why, why_len, "%s: '%s' is not %s", opt, s, want);
    l->integer = !fraction && !exponent;
    return 0;
}

int ft_parse_uint(const char *opt, const char *s, uint64_t min, uint64_t max, uint64_t *out,
                  char *why, size_t why_len)
{
    lexed l;
    if (lex(opt, s, "an integer", &l, why, why_len))
        return -1;
    if (!l.integer)
        return why_fail(why, why_len, "%s: '%s' is not an integer", opt, s);
    uint64_t v = 0;
    int overflow = 0;
    for (const char *p = s + l.negative; *p; p++) {
        unsigned d = (unsigned)(*p - '0');
        if (v > (UINT64_MAX - d) / 10)
            overflow = 1;
        else
            v = v * 10 + d;
    }
    if (overflow || (!l.negative && v > max))
        return why_fail(why, why_len, "%s: '%s' is too large (max %llu)", opt, s,
                    (unsigned long long)max);
    if ((l.negative && v != 0) || v < min)
        return why_fail(why, why_len, "%s: '%s' is too small (min %llu)", opt, s,
                    (unsigned long long)min);
    *out = v;
    return 0;
}

int ft_parse_float32(const char *opt, const char *s, float *out, char *why, size_t why_len)
{
    lexed l;
    if (lex(opt, s, "a number", &l, why, why_len))
        return -1;
    /* What lex let through is a plain decimal strtod reads whole; its
     * range error is judged below, as the float32 the value becomes. */
    double v = strtod(s, NULL);
    float f = (float)v;
    if (!isfinite(f))
        return why_fail(why, why_len, "%s: '%s' is too %s (%s %.9g, the %s float32)", opt, s,
                    l.negative ? "small" : "large", l.negative ? "min" : "max",
                    l.negative ? -(double)FLT_MAX : (double)FLT_MAX,
                    l.negative ? "lowest" : "largest");
    if (l.nonzero && f == 0)
        return why_fail(why, why_len, "%s: '%s' is too close to 0 for a float32 (the smallest "
                    "nonzero one is %.2g): give 0 or a larger value", opt, s,
                    (double)FLT_TRUE_MIN);
    *out = f;
    return 0;
}
