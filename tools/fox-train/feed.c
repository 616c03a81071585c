#include "feed.h"

#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* ---- packing a unit (the packer thread and its helpers) ---------------------- */

enum { FT_PACK_MAX_THREADS = 8 };

typedef struct pack_part {
    ft_feed *f;
    const ft_feed_slot *s;
    int base;         /* the unit's first batch in its group of epochs */
    int first, end;   /* batches [first, end) of the unit */
} pack_part;

/* Batch g of a group of epochs (epochs_per_unit of them, from
 * f->perm_epoch): its rows of the global batch in that epoch's order. */
static const int *batch_rows(const ft_feed *f, int g)
{
    const int bpe = f->batches_per_epoch;
    return f->perm + (size_t)(g / bpe) * (size_t)f->data->n +
           (size_t)(g % bpe) * f->global_batch + f->first_row;
}

static void *pack_batches(void *arg)
{
    const pack_part *p = arg;
    ft_feed *f = p->f;
    for (int b = p->first; b < p->end && !atomic_load_explicit(&f->cancel, memory_order_relaxed);
         b++)
        ft_data_pack(f->data, batch_rows(f, p->base + b), f->batch, &f->layout,
                     p->s->host + (size_t)b * f->layout.floats);
    return NULL;
}

/* Unit u's first epoch, its first batch in its group of epochs, and how
 * many batches it has (feed.h: a part of one epoch, or whole epochs). */
static int64_t unit_epoch(const ft_feed *f, int64_t u)
{
    return u / f->units_per_epoch * f->epochs_per_unit;
}
static int unit_first(const ft_feed *f, int64_t u)
{
    return (int)(u % f->units_per_epoch) * f->unit_batches;
}
static int unit_length(const ft_feed *f, int64_t u)
{
    const int rest = f->epochs_per_unit * f->batches_per_epoch - unit_first(f, u);
    return rest < f->unit_batches ? rest : f->unit_batches;
}

/* Unit u into its slot's staging buffer: its epochs' orders (unless an
 * earlier unit of the same epoch left them: an order of a million
 * sequences takes some 17 ms), then the batches, in contiguous runs over
 * the threads (every batch is packed alike whoever packs it, so the bits
 * do not depend on the split). A helper that cannot be started leaves its
 * run to this thread. Units are packed one after the other (the packer's,
 * or the caller's without one), so one set of orders serves them all. */
/* The orders of epochs e .. e + epochs_per_unit - 1 into perm. */
static void make_orders(const ft_feed *f, int64_t e, int *perm)
{
    for (int k = 0; k < f->epochs_per_unit; k++)
        ft_epoch_order(f->data->n, f->seed, (uint64_t)(e + k), perm + (size_t)k * f->data->n);
}

static void pack_unit(ft_feed *f, int64_t u)
{
    ft_feed_slot *s = &f->slot[u % 2];
    const int64_t e = unit_epoch(f, u);
    if (f->perm_epoch != e) {
        if (f->next_epoch == e) {   /* made ahead (packer_main) */
            int *t = f->perm;
            f->perm = f->next_perm, f->next_perm = t;
            f->next_epoch = -1;
        } else {
            make_orders(f, e, f->perm);
        }
        f->perm_epoch = e;
    }
    const int base = unit_first(f, u), n = unit_length(f, u);
    const int t = f->pack_threads > 1 ? f->pack_threads : 1;
    pack_part parts[FT_PACK_MAX_THREADS] = {{0}};
    pthread_t helper[FT_PACK_MAX_THREADS];
    int started[FT_PACK_MAX_THREADS] = {0};
    for (int i = 0; i < t; i++)
        parts[i] = (pack_part){f, s, base, (int)((int64_t)n * i / t),
                               (int)((int64_t)n * (i + 1) / t)};
    for (int i = 1; i < t; i++)
        started[i] = pthread_create(&helper[i], NULL, pack_batches, &parts[i]) == 0;
    pack_batches(&parts[0]);
    for (int i = 1; i < t; i++) {
        if (started[i])
            pthread_join(helper[i], NULL);
        else
            pack_batches(&parts[i]);
    }
}

