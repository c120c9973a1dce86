// The qualitative facts of the production write-ups (the project's mission), checked on every
// shipped model and every shipped GPU that has the formats involved, with the published kernel
// efficiencies and no measured kernel table: INT4 weights decode faster than FP8 ones at low
// concurrency and the gain shrinks as the batch grows; INT4 prefill of long prompts is slower
// than FP8 prefill, modestly; an FP8 cache decodes a little slower than a BF16 one where both
// fit; throughput rises with concurrency until memory runs out. Where the model disagrees with a
// fact as the write-ups state it (the INT4 gain peaks at tens of requests for MoE models, not at
// one; an FP8 cache overtakes BF16 on an H100 for GQA models at large batches), the test pins
// what the model says and docs/capacity-validation.md gives the numbers and the reason.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "model/plan.h"
#include "tests/model/capacity/shipped_configs.h"

namespace kvsim::model {
namespace {

// Eight GPUs at tensor parallel 8, requests of `context` tokens (the model's maximum if shorter),
// an eighth of them output, no kernel table.
PlanSettings Deployment8(const std::string& model, const std::string& gpu, int64_t max_context,
                         int64_t context = 8192) {
  PlanSettings s;
  s.model = model;
  s.gpu = gpu;
  s.kernel_table = "none";
  s.deployment.context_tokens = std::min<int64_t>(context, max_context);
  s.deployment.output_tokens = s.deployment.context_tokens / 8;
  return s;
}

// Concurrencies 1, 2, 4, ... below `limit`, and `limit` itself.
std::vector<int64_t> Sweep(int64_t limit) {
  std::vector<int64_t> c;
  for (int64_t n = 1; n < limit && c.size() < kMaxConcurrencyPoints - 1; n *= 2) c.push_back(n);
  c.push_back(limit);
  return c;
}

Result<PlanResult> PlanAt(const PlanSettings& s, const std::vector<int64_t>& concurrencies) {
  return PlanOrShortfall(s, ShippedCatalog(), ShippedParams(), concurrencies, nullptr);
}

// The INT4 and FP8 variants of a model that differ only where the INT4 one is INT4: the
// comparison the published INT4 claims make. Empty names when the model has no such pair.
std::pair<std::string, std::string> LikeForLikeInt4AndFp8(const ModelSpec& m) {
  for (const WeightVariant& int4 : m.variants) {
    for (const WeightVariant& fp8 : m.variants) {
      bool int4_somewhere = false;
      bool like = true;
      for (int c = 0; c < kComponentCount; ++c) {
        const WeightFormat& a = int4.formats[static_cast<size_t>(c)];
        const WeightFormat& b = fp8.formats[static_cast<size_t>(c)];
        if (a.dtype == WeightDtype::kInt4) {
          int4_somewhere = true;
          like = like && b.dtype == WeightDtype::kFp8;
        } else {
          like = like && a.dtype == b.dtype;
        }
      }
      if (int4_somewhere && like) return {int4.name, fp8.name};
    }
  }
  return {};
}

bool Has(const WeightVariant& v, WeightDtype dtype) {
  for (const WeightFormat& f : v.formats) {
    if (f.dtype == dtype) return true;
  }
  return false;
}

std::vector<std::string> Fp8Gpus() {
  std::vector<std::string> gpus;
  for (const std::string& name : ShippedCatalog().GpuNames()) {
    if (ShippedCatalog().LoadGpu(name)->has_fp8_cores()) gpus.push_back(name);
  }
  return gpus;
}

TEST(PublishedFactsTest, ThroughputRisesWithConcurrencyUntilMemoryRunsOut) {
  int checked = 0;
  for (const std::string& model : ShippedCatalog().ModelNames()) {
    const ModelSpec m = ShippedCatalog().LoadModel(model).value();
    for (const std::string& gpu : ShippedCatalog().GpuNames()) {
      for (const char* kv : {"bf16", "fp8_e4m3"}) {
        PlanSettings s = Deployment8(model, gpu, m.max_context_tokens);
        s.deployment.kv_format = ParseKvFormat(kv).value();
        const Result<PlanResult> probe = PlanAt(s, {1});
        ASSERT_TRUE(probe.ok()) << probe.status().ToString();
        if (!probe->planned()) continue;
        const int64_t fit = probe->capacity.max_requests_total;
        const PlanResult r = PlanAt(s, Sweep(fit + 1)).value();
        SCOPED_TRACE(model + " on " + gpu + " " + kv);
        for (size_t i = 0; i + 1 < r.decode.size(); ++i) {
          EXPECT_TRUE(r.decode[i].fits) << r.decode[i].concurrency;
          if (i > 0) {
            EXPECT_GT(r.decode[i].tokens_per_s, r.decode[i - 1].tokens_per_s);
          }
        }
        EXPECT_FALSE(r.decode.back().fits) << "request " << fit + 1 << " must not fit";
        ++checked;
      }
    }
  }
  EXPECT_GT(checked, 20);
}

// Requests of 2,048 tokens in an FP8 cache, so that enough fit for the batch to grow past the
// gain's peak: a MoE model's INT4 gain grows while more of the experts are touched each step,
// and shrinks once nearly all are and the cache's reads (and for dense models the compute bound,
// where FP8 multiplies at twice the BF16 rate) take over.
TEST(PublishedFactsTest, Int4DecodesFasterAtLowConcurrencyAndTheGainShrinksAsTheBatchGrows) {
  int checked = 0;
  for (const std::string& model : ShippedCatalog().ModelNames()) {
    const ModelSpec m = ShippedCatalog().LoadModel(model).value();
    const auto [int4, fp8] = LikeForLikeInt4AndFp8(m);
    if (int4.empty()) continue;
    for (const std::string& gpu : Fp8Gpus()) {
      PlanSettings a = Deployment8(model, gpu, m.max_context_tokens, 2048);
      a.deployment.kv_format = {KvDtype::kFp8E4M3, KvScaling::kPerTensor};
      a.deployment.weight_variant = int4;
      PlanSettings b = a;
      b.deployment.weight_variant = fp8;
      const PlanResult pa = PlanAt(a, {1}).value();
      const PlanResult pb = PlanAt(b, {1}).value();
      if (!pa.planned() || !pb.planned()) continue;
      const int64_t both = std::min(pa.capacity.max_requests_total, pb.capacity.max_requests_total);
      const std::vector<int64_t> sweep = Sweep(both);
      const PlanResult ra = PlanAt(a, sweep).value();
      const PlanResult rb = PlanAt(b, sweep).value();
      SCOPED_TRACE(model + " " + int4 + " vs " + fp8 + " on " + gpu);
      std::vector<double> gain;
      for (size_t i = 0; i < sweep.size(); ++i) {
        gain.push_back(ra.decode[i].tokens_per_s / rb.decode[i].tokens_per_s - 1);
      }
      EXPECT_GT(gain.front(), 0) << "INT4 must decode faster at concurrency 1";
      EXPECT_LT(gain.back(), *std::max_element(gain.begin(), gain.end()))
          << "the gain must shrink by concurrency " << sweep.back();
      ++checked;
    }
  }
  EXPECT_GE(checked, 6);  // Kimi K2.6 (B200), GLM 5.2 (H200, B200), Llama 3.1 70B (3 GPUs)
}

// Where the model disagrees with the write-up: GLM 5.2's published INT4 checkpoint keeps
// attention and the shared expert in BF16, which at one request reads more than its INT4 experts
// save, so it decodes slower than the FP8 checkpoint there and faster from 8 requests on. A
// published vLLM benchmark of an INT4 checkpoint built the same way agrees (78 against 89 tokens/s
// at one request; docs/capacity-validation.md).
TEST(PublishedFactsTest, Glm52sPublishedInt4CheckpointDecodesSlowerAtOneRequest) {
  PlanSettings fp8 = Deployment8("glm-5.2", "h200-sxm", 202752);
  fp8.deployment.kv_format = {KvDtype::kFp8E4M3, KvScaling::kPerTensor};
  fp8.deployment.weight_variant = "fp8";
  PlanSettings int4 = fp8;
  int4.deployment.weight_variant = "int4";
  const PlanResult a = PlanAt(int4, {1, 8}).value();
  const PlanResult b = PlanAt(fp8, {1, 8}).value();
  EXPECT_LT(a.decode[0].tokens_per_s, b.decode[0].tokens_per_s);
  EXPECT_GT(a.decode[0].tokens_per_s, 0.9 * b.decode[0].tokens_per_s);
  EXPECT_GT(a.decode[1].tokens_per_s, b.decode[1].tokens_per_s);
  EXPECT_GT(a.decode[0].step.of(Operator::kAttentionProjections),
            b.decode[0].step.of(Operator::kAttentionProjections));
  EXPECT_LT(a.decode[0].step.of(Operator::kRoutedExperts),
            b.decode[0].step.of(Operator::kRoutedExperts));
}

// Prompts of 7,168 tokens: long enough that the expert GEMMs are compute-bound. A MoE model's
// short prompts give each expert a few dozen rows, where the GEMMs stream weights and INT4 reads
// half of FP8's bytes: there INT4 prefills faster (docs/capacity-validation.md).
TEST(PublishedFactsTest, Int4PrefillIsSlowerThanFp8PrefillModestly) {
  int checked = 0;
  for (const std::string& model : ShippedCatalog().ModelNames()) {
    const ModelSpec m = ShippedCatalog().LoadModel(model).value();
    for (const WeightVariant& int4 : m.variants) {
      for (const WeightVariant& fp8 : m.variants) {
        if (!Has(int4, WeightDtype::kInt4) || Has(fp8, WeightDtype::kInt4) ||
            !Has(fp8, WeightDtype::kFp8)) {
          continue;
        }
        for (const std::string& gpu : Fp8Gpus()) {
          PlanSettings a = Deployment8(model, gpu, m.max_context_tokens);
          a.deployment.weight_variant = int4.name;
          PlanSettings b = a;
          b.deployment.weight_variant = fp8.name;
          const PlanResult ra = PlanAt(a, {1}).value();
          const PlanResult rb = PlanAt(b, {1}).value();
          if (!ra.planned() || !rb.planned()) continue;
          const double ratio = ra.prefill.tokens_per_s / rb.prefill.tokens_per_s;
          SCOPED_TRACE(model + " " + int4.name + " vs " + fp8.name + " on " + gpu);
          EXPECT_LT(ratio, 1);
          // Modestly: INT4 keeps at least 60% of FP8's prefill throughput.
          EXPECT_GT(ratio, 0.6);
          ++checked;
        }
      }
    }
  }
  EXPECT_GE(checked, 6);
}

// Published kernels convert an FP8 cache to BF16 as they read it, at the conversion cost fitted
// on the H200. Where a GPU reads memory fast for its SM clock (H200, B200) the conversion costs
// about what the halved reads save, or more; on an H100, whose bandwidth is 70% of the H200's at
// the same clock, the halved reads win once a GQA model's batch passes a few tens of requests.
TEST(PublishedFactsTest, AnFp8CacheDecodesALittleSlowerThanBf16WhereBothFit) {
  int checked = 0;
  for (const std::string& model : ShippedCatalog().ModelNames()) {
    const ModelSpec m = ShippedCatalog().LoadModel(model).value();
    for (const std::string& gpu : Fp8Gpus()) {
      PlanSettings bf16 = Deployment8(model, gpu, m.max_context_tokens);
      PlanSettings fp8 = bf16;
      fp8.deployment.kv_format = {KvDtype::kFp8E4M3, KvScaling::kPerTensor};
      const PlanResult probe = PlanAt(bf16, {1}).value();
      if (!probe.planned()) continue;
      const std::vector<int64_t> sweep = Sweep(probe.capacity.max_requests_total);
      const PlanResult a = PlanAt(bf16, sweep).value();
      const PlanResult b = PlanAt(fp8, sweep).value();
      SCOPED_TRACE(model + " on " + gpu);
      for (size_t i = 0; i < sweep.size(); ++i) {
        const double ratio = b.decode[i].tokens_per_s / a.decode[i].tokens_per_s;
        if (gpu == "h100-sxm" && m.attention_kind == AttentionKind::kGqa && sweep[i] > 16) {
          continue;  // the exception above, pinned below
        }
        EXPECT_LT(ratio, 1) << sweep[i];
        // A little: within 25% (the published table: 9% at one request, 4% at 32).
        EXPECT_GT(ratio, 0.75) << sweep[i];
      }
      ++checked;
    }
  }
  EXPECT_GT(checked, 10);
  // The exception: Llama 3.1 70B on 8 x H100 with 256 requests of 8,192 tokens.
  const ModelSpec llama = ShippedCatalog().LoadModel("llama-3.1-70b").value();
  PlanSettings bf16 = Deployment8("llama-3.1-70b", "h100-sxm", llama.max_context_tokens);
  PlanSettings fp8 = bf16;
  fp8.deployment.kv_format = {KvDtype::kFp8E4M3, KvScaling::kPerTensor};
  EXPECT_GT(PlanAt(fp8, {128}).value().decode[0].tokens_per_s,
            PlanAt(bf16, {128}).value().decode[0].tokens_per_s);
}

}  // namespace
}  // namespace kvsim::model
