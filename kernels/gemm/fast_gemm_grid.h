// How the fast (pipelined) GEMM kernels cut an m <= 16 problem into thread blocks, and the split
// of k across blocks. Pure host arithmetic of the shapes alone, never of the device, so the CUDA
// launcher, the CPU twin (fast_gemm_cpu.h) and every GPU add the same partial sums in the same
// order (docs/kernels.md, "Fast path").
#pragma once

#include <cstddef>
#include <cstdint>

namespace kvsim {

// A block: 4 warps and 128 output columns (two n64 tiles) over one m16 row tile.
inline constexpr int kFastGemmWarps = 4;
inline constexpr int kFastGemmThreads = 32 * kFastGemmWarps;
inline constexpr int kFastTilesPerBlock = 2;  // n64 tiles of the packed layouts
inline constexpr int kFastGemmColumns = 64 * kFastTilesPerBlock;
inline constexpr int kFastGemmMaxM = 16;  // larger m runs the simple path
// A pipeline stage holds this many k steps (of 16): step i of a stage goes to warp i.
inline constexpr int kFastGemmStageSteps = kFastGemmWarps;
inline constexpr int kFastGemmStageK = 16 * kFastGemmStageSteps;  // 64 rows of k
// Stages in flight: cp.async copies run this many stages ahead of the tensor cores (minus one).
inline constexpr int kFastGemmStages = 4;
// Blocks a launch aims for: four resident per SM on a 132-SM H100/H200. A constant, not the
// device's SM count, so a shape's split (and so its bits) is the same on every GPU.
inline constexpr int kFastGemmTargetBlocks = 4 * 132;
// Every split but the last gets at least this many stages, so each fills the pipeline.
inline constexpr int kFastGemmMinStagesPerSplit = kFastGemmStages;
inline constexpr int kFastGemmMaxSplits = 32;

struct FastGemmGrid {
  int grid_x = 0;            // n / 128 column blocks
  int splits = 1;            // grid y: contiguous k ranges, every one non-empty
  int stages_per_split = 0;  // stages of 64 k rows per split; the last split may have fewer
  int k_steps = 0;           // k / 16
  // Split-K scratch (caller-owned): grid_x int32 tile counters, padded to 16 bytes, which the
  // launcher zeroes on the call's stream before the kernel (so their contents on entry do not
  // matter), then fp32 partial sums [splits, m, n]. 0 bytes when splits == 1.
  size_t counter_bytes = 0;
  size_t partial_floats = 0;
  size_t workspace_bytes = 0;

  // The k steps of split `split`: [first, end).
  int FirstStep(int split) const { return split * stages_per_split * kFastGemmStageSteps; }
  int EndStep(int split) const;
};

// The grid for an [m, k] x [k, n] product with 1 <= m <= 16, k a positive multiple of 16 and n of
// 128 (checked: a violation is a bug in the caller).
FastGemmGrid ChooseFastGemmGrid(int m, int n, int k);

}  // namespace kvsim
