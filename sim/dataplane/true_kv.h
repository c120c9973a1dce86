// The true K, V and query values of kernel mode, regenerated from what a position holds (its
// content id: a hash of the token prefix), and the independent reference of what storing them in
// a cache format gives.
//
// Values are small integers times a power of two (at most 8 significant bits), so every one is
// exactly a bf16 value and the generator needs no rounding. A few K channels are eight times
// larger, as real K caches have outlier channels, so that scales matter.
#pragma once

#include <cstdint>
#include <vector>

#include "base/kv_format.h"

namespace kvsim::sim {

// The true value of element `dim` of the K (or V) row of head `head` in layer `layer` for a
// position holding `content`. MLA rows are K rows of 576 values (V is their first 512).
float TrueKv(uint64_t content, int layer, int head, int dim, bool value_row);

// The query of head `head` in layer `layer` when the position holding `content` decodes.
float TrueQuery(uint64_t content, int layer, int head, int dim);

// The largest |TrueKv| any K or V row can hold: what a calibrated per-tensor scale covers.
float TrueKvAbsMax();

// The values one row of `values` reads back as after it is stored in `format` (with `scale` for
// per-tensor scaling; per-token-head and MLA block scales come from the row itself; `rope_dim`
// trailing values stay bf16 in the MLA block format). Computed with NVIDIA's own FP8
// conversions, independently of the kernels' codecs; exact in double.
void ReferenceStoredRow(const float* values, int count, int rope_dim, KvFormat format, float scale,
                        double* out);

}  // namespace kvsim::sim
