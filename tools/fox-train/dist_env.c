#include "dist_env.h"

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "why.h"

typedef struct family {
    const char *launcher;
    const char *rank, *world, *local, *local_world;
} family;

static const family families[] = {
    {"torchrun", "RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE"},
    {"mpirun (Open MPI)", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE",
     "OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_SIZE"},
    {"srun (Slurm)", "SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID", NULL},
};


static int set(ft_getenv_fn get, void *ctx, const char *name)
{
    const char *v = name ? get(name, ctx) : NULL;
    return v != NULL;
}

/* An integer in [lo, hi], the whole string (spaces around it allowed, as
 * shells and launchers sometimes leave them). */
static int read_int(ft_getenv_fn get, void *ctx, const char *name, long lo, long hi, int *out,
                    char *why, size_t len)
{
    const char *s = get(name, ctx);
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    while (*end == ' ' || *end == '\t' || *end == '\n')
        end++;
    if (errno || end == s || *end || v < lo || v > hi)
        return why_fail(why, len, "%s='%s' is not an integer in [%ld, %ld]; the launcher sets it "
                    "(check the job script does not override it)", name, s, lo, hi);
    *out = (int)v;
    return 0;
}

/* NCCL_COMM_ID is NCCL's own bootstrap address: host:port or [ipv6]:port.
 * NCCL parses it itself; this catches the usual mistakes early, with the
 * job's words. */
int ft_dist_check_comm_id(const char *id, char *why, size_t len)
{
    if (strstr(id, "://"))
        return why_fail(why, len, "NCCL_COMM_ID='%s' is host:port, without a scheme: say "
                    "NCCL_COMM_ID=node0:29600, not tcp://node0:29600", id);
    if (strpbrk(id, " \t\n"))
        return why_fail(why, len, "NCCL_COMM_ID='%s' has a blank in it: host:port is one word, as "
                    "NCCL_COMM_ID=node0:29600", id);
    const char *colon = strrchr(id, ':');
    const char *host_end = colon;
    if (id[0] == '[') {
        /* [ipv6]:port, the brackets around a non-empty address */
        const char *close = strchr(id, ']');
        if (!close || close[1] != ':' || close == id + 1)
            colon = NULL;
        host_end = close;
    } else if (colon && memchr(id, ':', (size_t)(colon - id))) {
        /* An IPv6 address without brackets: NCCL would cut it at its first
         * colon. */
        return why_fail(why, len, "NCCL_COMM_ID='%s': an IPv6 address goes in brackets, as "
                    "NCCL_COMM_ID=[fe80::1]:29600", id);
    }
    long port = 0;
    if (colon && isdigit((unsigned char)colon[1])) {
        char *end;
        errno = 0;
        port = strtol(colon + 1, &end, 10);
        if (errno || end == colon + 1 || *end)
            port = 0;
    }
    if (!colon || host_end == id || port < 1 || port > 65535)
        return why_fail(why, len, "NCCL_COMM_ID='%s' is not host:port (say rank 0's host and a "
                    "free port, as NCCL_COMM_ID=node0:29600 or 10.0.0.1:29600)", id);
    return 0;
}