static void *packer_main(void *arg)
{
    ft_feed *f = arg;
    pthread_mutex_lock(&f->mu);
    for (;;) {
        while (!f->stop && f->want == f->packed)
            pthread_cond_wait(&f->cv, &f->mu);
        if (f->stop)
            break;
        int64_t u = f->want;
        pthread_mutex_unlock(&f->mu);
        pack_unit(f, u);
        pthread_mutex_lock(&f->mu);
        f->packed = u;
        pthread_cond_broadcast(&f->cv);
        /* When the next unit starts new epochs, their orders now, while
         * this thread waits for its request (which comes once unit u
         * starts training): they would otherwise come first when it is
         * asked for, ahead of its packing. */
        const int64_t e = unit_epoch(f, u + 1);
        if (f->next_perm && e != f->perm_epoch && e != f->next_epoch && !f->stop) {
            pthread_mutex_unlock(&f->mu);
            make_orders(f, e, f->next_perm);
            pthread_mutex_lock(&f->mu);
            f->next_epoch = e;
        }
    }
    pthread_mutex_unlock(&f->mu);
    return NULL;
}

/* ---- the training thread's side ------------------------------------------------- */

/* Waits for the last upload out of s's staging buffer: blocking, or
 * polling f->give_up (-1 without a message when it gives up). */
static int wait_upload(ft_feed *f, ft_feed_slot *s)
{
    const ft_cuda *cu = f->cu;
    if (!f->give_up)
        return ft_cu_check(cu, cu->cuEventSynchronize(s->uploaded),
                           "cuEventSynchronize (a data upload)");
    const struct timespec nap = {0, 50 * 1000};
    for (;;) {
        CUresult q = cu->cuEventQuery(s->uploaded);
        if (q == CUDA_SUCCESS)
            return 0;
        if (q != CUDA_ERROR_NOT_READY)
            return ft_cu_check(cu, q, "cuEventQuery (a data upload)");
        if (f->give_up(f->give_up_arg))
            return -1;
        nanosleep(&nap, NULL);
    }
}

/* Asks for unit u (the packer is idle: every earlier request was waited
 * for). Its staging buffer must not be read by an upload any more: the
 * last one from it (unit u - 2's) is waited for, which the training
 * stream needed before unit u - 2 began, long done in practice. Without a
 * packer thread, packs it here and now. */
static int request(ft_feed *f, int64_t u)
{
    ft_feed_slot *s = &f->slot[u % 2];
    if (s->upload_recorded && wait_upload(f, s))
        return -1;
    f->requested = u;
    if (!f->packer_running) {
        pack_unit(f, u);
        f->packed = u;
        return 0;
    }
    pthread_mutex_lock(&f->mu);
    f->want = u;
    pthread_cond_broadcast(&f->cv);
    pthread_mutex_unlock(&f->mu);
    return 0;
}

static int is_packed(ft_feed *f, int64_t u, int wait)
{
    if (!f->packer_running)
        return f->packed == u;
    pthread_mutex_lock(&f->mu);
    while (wait && f->packed != u)
        pthread_cond_wait(&f->cv, &f->mu);
    int done = f->packed == u;
    pthread_mutex_unlock(&f->mu);
    return done;
}

/* Enqueues unit u's upload on the copy stream, after the training
 * stream's last copy out of the device buffer it overwrites. */
static int upload(ft_feed *f, int64_t u)
{
    const ft_cuda *cu = f->cu;
    ft_feed_slot *s = &f->slot[u % 2];
    if ((s->release_recorded &&
         ft_cu_check(cu, cu->cuStreamWaitEvent(f->copy, s->released, 0), "cuStreamWaitEvent")) ||
        ft_cu_check(cu, cu->cuMemcpyHtoDAsync(s->dev, s->host,
                                              (size_t)unit_length(f, u) * f->batch_bytes,
                                              f->copy),
                    "cuMemcpyHtoDAsync (data upload)") ||
        ft_cu_check(cu, cu->cuEventRecord(s->uploaded, f->copy), "cuEventRecord"))
        return -1;
    s->upload_recorded = 1;
    s->unit = u;
    return 0;
}

/* The training stream moves to unit u: it lets go of the buffer it read,
 * waits for u's upload (asking for and waiting on its packing first when
 * it was not prefetched: the first unit, a resumed run), and the packer
 * starts on u + 1. */
