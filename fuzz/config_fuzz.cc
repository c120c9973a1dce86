// Fuzz harness for the config loaders: the first byte picks the loader (model spec, GPU spec or
// kernel table) and, for a model, the deployment it is planned in; the rest is the YAML. No loader
// crashes, hangs or leaks; a refusal is an error whose message starts with the file's name. What
// a loader accepts holds its own bounds: a model's sizes are within the loader's limits and agree
// with each other (heads divide, experts per token within the experts, one default variant, ...),
// its weights, KV bytes and capacity in every deployment that validates are positive and add up;
// a GPU's figures are positive and finite and its capacity adds up; a kernel table's rows go by
// ascending m, the same in every shape, its speedups agree with its times, and written back by
// FormatKernelTable it reads back as the same table to the six digits the writer keeps.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "base/check.h"
#include "base/kv_format.h"
#include "fuzz/fuzz_target.h"
#include "model/capacity.h"
#include "model/config_loader.h"
#include "model/kernel_table.h"
#include "model/kernel_table_loader.h"
#include "model/kv_bytes.h"
#include "model/weights.h"

namespace kvsim::model {
namespace {

constexpr char kPath[] = "fuzz.yaml";

// An H200 as configs/gpus/h200-sxm.yaml describes it: the GPU a fuzzed model is planned on.
GpuSpec H200() {
  GpuSpec gpu;
  gpu.name = "h200-sxm";
  gpu.memory_bytes = uint64_t{143771} << 20;
  gpu.memory_bytes_per_s = 4.8e12;
  gpu.bf16_flop_per_s = 989e12;
  gpu.fp8_flop_per_s = 1979e12;
  gpu.usd_per_gpu_hour = 3.5;
  return gpu;
}

void CheckRefusal(const Status& status) {
  KVSIM_CHECK(!status.ok());
  KVSIM_CHECK_EQ(status.message().rfind(kPath, 0), size_t{0}) << status.ToString();
}

// The sums of a capacity agree with each other.
void CheckCapacity(const Capacity& c, const GpuSpec& gpu, const Deployment& d) {
  KVSIM_CHECK_EQ(c.memory_bytes, gpu.memory_bytes);
  KVSIM_CHECK_LE(c.budget_bytes, gpu.memory_bytes);
  if (!c.weights_fit) {
    KVSIM_CHECK_GE(c.weight_bytes, c.budget_bytes);
    return;
  }
  KVSIM_CHECK_EQ(c.kv_budget_bytes + c.weight_bytes, c.budget_bytes);
  KVSIM_CHECK_GT(c.kv_bytes_per_token, 0u);
  KVSIM_CHECK_EQ(c.pools, d.pool_count());
  KVSIM_CHECK_GE(c.pages_per_pool, 0);
  KVSIM_CHECK_LE(static_cast<uint64_t>(c.pages_per_pool) * c.kv_bytes_per_token *
                     static_cast<uint64_t>(d.page_size),
                 c.kv_budget_bytes);
  KVSIM_CHECK_EQ(c.tokens_per_pool, c.pages_per_pool * d.page_size);
  KVSIM_CHECK_EQ(c.tokens_total, c.tokens_per_pool * c.pools);
  KVSIM_CHECK_GE(c.pages_per_request * d.page_size, d.context_tokens);
  KVSIM_CHECK_LE(c.max_requests_per_pool * c.pages_per_request, c.pages_per_pool);
  KVSIM_CHECK_EQ(c.max_requests_total, c.max_requests_per_pool * c.pools);
}

void CheckWeightFormat(const WeightFormat& f) {
  switch (f.dtype) {
    case WeightDtype::kBf16:
      break;
    case WeightDtype::kFp8:
      KVSIM_CHECK(f.block_size >= 1 && f.block_size <= 4096) << f.block_size;
      KVSIM_CHECK(f.scale_bytes == 2 || f.scale_bytes == 4) << f.scale_bytes;
      break;
    case WeightDtype::kInt4:
      KVSIM_CHECK(f.group_size == 32 || f.group_size == 64 || f.group_size == 128) << f.group_size;
      KVSIM_CHECK(f.scale_bytes == 2 || f.scale_bytes == 4) << f.scale_bytes;
      break;
  }
}

// The bounds config_loader.cc states, and the agreements between fields.
void CheckModelFields(const ModelSpec& m) {
  KVSIM_CHECK(m.layers >= 1 && m.layers <= 1024) << m.layers;
  KVSIM_CHECK(m.dense_layers >= 0 && m.dense_layers <= m.layers) << m.dense_layers;
  KVSIM_CHECK(m.hidden_size >= 1 && m.hidden_size <= (1 << 18)) << m.hidden_size;
  KVSIM_CHECK(m.vocab_size >= 1 && m.vocab_size <= 4'000'000) << m.vocab_size;
  KVSIM_CHECK(m.mtp_layers >= 0 && m.mtp_layers <= 16) << m.mtp_layers;
  KVSIM_CHECK(m.dense_layers == 0 || m.dense_intermediate_size >= 1);
  if (m.moe) {
    KVSIM_CHECK(m.moe->routed_experts >= 1 && m.moe->routed_experts <= 4096);
    KVSIM_CHECK(m.moe->experts_per_token >= 1 && m.moe->experts_per_token <= m.moe->routed_experts);
    KVSIM_CHECK(m.moe->shared_experts >= 0 && m.moe->shared_experts <= 64);
    KVSIM_CHECK_GE(m.moe->intermediate_size, 1);
  } else {
    KVSIM_CHECK_EQ(m.dense_layers, m.layers);
    KVSIM_CHECK_EQ(m.mtp_layers, 0);
  }
  if (m.attention_kind == AttentionKind::kGqa) {
    KVSIM_CHECK(m.gqa.kv_heads >= 1 && m.gqa.kv_heads <= m.gqa.heads);
    KVSIM_CHECK_EQ(m.gqa.heads % m.gqa.kv_heads, 0);
    KVSIM_CHECK(m.gqa.head_dim >= 1 && m.gqa.head_dim <= 1024);
    KVSIM_CHECK(!m.indexer);
  } else {
    KVSIM_CHECK_GE(m.mla.heads, 1);
    KVSIM_CHECK_GE(m.mla.q_lora_rank, 0);
    KVSIM_CHECK_GE(m.mla.kv_lora_rank, 1);
    KVSIM_CHECK(m.mla.qk_nope_head_dim >= 1 && m.mla.qk_rope_head_dim >= 1 &&
                m.mla.v_head_dim >= 1);
  }
  KVSIM_CHECK(!m.indexer || (m.indexer->layers >= 1 && m.indexer->layers <= m.layers));
  KVSIM_CHECK(!m.variants.empty() && m.variants.size() <= 8) << m.variants.size();
  for (size_t i = 0; i < m.variants.size(); ++i) {
    KVSIM_CHECK(m.FindVariant(m.variants[i].name) == &m.variants[i]) << "variant listed twice";
    for (const WeightFormat& format : m.variants[i].formats) CheckWeightFormat(format);
  }
  for (const EncoderSpec& encoder : m.encoders) KVSIM_CHECK_GE(encoder.params, 1u);
}

// The deployment `choice` (bits of the first byte) picks: a KV format, a GPU count and split, and
// whether the MTP layers are loaded.
Deployment ChosenDeployment(uint8_t choice) {
  static const std::vector<KvFormat> formats = AllKvFormats();
  Deployment d;
  d.kv_format = formats[static_cast<size_t>(choice >> 2 & 7) % formats.size()];
  const int split = choice >> 5 & 3;
  d.gpus = split == 0 ? 1 : 8;
  d.tp = split == 3 ? 1 : d.gpus;
  d.pools = split == 2 ? 8 : 0;  // split 2: data-parallel attention, a pool per GPU
  d.load_mtp = (choice & 0x80) != 0;
  return d;
}

// Every variant of an accepted model in the chosen deployment, where it validates: weights, KV
// bytes and capacity on an H200.
void CheckModelPlans(const ModelSpec& m, uint8_t choice) {
  CheckModelFields(m);
  const GpuSpec gpu = H200();
  for (const WeightVariant& variant : m.variants) {
    Deployment d = ChosenDeployment(choice);
    d.weight_variant = variant.name;
    if (!ValidateDeployment(d, m).ok()) continue;
    const WeightBreakdown weights = ComputeWeights(m, d, nullptr);
    KVSIM_CHECK_GT(weights.params(), 0u);
    KVSIM_CHECK_GT(weights.per_gpu_bytes(), 0u);
    KVSIM_CHECK_LE(weights.per_gpu_bytes(), weights.checkpoint_bytes());
    // INT4 is the smallest format (half a byte), BF16 data with an fp32 scale per element the
    // largest: anything outside means a sum wrapped.
    KVSIM_CHECK_GE(2 * weights.checkpoint_bytes(), weights.params());
    KVSIM_CHECK_LE(weights.checkpoint_bytes(), 6 * weights.params());
    const KvBreakdown kv = ComputeKvBytes(m, d, nullptr);
    KVSIM_CHECK_GT(kv.total(), 0u);
    KVSIM_CHECK_LE(kv.fp8_bytes, kv.total());
    CheckCapacity(CapacityOrShortfall(gpu, d, weights, kv, nullptr), gpu, d);
  }
}

void CheckGpu(const GpuSpec& gpu) {
  KVSIM_CHECK(gpu.memory_bytes >= (uint64_t{1024} << 20) &&
              gpu.memory_bytes <= (uint64_t{16} << 40))
      << gpu.memory_bytes;
  KVSIM_CHECK_EQ(gpu.memory_bytes % (uint64_t{1} << 20), 0u);
  for (double rate : {gpu.memory_bytes_per_s, gpu.bf16_flop_per_s, gpu.fp8_work_flop_per_s()}) {
    KVSIM_CHECK(std::isfinite(rate) && rate > 0) << rate;
  }
  KVSIM_CHECK(std::isfinite(gpu.fp8_flop_per_s) && gpu.fp8_flop_per_s >= 0);
  KVSIM_CHECK(gpu.usd_per_gpu_hour >= 0 && gpu.usd_per_gpu_hour <= 1000) << gpu.usd_per_gpu_hour;
  // A capacity on this GPU: 10 GiB of weights, 70 KiB of KV per token.
  WeightBreakdown weights;
  weights.components[0].per_gpu_bytes = uint64_t{10} << 30;
  KvBreakdown kv;
  kv.latent = 70 << 10;
  const Deployment d;
  CheckCapacity(CapacityOrShortfall(gpu, d, weights, kv, nullptr), gpu, d);
}

// Six significant digits: within half a unit of the sixth, relative to the leading digit.
bool Near(double a, double b) { return std::fabs(a - b) <= 6e-6 * std::fabs(b); }

void CheckTableFields(const KernelTable& t) {
  KVSIM_CHECK(!t.gpu.empty() && !t.device.empty());
  KVSIM_CHECK(!t.shapes.empty() && t.shapes.size() <= kMaxKernelTableShapes);
  for (const KernelTableShape& shape : t.shapes) {
    KVSIM_CHECK(!shape.name.empty());
    KVSIM_CHECK(shape.k >= 1 && shape.n >= 1);
    KVSIM_CHECK_EQ(shape.rows.size(), t.shapes.front().rows.size());
    for (size_t i = 0; i < shape.rows.size(); ++i) {
      const KernelTableRow& row = shape.rows[i];
      KVSIM_CHECK_EQ(row.m, t.shapes.front().rows[i].m);
      KVSIM_CHECK(i == 0 || row.m > shape.rows[i - 1].m);
      for (double us : {row.int4_us, row.fp8_us, row.bf16_us}) {
        KVSIM_CHECK(std::isfinite(us) && us > 0) << us;
      }
      KVSIM_CHECK(std::isfinite(row.Int4SpeedupOverBf16()) && row.Int4SpeedupOverBf16() > 0);
      KVSIM_CHECK(std::isfinite(row.Int4SpeedupOverFp8()) && row.Int4SpeedupOverFp8() > 0);
    }
  }
}

void CheckTableRoundTrip(const KernelTable& t) {
  CheckTableFields(t);
  const std::string written = FormatKernelTable(t);
  const Result<KernelTable> read = ParseKernelTable(written, "written.yaml");
  KVSIM_CHECK(read.ok()) << read.status().ToString() << "\n" << written;
  KVSIM_CHECK(read->source == t.source && read->gpu == t.gpu && read->device == t.device &&
              read->date == t.date)
      << written;
  KVSIM_CHECK_EQ(read->shapes.size(), t.shapes.size());
  for (size_t s = 0; s < t.shapes.size(); ++s) {
    const KernelTableShape& a = t.shapes[s];
    const KernelTableShape& b = read->shapes[s];
    KVSIM_CHECK(a.name == b.name && a.k == b.k && a.n == b.n) << written;
    KVSIM_CHECK_EQ(a.rows.size(), b.rows.size());
    for (size_t i = 0; i < a.rows.size(); ++i) {
      KVSIM_CHECK_EQ(a.rows[i].m, b.rows[i].m);
      KVSIM_CHECK(Near(b.rows[i].int4_us, a.rows[i].int4_us) &&
                  Near(b.rows[i].fp8_us, a.rows[i].fp8_us) &&
                  Near(b.rows[i].bf16_us, a.rows[i].bf16_us))
          << written;
    }
  }
}

}  // namespace
}  // namespace kvsim::model

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace kvsim::model;
  if (size == 0) return 0;
  const uint8_t choice = data[0];
  const std::string text(reinterpret_cast<const char*>(data) + 1, size - 1);
  switch (choice % 3) {
    case 0: {
      const kvsim::Result<ModelSpec> model = ParseModelSpec(text, kPath);
      if (model.ok()) CheckModelPlans(*model, choice);
      if (!model.ok()) CheckRefusal(model.status());
      break;
    }
    case 1: {
      const kvsim::Result<GpuSpec> gpu = ParseGpuSpec(text, kPath);
      if (gpu.ok()) CheckGpu(*gpu);
      if (!gpu.ok()) CheckRefusal(gpu.status());
      break;
    }
    default: {
      const kvsim::Result<KernelTable> table = ParseKernelTable(text, kPath);
      if (table.ok()) CheckTableRoundTrip(*table);
      if (!table.ok()) CheckRefusal(table.status());
      break;
    }
  }
  return 0;
}
