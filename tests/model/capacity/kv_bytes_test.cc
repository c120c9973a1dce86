// Per-token KV bytes: the figures engines publish, and SGLang's cell formulas written out.
#include "model/kv_bytes.h"

#include <gtest/gtest.h>

#include "model/catalog.h"

namespace kvsim::model {
namespace {

ModelSpec Load(const std::string& name) {
  Result<Catalog> catalog = Catalog::Open("configs");
  KVSIM_CHECK(catalog.ok());
  Result<ModelSpec> spec = catalog->LoadModel(name);
  KVSIM_CHECK(spec.ok()) << spec.status().ToString();
  return std::move(spec).value();
}

KvBreakdown Kv(const std::string& name, KvDtype dtype, int gpus = 8, int tp = 8, int pools = 0) {
  Deployment d;
  d.kv_dtype = dtype;
  d.gpus = gpus;
  d.tp = tp;
  d.pools = pools;
  return ComputeKvBytes(Load(name), d, nullptr);
}

TEST(KvBytesTest, KimiMlaCellIsLatentPlusRopeTimesLayersTimesBytes) {
  // SGLang's MLA cell: (kv_lora_rank + qk_rope_head_dim) x layers x bytes, not divided by TP.
  EXPECT_EQ(Kv("kimi-k2.6", KvDtype::kBf16).total(), 70'272u);
  EXPECT_EQ(Kv("kimi-k2.6", KvDtype::kFp8E4m3).total(), 35'136u);
  EXPECT_EQ(Kv("kimi-k2.6", KvDtype::kBf16).total(), (512u + 64) * 61 * 2);
  EXPECT_EQ(Kv("kimi-k2.6", KvDtype::kBf16, 8, 1).total(), 70'272u);  // no TP at all
  const KvBreakdown fp8 = Kv("kimi-k2.6", KvDtype::kFp8E4m3);
  EXPECT_EQ(fp8.latent, 512u * 61);
  EXPECT_EQ(fp8.rope, 64u * 61);
  EXPECT_EQ(fp8.fp8_bytes, fp8.total());
  EXPECT_EQ(Kv("kimi-k2.6", KvDtype::kBf16).fp8_bytes, 0u);
}

TEST(KvBytesTest, FlashMlaFp8LayoutIs656BytesPerTokenAndLayer) {
  // 512 FP8 latent values, four fp32 tile scales, 64 BF16 rotary values.
  const KvBreakdown kv = Kv("deepseek-v3", KvDtype::kFp8MlaTiles);
  EXPECT_EQ(kv.total(), 656u * 61);
  EXPECT_EQ(kv.scales, 16u * 61);
  EXPECT_EQ(kv.rope, 128u * 61);
  EXPECT_EQ(kv.fp8_bytes, 512u * 61);  // only the latent is converted on read
}

TEST(KvBytesTest, GqaCellIsKvHeadsOnThisRankTimesKeyAndValue) {
  // SGLang's cell: kv_heads_per_rank x (head_dim + v_head_dim) x layers x bytes.
  EXPECT_EQ(Kv("llama-3.1-70b", KvDtype::kBf16, 1, 1).total(), 8u * 256 * 80 * 2);
  EXPECT_EQ(Kv("llama-3.1-70b", KvDtype::kBf16).total(), 1u * 256 * 80 * 2);
  EXPECT_EQ(Kv("llama-3.1-70b", KvDtype::kBf16, 4, 4).total(), 2u * 256 * 80 * 2);
  EXPECT_EQ(Kv("llama-3.1-70b", KvDtype::kFp8E4m3).total(), 1u * 256 * 80);
  // 4 KV heads on 8 ranks: each rank keeps one (replicated), not half of one.
  EXPECT_EQ(Kv("qwen3-235b-a22b", KvDtype::kBf16).total(), 1u * 256 * 94 * 2);
  // Data-parallel attention (8 pools): every rank holds all heads of its own requests.
  EXPECT_EQ(Kv("llama-3.1-70b", KvDtype::kBf16, 8, 8, 8).total(), 8u * 256 * 80 * 2);
}

TEST(KvBytesTest, Glm52AddsTheIndexerKeysOfItsIndexerLayers) {
  const KvBreakdown bf16 = Kv("glm-5.2", KvDtype::kBf16);
  EXPECT_EQ(bf16.attention_bytes(), 576u * 78 * 2);
  EXPECT_EQ(bf16.indexer_keys, 128u * 21);
  EXPECT_EQ(bf16.indexer_scales, 4u * 21);
  EXPECT_EQ(bf16.total(), 92'628u);
  EXPECT_EQ(Kv("glm-5.2", KvDtype::kFp8E4m3).total(), 576u * 78 + 132 * 21);
}

TEST(KvBytesTest, TraceShowsTheFormula) {
  Trace trace;
  ComputeKvBytes(Load("kimi-k2.6"), Deployment{}, &trace);
  ASSERT_EQ(trace.groups().size(), 1u);
  const auto& terms = trace.groups()[0].terms;
  ASSERT_EQ(terms.size(), 3u);
  EXPECT_EQ(terms[0].formula, "kv_lora_rank 512 x layers 61 x 2 B (whole on every attention rank)");
  EXPECT_EQ(terms[0].value, "62464 B");
  EXPECT_EQ(terms[2].value, "70272 B");
}

}  // namespace
}  // namespace kvsim::model