int ft_dist_env_read(ft_getenv_fn get, void *ctx, ft_dist_env *d, char *why, size_t why_len)
{
    memset(d, 0, sizeof *d);
    d->local_world = -1;
    const family *f = NULL;
    for (size_t i = 0; i < sizeof families / sizeof families[0] && !f; i++)
        if (set(get, ctx, families[i].rank) || set(get, ctx, families[i].world) ||
            set(get, ctx, families[i].local))
            f = &families[i];
    if (!f)
        return why_fail(why, why_len, "--dist found no launcher in the environment: it reads RANK, "
                    "WORLD_SIZE and LOCAL_RANK (torchrun), OMPI_COMM_WORLD_RANK, _SIZE and "
                    "_LOCAL_RANK (mpirun) or SLURM_PROCID, SLURM_NTASKS and SLURM_LOCALID "
                    "(srun), and none is set; start fox-train --dist under one of them, or use "
                    "fox-train --dist-local N to start N processes on this host");
    const char *names[3] = {f->rank, f->world, f->local};
    for (int i = 0; i < 3; i++) {
        if (set(get, ctx, names[i]))
            continue;
        char have[160] = "";
        for (int j = 0; j < 3; j++)
            if (set(get, ctx, names[j]))
                snprintf(have + strlen(have), sizeof have - strlen(have), "%s%s",
                         *have ? " and " : "", names[j]);
        /* A stale export of this family's variables beside the launcher
         * that really started the process (a later family, complete) is
         * the likelier cause. */
        const family *other = NULL;
        for (size_t k = 0; k < sizeof families / sizeof families[0] && !other; k++)
            if (&families[k] != f && set(get, ctx, families[k].rank) &&
                set(get, ctx, families[k].world) && set(get, ctx, families[k].local))
                other = &families[k];
        if (other)
            return why_fail(why, why_len, "%s is set but not %s, while %s's %s, %s and %s are all "
                        "set: if %s started this process, unset the stray %s in the job "
                        "script (%s's variables are read first)", have, names[i],
                        other->launcher, other->rank, other->world, other->local,
                        other->launcher, have, f->launcher);
        return why_fail(why, why_len, "%s sets %s but not %s: --dist needs all of %s, %s and %s "
                    "(a job script that exports some of them by hand must export all)",
                    f->launcher, have, names[i], f->rank, f->world, f->local);
    }
    d->launcher = f->launcher;
    d->rank_var = f->rank, d->world_var = f->world, d->local_var = f->local;
    if (read_int(get, ctx, f->world, 1, FT_DIST_MAX_WORLD, &d->world, why, why_len) ||
        read_int(get, ctx, f->rank, 0, FT_DIST_MAX_WORLD - 1, &d->rank, why, why_len) ||
        read_int(get, ctx, f->local, 0, FT_DIST_MAX_WORLD - 1, &d->local_rank, why, why_len))
        return -1;
    if (f->local_world && set(get, ctx, f->local_world) &&
        read_int(get, ctx, f->local_world, 1, FT_DIST_MAX_WORLD, &d->local_world, why, why_len))
        return -1;
    /* What makes a launcher's variables disagree, and the way out. */
    static const char stale[] = "a job script that exports some by hand, or a stale export "
                                "from another job? let the launcher set them all";
    if (d->rank >= d->world)
        return why_fail(why, why_len, "%s=%d is not below %s=%d: the ranks of a world of %d are 0 "
                    "to %d; the variables disagree (%s)", f->rank, d->rank, f->world, d->world,
                    d->world, d->world - 1, stale);
    if (d->local_rank >= d->world)
        return why_fail(why, why_len, "%s=%d is not below %s=%d: a host cannot hold more ranks "
                    "than the world; the variables disagree (%s)", f->local, d->local_rank,
                    f->world, d->world, stale);
    if (d->local_world > d->world)
        return why_fail(why, why_len, "%s=%d is larger than %s=%d: a host cannot hold more ranks "
                    "than the world; the variables disagree (%s)", f->local_world,
                    d->local_world, f->world, d->world, stale);
    if (d->local_world > 0 && d->local_rank >= d->local_world)
        return why_fail(why, why_len, "%s=%d is not below %s=%d: the ranks of a host are 0 to %d; "
                    "the variables disagree (%s)", f->local, d->local_rank, f->local_world,
                    d->local_world, d->local_world - 1, stale);
    const char *id = get("NCCL_COMM_ID", ctx);
    if (id && !*id)
        id = NULL;
    if (!id && d->world > 1)
        return why_fail(why, why_len, "NCCL_COMM_ID is not set: the %d ranks meet through NCCL's "
                    "bootstrap at NCCL_COMM_ID=host:port, where rank 0 listens; export it the "
                    "same in every rank, with rank 0's host and a free port, before the "
                    "launcher starts (export NCCL_COMM_ID=node0:29600, or 127.0.0.1:29600 on "
                    "one host; see docs/trainer.md)", d->world);
    if (id && ft_dist_check_comm_id(id, why, why_len))
        return -1;
    d->comm_id = id;
    return 0;
}

int ft_dist_visible_count(const char *visible)
{
    if (!visible)
        return -1;
    while (*visible == ' ')
        visible++;
    if (!*visible)
        return 0;
    int n = 1;
    for (; *visible; visible++)
        n += *visible == ',';
    return n;
}

/* CUDA_VISIBLE_DEVICES names exactly one device: one entry, no comma. */
static int names_one_device(const char *visible)
{
    if (!visible)
        return 0;
    while (*visible == ' ')
        visible++;
    return *visible && !strchr(visible, ',');
}

int ft_dist_pick_gpu(const ft_dist_env *d, int device, int device_count, const char *visible,
                     char *why, size_t why_len)
{
    if (device + d->local_rank < device_count)
        return device + d->local_rank;
    if (device >= device_count) {
        char seen[40];
        if (device_count == 1)
            snprintf(seen, sizeof seen, "1 device (0)");
        else
            snprintf(seen, sizeof seen, "%d devices (0 to %d)", device_count, device_count - 1);
        return why_fail(why, why_len, "--device %d names CUDA device %d, but this process sees %s: "
                    "give a --device below %d (the ranks of a host take --device + %s)", device,
                    device, seen, device_count, d->local_var);
    }
    /* One device, and the launcher bound it to this process alone
     * (srun --gpus-per-task=1 and the like set CUDA_VISIBLE_DEVICES per
     * task). The same one device exported for every rank would put two
     * ranks on one GPU, which NCCL refuses with a message that does not
     * say why. */
    if (device_count == 1 && device == 0 && names_one_device(visible))
        return 0;
    if (device_count == 1 && device == 0)
        return why_fail(why, why_len, "%s=%d, but this process sees one CUDA device, and "
                    "CUDA_VISIBLE_DEVICES=%s does not bind it to this rank alone: NCCL runs "
                    "one rank per GPU; start one process on this host, or let the launcher "
                    "give each process its own GPU (srun --gpus-per-task=1, or "
                    "CUDA_VISIBLE_DEVICES=<that GPU> in each rank's environment)", d->local_var,
                    d->local_rank, visible ? visible : "(unset)");
    return why_fail(why, why_len, "%s=%d picks CUDA device %d (--device %d + the local rank), but "
                "this process sees %d device%s; start at most %d process%s per host, or let "
                "the launcher give each process one GPU (CUDA_VISIBLE_DEVICES)", d->local_var,
                d->local_rank, device + d->local_rank, device, device_count,
                device_count == 1 ? "" : "s", device_count - device > 0 ? device_count - device : 0,
                device_count - device == 1 ? "" : "es");
}
