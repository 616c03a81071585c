#include "state.h"

#include <stdio.h>
#include <stdlib.h>

#include "params.h"

int ft_state_save(ft_model *m, CUstream s, const ft_ckpt_meta *cfg, const char *path)
{
    size_t n = ft_param_total(&m->dims);
    float *p = malloc(n * 4), *mm = malloc(n * 4), *vv = malloc(n * 4);
    int step = 0, rc = -1;
    char why[1200];
    if (!p || !mm || !vv)
        fprintf(stderr, "fox-train: out of memory for the checkpoint\n");
    else if (ft_model_get_state(m, p, mm, vv, &step, s))
        fprintf(stderr, "fox-train: reading the model state failed: %s\n", m->why);
    else {
        ft_ckpt_meta meta = *cfg;
        meta.step = (uint64_t)step;
        if (ft_ckpt_write(path, &meta, p, mm, vv, n, why, sizeof why))
            fprintf(stderr, "fox-train: %s\n", why);
        else
            rc = 0;
    }
    free(p), free(mm), free(vv);
    return rc;
}

int ft_state_load(ft_model *m, CUstream s, uint64_t seed, int64_t step, const float *params,
                  const float *mom1, const float *mom2)
{
    float *init = NULL;
    if (!params) {
        init = malloc(ft_param_total(&m->dims) * sizeof(float));
        if (!init) {
            fprintf(stderr, "fox-train: out of memory for the parameters\n");
            return -1;
        }
        ft_params_init(&m->dims, seed, init);
        params = init;
    }
    int rc = ft_model_set_state(m, params, mom1, mom2, (int)step, s);
    if (rc)
        fprintf(stderr, "fox-train: uploading the model state failed: %s\n", m->why);
    free(init);
    return rc;
}
