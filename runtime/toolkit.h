/* The one internal header the tools (fox-jit, the bench, kloop) include
 * besides the public foxjit/foxjit.h: what `fox-jit warm`, `list`,
 * `verify`, `clear`, `info` and the bench need from inside the runtime and
 * nothing the ops keep to themselves. A tool that needs more adds it here,
 * so this file is the whole list of what the tools depend on
 * (tests/tools/test_tool_includes.sh checks that they include nothing else).
 *
 *   loading:   fj_cuda_get, fj_toolchain_get (driver and NVRTC, dlopen'd)
 *   targets:   fj_target_for_name, fj_target_for_device
 *   programs:  fj_programs, fj_variant_describe, fj_manifest_parse/expand,
 *              fj_default_manifest()
 *   compiling: fj_jit_image, fj_compile, fj_key_build, fj_key_describe
 *   the cache: fj_disk_cache_* (open, walk, prune, clear, make_shared)
 *   sizes:     fj_parse_size
 *   bench:     the column-sum plans and the sort/rank tunings it sweeps */
#ifndef FJ_TOOLKIT_H
#define FJ_TOOLKIT_H

#include "arch.h"
#include "cache_key.h"
#include "cache_size.h"
#include "compiler.h"
#include "counters.h"
#include "cuda_loader.h"
#include "disk_cache.h"
#include "foxjit/foxjit.h"
#include "jit.h"
#include "manifest.h"
#include "ops/colsum.h"
#include "ops/perception.h"
#include "ops/radix_sort.h"
#include "ops/rank_normalize.h"
#include "registry.h"
#include "runtime.h"
#include "status.h"
#include "target.h"
#include "toolchain.h"

#endif
