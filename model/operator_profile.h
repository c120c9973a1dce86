// Operator profiles in Vidur's format (microsoft/vidur, data/profiling/): times of one transformer
// layer's operators measured on a GPU by token count and tensor-parallel degree (compute, a file
// named mlp.csv), and of NCCL all-reduces by message size and GPU count (network,
// all_reduce.csv). kvsim reads them to check its step-time model operator by operator
// (operator_fit.h) and to fit a GPU's figures from a user's own measurements.
//
// A profile folder is laid out as Vidur's: compute/GPU/ORG/MODEL/mlp.csv and
// network/GPU_TOPOLOGY/all_reduce.csv, where GPU is a kvsim GPU name (configs/gpus/) or Vidur's
// short name (h100, a100). third_party/vidur_profiles holds Vidur's own.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"

namespace kvsim::model {

// The operators of Vidur's compute profile that kvsim's step model prices, in the order of
// kProfiledOpColumns. Vidur's "emb" (the token embedding lookup) is not one: kvsim does not price
// the embedding.
enum class ProfiledOp {
  kAttnPreProj,   // the fused QKV projection
  kAttnPostProj,  // the output projection
  kMlpUpProj,     // gate and up projections (one GEMM)
  kMlpDownProj,
  kInputLayernorm,
  kPostAttentionLayernorm,
  kAttnRope,
  kMlpAct,
  kAdd,  // the residual add
};
inline constexpr int kProfiledOpCount = 9;
// Vidur's column stem of each ProfiledOp ("attn_pre_proj"): the median time is
// time_stats.STEM.median, in milliseconds.
const char* ProfiledOpColumn(ProfiledOp op);
bool IsProfiledGemm(ProfiledOp op);

// One measured row: a model's layer shape, the tokens through it and the tensor-parallel degree,
// and each operator's median time (seconds; 0 where the file leaves it empty, as Vidur does for
// an operator a model does not have).
struct ComputeProfileRow {
  int line = 0;  // in its file, for errors and the worst row
  int heads = 0;
  int kv_heads = 0;
  int hidden = 0;        // n_embd
  int intermediate = 0;  // n_expanded_embd
  bool gated = false;    // use_gated_mlp: the up projection computes gate and up (2 x)
  int64_t tokens = 0;
  int tp = 0;
  std::array<double, kProfiledOpCount> median_s{};
};

struct ComputeProfile {
  std::string path;
  std::string gpu;    // the kvsim GPU name
  std::string model;  // the folder's name: "Llama-2-70b-hf"
  std::vector<ComputeProfileRow> rows;
};

// One all-reduce among `gpus` GPUs of one node: `bytes` and the median time in seconds.
struct AllReduceRow {
  int line = 0;
  int gpus = 0;
  int64_t bytes = 0;
  double median_s = 0;
};

struct AllReduceProfile {
  std::string path;
  std::string gpu;
  std::vector<AllReduceRow> rows;  // single-node rows only (devices_per_node == num_workers)
};

struct OperatorProfiles {
  std::string root;
  std::vector<ComputeProfile> compute;
  std::vector<AllReduceProfile> all_reduce;
  // FNV-1a of every file read, in path order: the provenance line names it.
  std::string content_hash;
  int64_t files = 0;
};

// The kvsim GPU name of a profile folder's GPU: Vidur's "h100" and "a100" are h100-sxm and
// a100-sxm-80gb; any other name is taken as a kvsim GPU name.
std::string ProfileGpuName(const std::string& folder_gpu);

// Reads one compute profile. Errors name the file, line and column and say what is allowed: a
// missing column, a row with the wrong number of fields, a shape or count that is not a positive
// integer, a time that is not a finite positive number (or empty), heads that do not divide the
// hidden size or the tensor-parallel degree.
Result<ComputeProfile> LoadComputeProfile(const std::string& path, const std::string& gpu,
                                          const std::string& model);
// Reads one all-reduce profile, with the same standards; rows of other collectives or spanning
// nodes are skipped.
Result<AllReduceProfile> LoadAllReduceProfile(const std::string& path, const std::string& gpu);

// The same from a file's text already read; errors name `path`.
Result<ComputeProfile> ParseComputeProfile(const std::string& path, std::string text,
                                           const std::string& gpu, const std::string& model);
Result<AllReduceProfile> ParseAllReduceProfile(const std::string& path, std::string text,
                                               const std::string& gpu);

// Every mlp.csv and all_reduce.csv under `root` in Vidur's layout, in path order. A folder with
// none is an error that names the layout.
Result<OperatorProfiles> LoadOperatorProfiles(const std::string& root);

}  // namespace kvsim::model
