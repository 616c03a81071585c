#include "losslog.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "output_file.h"

double ft_now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static const char csv_header[] = "step,loss,loss_bits\n";

/* A resumed run's curve continues the file it names: the rows up to the
 * checkpoint's step are kept, later ones (a run that went on past its last
 * checkpoint, or a torn last line) dropped, and the new rows appended. A
 * file that is not a loss curve is refused rather than overwritten; one
 * that is not a regular file of the user's with one link, or is a link,
 * is refused before it is read (output_file.h). */
static FILE *open_resumed(const char *path, int64_t start)
{
    out_file out;
    char why[600];
    if (out_file_open(&out, path, "--csv", OUT_FILE_CONTINUE, why, sizeof why)) {
        fprintf(stderr, "fox-train: %s\n", why);
        return NULL;
    }
    const int existed = out.continued;
    FILE *f = out_file_take(&out);
    char line[256];
    long keep = 0;
    long long last = 0, dropped = 0;
    if (fgets(line, sizeof line, f)) {
        if (strcmp(line, csv_header)) {
            fprintf(stderr, "fox-train: --csv %s exists and is not a fox-train loss curve (its "
                    "first line is not '%.*s'); a resumed run appends to its curve: give "
                    "that file, a new one, or move this one away\n", path,
                    (int)sizeof csv_header - 2, csv_header);
            fclose(f);
            return NULL;
        }
        keep = ftell(f);
        while (fgets(line, sizeof line, f)) {
            long long step;
            if (strchr(line, '\n') && sscanf(line, "%lld,", &step) == 1 && step <= start &&
                step > last) {
                keep = ftell(f);
                last = step;
            } else {
                dropped++;
            }
        }
    }
    if (fflush(f) || ftruncate(fileno(f), keep) || fseek(f, keep, SEEK_SET)) {
        fprintf(stderr, "fox-train: --csv %s: %s\n", path, strerror(errno));
        fclose(f);
        return NULL;
    }
    if (keep == 0)
        fputs(csv_header, f);
    if (dropped)
        fprintf(stderr, "fox-train: --csv %s: kept its rows up to step %lld, dropped %lld "
                "after the checkpoint's step %lld\n", path, last, dropped, (long long)start);
    if (existed && last < start)
        fprintf(stderr, "fox-train: --csv %s: its rows end at step %lld, before the "
                "checkpoint's step %lld: steps %lld to %lld are not in it\n", path, last,
                (long long)start, last + 1, (long long)start);
    return f;
}

int ft_losslog_open(ft_losslog *l, const char *csv_path, const float *ring, int64_t start,
                    int64_t end)
{
    memset(l, 0, sizeof *l);
    l->ring = ring, l->start = start, l->end = end;
    l->tty = isatty(2);
    if (csv_path && start > 0) {
        if (!(l->csv = open_resumed(csv_path, start)))
            return -1;
    } else if (csv_path) {
        /* A new file in the path's place from the start (output_file.h):
         * the curve can be followed as it grows, and a failed run leaves
         * the rows it wrote. */
        out_file out;
        char why[600];
        if (out_file_open(&out, csv_path, "--csv", OUT_FILE_VISIBLE, why, sizeof why)) {
            fprintf(stderr, "fox-train: %s\n", why);
            return -1;
        }
        l->csv = out_file_take(&out);
        fputs(csv_header, l->csv);
    }
    return 0;
}

int ft_losslog_flush(ft_losslog *l, int64_t upto)
{
    if (upto <= l->written)
        return 0;   /* nothing new (a point lagging behind a full wait) */
    if (upto - l->written > FT_LOSS_RING) {
        fprintf(stderr, "fox-train: internal error: steps %lld to %lld were not reported "
                "before the loss ring of %d steps wrapped; please report this\n",
                (long long)(l->start + l->written + 1), (long long)(l->start + upto),
                FT_LOSS_RING);
        return -1;
    }
    for (int64_t i = l->written; i < upto; i++) {
        float loss = l->ring[ft_ring_slot(i)];
        if (i == 0)
            l->first = loss;
        l->last = loss;
        if (l->csv) {
            uint32_t bits;
            memcpy(&bits, &loss, 4);
            fprintf(l->csv, "%lld,%.9g,0x%08x\n", (long long)(l->start + i + 1), (double)loss,
                    bits);
        }
        if (!isfinite(loss)) {
            if (l->tty)
                fputc('\n', stderr);
            fprintf(stderr, "fox-train: the loss is %g at step %lld; training diverged (try a "
                    "lower --lr)\n", (double)loss, (long long)(l->start + i + 1));
            return -1;
        }
    }
    l->written = upto;
    if (l->csv)
        fflush(l->csv);
    return 0;
}

void ft_losslog_status(ft_losslog *l, int64_t done, double t0)
{
    if (done <= l->shown)
        return;
    l->shown = done;
    int64_t i = done - 1;
    int window = done < 10 ? (int)done : 10;
    double mean = 0;
    for (int64_t j = done - window; j < done; j++)
        mean += l->ring[ft_ring_slot(j)];
    mean /= window;
    double el = ft_now_s() - t0, rate = el > 0 ? (double)done / el : 0;
    long long total = (long long)l->end, step = (long long)(l->start + i + 1);
    if (l->tty)
        fprintf(stderr, "\r\033[Kstep %lld/%lld  loss %.5f  (mean of last %d %.5f)  %.0f steps/s",
                step, total, (double)l->ring[ft_ring_slot(i)], window, mean, rate);
    else
        fprintf(stderr, "step %lld/%lld  loss %.5f  (mean of last %d %.5f)  %.0f steps/s\n",
                step, total, (double)l->ring[ft_ring_slot(i)], window, mean, rate);
}

int64_t ft_status_period(int progress_every, int64_t todo, int tty)
{
    if (tty)
        return progress_every;
    return todo / 20 > progress_every ? todo / 20 : progress_every;
}

void ft_losslog_close(ft_losslog *l)
{
    /* A failed run still leaves the losses it has in the CSV. */
    if (l->csv)
        fclose(l->csv);
    l->csv = NULL;
}
