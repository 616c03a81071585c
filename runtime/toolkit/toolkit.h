/* The tools' one window into the runtime besides the public
 * foxjit/foxjit.h: what `fox-jit warm`, `info`, `list`, `verify`, `clear`,
 * `prune` and `fox-jit bench` need from inside it, and nothing more, in
 * three areas:
 *
 *   toolkit_cache.h  the disk cache: a directory and its read-only layers
 *                    opened, walked and verified, pruned, cleared, shared
 *                    (list, verify, clear, prune, info; what warm stores).
 *   toolkit_build.h  building without a GPU: NVRTC and CCCL, targets,
 *                    manifests, and the kernel variants of a manifest
 *                    built into a cache or compiled cold (warm, info, the
 *                    bench's compile rows).
 *   toolkit_bench.h  timing on a GPU: a runtime's plan facts, a kernel of
 *                    the library's programs at a geometry of the bench's
 *                    choosing, and the onesweep ops with another tuning
 *                    (the rank sweep).
 *
 * Its types are its own and its functions wrap the internals
 * (runtime/toolkit/toolkit_*.c, the static library foxjit_toolkit, which
 * the tools and their tests link and libfoxjit.so does not contain), so an
 * internal header can change without a tool noticing, and these headers
 * are the whole list of what the tools depend on. A tool that needs more
 * adds a declaration to its area and a wrapper there.
 *
 * What stays out: the CUDA driver (a tool that calls it, the bench and
 * `fox-jit info`, loads it itself with tools/common/driver.h, and `fox-jit
 * warm` runs without one), and the ops: an op's bench (ops/<op>/bench.c)
 * reads its plans and limits from its op's policy.h and calls the op
 * through the public API or the bench area here.
 *
 * Of the runtime's headers these include only foxjit/foxjit.h, and each
 * other (tests/tools/test_layers.sh checks, and that the tools include no
 * other). */
#ifndef FJ_TOOLKIT_H
#define FJ_TOOLKIT_H

#include "toolkit_bench.h"
#include "toolkit_build.h"
#include "toolkit_cache.h"

#endif
