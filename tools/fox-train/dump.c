#include "dump.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "data.h"
#include "feed.h"
#include "model.h"
#include "output_file.h"
#include "params.h"
#include "precision_name.h"

static int write_floats(FILE *f, const float *p, size_t n)
{
    return fwrite(p, sizeof *p, n, f) == n ? 0 : -1;
}

/* Everything after the header, from the model after one step's backward. */
static int write_body(FILE *f, ft_model *m, const float *params, const float *grads,
                      const float *batch, float loss)
{
    const ft_batch_layout *l = &m->in_layout;
    const ft_dims *d = &m->dims;
    size_t B = (size_t)d->batch, K = (size_t)d->k;
    return write_floats(f, params, ft_param_total(d)) ||
           write_floats(f, batch + l->x, B * K * (size_t)d->f) ||
           write_floats(f, batch + l->dt, B * K) ||
           write_floats(f, batch + l->labels, (K + 1) * B * (size_t)d->h) ||
           write_floats(f, &loss, 1) || write_floats(f, grads, ft_param_total(d));
}

int ft_dump_step(ft_env *e, const ft_options *o)
{
    const ft_dims d = {o->batch, o->k, FT_DEFAULT_F, FT_DEFAULT_D, FT_DEFAULT_E, FT_DEFAULT_H};
    const ft_path path = o->per_step ? FT_PATH_PER_STEP : FT_PATH_SEQUENCE;
    ft_dataset data;
    ft_model m;
    ft_feed feed;
    memset(&m, 0, sizeof m), memset(&feed, 0, sizeof feed);
    size_t total = ft_param_total(&d);
    float *params = malloc(total * sizeof(float)), *grads = malloc(total * sizeof(float));
    float *batch = NULL, loss = 0;
    int rc = FT_EXIT_FAILED;
    if (ft_data_generate(&data, o->n_train, d.k, d.f, d.h, o->signal, o->seed,
                         FT_STREAM_TRAIN)) {
        fprintf(stderr, "fox-train: out of memory for the data\n");
        free(params), free(grads);
        return FT_EXIT_FAILED;
    }
    if (!params || !grads || ft_model_alloc(&m, e->api, e->rt, &e->cu, &d, path)) {
        fprintf(stderr, "fox-train: %s\n", params && grads ? m.why : "out of memory");
        goto done;
    }
    ft_params_init(&d, o->seed, params);
    batch = malloc(m.in_layout.floats * sizeof(float));
    CUstream s = e->stream;
    foxjit_status st;
    /* Step 0's batch, as training feeds it. */
    if (!batch || ft_model_prepare(&m) || ft_model_set_state(&m, params, NULL, NULL, 0, s) ||
        ft_feed_open(&feed, &e->cu, &data, d.batch, o->seed) ||
        ft_feed_batch(&feed, 0, m.batch_in, s)) {
        fprintf(stderr, "fox-train: --dump-step set-up failed: %s\n",
                batch ? m.why : "out of memory");
        goto done;
    }
    if ((st = ft_model_zero(&m, s)) || (st = ft_model_forward(&m, s)) ||
        (st = ft_model_loss(&m, 1, s)) || (st = ft_model_backward(&m, s)) ||
        (st = ft_model_reduce(&m, s))) {
        fprintf(stderr, "fox-train: --dump-step: %s\n", m.why);
        goto done;
    }
    if (ft_model_get_grads(&m, grads, s) ||
        ft_cu_check(&e->cu, e->cu.cuMemcpyDtoHAsync(batch, m.batch_in,
                                                    m.in_layout.floats * sizeof(float), s),
                    "cuMemcpyDtoHAsync (batch)") ||
        ft_cu_check(&e->cu, e->cu.cuMemcpyDtoHAsync(&loss, m.loss, sizeof loss, s),
                    "cuMemcpyDtoHAsync (loss)") ||
        ft_cu_check(&e->cu, e->cu.cuStreamSynchronize(s), "cuStreamSynchronize")) {
        fprintf(stderr, "fox-train: --dump-step: reading the results back failed%s%s\n",
                m.why[0] ? ": " : "", m.why);
        goto done;
    }
    const int32_t dims[6] = {d.batch, d.k, d.f, d.d, d.e, d.h};
    out_file out;
    char why[600];
    if (out_file_open(&out, o->dump_step, "--dump-step", 0, why, sizeof why)) {
        fprintf(stderr, "fox-train: %s\n", why);
        goto done;
    }
    if (fwrite("FJSTEP1\n", 1, 8, out.f) != 8 || fwrite(dims, sizeof dims, 1, out.f) != 1 ||
        write_body(out.f, &m, params, grads, batch, loss)) {
        fprintf(stderr, "fox-train: --dump-step '%s': writing it failed: %s\n", o->dump_step,
                strerror(errno));
        out_file_discard(&out);
        goto done;
    }
    if (out_file_close(&out, why, sizeof why)) {
        fprintf(stderr, "fox-train: %s\n", why);
        goto done;
    }
    if (!o->quiet)
        fprintf(stderr, "fox-train: wrote one step (%s path, precision %s, B = %d, K = %d, "
                "loss %.7g) to %s\n", ft_path_name(path),
                precision_name((foxjit_precision)o->precision), d.batch, d.k, (double)loss,
                o->dump_step);
    rc = FT_EXIT_OK;
done:
    ft_feed_close(&feed);
    ft_model_free(&m);
    ft_data_free(&data);
    free(batch), free(params), free(grads);
    return rc;
}
