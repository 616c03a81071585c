/* `fox-train --dump-step FILE`: one forward and backward of the first
 * training batch at the initial parameters, written for an independent
 * check (tools/torch_peer.py). The file, little-endian:
 *
 *   8 bytes   "FJSTEP1\n"
 *   int32[6]  batch, k, f, d, e, h
 *   float32   the 17 parameter tensors (params.h order and shapes),
 *             x [B,K,F], dt [B,K], labels [K+1,B,H], loss [1],
 *             the 17 gradients d loss / d parameter (params.h order)
 *
 * Nothing is updated: the gradients are those the reducers hand to AdamW. */
#ifndef FT_DUMP_H
#define FT_DUMP_H

#include "args.h"
#include "env.h"

/* Returns an FT_EXIT_* status after printing what failed. */
int ft_dump_step(ft_env *e, const ft_options *o);

#endif
