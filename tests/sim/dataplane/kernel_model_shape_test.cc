// Kernel mode at a deployment's shape: the heads, dims and projection each shipped deployment
// gives the kernels, what they cannot run, and the cost the CPU backend is held to.
#include "sim/dataplane/kernel_model_shape.h"

#include <gtest/gtest.h>

#include <string>

#include "model/catalog.h"

namespace kvsim::sim {
namespace {

const model::Catalog& Configs() {
  static const model::Catalog catalog = model::Catalog::Open("configs").value();
  return catalog;
}

model::Deployment Deployment(int gpus, int tp, const char* kv_format) {
  model::Deployment d;
  d.gpus = gpus;
  d.tp = tp;
  d.kv_format = ParseKvFormat(kv_format).value();
  return d;
}

TEST(KernelModelShapeTest, KimiOn8xH200IsEightMlaHeadsAndOneExpertsSliceOfItsGateAndUp) {
  const model::ModelSpec kimi = Configs().LoadModel("kimi-k2.6").value();
  KernelSpec base;
  base.layers = 2;
  base.path = KernelPath::kFast;
  const Result<KernelSpec> k = ModelShapedKernelSpec(base, kimi, Deployment(8, 8, "fp8_e4m3"));
  ASSERT_TRUE(k.ok()) << k.status().message();
  EXPECT_EQ(k->attention, AttentionKind::kMla);
  EXPECT_EQ(k->q_heads, 64 / 8);
  EXPECT_EQ(k->head_dim, 576);
  EXPECT_EQ(k->kv_format.dtype, KvDtype::kFp8E4M3);
  EXPECT_EQ(k->gemm_k, kimi.hidden_size);
  EXPECT_EQ(k->gemm_n, 2 * kimi.moe->intermediate_size / 8);
  EXPECT_EQ(k->group_size, 32);  // the published INT4 experts
  EXPECT_EQ(k->layers, 2);       // kept: a slice of the model's layers
  EXPECT_EQ(k->path, KernelPath::kFast);
  EXPECT_EQ(KernelGemmK(*k), 7168);
  // Expert parallelism puts whole experts on a GPU.
  model::Deployment ep = Deployment(8, 8, "fp8_mla_tiles");
  ep.ep = 8;
  EXPECT_EQ(ModelShapedKernelSpec(base, kimi, ep)->gemm_n, 2 * kimi.moe->intermediate_size);
}

TEST(KernelModelShapeTest, LlamaIsItsGqaHeadsPerGpuAndItsMlpUpProjection) {
  const model::ModelSpec llama = Configs().LoadModel("llama-3.1-70b").value();
  const Result<KernelSpec> k = ModelShapedKernelSpec({}, llama, Deployment(2, 2, "fp8_e4m3"));
  ASSERT_TRUE(k.ok()) << k.status().message();
  EXPECT_EQ(k->attention, AttentionKind::kGqa);
  EXPECT_EQ(k->q_heads, llama.gqa.heads / 2);
  EXPECT_EQ(k->kv_heads, llama.gqa.kv_heads / 2);
  EXPECT_EQ(k->head_dim, llama.gqa.head_dim);
  EXPECT_EQ(k->gemm_k, llama.hidden_size);
  EXPECT_EQ(k->gemm_n, 2 * llama.dense_intermediate_size / 2);
  // KV heads fewer than the GPUs are replicated, one per GPU.
  const Result<KernelSpec> wide = ModelShapedKernelSpec({}, llama, Deployment(16, 16, "bf16"));
  ASSERT_TRUE(wide.ok()) << wide.status().message();
  EXPECT_EQ(wide->kv_heads, 1);
  EXPECT_EQ(wide->q_heads, llama.gqa.heads / 16);
}

TEST(KernelModelShapeTest, WhatTheKernelsCannotRunIsRefusedSayingWhy) {
  model::ModelSpec odd = Configs().LoadModel("kimi-k2.6").value();
  odd.mla.kv_lora_rank = 256;
  const Result<KernelSpec> k = ModelShapedKernelSpec({}, odd, Deployment(8, 8, "bf16"));
  ASSERT_FALSE(k.ok());
  EXPECT_NE(k.status().message().find("MLA rows are 256 latent + 64 rope values; the kernels "
                                      "take 512 + 64"),
            std::string::npos)
      << k.status().message();
}

TEST(KernelModelShapeTest, AStepsCostCountsAttentionAndTheProjectionAndTheReference) {
  KernelSpec k;
  k.q_heads = 8;
  k.head_dim = 128;
  k.kv_heads = 1;
  k.layers = 2;
  k.gemm_k = 1024;
  k.gemm_n = 256;
  k.check_every = 4;
  // 3 rows x 2 layers x 8 heads x 100 tokens x (128 + 128), x (1 + 1/4) with the reference; 3 rows
  // x 1024 x 256 for the projection and as much for its reference, on one step in 4.
  EXPECT_DOUBLE_EQ(KernelStepMultiplyAdds(k, 3, 100),
                   3.0 * 2 * 8 * 100 * 256 * 1.25 + 3.0 * 1024 * 256 * 2 / 4);
}

}  // namespace
}  // namespace kvsim::sim
