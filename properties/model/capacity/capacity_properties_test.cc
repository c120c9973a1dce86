// RapidCheck properties of the capacity model over random deployments of every shipped model and
// GPU: the capacity arithmetic holds exactly, admission is tight, and weights, capacity and step
// time move the way their physics says when one input moves. Seeds print on failure; RC_PARAMS
// pins the case count.
#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <vector>

#include "model/catalog.h"
#include "model/kernel_profile.h"
#include "model/plan.h"

namespace kvsim::model {
namespace {

struct Specs {
  std::vector<ModelSpec> models;
  std::vector<GpuSpec> gpus;
};

const Specs& Shipped() {
  static const Specs* specs = [] {
    auto* s = new Specs;
    Result<Catalog> catalog = Catalog::Open("configs");
    KVSIM_CHECK(catalog.ok());
    for (const auto& name : catalog->ModelNames()) s->models.push_back(*catalog->LoadModel(name));
    for (const auto& name : catalog->GpuNames()) s->gpus.push_back(*catalog->LoadGpu(name));
    return s;
  }();
  return *specs;
}

// The shipped kernel profile: the published efficiencies the step time is priced with.
std::shared_ptr<const KernelProfile> PublishedKernels() {
  static const std::shared_ptr<const KernelProfile> profile = [] {
    Result<KernelProfile> loaded = LoadKernelProfile("configs/kernels/published.yaml");
    KVSIM_CHECK(loaded.ok()) << loaded.status().ToString();
    return std::make_shared<const KernelProfile>(std::move(loaded).value());
  }();
  return profile;
}

struct Case {
  const ModelSpec* model;
  const GpuSpec* gpu;
  Deployment deployment;
};

// A valid deployment of a shipped model on a shipped GPU, with every field drawn.
Case DrawCase() {
  const Specs& s = Shipped();
  Case c;
  c.model = &s.models[*rc::gen::inRange<size_t>(0, s.models.size())];
  c.gpu = &s.gpus[*rc::gen::inRange<size_t>(0, s.gpus.size())];
  Deployment& d = c.deployment;
  d.tp = 1 << *rc::gen::inRange(0, 5);
  d.gpus = d.tp * (1 << *rc::gen::inRange(0, 3));
  // Pools: a multiple of the replica count that divides the GPU count.
  d.pools = d.replicas() << *rc::gen::inRange(0, 1 + __builtin_ctz(static_cast<unsigned>(d.tp)));
  d.memory_fraction = *rc::gen::inRange(50, 96) / 100.0;
  d.reserved_bytes = static_cast<uint64_t>(*rc::gen::inRange(0, 4)) << 30;
  d.page_size = *rc::gen::element(1, 3, 16, 64, 128);
  d.context_tokens =
      *rc::gen::inRange<int64_t>(1, std::min<int64_t>(200'001, c.model->max_context_tokens + 1));
  d.output_tokens = *rc::gen::inRange<int64_t>(0, d.context_tokens);
  const bool mla = c.model->attention_kind == AttentionKind::kMla;
  // Every KV format the attention takes: all of them for MLA, all but FlashMLA's for GQA.
  std::vector<KvFormat> formats;
  for (const KvFormat format : AllKvFormats()) {
    if (mla || format.scaling != KvScaling::kMlaBlock128) formats.push_back(format);
  }
  d.kv_format = *rc::gen::elementOf(formats);
  d.weight_variant = c.model->variants[*rc::gen::inRange<size_t>(0, c.model->variants.size())].name;
  d.replicate_latent_projections = *rc::gen::arbitrary<bool>();
  d.load_mtp = c.model->mtp_layers > 0 && *rc::gen::arbitrary<bool>();
  RC_ASSERT(ValidateDeployment(d, *c.model).ok());
  return c;
}

Result<Capacity> CapacityOf(const Case& c) {
  return ComputeCapacity(*c.gpu, c.deployment, ComputeWeights(*c.model, c.deployment, nullptr),
                         ComputeKvBytes(*c.model, c.deployment, nullptr), nullptr);
}

// A drawn case whose weights fit: tensor parallelism (and the GPU count with it) doubles until
// they do, up to tp 128, where every shipped model fits every shipped GPU.
Case DrawFittingCase() {
  Case c = DrawCase();
  while (!CapacityOf(c).ok()) {
    RC_ASSERT(c.deployment.tp < 128);
    c.deployment.tp *= 2;
    c.deployment.gpus *= 2;
    c.deployment.pools *= 2;
    RC_ASSERT(ValidateDeployment(c.deployment, *c.model).ok());
  }
  return c;
}

RC_GTEST_PROP(CapacityProperties, ArithmeticIsExactAndAdmissionIsTight, ()) {
  const Case c = DrawCase();
  const Result<Capacity> r = CapacityOf(c);
  const uint64_t weights = ComputeWeights(*c.model, c.deployment, nullptr).per_gpu_bytes();
  if (!r.ok()) {
    // Refused exactly when the weights do not fit the budget.
    RC_ASSERT(r.status().code() == StatusCode::kFailedPrecondition);
    const double budget = static_cast<double>(c.gpu->memory_bytes) * c.deployment.memory_fraction -
                          static_cast<double>(c.deployment.reserved_bytes);
    RC_ASSERT(static_cast<double>(weights) >= budget - 1);
    return;
  }
  const Capacity& k = *r;
  const uint64_t page = static_cast<uint64_t>(c.deployment.page_size);
  RC_ASSERT(k.weight_bytes == weights);
  RC_ASSERT(k.kv_budget_bytes + k.weight_bytes == k.budget_bytes);
  RC_ASSERT(k.tokens_per_pool == k.pages_per_pool * c.deployment.page_size);
  RC_ASSERT(k.tokens_total == k.tokens_per_pool * c.deployment.pool_count());
  // The pool is as full as whole pages allow: one more page would not fit.
  RC_ASSERT(static_cast<uint64_t>(k.pages_per_pool) * page * k.kv_bytes_per_token <=
            k.kv_budget_bytes);
  RC_ASSERT(static_cast<uint64_t>(k.pages_per_pool + 1) * page * k.kv_bytes_per_token >
            k.kv_budget_bytes);
  // max_requests_per_pool requests fit in a pool and one more does not.
  RC_ASSERT(k.pages_per_request * static_cast<int64_t>(page) >= c.deployment.context_tokens);
  RC_ASSERT((k.pages_per_request - 1) * static_cast<int64_t>(page) < c.deployment.context_tokens);
  RC_ASSERT(k.max_requests_per_pool * k.pages_per_request <= k.pages_per_pool);
  RC_ASSERT((k.max_requests_per_pool + 1) * k.pages_per_request > k.pages_per_pool);
  RC_ASSERT(k.max_requests_total == k.max_requests_per_pool * c.deployment.pool_count());
}

RC_GTEST_PROP(CapacityProperties, ShardingNeverLosesWeightsAndMoreRanksNeverAddThem, ()) {
  Case c = DrawCase();
  const WeightBreakdown w = ComputeWeights(*c.model, c.deployment, nullptr);
  const uint64_t mtp = c.deployment.load_mtp ? 0 : w.component(Component::kMtp).checkpoint_bytes;
  // The ranks of one replica hold at least the loaded checkpoint between them (replicated parts
  // count on every rank), and no rank holds more than all of it.
  RC_ASSERT(w.per_gpu_bytes() * static_cast<uint64_t>(c.deployment.tp) >=
            w.checkpoint_bytes() - mtp);
  RC_ASSERT(w.per_gpu_bytes() <= w.checkpoint_bytes() - mtp);
  if (c.deployment.tp < c.deployment.gpus) {
    Deployment wider = c.deployment;
    wider.tp *= 2;
    wider.pools = 0;
    c.deployment.pools = 0;
    RC_ASSERT(ComputeWeights(*c.model, wider, nullptr).per_gpu_bytes() <=
              ComputeWeights(*c.model, c.deployment, nullptr).per_gpu_bytes());
  }
}

RC_GTEST_PROP(CapacityProperties, MoreMemoryOrASmallerCacheNeverHoldsFewerTokens, ()) {
  const Case c = DrawFittingCase();
  const Result<Capacity> base = CapacityOf(c);
  RC_ASSERT(base.ok());
  Case more = c;
  more.deployment.memory_fraction = std::min(1.0, c.deployment.memory_fraction + 0.04);
  RC_ASSERT(CapacityOf(more)->tokens_total >= base->tokens_total);
  if (c.deployment.kv_format.dtype == KvDtype::kBf16) {
    Case fp8 = c;
    fp8.deployment.kv_format = {KvDtype::kFp8E4M3, KvScaling::kPerTensor};
    const Result<Capacity> small = CapacityOf(fp8);
    // Half the cache bytes (indexer keys aside, which stay FP8): at least as many tokens, and
    // twice as many when the cache has no indexer.
    RC_ASSERT(small->tokens_total >= base->tokens_total);
    if (!c.model->indexer) {
      RC_ASSERT(small->kv_bytes_per_token * 2 == base->kv_bytes_per_token);
      RC_ASSERT(small->pages_per_pool >= 2 * base->pages_per_pool);
    }
  }
}

RC_GTEST_PROP(CapacityProperties, FormatsOfOneWidthDifferOnlyInTheirScales, ()) {
  const Case c = DrawCase();
  const auto kv = [&c](KvDtype dtype, KvScaling scaling) {
    Deployment d = c.deployment;
    d.kv_format = {dtype, scaling};
    return ComputeKvBytes(*c.model, d, nullptr);
  };
  const KvBreakdown e4m3 = kv(KvDtype::kFp8E4M3, KvScaling::kPerTensor);
  for (const KvDtype dtype : {KvDtype::kFp8E4M3, KvDtype::kFp8E5M2}) {
    // Both FP8 dtypes store a byte per value; a per-token-head scale adds to the values, which
    // stay FP8, and adds to nothing else.
    const KvBreakdown per_tensor = kv(dtype, KvScaling::kPerTensor);
    const KvBreakdown token_head = kv(dtype, KvScaling::kPerTokenHead);
    RC_ASSERT(per_tensor.total() == e4m3.total());
    RC_ASSERT(per_tensor.scales == 0u);
    RC_ASSERT(token_head.scales > 0u);
    RC_ASSERT(token_head.total() == per_tensor.total() + token_head.scales);
    RC_ASSERT(token_head.fp8_bytes == per_tensor.fp8_bytes);
  }
}

RC_GTEST_PROP(CapacityProperties, DecodeStepGrowsWithConcurrencyAndFitIsAPrefix, ()) {
  const Case c = DrawFittingCase();
  // The fitted figures anywhere inside the shipped calibration's bounds.
  StepTimeParams params;
  params.kernels = PublishedKernels();
  params.kernel_latency_s = *rc::gen::inRange(0, 20000) * 1e-9;
  params.fp8_kv_layer_latency_s = *rc::gen::inRange(0, 50000) * 1e-9;
  params.fp8_dequant_cycles_per_value = *rc::gen::inRange(49, 1000) * 1e-3;
  std::vector<int64_t> concurrencies;
  for (int64_t n = 1; n <= 4096; n = n * 2 + *rc::gen::inRange(0, 3)) concurrencies.push_back(n);
  PlanSettings settings;
  settings.model = c.model->name;
  settings.gpu = c.gpu->name;
  settings.deployment = c.deployment;
  const Result<PlanResult> r =
      PlanLoaded(settings, *c.model, *c.gpu, params, concurrencies, nullptr);
  if (!r.ok()) {
    // The weights fit; only a request longer than the cache can stop the plan.
    RC_ASSERT(r.status().message().rfind("no request of ", 0) == 0);
    return;
  }
  bool fitted = true;
  double previous = 0;
  for (const DecodeEstimate& e : r->decode) {
    RC_ASSERT(e.step_s >= previous);
    RC_ASSERT(e.step.latency_s <= e.step_s);
    double sum = 0;
    for (double seconds : e.step.operator_s) {
      RC_ASSERT(seconds >= 0);
      sum += seconds;
    }
    RC_ASSERT(std::fabs(sum - e.step_s) <= 1e-12 * e.step_s);
    RC_ASSERT(e.step.experts_touched <= static_cast<double>(r->weights.routed_experts) + 1e-9);
    // Once a batch does not fit, no larger one does.
    RC_ASSERT(!e.fits || fitted);
    fitted = e.fits;
    previous = e.step_s;
  }
}

}  // namespace
}  // namespace kvsim::model
