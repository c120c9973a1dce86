// Weight bytes against hand-written counts and published checkpoint sizes.
#include "model/weights.h"

#include <gtest/gtest.h>

#include <cmath>

#include "base/units.h"
#include "model/catalog.h"

namespace kvsim::model {
namespace {

ModelSpec Load(const std::string& name) {
  Result<Catalog> catalog = Catalog::Open("configs");
  KVSIM_CHECK(catalog.ok()) << catalog.status().ToString();
  Result<ModelSpec> spec = catalog->LoadModel(name);
  KVSIM_CHECK(spec.ok()) << spec.status().ToString();
  return std::move(spec).value();
}

double RelativeError(double value, double reference) { return std::fabs(value / reference - 1); }

// Bytes written out from the architecture by hand, independently of weights.cc: each term is a
// matrix (rows x cols) with its format's scale count.
constexpr double kBf16 = 2;
double Int4G32(double rows, double cols) { return rows * cols / 2 + rows * (cols / 32) * 2; }
double Fp8Blocks(double rows, double cols) {
  return rows * cols + std::ceil(rows / 128) * std::ceil(cols / 128) * 4;
}

TEST(WeightsTest, KimiCheckpointMatchesAHandCount) {
  const ModelSpec kimi = Load("kimi-k2.6");
  const WeightBreakdown w = ComputeWeights(kimi, Deployment{}, nullptr);
  const double h = 7168;
  // MLA per layer: q_a, q_b, kv_a, kv_b, o.
  const double attention =
      61 * kBf16 * (1536 * h + 64 * 192 * 1536 + 576 * h + 64 * 256 * 512 + h * 64 * 128);
  const double experts = 60 * 384 * (2 * Int4G32(2048, h) + Int4G32(h, 2048));
  const double shared = 60 * kBf16 * 3 * 2048 * h;
  const double dense = 1 * kBf16 * 3 * 18432 * h;
  const double router = 60 * kBf16 * 384 * h;
  const double vocab = kBf16 * 163840 * h;
  const double encoder = kBf16 * 400e6;
  EXPECT_DOUBLE_EQ(w.component(Component::kAttention).checkpoint_bytes, attention);
  EXPECT_DOUBLE_EQ(w.component(Component::kRoutedExperts).checkpoint_bytes, experts);
  EXPECT_DOUBLE_EQ(w.component(Component::kSharedExperts).checkpoint_bytes, shared);
  EXPECT_DOUBLE_EQ(w.component(Component::kDenseMlp).checkpoint_bytes, dense);
  EXPECT_DOUBLE_EQ(w.component(Component::kRouter).checkpoint_bytes, router);
  EXPECT_DOUBLE_EQ(w.component(Component::kEmbedding).checkpoint_bytes, vocab);
  EXPECT_DOUBLE_EQ(w.component(Component::kLmHead).checkpoint_bytes, vocab);
  EXPECT_NEAR(w.component(Component::kEncoder).checkpoint_bytes, encoder, 2048 * 2);
  // About 1T parameters (the model card's figure).
  EXPECT_LT(RelativeError(static_cast<double>(w.params()), 1.04e12), 0.02);
}

TEST(WeightsTest, KimiPerGpuAtTp8ShardsAllButTheLatentProjectionsRouterAndEncoder) {
  const ModelSpec kimi = Load("kimi-k2.6");
  const WeightBreakdown w = ComputeWeights(kimi, Deployment{}, nullptr);
  const double h = 7168;
  const double attention = 61 * kBf16 *
                           ((1536 * h + 576 * h) +  // q_a, kv_a whole on every rank
                            (64 * 192 * 1536 + 64 * 256 * 512 + h * 64 * 128) / 8);
  const double experts = 60 * 384 * (2 * Int4G32(256, h) + Int4G32(h, 256));
  EXPECT_DOUBLE_EQ(w.component(Component::kAttention).per_gpu_bytes, attention);
  EXPECT_DOUBLE_EQ(w.component(Component::kRoutedExperts).per_gpu_bytes, experts);
  EXPECT_DOUBLE_EQ(w.component(Component::kRouter).per_gpu_bytes,
                   w.component(Component::kRouter).checkpoint_bytes);
  EXPECT_EQ(w.component(Component::kEncoder).per_gpu_bytes,
            w.component(Component::kEncoder).checkpoint_bytes);
  // Pinned (regression): the capacity figures rest on it; the hand counts above check it.
  EXPECT_EQ(w.per_gpu_bytes(), 76'980'488'192u);
  // INT4 group 32 with bf16 scales: half a byte per value, 2 bytes per 32 values, so the scales
  // are one ninth of the bytes. BF16 components have none.
  const ComponentWeights& routed = w.component(Component::kRoutedExperts);
  EXPECT_EQ(routed.per_gpu_scale_bytes * 9, routed.per_gpu_bytes);
  EXPECT_EQ(routed.checkpoint_scale_bytes * 9, routed.checkpoint_bytes);
  EXPECT_EQ(w.expert_scale_bytes_per_gpu * 9, w.expert_bytes_per_gpu);
  EXPECT_EQ(w.component(Component::kAttention).per_gpu_scale_bytes, 0u);
  EXPECT_EQ(w.component(Component::kAttention).checkpoint_scale_bytes, 0u);
}

TEST(WeightsTest, Glm52CheckpointsAreThePublished705And421GiB) {
  const ModelSpec glm = Load("glm-5.2");
  Deployment fp8;
  fp8.weight_variant = "fp8";
  Deployment int4;
  int4.weight_variant = "int4";
  const WeightBreakdown w_fp8 = ComputeWeights(glm, fp8, nullptr);
  const WeightBreakdown w_int4 = ComputeWeights(glm, int4, nullptr);
  EXPECT_LT(RelativeError(BytesToGiB(w_fp8.checkpoint_bytes()), 705), 0.03);
  EXPECT_LT(RelativeError(BytesToGiB(w_int4.checkpoint_bytes()), 421), 0.03);
  // Pinned (regression), checked against the published sizes just above.
  EXPECT_EQ(w_fp8.checkpoint_bytes(), 755'534'856'000u);
  EXPECT_EQ(w_int4.checkpoint_bytes(), 450'900'787'200u);
  // About 744B parameters in the main model (the MTP layer comes on top).
  const uint64_t main = w_fp8.params() - w_fp8.component(Component::kMtp).params;
  EXPECT_LT(RelativeError(static_cast<double>(main), 744e9), 0.01);
  // The FP8 routed experts by hand: 75 layers x 256 experts x 3 matrices.
  EXPECT_DOUBLE_EQ(w_fp8.component(Component::kRoutedExperts).checkpoint_bytes,
                   75 * 256 * (2 * Fp8Blocks(2048, 6144) + Fp8Blocks(6144, 2048)));
}

TEST(WeightsTest, Glm52PerGpuAtTp8IsThePublished88And52GiBWhenEverythingIsSharded) {
  const ModelSpec glm = Load("glm-5.2");
  Deployment d;
  d.replicate_latent_projections = false;
  d.load_mtp = true;
  d.weight_variant = "fp8";
  const double fp8 = BytesToGiB(ComputeWeights(glm, d, nullptr).per_gpu_bytes());
  d.weight_variant = "int4";
  const double int4 = BytesToGiB(ComputeWeights(glm, d, nullptr).per_gpu_bytes());
  EXPECT_LT(RelativeError(fp8, 88), 0.03) << fp8;
  EXPECT_LT(RelativeError(int4, 52), 0.03) << int4;

  // As SGLang and vLLM load it (latent projections and indexer whole on every rank, no MTP):
  // 88.2 and 54.4 GiB; the INT4 checkpoint keeps those projections in BF16, so replicating them
  // costs it more. Pinned (regression).
  Deployment engine;
  engine.weight_variant = "fp8";
  EXPECT_EQ(ComputeWeights(glm, engine, nullptr).per_gpu_bytes(), 94'676'524'800u);
  engine.weight_variant = "int4";
  EXPECT_EQ(ComputeWeights(glm, engine, nullptr).per_gpu_bytes(), 58'362'298'368u);
}

TEST(WeightsTest, OtherModelsMatchTheirPublishedParameterCounts) {
  const WeightBreakdown deepseek = ComputeWeights(Load("deepseek-v3"), Deployment{}, nullptr);
  // "685B total: 671B main model weights and 14B MTP module weights"; the MTP module's 14B
  // includes its own embedding and head copies, which the model here does not count.
  EXPECT_LT(RelativeError(
                static_cast<double>(deepseek.params() - deepseek.component(Component::kMtp).params),
                671e9),
            0.005);
  EXPECT_LT(
      RelativeError(static_cast<double>(
                        ComputeWeights(Load("llama-3.1-70b"), Deployment{}, nullptr).params()),
                    70.55e9),
      0.005);
  EXPECT_LT(
      RelativeError(static_cast<double>(
                        ComputeWeights(Load("qwen3-235b-a22b"), Deployment{}, nullptr).params()),
                    235.09e9),
      0.005);
}

TEST(WeightsTest, GqaKeyValueHeadsFewerThanRanksAreReplicatedOnePerRank) {
  const ModelSpec qwen = Load("qwen3-235b-a22b");  // 4 KV heads of 128
  Deployment d;                                    // attention on 8 ranks
  const WeightBreakdown w = ComputeWeights(qwen, d, nullptr);
  const double h = 4096;
  const double per_gpu = 94 * kBf16 * (64 * 128 * h / 8 + 2 * 128 * h + h * 64 * 128 / 8);
  EXPECT_DOUBLE_EQ(w.component(Component::kAttention).per_gpu_bytes, per_gpu);
  EXPECT_DOUBLE_EQ(w.component(Component::kAttention).checkpoint_bytes,
                   94 * kBf16 * (64 * 128 * h + 2 * 4 * 128 * h + h * 64 * 128));
}

TEST(WeightsTest, OneGpuHoldsTheWholeCheckpointExceptUnloadedMtp) {
  for (const char* name : {"kimi-k2.6", "glm-5.2", "deepseek-v3", "llama-3.1-70b"}) {
    const ModelSpec spec = Load(name);
    Deployment d;
    d.gpus = 1;
    d.tp = 1;
    const WeightBreakdown w = ComputeWeights(spec, d, nullptr);
    EXPECT_EQ(w.per_gpu_bytes(),
              w.checkpoint_bytes() - w.component(Component::kMtp).checkpoint_bytes)
        << name;
  }
}

TEST(WeightsTest, DecodeReadsAndWorkSplitByFormat) {
  const ModelSpec glm = Load("glm-5.2");
  Deployment d;
  d.weight_variant = "fp8";
  const WeightBreakdown fp8 = ComputeWeights(glm, d, nullptr);
  EXPECT_FALSE(fp8.experts_int4);
  EXPECT_EQ(fp8.moe_layers, 75);
  // One expert's share on one GPU: gate and up split by rows, down by columns, 8 ways.
  EXPECT_DOUBLE_EQ(fp8.expert_bytes_per_gpu, 2 * Fp8Blocks(256, 6144) + Fp8Blocks(6144, 256));
  EXPECT_EQ(fp8.expert_params_per_gpu, 3u * 256 * 6144);
  // Attention, indexer, dense MLP, shared expert, router and LM head are read every step; the
  // embedding and the routed experts are not.
  uint64_t fixed = 0;
  for (Component c : {Component::kAttention, Component::kIndexer, Component::kDenseMlp,
                      Component::kSharedExperts, Component::kRouter, Component::kLmHead}) {
    fixed += fp8.component(c).per_gpu_bytes;
  }
  EXPECT_EQ(fp8.step_read_bytes_per_gpu, fixed);
  d.weight_variant = "int4";
  const WeightBreakdown int4 = ComputeWeights(glm, d, nullptr);
  EXPECT_TRUE(int4.experts_int4);
  // What one token multiplies on one GPU: the attention's sharded projections and the whole
  // replicated ones (q_a 2048 x 6144 and kv_a 576 x 6144 per layer).
  const uint64_t attention = int4.component(Component::kAttention).per_gpu_params;
  EXPECT_GT(attention, 78u * (2048 + 576) * 6144);
  EXPECT_LT(attention, int4.component(Component::kAttention).params);
}

TEST(WeightsTest, TraceNamesEveryComponentWithItsFormula) {
  Derivation derivation;
  ComputeWeights(Load("kimi-k2.6"), Deployment{}, &derivation);
  ASSERT_FALSE(derivation.groups().empty());
  const auto& terms = derivation.groups().front().terms;
  ASSERT_GE(terms.size(), 8u);
  EXPECT_EQ(terms.front().quantity, "attention");
  EXPECT_NE(terms.front().formula.find("q_a 1536x7168 + q_b 12288x1536 / ranks"), std::string::npos)
      << terms.front().formula;
  EXPECT_EQ(terms.back().quantity, "checkpoint");
}

}  // namespace
}  // namespace kvsim::model