static int enter_unit(ft_feed *f, int64_t u, CUstream st)
{
    const ft_cuda *cu = f->cu;
    if (f->current >= 0) {
        ft_feed_slot *old = &f->slot[f->current % 2];
        if (ft_cu_check(cu, cu->cuEventRecord(old->released, st), "cuEventRecord"))
            return -1;
        old->release_recorded = 1;
    }
    /* The packer is idle from here on: it was asked for u (the usual case:
     * waited for here, as the unit needs it now) or, after a jump, for
     * another unit, whose buffers it must be done with before any new
     * request. */
    if (f->requested >= 0)
        is_packed(f, f->requested, 1);
    ft_feed_slot *s = &f->slot[u % 2];
    if (s->unit != u &&
        ((f->requested != u && (request(f, u) || !is_packed(f, u, 1))) || upload(f, u)))
        return -1;
    if (ft_cu_check(cu, cu->cuStreamWaitEvent(st, s->uploaded, 0), "cuStreamWaitEvent"))
        return -1;
    f->current = u;
    return f->prefetch ? request(f, u + 1) : 0;
}

int ft_feed_batch(ft_feed *f, int64_t index, CUdeviceptr dst, CUstream s)
{
    const int64_t epoch = index / f->batches_per_epoch;
    const int pos = (int)(index % f->batches_per_epoch);
    /* A unit is a part of one epoch (epochs_per_unit 1) or whole epochs
     * (units_per_epoch 1, pos / unit_batches 0): both at once. */
    const int64_t unit = epoch / f->epochs_per_unit * f->units_per_epoch + pos / f->unit_batches;
    if (unit != f->current) {
        if (enter_unit(f, unit, s))
            return -1;
    } else if (f->requested == unit + 1 && f->slot[(unit + 1) % 2].unit != unit + 1 &&
               is_packed(f, unit + 1, 0) && upload(f, unit + 1)) {
        return -1;   /* the next unit is packed: its upload overlaps this one */
    }
    const ft_feed_slot *cur = &f->slot[unit % 2];
    const size_t at = (size_t)((int)(epoch % f->epochs_per_unit) * f->batches_per_epoch +
                               pos % f->unit_batches) * f->batch_bytes;
    return ft_cu_check(f->cu, f->cu->cuMemcpyDtoDAsync(dst, cur->dev + at, f->batch_bytes, s),
                       "cuMemcpyDtoDAsync (batch)");
}

/* ---- open and close --------------------------------------------------------------- */

/* The CPUs this process may run on: its affinity mask (a container's
 * cpuset, taskset, a launcher's binding), else every online CPU. The
 * caller still divides them among the host's ranks: a cpuset they share
 * and a binding of each rank to its own cores look the same from here,
 * and fewer threads than cores only packs slower, never oversubscribes. */
static long usable_cores(void)
{
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0)
        return CPU_COUNT(&set);
    return sysconf(_SC_NPROCESSORS_ONLN);
}

/* Threads for one unit's packing: the cores a rank may take (the other
 * ranks pack too), at most one per batch and FT_PACK_MAX_THREADS. */
static int pack_threads(int batches, int ranks)
{
    long cores = usable_cores();
    long t = cores > 0 ? cores / ranks : 1;
    t = t > FT_PACK_MAX_THREADS ? FT_PACK_MAX_THREADS : t < 1 ? 1 : t;
    return (int)(t < batches ? t : batches);
}

int ft_feed_open(ft_feed *f, const ft_cuda *cu, const ft_dataset *data, int batch,
                 uint64_t seed)
{
    return ft_feed_open_slice(f, cu, data, batch, 0, 1, seed);
}

int ft_feed_open_slice(ft_feed *f, const ft_cuda *cu, const ft_dataset *data,
                       int global_batch, int rank, int ranks, uint64_t seed)
{
    return ft_feed_open_units(f, cu, data, global_batch, rank, ranks, seed, FT_FEED_UNIT_BYTES);
}

