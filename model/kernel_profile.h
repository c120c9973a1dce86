// KernelProfile: how fast the kernels of a serving engine run relative to the GPU's peaks, from
// published kernel benchmarks (configs/kernels/NAME.yaml, each figure with its source): GEMM
// efficiencies as curves over the rows M, attention and communication efficiencies, and how many
// kernels each layer launches. The step-time model (step_time.h) prices every operator with it.
#pragma once

#include <string>
#include <vector>

#include "base/status.h"

namespace kvsim::model {

// An efficiency (a fraction of a peak, above 0 and at most 1) by a row count m: linear in log m
// between two listed points, held at the nearest end outside them.
struct EfficiencyCurve {
  std::vector<double> m;           // ascending, at least one
  std::vector<double> efficiency;  // one per m
  std::vector<std::string> source;

  double At(double rows) const;
  // "0.71 (m 64) .. 0.67 (m 128)": the curve in one line, for --explain.
  std::string Text() const;
};

// A GEMM family: the fraction of HBM bandwidth it streams weights at, and of the tensor-core
// peak it multiplies at, both by M.
struct GemmEfficiency {
  EfficiencyCurve memory;
  EfficiencyCurve compute;
};

// One constant with its source.
struct SourcedValue {
  double value = 0;
  std::string source;
};

// Kernels launched per layer by each operator, in one decode step (a CUDA graph): each costs the
// calibrated kernel latency whatever its size.
struct KernelCounts {
  int attention_projections = 0;  // MLA; GQA runs 2 (qkv and o)
  int attention = 0;
  int cache_write = 0;
  int indexer = 0;  // per layer that carries a DSA indexer
  int router = 0;
  int routed_experts = 0;
  int shared_experts = 0;
  int dense_mlp = 0;
  int other = 0;  // norms, rotary embedding, activations, residual adds
  int lm_head = 0;
};

struct KernelProfile {
  std::string name;
  std::string path;
  GemmEfficiency bf16;  // BF16 weights on BF16 tensor cores
  GemmEfficiency fp8;   // FP8 block-scaled weights on FP8 tensor cores (W8A8)
  // Weight-only kernels: INT4 (W4A16), and FP8 weights on a GPU without FP8 tensor cores, both
  // dequantised to BF16 in registers: bandwidth by M, and the BF16 compute curve times this.
  EfficiencyCurve weight_only_memory;
  SourcedValue weight_only_compute_vs_bf16;
  SourcedValue attention_decode_memory;
  SourcedValue attention_decode_compute;
  SourcedValue attention_prefill_compute;         // dense causal prefill
  SourcedValue attention_sparse_prefill_compute;  // DSA's top-k prefill (MQA form)
  SourcedValue all_reduce_latency_s;
  SourcedValue link_efficiency;  // of the NVLink line rate a collective reaches
  // Expert parallelism's dispatch and combine (an all-to-all each): the fixed time of one, and
  // the share of the NVLink line rate its kernels reach.
  SourcedValue all_to_all_latency_s;
  SourcedValue all_to_all_link_efficiency;
  SourcedValue host_overhead_s;  // per step, not hidden behind the GPU
  KernelCounts kernels;
};

// Reads and validates a kernel profile: every efficiency above 0 and at most 1, latencies and
// overheads at least 0, curves with ascending m. Errors name the file, line, column and field.
Result<KernelProfile> LoadKernelProfile(const std::string& path);

// The profile as a kernel profile file that LoadKernelProfile reads back to the same figures
// (kvsim plan --save-kernel-profile writes one fitted to measured operator times).
std::string KernelProfileYaml(const KernelProfile& profile);

}  // namespace kvsim::model
