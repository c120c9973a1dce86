// KV-cache capacity and admission.
#include "model/capacity.h"

#include <fmt/format.h>

#include <cmath>

#include "base/check.h"
#include "base/units.h"

namespace kvsim::model {

Status WeightsDoNotFitError(const GpuSpec& gpu, const Deployment& d, const Capacity& c) {
  return FailedPreconditionError(fmt::format(
      "the weights do not fit: weights need {:.1f} GiB per GPU, {:.1f} available after the "
      "memory fraction ({} of {:.1f} GiB{}); use more GPUs, a larger tp, a smaller weight "
      "variant or a larger memory fraction",
      BytesToGiB(c.weight_bytes), BytesToGiB(c.budget_bytes), d.memory_fraction,
      BytesToGiB(gpu.memory_bytes),
      d.reserved_bytes > 0
          ? fmt::format(", minus {:.1f} GiB reserved", BytesToGiB(d.reserved_bytes))
          : std::string()));
}

Result<Capacity> ComputeCapacity(const GpuSpec& gpu, const Deployment& d,
                                 const WeightBreakdown& weights, const KvBreakdown& kv,
                                 Derivation* derivation) {
  Capacity c = CapacityOrShortfall(gpu, d, weights, kv, derivation);
  if (!c.weights_fit) return WeightsDoNotFitError(gpu, d, c);
  return c;
}

Capacity CapacityOrShortfall(const GpuSpec& gpu, const Deployment& d,
                             const WeightBreakdown& weights, const KvBreakdown& kv,
                             Derivation* derivation) {
  Capacity c;
  c.memory_bytes = gpu.memory_bytes;
  const auto fraction_bytes =
      static_cast<uint64_t>(std::floor(static_cast<double>(gpu.memory_bytes) * d.memory_fraction));
  c.budget_bytes = fraction_bytes > d.reserved_bytes ? fraction_bytes - d.reserved_bytes : 0;
  c.weight_bytes = weights.per_gpu_bytes();
  if (derivation != nullptr) {
    derivation->Section("capacity");
    derivation->Add("budget per GPU",
                    fmt::format("floor(memory {} B x fraction {}) - reserved {} B",
                                gpu.memory_bytes, d.memory_fraction, d.reserved_bytes),
                    FormatBytes(c.budget_bytes));
  }
  if (c.weight_bytes >= c.budget_bytes) {
    c.weights_fit = false;
    if (derivation != nullptr) {
      derivation->Add("KV budget per GPU",
                      fmt::format("budget {} B - weights {} B", c.budget_bytes, c.weight_bytes),
                      "none: the weights do not fit");
    }
    return c;
  }
  c.kv_budget_bytes = c.budget_bytes - c.weight_bytes;
  c.kv_bytes_per_token = kv.total();
  KVSIM_CHECK_GT(c.kv_bytes_per_token, 0u);
  const uint64_t page_size = static_cast<uint64_t>(d.page_size);
  c.pools = d.pool_count();
  c.pages_per_pool = static_cast<int64_t>(c.kv_budget_bytes / (c.kv_bytes_per_token * page_size));
  c.tokens_per_pool = c.pages_per_pool * d.page_size;
  c.tokens_total = c.tokens_per_pool * c.pools;
  c.request_tokens = d.context_tokens;
  c.pages_per_request = (d.context_tokens + d.page_size - 1) / d.page_size;
  c.max_requests_per_pool = c.pages_per_pool / c.pages_per_request;
  c.max_requests_total = c.max_requests_per_pool * c.pools;

  if (derivation != nullptr) {
    derivation->Add("KV budget per GPU",
                    fmt::format("budget {} B - weights {} B", c.budget_bytes, c.weight_bytes),
                    FormatBytes(c.kv_budget_bytes));
    derivation->Add(
        "pages per pool",
        fmt::format("floor(KV budget {} B / (KV bytes per token {} B x page {} tokens))",
                    c.kv_budget_bytes, c.kv_bytes_per_token, d.page_size),
        fmt::format("{}", c.pages_per_pool));
    derivation->Add("tokens per pool",
                    fmt::format("pages {} x page {}", c.pages_per_pool, d.page_size),
                    fmt::format("{}", c.tokens_per_pool));
    derivation->Add("tokens in all pools",
                    fmt::format("tokens per pool {} x pools {}", c.tokens_per_pool, c.pools),
                    fmt::format("{}", c.tokens_total));
    derivation->Add("pages per request",
                    fmt::format("ceil(context {} / page {})", d.context_tokens, d.page_size),
                    fmt::format("{}", c.pages_per_request));
    derivation->Add("requests at once",
                    fmt::format("floor(pages per pool {} / pages per request {}) x pools {}",
                                c.pages_per_pool, c.pages_per_request, c.pools),
                    fmt::format("{}; request {} is the first that does not fit",
                                c.max_requests_total, c.max_requests_total + 1));
  }
  return c;
}

}  // namespace kvsim::model
