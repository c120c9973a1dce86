// Reading a kernel table (kernel_table.h) and the INT4 speed it gives a plan: validated field by
// field (errors name the file, line, column and field, and say what is allowed), and refused for
// a GPU other than the one it was measured on.
#pragma once

#include <string>

#include "base/status.h"
#include "model/catalog.h"
#include "model/gpu_spec.h"
#include "model/int4_speed.h"
#include "model/kernel_table.h"
#include "model/model_spec.h"

namespace kvsim::model {

// At most this many shapes per table, and row counts per shape.
inline constexpr size_t kMaxKernelTableShapes = 64;
inline constexpr size_t kMaxKernelTableRows = 64;

// Parses `text` as the kernel table file `name`. Every shape must list the same row counts m, in
// ascending order, and each speedup must agree with its two times within 0.5%.
Result<KernelTable> ParseKernelTable(const std::string& text, const std::string& name);
Result<KernelTable> LoadKernelTable(const std::string& path);

// The INT4 speed by rows per expert that `table` gives `model` on `gpu`: at each measured m, the
// BF16 time over the INT4 time, summed over the shapes of the model's routed experts (gate_up
// [hidden, 2 x intermediate], gate or up [hidden, intermediate], down [intermediate, hidden]) when
// the table has any, over every shape otherwise. A table measured on a GPU other than `gpu`
// (its `gpu` field against the GPU's name) is an InvalidArgument error.
Result<Int4Speed> Int4SpeedFromTable(const KernelTable& table, const ModelSpec& model,
                                     const GpuSpec& gpu);

// The INT4 speed for a plan of `model` on `gpu` by the --kernel-table choice: "" takes the
// catalog's measured/GPU.yaml when that file exists (and nothing otherwise), "none" takes nothing,
// anything else is the path of a table, which must exist.
Result<Int4Speed> Int4SpeedForPlan(const std::string& kernel_table, const Catalog& catalog,
                                   const ModelSpec& model, const GpuSpec& gpu);

}  // namespace kvsim::model
