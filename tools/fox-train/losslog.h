/* The loss curve of a run as it goes: the CSV (step,loss,loss_bits), the
 * check that the loss is finite, and the status line on stderr. It reads
 * losses from a ring on the host that the training loop fills (one entry
 * per step this process runs) and never waits on the GPU itself. */
#ifndef FT_LOSSLOG_H
#define FT_LOSSLOG_H

#include <stdint.h>
#include <stdio.h>

typedef struct ft_losslog {
    const float *ring;      /* ring[i]: the loss of step start + i + 1 */
    int64_t start, end;     /* steps done before this process, steps done at the end */
    int64_t written;        /* ring entries already written and checked */
    FILE *csv;
    int tty;                /* stderr is a terminal: the status line rewrites itself */
} ft_losslog;

/* Opens the CSV (csv_path may be NULL) and writes its header. Returns 0, or
 * -1 after printing why. */
int ft_losslog_open(ft_losslog *l, const char *csv_path, const float *ring, int64_t start,
                    int64_t end);
/* Writes ring entries [written, upto) to the CSV; fails (-1, after saying
 * so) on a loss that is not finite. */
int ft_losslog_flush(ft_losslog *l, int64_t upto);
/* The status line after `done` steps of this process, t0 its start time
 * (ft_now_s). */
void ft_losslog_status(const ft_losslog *l, int64_t done, double t0);
void ft_losslog_close(ft_losslog *l);

/* Steps between status lines: every `progress_every` on a terminal;
 * otherwise (a log file) about 20 lines per run at most. */
int64_t ft_status_period(int progress_every, int64_t todo, int tty);

/* CLOCK_MONOTONIC in seconds. */
double ft_now_s(void);

#endif
