// Operator-by-operator validation of the step-time model, and the per-GPU refit.
#include "model/operator_fit.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <set>
#include <tuple>
#include <utility>
#include <vector>

#include "base/check.h"
#include "model/step_time.h"

namespace kvsim::model {
namespace {

// Each figure's physical range, as the search may move it.
constexpr double kMinEfficiency = 0.05;
constexpr double kMaxFixedUs = 50;
constexpr double kMaxAllReduceLatencyUs = 1000;
// The pattern search stops when its step is this fraction of a figure's range.
constexpr double kLastStep = 1e-5;
// A group is called systematically off past this signed median.
constexpr double kBiasThreshold = 0.10;

double TopOf(const EfficiencyCurve& curve) {
  return *std::max_element(curve.efficiency.begin(), curve.efficiency.end());
}

OperatorFamily FamilyOf(ProfiledOp op) {
  switch (op) {
    case ProfiledOp::kAttnPreProj:
    case ProfiledOp::kAttnPostProj:
      return OperatorFamily::kAttentionProjections;
    case ProfiledOp::kMlpUpProj:
    case ProfiledOp::kMlpDownProj:
      return OperatorFamily::kMlpProjections;
    default:
      return OperatorFamily::kElementwise;
  }
}

// Minimises `cost` over the box [lo, hi] by a coordinate pattern search from `start`: each
// coordinate tried a step up and down, the step halved when neither helps. Smooth, bounded and
// deterministic; a few hundred evaluations for three figures.
std::vector<double> Minimize(const std::function<double(const std::vector<double>&)>& cost,
                             const std::vector<double>& lo, const std::vector<double>& hi,
                             std::vector<double> best) {
  const size_t n = best.size();
  double best_cost = cost(best);
  double step = 0.25;
  while (step > kLastStep) {
    bool improved = false;
    for (size_t i = 0; i < n; ++i) {
      for (const double sign : {1.0, -1.0}) {
        std::vector<double> u = best;
        u[i] = std::clamp(u[i] + sign * step * (hi[i] - lo[i]), lo[i], hi[i]);
        const double c = cost(u);
        if (c < best_cost) {
          best_cost = c;
          best = std::move(u);
          improved = true;
        }
      }
    }
    if (!improved) step /= 2;
  }
  return best;
}

double Median(std::vector<double> v) {
  KVSIM_CHECK(!v.empty());
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

// The group of a sample for the bias line: token counts and tp for layer operators, message
// sizes and GPU counts for all-reduces.
std::vector<std::string> GroupsOf(const OperatorSample& s) {
  if (s.family == OperatorFamily::kAllReduce) {
    const char* size = s.bytes < 256 * 1024        ? "messages under 256 KiB"
                       : s.bytes < 4 * 1024 * 1024 ? "messages of 256 KiB to 4 MiB"
                                                   : "messages of 4 MiB and more";
    return {size, fmt::format("{} GPUs", s.gpus)};
  }
  const char* tokens = s.tokens <= 16     ? "1-16 tokens"
                       : s.tokens <= 256  ? "17-256 tokens"
                       : s.tokens <= 1024 ? "257-1024 tokens"
                                          : "1025+ tokens";
  return {tokens, fmt::format("tp {}", s.tp)};
}

const std::string kTransferFrom = "a100-sxm-80gb";
const std::string kTransferTo = "h100-sxm";

}  // namespace

const char* OperatorFamilyName(OperatorFamily family) {
  switch (family) {
    case OperatorFamily::kAttentionProjections:
      return "attention projections";
    case OperatorFamily::kMlpProjections:
      return "MLP projections";
    case OperatorFamily::kElementwise:
      return "norms, rope, activation, add";
    case OperatorFamily::kAllReduce:
      return "all-reduce";
  }
  return "?";
}

OperatorFigures FiguresOf(const KernelProfile& kernels, double kernel_latency_s) {
  OperatorFigures f;
  f.gemm_memory_efficiency = kernels.bf16.memory.efficiency.front();
  f.gemm_compute_efficiency = TopOf(kernels.bf16.compute);
  f.kernel_fixed_us = kernel_latency_s * 1e6;
  f.all_reduce_latency_us = kernels.all_reduce_latency_s.value * 1e6;
  return f;
}

KernelProfile WithFigures(const KernelProfile& kernels, const OperatorFigures& figures,
                          const std::string& source) {
  KernelProfile out = kernels;
  out.bf16.memory.m = {1};
  out.bf16.memory.efficiency = {figures.gemm_memory_efficiency};
  out.bf16.memory.source = {source};
  const double scale = figures.gemm_compute_efficiency / TopOf(kernels.bf16.compute);
  for (size_t i = 0; i < out.bf16.compute.efficiency.size(); ++i) {
    out.bf16.compute.efficiency[i] = std::min(1.0, out.bf16.compute.efficiency[i] * scale);
    out.bf16.compute.source[i] =
        fmt::format("{} (the published curve's shape, scaled to a top of {:.3f})", source,
                    figures.gemm_compute_efficiency);
  }
  out.all_reduce_latency_s = {figures.all_reduce_latency_us * 1e-6, source};
  return out;
}

std::vector<OperatorSample> OperatorSamples(const OperatorProfiles& profiles) {
  std::vector<OperatorSample> out;
  for (size_t p = 0; p < profiles.compute.size(); ++p) {
    const ComputeProfile& profile = profiles.compute[p];
    for (const ComputeProfileRow& row : profile.rows) {
      const int head_dim = row.hidden / row.heads;
      for (int i = 0; i < kProfiledOpCount; ++i) {
        const double measured = row.median_s[static_cast<size_t>(i)];
        if (measured <= 0) continue;  // not measured for this model
        const auto op = static_cast<ProfiledOp>(i);
        OperatorSample s;
        s.profile = static_cast<int>(p);
        s.line = row.line;
        s.family = FamilyOf(op);
        s.op = ProfiledOpColumn(op);
        s.gpu = profile.gpu;
        s.model = profile.model;
        s.tokens = row.tokens;
        s.tp = row.tp;
        s.measured_s = measured;
        // The GEMM's weights on one GPU, k x n, as Vidur shards them (column-parallel QKV and
        // up, row-parallel output and down).
        double k = 0;
        double n = 0;
        switch (op) {
          case ProfiledOp::kAttnPreProj:
            k = row.hidden;
            n = static_cast<double>(row.heads + 2 * row.kv_heads) * head_dim / row.tp;
            break;
          case ProfiledOp::kAttnPostProj:
            k = static_cast<double>(row.heads) * head_dim / row.tp;
            n = row.hidden;
            break;
          case ProfiledOp::kMlpUpProj:
            k = row.hidden;
            n = static_cast<double>(row.gated ? 2 : 1) * row.intermediate / row.tp;
            break;
          case ProfiledOp::kMlpDownProj:
            k = static_cast<double>(row.intermediate) / row.tp;
            n = row.hidden;
            break;
          default:
            break;
        }
        s.params = k * n;
        s.bytes = 2 * k * n;  // Vidur profiles in FP16: two bytes a weight, as BF16
        out.push_back(std::move(s));
      }
    }
  }
  for (size_t p = 0; p < profiles.all_reduce.size(); ++p) {
    const AllReduceProfile& profile = profiles.all_reduce[p];
    for (const AllReduceRow& row : profile.rows) {
      OperatorSample s;
      s.profile = static_cast<int>(p);
      s.line = row.line;
      s.family = OperatorFamily::kAllReduce;
      s.op = "all_reduce";
      s.gpu = profile.gpu;
      s.gpus = row.gpus;
      s.bytes = static_cast<double>(row.bytes);
      s.measured_s = row.median_s;
      out.push_back(std::move(s));
    }
  }
  return out;
}

double PredictOperator(const OperatorSample& s, const GpuSpec& gpu, const KernelProfile& kernels,
                       const OperatorFigures& figures) {
  const double fixed_s = figures.kernel_fixed_us * 1e-6;
  switch (s.family) {
    case OperatorFamily::kAttentionProjections:
    case OperatorFamily::kMlpProjections:
      return PriceGemm(kernels.bf16.memory, kernels.bf16.compute, 1.0, gpu.bf16_flop_per_s,
                       gpu.memory_bytes_per_s, s.bytes, s.params, static_cast<double>(s.tokens))
                 .seconds() +
             fixed_s;
    case OperatorFamily::kElementwise:
      // The step model charges norms, rope, activation and adds their kernels' fixed time only.
      return fixed_s;
    case OperatorFamily::kAllReduce:
      return AllReduceSeconds(kernels, gpu.link_bytes_per_s, s.gpus, s.bytes);
  }
  return 0;
}

OperatorFigures FitFigures(const std::vector<const OperatorSample*>& samples, const GpuSpec& gpu,
                           const KernelProfile& kernels, const OperatorFigures& start) {
  OperatorFigures out = start;
  // The GEMM rows, reduced to what the search varies: time = max(a / memory efficiency,
  // b / compute top) + fixed, with a = bytes / bandwidth and b = FLOPs / (peak x the compute
  // curve's shape at the row's m). PredictOperator computes the same through PriceGemm (the
  // test checks the two agree).
  struct Gemm {
    double a, b, measured;
  };
  std::vector<Gemm> gemms;
  std::vector<const OperatorSample*> reduces;
  const double top = TopOf(kernels.bf16.compute);
  for (const OperatorSample* s : samples) {
    if (s->family == OperatorFamily::kAllReduce) {
      reduces.push_back(s);
    } else if (s->family != OperatorFamily::kElementwise) {
      const double rows = static_cast<double>(s->tokens);
      const double shape = kernels.bf16.compute.At(rows) / top;
      gemms.push_back({s->bytes / gpu.memory_bytes_per_s,
                       2 * s->params * rows / (gpu.bf16_flop_per_s * shape), s->measured_s});
    }
  }
  if (!gemms.empty()) {
    const auto cost = [&gemms](const std::vector<double>& u) {
      double sum = 0;
      for (const Gemm& g : gemms) {
        const double predicted = std::max(g.a / u[0], g.b / u[1]) + u[2] * 1e-6;
        const double e = std::log(predicted / g.measured);
        sum += e * e;
      }
      return sum;
    };
    const std::vector<double> best =
        Minimize(cost, {kMinEfficiency, kMinEfficiency, 0}, {1, 1, kMaxFixedUs},
                 {start.gemm_memory_efficiency, start.gemm_compute_efficiency,
                  std::min(start.kernel_fixed_us, kMaxFixedUs)});
    out.gemm_memory_efficiency = best[0];
    out.gemm_compute_efficiency = best[1];
    out.kernel_fixed_us = best[2];
  }
  if (!reduces.empty()) {
    const auto cost = [&](const std::vector<double>& u) {
      KernelProfile k = kernels;
      k.all_reduce_latency_s.value = u[0] * 1e-6;
      double sum = 0;
      for (const OperatorSample* s : reduces) {
        const double e =
            std::log(AllReduceSeconds(k, gpu.link_bytes_per_s, s->gpus, s->bytes) / s->measured_s);
        sum += e * e;
      }
      return sum;
    };
    out.all_reduce_latency_us =
        Minimize(cost, {0}, {kMaxAllReduceLatencyUs},
                 {std::min(start.all_reduce_latency_us, kMaxAllReduceLatencyUs)})[0];
  }
  return out;
}

ErrorSummary Summarize(const std::vector<PredictedSample>& predictions) {
  ErrorSummary out;
  out.rows = static_cast<int64_t>(predictions.size());
  if (predictions.empty()) return out;
  std::vector<double> abs_errors;
  std::vector<double> errors;
  std::map<std::string, std::vector<double>> groups;
  for (const PredictedSample& p : predictions) {
    const double e = p.error();
    errors.push_back(e);
    abs_errors.push_back(std::fabs(e));
    if (std::fabs(e) > std::fabs(out.worst) || out.worst_sample.measured_s == 0) {
      out.worst = e;
      out.worst_sample = *p.sample;
      out.worst_predicted_s = p.predicted_s;
    }
    for (const std::string& g : GroupsOf(*p.sample)) groups[g].push_back(e);
  }
  out.median_abs = Median(abs_errors);
  out.median_signed = Median(errors);
  std::sort(abs_errors.begin(), abs_errors.end());
  const size_t p90 = static_cast<size_t>(std::ceil(0.9 * static_cast<double>(abs_errors.size())));
  out.p90_abs = abs_errors[std::max<size_t>(p90, 1) - 1];
  // The groups past the threshold, largest first, at most three.
  std::vector<std::pair<double, std::string>> off;
  for (const auto& [name, values] : groups) {
    const double m = Median(values);
    if (std::fabs(m) > kBiasThreshold) off.emplace_back(m, name);
  }
  std::sort(off.begin(), off.end(), [](const auto& a, const auto& b) {
    return std::fabs(a.first) > std::fabs(b.first) ||
           (std::fabs(a.first) == std::fabs(b.first) && a.second < b.second);
  });
  for (size_t i = 0; i < off.size() && i < 3; ++i) {
    if (i > 0) out.bias += "; ";
    out.bias += fmt::format("{} at {} ({:+.0f}%)", off[i].first > 0 ? "slow" : "fast",
                            off[i].second, 100 * off[i].first);
  }
  return out;
}

namespace {

// Summaries of `predictions` by GPU, family and model: an "all" line per GPU and family, then
// one per model (all-reduces have none).
std::vector<ValidationLine> Lines(const std::vector<PredictedSample>& predictions) {
  std::map<std::tuple<std::string, int, std::string>, std::vector<PredictedSample>> by;
  for (const PredictedSample& p : predictions) {
    const OperatorSample& s = *p.sample;
    const int family = static_cast<int>(s.family);
    by[{s.gpu, family, ""}].push_back(p);
    if (s.family != OperatorFamily::kAllReduce) by[{s.gpu, family, s.model}].push_back(p);
  }
  std::vector<ValidationLine> out;
  for (const auto& [key, values] : by) {
    ValidationLine line;
    line.gpu = std::get<0>(key);
    line.family = static_cast<OperatorFamily>(std::get<1>(key));
    line.model = std::get<2>(key).empty() && line.family != OperatorFamily::kAllReduce
                     ? "all"
                     : std::get<2>(key);
    line.errors = Summarize(values);
    out.push_back(std::move(line));
  }
  return out;
}

}  // namespace

Result<OperatorValidation> ValidateOperators(const OperatorProfiles& profiles,
                                             const std::map<std::string, GpuSpec>& gpus,
                                             const KernelProfile& kernels,
                                             double kernel_latency_s) {
  OperatorValidation v;
  v.root = profiles.root;
  v.content_hash = profiles.content_hash;
  v.files = profiles.files;
  for (const ComputeProfile& p : profiles.compute) v.compute_paths.push_back(p.path);
  for (const AllReduceProfile& p : profiles.all_reduce) v.all_reduce_paths.push_back(p.path);
  const std::vector<OperatorSample> samples = OperatorSamples(profiles);
  v.samples = static_cast<int64_t>(samples.size());
  std::map<std::string, std::vector<const OperatorSample*>> by_gpu;
  for (const OperatorSample& s : samples) {
    if (gpus.count(s.gpu) == 0) {
      return NotFoundError(fmt::format(
          "{}: GPU '{}' has no configs/gpus/{}.yaml; name the profile's folder after a kvsim GPU",
          s.family == OperatorFamily::kAllReduce ? profiles.all_reduce[s.profile].path
                                                 : profiles.compute[s.profile].path,
          s.gpu, s.gpu));
    }
    by_gpu[s.gpu].push_back(&s);
  }
  const OperatorFigures shipped = FiguresOf(kernels, kernel_latency_s);
  const auto predict_all = [&](const std::vector<const OperatorSample*>& subset, const GpuSpec& gpu,
                               const OperatorFigures& figures, std::vector<PredictedSample>& out) {
    const KernelProfile k = WithFigures(kernels, figures, "operator fit");
    for (const OperatorSample* s : subset) {
      out.push_back({s, PredictOperator(*s, gpu, k, figures)});
    }
  };

  std::vector<PredictedSample> as_shipped;
  std::vector<PredictedSample> held_out;
  for (const auto& [gpu_name, subset] : by_gpu) {
    const GpuSpec& gpu = gpus.at(gpu_name);
    v.shipped[gpu_name] = shipped;
    v.fitted[gpu_name] = FitFigures(subset, gpu, kernels, shipped);
    predict_all(subset, gpu, shipped, as_shipped);
    // Leave one model out (GEMM and elementwise rows), one GPU count out (all-reduces).
    std::set<std::string> models;
    std::set<int> counts;
    for (const OperatorSample* s : subset) {
      if (s->family == OperatorFamily::kAllReduce) {
        counts.insert(s->gpus);
      } else {
        models.insert(s->model);
      }
    }
    for (const std::string& model : models) {
      std::vector<const OperatorSample*> train;
      std::vector<const OperatorSample*> test;
      for (const OperatorSample* s : subset) {
        if (s->family == OperatorFamily::kAllReduce) continue;
        (s->model == model ? test : train).push_back(s);
      }
      if (train.empty()) continue;  // a GPU with one model has nothing to hold out against
      predict_all(test, gpu, FitFigures(train, gpu, kernels, shipped), held_out);
    }
    for (const int count : counts) {
      std::vector<const OperatorSample*> train;
      std::vector<const OperatorSample*> test;
      for (const OperatorSample* s : subset) {
        if (s->family != OperatorFamily::kAllReduce) continue;
        (s->gpus == count ? test : train).push_back(s);
      }
      if (train.empty()) continue;
      predict_all(test, gpu, FitFigures(train, gpu, kernels, shipped), held_out);
    }
  }
  v.shipped_lines = Lines(as_shipped);
  v.held_out_lines = Lines(held_out);
  if (by_gpu.count(kTransferFrom) > 0 && by_gpu.count(kTransferTo) > 0) {
    v.transfer_from = kTransferFrom;
    v.transfer_to = kTransferTo;
    std::vector<PredictedSample> transfer;
    predict_all(by_gpu.at(kTransferTo), gpus.at(kTransferTo), v.fitted.at(kTransferFrom), transfer);
    v.transfer_lines = Lines(transfer);
  }
  return v;
}

}  // namespace kvsim::model
