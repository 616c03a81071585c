#include "dist_local.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "dist_env.h"
#include "env.h"

int ft_dist_local_argv(int argc, char **argv, char **out)
{
    static char dist[] = "--dist";
    int n = 0;
    out[n++] = argv[0];
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--dist-local")) {
            i++;   /* its value */
            out[n++] = dist;
        } else if (!strncmp(argv[i], "--dist-local=", 13)) {
            out[n++] = dist;
        } else {
            out[n++] = argv[i];
        }
    }
    out[n] = NULL;
    return n;
}

/* A port the kernel says is free now. Another program could take it
 * before rank 0 listens; NCCL then says it could not bind, and the run is
 * started again (or NCCL_COMM_ID given). */
static int free_port(void)
{
    int s = socket(AF_INET, SOCK_STREAM, 0);
    if (s < 0)
        return -1;
    struct sockaddr_in a;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    int port = -1;
    if (!bind(s, (struct sockaddr *)&a, sizeof a) && !getsockname(s, (struct sockaddr *)&a, &len))
        port = ntohs(a.sin_port);
    close(s);
    return port;
}

static int status_of(int ws)
{
    if (WIFEXITED(ws))
        return WEXITSTATUS(ws);
    return FT_EXIT_FAILED;
}

static void describe(int rank, int ws, char *buf, size_t len)
{
    if (WIFEXITED(ws))
        snprintf(buf, len, "rank %d exited with status %d", rank, WEXITSTATUS(ws));
    else if (WIFSIGNALED(ws))
        snprintf(buf, len, "rank %d was killed by signal %d (%s)", rank, WTERMSIG(ws),
                 strsignal(WTERMSIG(ws)));
    else
        snprintf(buf, len, "rank %d ended (wait status %d)", rank, ws);
}

/* The signal that asked this launcher to stop (SIGINT, SIGTERM, SIGHUP),
 * 0 while none has. A launcher killed alone would leave its ranks running
 * on their GPUs, so it passes the signal on to them, stops them as after a
 * failure, and then ends by the same signal. */
static volatile sig_atomic_t stop_signal;

static void on_stop_signal(int sig) { stop_signal = sig; }

static void catch_stop_signals(struct sigaction *old)
{
    static const int sigs[3] = {SIGINT, SIGTERM, SIGHUP};
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_stop_signal;
    sigemptyset(&sa.sa_mask);
    for (int i = 0; i < 3; i++)
        sigaction(sigs[i], &sa, &old[i]);
}

static void restore_stop_signals(const struct sigaction *old)
{
    static const int sigs[3] = {SIGINT, SIGTERM, SIGHUP};
    for (int i = 0; i < 3; i++)
        sigaction(sigs[i], &old[i], NULL);
}

/* Waits up to `seconds` for any child; returns its index, or -1 at the
 * deadline, when none is left, or when a stop signal has arrived (unless
 * `through_signal`: the last wait for the ranks to stop). */
static int wait_any(pid_t *pids, int n, int *ws, double seconds, int through_signal)
{
    struct timespec nap = {0, 20 * 1000 * 1000};
    for (double waited = 0;; waited += 0.02) {
        if (stop_signal && !through_signal)
            return -1;
        int left = 0;
        for (int i = 0; i < n; i++) {
            if (!pids[i])
                continue;
            left++;
            pid_t p = waitpid(pids[i], ws, WNOHANG);
            if (p == pids[i] || (p < 0 && errno == ECHILD)) {
                pids[i] = 0;
                return i;
            }
        }
        if (!left || (seconds >= 0 && waited >= seconds))
            return -1;
        nanosleep(&nap, NULL);
    }
}

int ft_dist_local_check(const ft_options *o, const char *comm_id, const char *visible,
                        char *why, size_t why_len)
{
    const int n = o->dist_local;
    char said[600];
    if (comm_id && *comm_id && ft_dist_check_comm_id(comm_id, said, sizeof said)) {
        snprintf(why, why_len, "--dist-local passes NCCL_COMM_ID on to its ranks as it is: %s",
                 said);
        return FT_EXIT_USAGE;
    }
    /* The ranks take CUDA devices --device .. --device + N - 1 of what
     * they see; fewer than that would put two ranks on one GPU (NCCL
     * refuses, without saying why) or leave one without. */
    const int shown = ft_dist_visible_count(visible);
    if (shown >= 0 && o->device + n > shown) {
        snprintf(why, why_len, "--dist-local %d starts its ranks on CUDA devices %d to %d, but "
                 "CUDA_VISIBLE_DEVICES='%s' shows %d device%s: export one device per rank "
                 "(%d or more), unset it to show every GPU, or start fewer ranks",
                 n, o->device, o->device + n - 1, visible, shown, shown == 1 ? "" : "s",
                 o->device + n);
        return FT_EXIT_NO_GPU;
    }
    return FT_EXIT_OK;
}

