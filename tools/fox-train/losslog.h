/* The loss curve of a run as it goes: the CSV (step,loss,loss_bits), the
 * check that the loss is finite, and the status line on stderr. It reads
 * losses from a ring on the host that the training loop fills and never
 * waits on the GPU itself. */
#ifndef FT_LOSSLOG_H
#define FT_LOSSLOG_H

#include <stdint.h>
#include <stdio.h>

/* A loss ring holds the last FT_LOSS_RING steps: the loss of this
 * process's step i (0-based) is in slot ft_ring_slot(i). The loops wait
 * for the GPU and write out every loss at the latest when half the ring
 * is waiting (ft_ring_full; between two such waits a loop may write out
 * the losses up to its previous reporting point only), so no loss is
 * overwritten before it is written out, and the host memory a run pins
 * does not grow with --steps (a ring per step of a 10^8-step run was
 * 400 MB of pinned memory per rank). */
#ifndef FT_LOSS_RING   /* the host tests build the trainer with 64 (test_train_ring_host.c) */
#define FT_LOSS_RING 4096
#endif

static inline int64_t ft_ring_slot(int64_t i)
{
    return i % FT_LOSS_RING;
}

/* Entries a run's ring needs: todo steps, at most FT_LOSS_RING, at least 1. */
static inline int64_t ft_ring_entries(int64_t todo)
{
    return todo < 1 ? 1 : todo < FT_LOSS_RING ? todo : FT_LOSS_RING;
}

/* After `done` steps, the losses up to `written` written out: half the
 * ring is waiting, so wait for everything and write it out now. */
static inline int ft_ring_full(int64_t done, int64_t written)
{
    return done - written >= FT_LOSS_RING / 2;
}

typedef struct ft_losslog {
    const float *ring;      /* slot ft_ring_slot(i): the loss of step start + i + 1 */
    int64_t start, end;     /* steps done before this process, steps done at the end */
    int64_t written;        /* steps already written and checked */
    float first, last;      /* the losses of the first and the last step written */
    int64_t shown;          /* steps of the last status line */
    FILE *csv;
    int tty;                /* stderr is a terminal: the status line rewrites itself */
} ft_losslog;

/* Opens the CSV (csv_path may be NULL) and writes its header. Returns 0, or
 * -1 after printing why. */
int ft_losslog_open(ft_losslog *l, const char *csv_path, const float *ring, int64_t start,
                    int64_t end);
/* Writes the losses of steps [written, upto) to the CSV; fails (-1, after
 * saying so) on a loss that is not finite, and on a ring that has wrapped
 * over losses not yet written (a loop that did not report in time). */
int ft_losslog_flush(ft_losslog *l, int64_t upto);
/* The status line after `done` steps of this process, t0 its start time
 * (ft_now_s); nothing when the last line showed as many (a lagged
 * reporting point can come back to the step of the point before). */
void ft_losslog_status(ft_losslog *l, int64_t done, double t0);
void ft_losslog_close(ft_losslog *l);

/* Steps between status lines: every `progress_every` on a terminal;
 * otherwise (a log file) about 20 lines per run at most. */
int64_t ft_status_period(int progress_every, int64_t todo, int tty);

/* CLOCK_MONOTONIC in seconds. */
double ft_now_s(void);

#endif
