// The step-time model checked operator by operator against measured GPU times (Vidur-format
// operator profiles, operator_profile.h), and four of its figures fitted per GPU kind from them.
//
// Every measured row kvsim can express is priced with the step model's own functions
// (PriceGemm, AllReduceSeconds in step_time.h): a GEMM is max(weight bytes at the BF16 memory
// efficiency, FLOPs at the BF16 compute curve) plus one kernel's fixed time; an all-reduce is the
// profile's latency plus its bytes over the links; norms, rotary embedding, activation and the
// residual add are what the step model charges for them, one kernel's fixed time each.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "base/status.h"
#include "model/gpu_spec.h"
#include "model/kernel_profile.h"
#include "model/operator_profile.h"

namespace kvsim::model {

// The operator families compared, each a part of the step model.
enum class OperatorFamily {
  kAttentionProjections,  // QKV and output projections: the step's "attention projections"
  kMlpProjections,        // up (gate and up) and down projections: "dense MLP"
  kElementwise,           // norms, rotary embedding, activation, residual add: "other kernels"
  kAllReduce,             // tensor parallelism's all-reduce: "all-reduce"
};
inline constexpr int kOperatorFamilyCount = 4;
const char* OperatorFamilyName(OperatorFamily family);

// The four figures fitted per GPU kind, each physical: efficiencies above 0 and at most 1,
// latencies at least 0.
struct OperatorFigures {
  // The fraction of HBM bandwidth BF16 GEMMs stream their weights at (the BF16 memory curve,
  // flat).
  double gemm_memory_efficiency = 0;
  // The fraction of the BF16 tensor-core peak at the top of the BF16 compute curve (the
  // published curve's shape over the rows is kept, scaled to this top).
  double gemm_compute_efficiency = 0;
  // A kernel's fixed time beyond its bytes and FLOPs, as a profiler times one kernel.
  double kernel_fixed_us = 0;
  // One all-reduce's fixed time.
  double all_reduce_latency_us = 0;
};

// The figures the shipped model uses: the kernel profile's (the BF16 memory curve at its first
// point, the top of the BF16 compute curve, the all-reduce latency) and the calibration's kernel
// latency.
OperatorFigures FiguresOf(const KernelProfile& kernels, double kernel_latency_s);

// `kernels` with the figures: the BF16 memory curve flat at gemm_memory_efficiency, the BF16
// compute curve scaled so that its top is gemm_compute_efficiency, the all-reduce latency; each
// figure's source says `source`.
KernelProfile WithFigures(const KernelProfile& kernels, const OperatorFigures& figures,
                          const std::string& source);

// One measured operator time with what kvsim needs to price it.
struct OperatorSample {
  int profile = 0;  // index into OperatorProfiles::compute, or ::all_reduce for all-reduces
  int line = 0;
  OperatorFamily family = OperatorFamily::kAttentionProjections;
  const char* op = "";  // Vidur's column stem, "all_reduce" for all-reduces
  std::string gpu;
  std::string model;  // "" for all-reduces
  int64_t tokens = 0;
  int tp = 1;
  int gpus = 1;       // all-reduce GPUs
  double bytes = 0;   // GEMM weights on one GPU (BF16), or the all-reduce message
  double params = 0;  // GEMM weights multiplied per row on one GPU
  double measured_s = 0;
};

// Every row of `profiles` kvsim can express, in file order.
std::vector<OperatorSample> OperatorSamples(const OperatorProfiles& profiles);

// kvsim's time for `sample` on `gpu` with `kernels` and `figures` (kernel_fixed_us is the GEMM
// and elementwise kernels' fixed time; the rest is read from `kernels`, which WithFigures made).
double PredictOperator(const OperatorSample& sample, const GpuSpec& gpu,
                       const KernelProfile& kernels, const OperatorFigures& figures);

// The figures that fit `samples` of one GPU kind best (least squares of log(predicted /
// measured)): the GEMM figures on the GEMM rows, the all-reduce latency on the all-reduce rows;
// a figure with no rows to fit keeps `start`'s value. Elementwise rows fit nothing: the step
// model has no figure of theirs but the kernel's fixed time, which the GEMMs set.
OperatorFigures FitFigures(const std::vector<const OperatorSample*>& samples, const GpuSpec& gpu,
                           const KernelProfile& kernels, const OperatorFigures& start);

// How far a set of predictions is from the measurements: relative errors predicted / measured -
// 1 (above 0: the model is slow; below: fast).
struct ErrorSummary {
  int64_t rows = 0;
  double median_abs = 0;
  double p90_abs = 0;
  double median_signed = 0;
  double worst = 0;  // the largest |error|, signed
  OperatorSample worst_sample;
  double worst_predicted_s = 0;
  // Where the model is systematically off: "fast at 1025+ tokens (-24%)", the groups (token
  // counts, tp degrees; message sizes, GPU counts) whose signed median is past 10%.
  std::string bias;
};

struct PredictedSample {
  const OperatorSample* sample = nullptr;
  double predicted_s = 0;
  double error() const { return predicted_s / sample->measured_s - 1; }
};

ErrorSummary Summarize(const std::vector<PredictedSample>& predictions);

// One line of a validation table: a GPU kind, a model ("all" for every model of the GPU; "" for
// all-reduces) and a family.
struct ValidationLine {
  std::string gpu;
  std::string model;
  OperatorFamily family = OperatorFamily::kAttentionProjections;
  ErrorSummary errors;
};

// The whole comparison, as `kvsim plan --validate-operators` prints it.
struct OperatorValidation {
  std::string root;
  std::string content_hash;
  int64_t files = 0;
  int64_t samples = 0;
  // The files read, by OperatorSample::profile, for naming a row.
  std::vector<std::string> compute_paths;
  std::vector<std::string> all_reduce_paths;
  // Figures by GPU kind: as shipped, and fitted to all of that GPU's rows.
  std::map<std::string, OperatorFigures> shipped;
  std::map<std::string, OperatorFigures> fitted;
  // The shipped model against every row.
  std::vector<ValidationLine> shipped_lines;
  // Held out: each model's rows predicted by figures fitted to the GPU's other models; each GPU
  // count's all-reduces by the latency fitted to the other counts.
  std::vector<ValidationLine> held_out_lines;
  // Transfer: figures fitted to all of `transfer_from`'s rows, predicting `transfer_to`'s.
  std::string transfer_from;
  std::string transfer_to;
  std::vector<ValidationLine> transfer_lines;
};

// Runs the comparison. `gpus` holds the spec of every GPU kind the profiles name (an error names
// one missing); `kernel_latency_s` is the calibration's. The transfer is from a100-sxm-80gb to
// h100-sxm when both are present.
Result<OperatorValidation> ValidateOperators(const OperatorProfiles& profiles,
                                             const std::map<std::string, GpuSpec>& gpus,
                                             const KernelProfile& kernels, double kernel_latency_s);

}  // namespace kvsim::model