int ft_dist_local_main(const ft_options *o, int argc, char **argv)
{
    const int n = o->dist_local;
    {
        char why[1024];
        int st = ft_dist_local_check(o, getenv("NCCL_COMM_ID"), getenv("CUDA_VISIBLE_DEVICES"),
                                     why, sizeof why);
        if (st != FT_EXIT_OK) {
            fprintf(stderr, "fox-train: %s\n", why);
            return st;
        }
    }
    char **child_argv = calloc((size_t)argc + 1, sizeof *child_argv);
    pid_t *pids = calloc((size_t)n, sizeof *pids);
    if (!child_argv || !pids) {
        fprintf(stderr, "fox-train: out of memory\n");
        free(child_argv), free(pids);
        return FT_EXIT_FAILED;
    }
    ft_dist_local_argv(argc, argv, child_argv);
    /* This very binary, wherever argv[0] points. */
    const char *self = "/proc/self/exe";
    char port_id[32];
    const char *comm_id = getenv("NCCL_COMM_ID");   /* the user's, passed on as it is */
    if (!comm_id || !*comm_id) {
        int port = free_port();
        if (port < 0) {
            fprintf(stderr, "fox-train: --dist-local found no free TCP port on 127.0.0.1 for "
                    "NCCL's bootstrap (%s); set NCCL_COMM_ID=127.0.0.1:PORT yourself\n",
                    strerror(errno));
            free(child_argv), free(pids);
            return FT_EXIT_FAILED;
        }
        snprintf(port_id, sizeof port_id, "127.0.0.1:%d", port);
        comm_id = port_id;
    }
    if (!o->quiet) {
        char gpus[48];
        if (n == 1)
            snprintf(gpus, sizeof gpus, "GPU %d", o->device);
        else
            snprintf(gpus, sizeof gpus, "GPUs %d to %d", o->device, o->device + n - 1);
        fprintf(stderr, "fox-train: --dist-local: starting %d process%s (%s), NCCL_COMM_ID=%s\n",
                n, n == 1 ? "" : "es", gpus, comm_id);
    }
    fflush(stdout);
    fflush(stderr);
    struct sigaction old_actions[3];
    catch_stop_signals(old_actions);
    const pid_t launcher = getpid();
    int started = 0, rc = FT_EXIT_OK;
    for (; started < n && !stop_signal; started++) {
        pid_t p = fork();
        if (p < 0) {
            fprintf(stderr, "fox-train: --dist-local could not start rank %d: %s\n", started,
                    strerror(errno));
            rc = FT_EXIT_FAILED;
            break;
        }
        if (p == 0) {
            /* A rank ends with its launcher, however the launcher ends
             * (even SIGKILL, which cannot be passed on). */
            restore_stop_signals(old_actions);
            if (prctl(PR_SET_PDEATHSIG, SIGTERM) != 0 || getppid() != launcher)
                _exit(FT_EXIT_FAILED);
            char v[16];
            snprintf(v, sizeof v, "%d", started);
            setenv("RANK", v, 1);
            setenv("LOCAL_RANK", v, 1);
            snprintf(v, sizeof v, "%d", n);
            setenv("WORLD_SIZE", v, 1);
            setenv("LOCAL_WORLD_SIZE", v, 1);
            setenv("NCCL_COMM_ID", comm_id, 1);
            execv(self, child_argv);
            fprintf(stderr, "fox-train: --dist-local could not run %s for rank %d: %s\n", self,
                    started, strerror(errno));
            _exit(FT_EXIT_FAILED);
        }
        pids[started] = p;
    }
    int failed = rc != FT_EXIT_OK ? -2 : -1;   /* -2: a fork failed */
    char what[160];
    for (int ws = 0;;) {
        /* After a failure the others get 10 s to stop on their own. */
        int i = wait_any(pids, started, &ws, failed == -1 ? -1.0 : 10.0, 0);
        if (i < 0)
            break;
        if (status_of(ws) != FT_EXIT_OK && failed == -1) {
            failed = i;
            rc = status_of(ws);
            describe(i, ws, what, sizeof what);
            fprintf(stderr, "fox-train: --dist-local: %s; stopping the other ranks\n", what);
        }
    }
    const int sig = stop_signal;
    if (sig)
        fprintf(stderr, "fox-train: --dist-local: stopped by signal %d (%s); stopping the "
                "ranks\n", sig, strsignal(sig));
    int term = 0;
    for (int i = 0; i < started; i++)
        if (pids[i]) {
            kill(pids[i], sig ? sig : SIGTERM);
            term++;
        }
    if (term) {
        int ws;
        while (wait_any(pids, started, &ws, 5.0, 1) >= 0)
            ;
        for (int i = 0; i < started; i++)
            if (pids[i]) {
                kill(pids[i], SIGKILL);
                waitpid(pids[i], &ws, 0);
            }
        if (!sig)
            fprintf(stderr, "fox-train: --dist-local: terminated %d rank%s that did not stop "
                    "on their own\n", term, term == 1 ? "" : "s");
    }
    free(child_argv), free(pids);
    restore_stop_signals(old_actions);
    if (sig) {
        /* End as the signal asked, so whoever sent it sees it did. */
        signal(sig, SIG_DFL);
        raise(sig);
        return 128 + sig;
    }
    return rc;
}
