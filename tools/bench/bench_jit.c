/* JIT cost: how long a trainer waits from foxjit_runtime_create to every
 * column-sum kernel of the default manifest loaded, cold and from a warm
 * disk cache. Each measurement runs in a fresh process (`fox-jit
 * __jit-probe`), since the in-process image table would otherwise hide the
 * disk cache. */
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench.h"

extern char **environ;

/* Runs `fox-jit __jit-probe DIR` and reads "create_ms load_ms compiles hits". */
static int probe(const char *cache_dir, double *create_ms, double *load_ms, long *compiles,
                 long *hits)
{
    char exe[4096];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0)
        return -1;
    exe[n] = '\0';
    int fds[2];
    if (pipe(fds) != 0)
        return -1;
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, fds[1], 1);
    posix_spawn_file_actions_addclose(&fa, fds[0]);
    char *argv[] = {exe, "__jit-probe", (char *)cache_dir, NULL};
    pid_t pid;
    int rc = posix_spawn(&pid, exe, &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    close(fds[1]);
    if (rc != 0) {
        close(fds[0]);
        return -1;
    }
    char buf[256] = "";
    FILE *f = fdopen(fds[0], "r");
    if (!f || !fgets(buf, sizeof buf, f))
        buf[0] = '\0';
    if (f)
        fclose(f);
    int status = 0;
    waitpid(pid, &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
        return -1;
    return sscanf(buf, "%lf %lf %ld %ld", create_ms, load_ms, compiles, hits) == 4 ? 0 : -1;
}

int bench_jit(bench_ctx *b)
{
    (void)b;
    char dir[] = "/tmp/foxjit-bench-jit-XXXXXX";
    if (!mkdtemp(dir)) {
        perror("bench jit: mkdtemp");
        return 1;
    }
    printf("\nJIT cost: foxjit_runtime_create + prepare of every default column-sum shape\n");
    printf("%-22s %12s %12s %9s %9s\n", "cache", "create ms", "load ms", "compiles", "hits");
    int failed = 0;
    const char *labels[] = {"cold (empty cache)", "warm disk cache", "warm disk cache"};
    for (int i = 0; i < 3; i++) {
        double c_ms, l_ms;
        long compiles, hits;
        if (probe(dir, &c_ms, &l_ms, &compiles, &hits) != 0) {
            fprintf(stderr, "bench jit: the probe process failed\n");
            failed = 1;
            break;
        }
        printf("%-22s %12.2f %12.2f %9ld %9ld\n", labels[i], c_ms, l_ms, compiles, hits);
        if (b->json)
            fprintf(b->json, "%s\n  {\"group\": \"jit\", \"op\": \"runtime_create+prepare\", "
                    "\"shape\": \"%s\", \"create_ms\": %.3f, \"load_ms\": %.3f, "
                    "\"total_ms\": %.3f, \"compiles\": %ld, \"disk_hits\": %ld}",
                    b->json_rows++ ? "," : "", labels[i], c_ms, l_ms, c_ms + l_ms, compiles,
                    hits);
    }
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0)
        fprintf(stderr, "bench jit: could not remove %s\n", dir);
    return failed;
}
