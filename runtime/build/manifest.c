#include "manifest.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define WHY(...)                                   \
    do {                                           \
        snprintf(why, why_len, __VA_ARGS__);       \
        free(list);                                \
        return -1;                                 \
    } while (0)

static const fj_manifest_op *find_op(const fj_manifest_op *const *ops, size_t n_ops,
                                     const char *name)
{
    for (size_t i = 0; i < n_ops; i++)
        if (!strcmp(ops[i]->name, name))
            return ops[i];
    return NULL;
}

static void op_names(const fj_manifest_op *const *ops, size_t n_ops, char *buf, size_t len)
{
    buf[0] = '\0';
    for (size_t i = 0; i < n_ops; i++) {
        size_t used = strlen(buf);
        snprintf(buf + used, len - used, "%s%s", i ? ", " : "", ops[i]->name);
    }
}

int fj_manifest_parse(const char *text, fj_manifest_item **items, size_t *count, char *why,
                      size_t why_len)
{
    return fj_manifest_parse_ops(text, fj_ops, fj_op_count, items, count, why, why_len);
}

int fj_manifest_parse_ops(const char *text, const fj_manifest_op *const *ops, size_t n_ops,
                          fj_manifest_item **items, size_t *count, char *why, size_t why_len)
{
    fj_manifest_item *list = NULL;
    size_t n = 0, cap = 0;
    int line_no = 0;
    const char *p = text;
    *items = NULL;
    *count = 0;
    while (*p) {
        line_no++;
        const char *eol = strchr(p, '\n');
        size_t len = eol ? (size_t)(eol - p) : strlen(p);
        char line[1024];
        if (len >= sizeof line)
            WHY("line %d: longer than %zu characters", line_no, sizeof line - 1);
        memcpy(line, p, len);
        line[len] = '\0';
        p = eol ? eol + 1 : p + len;
        char *hash = strchr(line, '#');
        if (hash)
            *hash = '\0';
        char *save = NULL;
        char *word = strtok_r(line, " \t\r", &save);
        if (!word)
            continue;
        const fj_manifest_op *op = find_op(ops, n_ops, word);
        if (!op) {
            char names[512];
            op_names(ops, n_ops, names, sizeof names);
            WHY("line %d: unknown op '%s' (known: %s)", line_no, word, names);
        }
        fj_manifest_item item;
        memset(&item, 0, sizeof item);
        item.op = op;
        item.line = line_no;
        int seen[FJ_MANIFEST_MAX_KEYS] = {0};
        while ((word = strtok_r(NULL, " \t\r", &save))) {
            char *eq = strchr(word, '=');
            if (!eq)
                WHY("line %d: '%s' is not key=value", line_no, word);
            *eq = '\0';
            int k = -1;
            for (int i = 0; op->keys[i]; i++)
                if (!strcmp(op->keys[i], word))
                    k = i;
            if (k < 0)
                WHY("line %d: %s has no key '%s'", line_no, op->name, word);
            if (seen[k])
                WHY("line %d: key '%s' given twice", line_no, word);
            const char *v = eq + 1;
            char *end;
            errno = 0;
            long long value = strtoll(v, &end, 10);
            if (!*v || *end || !isdigit((unsigned char)v[0]))
                WHY("line %d: %s=%s is not a non-negative integer", line_no, word, v);
            if (errno == ERANGE)
                WHY("line %d: %s=%s is too large (max %lld)", line_no, word, v, LLONG_MAX);
            item.values[k] = value;
            seen[k] = 1;
        }
        for (int i = 0; op->keys[i]; i++)
            if (!seen[i])
                WHY("line %d: %s needs %s=", line_no, op->name, op->keys[i]);
        if (n == cap) {
            size_t ncap = cap ? cap * 2 : 16;
            fj_manifest_item *grown = realloc(list, ncap * sizeof *list);
            if (!grown)
                WHY("out of memory");
            list = grown;
            cap = ncap;
        }
        list[n++] = item;
    }
    *items = list;
    *count = n;
    return 0;
}

int fj_manifest_expand(const fj_manifest_item *items, size_t count, int cc, fj_variant *out,
                       size_t max, size_t *n, char *why, size_t why_len)
{
    for (size_t i = 0; i < count; i++) {
        fj_variant v[FJ_MANIFEST_MAX_VARIANTS];
        char op_why[256] = "";
        int k = fj_op_variants(items[i].op, items[i].values, cc, v, FJ_MANIFEST_MAX_VARIANTS,
                               op_why, sizeof op_why);
        if (k < 0) {
            snprintf(why, why_len, "line %d (%s): %s", items[i].line, items[i].op->name, op_why);
            return -1;
        }
        for (int j = 0; j < k; j++) {
            int dup = 0;
            for (size_t m = 0; m < *n && !dup; m++)
                dup = fj_variant_equal(&out[m], &v[j]);
            if (dup)
                continue;
            if (*n == max) {
                snprintf(why, why_len, "line %d (%s): more than %zu kernel variants",
                         items[i].line, items[i].op->name, max);
                return -1;
            }
            out[(*n)++] = v[j];
        }
    }
    return 0;
}
