// Per-token KV bytes: the figures engines publish, SGLang's cell formulas written out, every KV
// format, and which formats a model may use.
#include "model/kv_bytes.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

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

KvBreakdown Kv(const std::string& name, const std::string& format, int gpus = 8, int tp = 8,
               int pools = 0) {
  Deployment d;
  d.kv_format = ParseKvFormat(format).value();
  d.gpus = gpus;
  d.tp = tp;
  d.pools = pools;
  return ComputeKvBytes(Load(name), d, nullptr);
}

TEST(KvBytesTest, KimiMlaCellIsLatentPlusRopeTimesLayersTimesBytes) {
  // SGLang's MLA cell: (kv_lora_rank + qk_rope_head_dim) x layers x bytes, not divided by TP.
  EXPECT_EQ(Kv("kimi-k2.6", "bf16").total(), 70'272u);
  EXPECT_EQ(Kv("kimi-k2.6", "fp8_e4m3").total(), 35'136u);
  EXPECT_EQ(Kv("kimi-k2.6", "bf16").total(), (512u + 64) * 61 * 2);
  EXPECT_EQ(Kv("kimi-k2.6", "bf16", 8, 1).total(), 70'272u);  // no TP at all
  const KvBreakdown fp8 = Kv("kimi-k2.6", "fp8_e4m3");
  EXPECT_EQ(fp8.latent, 512u * 61);
  EXPECT_EQ(fp8.rope, 64u * 61);
  EXPECT_EQ(fp8.fp8_bytes, fp8.total());
  EXPECT_EQ(Kv("kimi-k2.6", "bf16").fp8_bytes, 0u);
}

TEST(KvBytesTest, FlashMlaFp8LayoutIs656BytesPerTokenAndLayer) {
  // 512 FP8 latent values, four fp32 tile scales, 64 BF16 rotary values.
  const KvBreakdown kv = Kv("deepseek-v3", "fp8_mla_tiles");
  EXPECT_EQ(kv.total(), 656u * 61);
  EXPECT_EQ(kv.scales, 16u * 61);
  EXPECT_EQ(kv.rope, 128u * 61);
  EXPECT_EQ(kv.fp8_bytes, 512u * 61);  // only the latent is converted on read
}

TEST(KvBytesTest, GqaCellIsKvHeadsOnThisRankTimesKeyAndValue) {
  // SGLang's cell: kv_heads_per_rank x (head_dim + v_head_dim) x layers x bytes.
  EXPECT_EQ(Kv("llama-3.1-70b", "bf16", 1, 1).total(), 8u * 256 * 80 * 2);
  EXPECT_EQ(Kv("llama-3.1-70b", "bf16").total(), 1u * 256 * 80 * 2);
  EXPECT_EQ(Kv("llama-3.1-70b", "bf16", 4, 4).total(), 2u * 256 * 80 * 2);
  EXPECT_EQ(Kv("llama-3.1-70b", "fp8_e4m3").total(), 1u * 256 * 80);
  // 4 KV heads on 8 ranks: each rank keeps one (replicated), not half of one.
  EXPECT_EQ(Kv("qwen3-235b-a22b", "bf16").total(), 1u * 256 * 94 * 2);
  // Data-parallel attention (8 pools): every rank holds all heads of its own requests.
  EXPECT_EQ(Kv("llama-3.1-70b", "bf16", 8, 8, 8).total(), 8u * 256 * 80 * 2);
}

TEST(KvBytesTest, Glm52AddsTheIndexerKeysOfItsIndexerLayers) {
  const KvBreakdown bf16 = Kv("glm-5.2", "bf16");
  EXPECT_EQ(bf16.attention_bytes(), 576u * 78 * 2);
  EXPECT_EQ(bf16.indexer_keys, 128u * 21);
  EXPECT_EQ(bf16.indexer_scales, 4u * 21);
  EXPECT_EQ(bf16.total(), 92'628u);
  EXPECT_EQ(Kv("glm-5.2", "fp8_e4m3").total(), 576u * 78 + 132 * 21);
}

TEST(KvBytesTest, PerTokenHeadFormatsAddOneFp32ScalePerTokenAndHead) {
  // GQA: K and V each keep a scale per head on this rank: 1 head at tp 8, all 8 at tp 1.
  const KvBreakdown gqa = Kv("llama-3.1-70b", "fp8_e4m3_per_token_head");
  EXPECT_EQ(gqa.keys, 128u * 80);
  EXPECT_EQ(gqa.values, 128u * 80);
  EXPECT_EQ(gqa.scales, 2u * 4 * 80);
  EXPECT_EQ(gqa.total(), 1u * 256 * 80 + 2 * 4 * 80);
  EXPECT_EQ(gqa.fp8_bytes, 1u * 256 * 80);  // the scales are read as they are
  EXPECT_EQ(Kv("llama-3.1-70b", "fp8_e4m3_per_token_head", 1, 1).scales, 8u * 2 * 4 * 80);
  // MLA: one latent row and one scale per token and layer.
  const KvBreakdown mla = Kv("kimi-k2.6", "fp8_e5m2_per_token_head");
  EXPECT_EQ(mla.latent, 512u * 61);
  EXPECT_EQ(mla.rope, 64u * 61);
  EXPECT_EQ(mla.scales, 4u * 61);
  EXPECT_EQ(mla.total(), 580u * 61);
  EXPECT_EQ(mla.fp8_bytes, 576u * 61);
}

TEST(KvBytesTest, E5m2TakesTheBytesOfE4m3) {
  for (const std::string model : {"kimi-k2.6", "glm-5.2", "llama-3.1-70b", "qwen3-235b-a22b"}) {
    EXPECT_EQ(Kv(model, "fp8_e5m2").total(), Kv(model, "fp8_e4m3").total()) << model;
    EXPECT_EQ(Kv(model, "fp8_e5m2_per_token_head").total(),
              Kv(model, "fp8_e4m3_per_token_head").total())
        << model;
  }
}

TEST(KvBytesTest, FlashMlaTilesNeedMlaAndWholeTiles) {
  Deployment d;
  d.kv_format = ParseKvFormat("fp8_mla_tiles").value();
  EXPECT_EQ(ValidateDeployment(d, Load("llama-3.1-70b")).message(),
            "KV dtype fp8_mla_tiles needs MLA attention; llama-3.1-70b uses GQA (allowed: bf16, "
            "fp8_e4m3, fp8_e5m2, fp8_e4m3_per_token_head, fp8_e5m2_per_token_head)");
  ModelSpec odd_latent = Load("kimi-k2.6");
  odd_latent.mla.kv_lora_rank = 320;
  EXPECT_EQ(ValidateDeployment(d, odd_latent).message(),
            "KV dtype fp8_mla_tiles needs kv_lora_rank divisible by 128 (tiles of 128); "
            "kimi-k2.6 has 320");
  // Every other format fits any shape, that latent included.
  for (const KvFormat format : AllKvFormats()) {
    if (format.scaling == KvScaling::kMlaBlock128) continue;
    d.kv_format = format;
    EXPECT_TRUE(ValidateDeployment(d, Load("llama-3.1-70b")).ok()) << KvFormatName(format);
    EXPECT_TRUE(ValidateDeployment(d, odd_latent).ok()) << KvFormatName(format);
  }
}

TEST(KvBytesTest, TraceShowsTheFormula) {
  Derivation derivation;
  ComputeKvBytes(Load("kimi-k2.6"), Deployment{}, &derivation);
  ASSERT_EQ(derivation.groups().size(), 1u);
  const auto& terms = derivation.groups()[0].terms;
  ASSERT_EQ(terms.size(), 3u);
  EXPECT_EQ(terms[0].formula, "kv_lora_rank 512 x layers 61 x 2 B (whole on every attention rank)");
  EXPECT_EQ(terms[0].value, "62464 B");
  EXPECT_EQ(terms[2].value, "70272 B");
}

std::vector<DerivationTerm> KvTerms(const std::string& model, const std::string& format) {
  Deployment d;
  d.kv_format = ParseKvFormat(format).value();
  Derivation derivation;
  ComputeKvBytes(Load(model), d, &derivation);
  KVSIM_CHECK_EQ(derivation.groups().size(), 1u);
  return derivation.groups()[0].terms;
}

TEST(KvBytesTest, TraceShowsEachFormatsRopeAndScales) {
  struct Expected {
    const char* model;
    const char* format;
    size_t term;
    const char* quantity;
    const char* formula;
    const char* value;
  };
  const Expected table[] = {
      {"deepseek-v3", "fp8_mla_tiles", 1, "rotary key", "qk_rope_head_dim 64 x layers 61 x 2 B",
       "7808 B"},
      {"deepseek-v3", "fp8_mla_tiles", 2, "tile scales", "kv_lora_rank 512 / 128 x 4 B x layers 61",
       "976 B"},
      {"kimi-k2.6", "fp8_e4m3_per_token_head", 1, "rotary key",
       "qk_rope_head_dim 64 x layers 61 x 1 B", "3904 B"},
      {"kimi-k2.6", "fp8_e4m3_per_token_head", 2, "token scales",
       "one fp32 per token: 4 B x layers 61", "244 B"},
      {"llama-3.1-70b", "fp8_e5m2_per_token_head", 2, "scales",
       "one fp32 per token and head, K and V: 2 x 1 heads x 4 B x layers 80", "640 B"},
  };
  for (const Expected& e : table) {
    SCOPED_TRACE(std::string(e.model) + " " + e.format);
    const std::vector<DerivationTerm> terms = KvTerms(e.model, e.format);
    ASSERT_GT(terms.size(), e.term);
    EXPECT_EQ(terms[e.term].quantity, e.quantity);
    EXPECT_EQ(terms[e.term].formula, e.formula);
    EXPECT_EQ(terms[e.term].value, e.value);
  }
  // Keys, values, total: a per-tensor cache stores no scale per token.
  EXPECT_EQ(KvTerms("llama-3.1-70b", "fp8_e4m3").size(), 3u);
}

}  // namespace
}  // namespace kvsim::model