int ft_feed_open_units(ft_feed *f, const ft_cuda *cu, const ft_dataset *data,
                       int global_batch, int rank, int ranks, uint64_t seed,
                       size_t max_unit_bytes)
{
    memset(f, 0, sizeof *f);
    const int batch = global_batch / ranks;
    f->cu = cu, f->data = data, f->batch = batch, f->seed = seed;
    f->global_batch = global_batch, f->first_row = rank * batch;
    /* The last partial global batch is dropped. */
    f->batches_per_epoch = data->n / global_batch;
    f->current = f->requested = f->want = f->packed = -1;
    f->prefetch = 1;
    atomic_init(&f->cancel, 0);
    ft_batch_layout_for(batch, data->k, data->f, data->h, &f->layout);
    f->batch_bytes = f->layout.floats * sizeof(float);
    /* A unit: as many whole batches of an epoch as fit, at least one; the
     * whole epoch when it fits; and when the epoch is short (fewer than
     * FT_FEED_MIN_UNIT_BATCHES batches), as many whole epochs as make up
     * that many, as far as they fit. */
    const int bpe = f->batches_per_epoch;
    const size_t fit = max_unit_bytes / f->batch_bytes;
    f->epochs_per_unit = 1;
    if (fit < (size_t)bpe) {
        /* As many units as that takes, of even lengths (no short tail). */
        const int most = fit < 1 ? 1 : (int)fit, units = (bpe + most - 1) / most;
        f->unit_batches = (bpe + units - 1) / units;
    } else {
        int want = (FT_FEED_MIN_UNIT_BATCHES + bpe - 1) / bpe;
        size_t most = fit / (size_t)bpe;   /* >= 1 */
        f->epochs_per_unit = (size_t)want < most ? want : (int)most;
        f->unit_batches = f->epochs_per_unit * bpe;
    }
    f->units_per_epoch = (bpe + f->unit_batches - 1) / f->unit_batches;
    f->unit_bytes = (size_t)f->unit_batches * f->batch_bytes;
    f->pack_threads = pack_threads(f->unit_batches, ranks);
    f->perm_epoch = f->next_epoch = -1;
    const size_t orders = (size_t)f->epochs_per_unit * (size_t)data->n * sizeof *f->perm;
    f->perm = malloc(orders);
    /* Orders made ahead only where an epoch spans several units (then
     * they are worth it: 17 ms at a million sequences). */
    f->next_perm = f->units_per_epoch > 1 ? malloc(orders) : NULL;
    if (!f->perm || (f->units_per_epoch > 1 && !f->next_perm)) {
        fprintf(stderr, "fox-train: out of memory for the epoch order\n");
        return -1;
    }
    for (int i = 0; i < 2; i++) {
        ft_feed_slot *s = &f->slot[i];
        s->unit = -1;
        if (ft_cu_check(cu, cu->cuMemAlloc(&s->dev, f->unit_bytes),
                        "cuMemAlloc of a data buffer") ||
            ft_cu_check(cu, cu->cuMemAllocHost((void **)&s->host, f->unit_bytes),
                        "cuMemAllocHost of a data staging buffer") ||
            ft_cu_check(cu, cu->cuEventCreate(&s->uploaded, CU_EVENT_DISABLE_TIMING),
                        "cuEventCreate") ||
            ft_cu_check(cu, cu->cuEventCreate(&s->released, CU_EVENT_DISABLE_TIMING),
                        "cuEventCreate"))
            return -1;
    }
    if (ft_cu_check(cu, cu->cuStreamCreate(&f->copy, CU_STREAM_NON_BLOCKING), "cuStreamCreate"))
        return -1;
    if (pthread_mutex_init(&f->mu, NULL) == 0) {
        if (pthread_cond_init(&f->cv, NULL) == 0)
            f->sync_ready = 1;
        else
            pthread_mutex_destroy(&f->mu);
    }
    /* Without the thread the epochs are packed on this one, as before. */
    f->packer_running = f->sync_ready && pthread_create(&f->packer, NULL, packer_main, f) == 0;
    return 0;
}

void ft_feed_share_cores(ft_feed *f, int ranks)
{
    f->pack_threads = pack_threads(f->unit_batches, ranks > 0 ? ranks : 1);
}

void ft_feed_close(ft_feed *f)
{
    atomic_store(&f->cancel, 1);
    if (f->packer_running) {
        pthread_mutex_lock(&f->mu);
        f->stop = 1;
        pthread_cond_broadcast(&f->cv);
        pthread_mutex_unlock(&f->mu);
        pthread_join(f->packer, NULL);
    }
    if (f->sync_ready) {
        pthread_cond_destroy(&f->cv);
        pthread_mutex_destroy(&f->mu);
    }
    const ft_cuda *cu = f->cu;
    for (int i = 0; i < 2 && cu; i++) {
        ft_feed_slot *s = &f->slot[i];
        if (s->upload_recorded)
            cu->cuEventSynchronize(s->uploaded);
        if (s->uploaded)
            cu->cuEventDestroy(s->uploaded);
        if (s->released)
            cu->cuEventDestroy(s->released);
        if (s->dev)
            cu->cuMemFree(s->dev);
        if (s->host)
            cu->cuMemFreeHost(s->host);
    }
    if (cu && f->copy)
        cu->cuStreamDestroy(f->copy);
    free(f->perm);
    free(f->next_perm);
    memset(f, 0, sizeof *f);
}
