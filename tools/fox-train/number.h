/* fox-train's one number parser: every numeric option (integers, 64-bit
 * seeds, floats, the items of a list) goes through it, so all follow the
 * same rules and say the same things.
 *
 * A number is written plainly: an optional '-', decimal digits and, for a
 * float, an optional fraction and exponent ("3e-3", ".5", "2."). Refused,
 * with the option and the value named: an empty value, blanks before or
 * after it, a '+', hex, "inf" and "nan", anything after the number, a
 * fraction or exponent where an integer is wanted, and a value out of the
 * option's range: "too large (max N)" or "too small (min N)", also for a
 * value past what 64 bits or a float32 hold. */
#ifndef FT_NUMBER_H
#define FT_NUMBER_H

#include <stddef.h>
#include <stdint.h>

/* An integer in [min, max] (every integer option of fox-train is
 * non-negative). `opt` names the option in messages ("--steps"). Returns
 * 0, or -1 with the reason in why. */
int ft_parse_uint(const char *opt, const char *s, uint64_t min, uint64_t max, uint64_t *out,
                  char *why, size_t why_len);

/* A finite float32: a value whose magnitude a float32 cannot hold is too
 * large, and a nonzero one it would round to 0 too small. */
int ft_parse_float32(const char *opt, const char *s, float *out, char *why, size_t why_len);

#endif
