// The FP8-versus-BF16 KV cache study behind `kvsim accuracy kv`.
#include "kernels/attention/kv_accuracy.h"

#include <cmath>
#include <string>
#include <utility>

#include "base/distributions.h"
#include "base/prng.h"
#include "kernels/attention/append_kv.h"
#include "kernels/attention/decode_attention.h"
#include "kernels/attention/decode_fast_mla.h"
#include "kernels/attention/kv_cache.h"
#include "kernels/attention/kv_row.h"
#include "kernels/formats.h"

namespace kvsim {
namespace {

// A few channels per head two orders of magnitude above the rest, as real K caches have.
constexpr int kOutliersPerHead = 4;
constexpr double kOutlierGain = 200.0;
// Heavy tails large enough that unscaled e4m3 saturates, as uncalibrated activations do.
constexpr double kHeavyTailGain = 50.0;

enum class Distribution { kGaussian, kHeavyTailed, kOutlierChannels };

const char* DistributionName(Distribution distribution) {
  switch (distribution) {
    case Distribution::kGaussian:
      return "gaussian";
    case Distribution::kHeavyTailed:
      return "student-t3 x50";
    case Distribution::kOutlierChannels:
      return "outlier channels x200";
  }
  return "unknown";
}

enum class ScaleMode { kNone, kCalibrated, kOne, kInverse, kDynamic, kBlocks };

const char* ScaleModeName(ScaleMode mode) {
  switch (mode) {
    case ScaleMode::kNone:
      return "-";
    case ScaleMode::kCalibrated:
      return "calibrated";
    case ScaleMode::kOne:
      return "1.0";
    case ScaleMode::kInverse:
      return "inverse";
    case ScaleMode::kDynamic:
      return "dynamic";
    case ScaleMode::kBlocks:
      return "block pow2";
  }
  return "unknown";
}

struct Variant {
  KvFormat format;
  ScaleMode scale;
};

std::vector<Variant> Variants(const KvAccuracyConfig& config) {
  std::vector<Variant> variants;
  for (KvDtype dtype : {KvDtype::kFp8E4M3, KvDtype::kFp8E5M2}) {
    if (config.e4m3_only && dtype != KvDtype::kFp8E4M3) continue;
    for (ScaleMode mode : {ScaleMode::kCalibrated, ScaleMode::kOne, ScaleMode::kInverse}) {
      variants.push_back({{dtype, KvScaling::kPerTensor}, mode});
    }
    variants.push_back({{dtype, KvScaling::kPerTokenHead}, ScaleMode::kDynamic});
  }
  if (config.kind == AttentionKind::kMla) {
    variants.push_back({{KvDtype::kFp8E4M3, KvScaling::kMlaBlock128}, ScaleMode::kBlocks});
  }
  return variants;
}

// The study's inputs for one distribution, on the host.
struct StudyInputs {
  KvCacheShape shape;  // bf16; the variants change its format
  int pages_per_request = 0;
  std::vector<int32_t> block_table;  // request r owns pages [r * P, (r + 1) * P)
  std::vector<int32_t> seq_lens;
  std::vector<uint16_t> k;  // bf16 [requests, tokens, heads, head_dim] (MLA: [.., 576])
  std::vector<uint16_t> v;  // GQA: as k; MLA: empty
  std::vector<uint16_t> q;  // bf16 [requests, num_q_heads, head_dim]
  float k_absmax = 0;
  float v_absmax = 0;
};

StudyInputs DrawInputs(const KvAccuracyConfig& config, Distribution distribution, Prng& prng) {
  StudyInputs inputs;
  const bool mla = config.kind == AttentionKind::kMla;
  inputs.pages_per_request = (config.tokens + config.page_size - 1) / config.page_size;
  const int pages = config.requests * inputs.pages_per_request;
  inputs.shape =
      mla ? MlaCacheShape(pages, config.page_size, {})
          : GqaCacheShape(pages, config.page_size, config.num_kv_heads, config.head_dim, {});
  for (int page = 0; page < pages; ++page) inputs.block_table.push_back(page);
  inputs.seq_lens.assign(static_cast<size_t>(config.requests), config.tokens);

  const int heads = inputs.shape.num_kv_heads;
  const int dim = inputs.shape.head_dim;
  std::vector<double> gains(static_cast<size_t>(heads) * dim, 1.0);
  if (distribution == Distribution::kOutlierChannels) {
    for (int head = 0; head < heads; ++head) {
      for (int i = 0; i < kOutliersPerHead; ++i) {
        gains[static_cast<size_t>(head) * dim + prng.below(static_cast<uint64_t>(dim))] =
            kOutlierGain;
      }
    }
  }
  auto draw = [&](std::vector<uint16_t>& values, float& absmax) {
    values.resize(static_cast<size_t>(config.requests) * config.tokens * heads * dim);
    for (size_t i = 0; i < values.size(); ++i) {
      double x = 0;
      switch (distribution) {
        case Distribution::kGaussian:
          x = SampleGaussian(prng);
          break;
        case Distribution::kHeavyTailed:
          x = kHeavyTailGain * SampleStudentT(prng, 3);
          break;
        case Distribution::kOutlierChannels:
          x = SampleGaussian(prng) * gains[i % gains.size()];
          break;
      }
      values[i] = EncodeBf16(static_cast<float>(x));
      absmax = std::fmax(absmax, std::fabs(DecodeBf16(values[i])));
    }
  };
  draw(inputs.k, inputs.k_absmax);
  if (!mla) draw(inputs.v, inputs.v_absmax);
  inputs.q.resize(static_cast<size_t>(config.requests) * config.num_q_heads * dim);
  for (uint16_t& value : inputs.q) value = EncodeBf16(static_cast<float>(SampleGaussian(prng)));
  return inputs;
}

// Appends every token of the study into a cache of `format` and runs decode (fp32 outputs).
Result<std::vector<float>> RunCache(Backend& backend, const KvAccuracyConfig& config,
                                    const StudyInputs& inputs, KvFormat format, float k_scale,
                                    float v_scale) {
  KvCacheShape shape = inputs.shape;
  shape.format = format;
  KVSIM_ASSIGN_OR_RETURN(KvCacheStorage storage,
                         KvCacheStorage::Allocate(backend, shape, k_scale, v_scale));
  KVSIM_RETURN_IF_ERROR(storage.Fill(backend, 0xFF));
  KVSIM_ASSIGN_OR_RETURN(DeviceBuffer table, Upload(backend, inputs.block_table));
  BlockTable block_table{&table, config.requests, inputs.pages_per_request,
                         inputs.pages_per_request};
  const size_t row_values = static_cast<size_t>(shape.num_kv_heads) * shape.head_dim;
  const size_t request_values = static_cast<size_t>(config.tokens) * row_values;
  std::vector<int32_t> positions(static_cast<size_t>(config.tokens));
  for (int t = 0; t < config.tokens; ++t) positions[static_cast<size_t>(t)] = t;
  KVSIM_ASSIGN_OR_RETURN(DeviceBuffer position, Upload(backend, positions));
  KVSIM_ASSIGN_OR_RETURN(DeviceBuffer status, backend.Allocate(positions.size() * sizeof(int32_t)));
  for (int r = 0; r < config.requests; ++r) {
    auto slice = [&](const std::vector<uint16_t>& values) {
      const auto first = values.begin() + static_cast<std::ptrdiff_t>(r * request_values);
      return std::vector<uint16_t>(first, first + static_cast<std::ptrdiff_t>(request_values));
    };
    KVSIM_ASSIGN_OR_RETURN(DeviceBuffer k, Upload(backend, slice(inputs.k)));
    DeviceBuffer v;
    if (!inputs.v.empty()) {
      KVSIM_ASSIGN_OR_RETURN(v, Upload(backend, slice(inputs.v)));
    }
    KVSIM_ASSIGN_OR_RETURN(DeviceBuffer request,
                           Upload(backend, std::vector<int32_t>(positions.size(), r)));
    AppendKvArgs append;
    append.cache = storage.view();
    append.block_table = block_table;
    append.num_tokens = config.tokens;
    append.k_new = &k;
    append.v_new = inputs.v.empty() ? nullptr : &v;
    append.token_request = &request;
    append.token_position = &position;
    append.token_status = &status;
    KVSIM_RETURN_IF_ERROR(AppendKv(backend, append));
  }
  const size_t head_rows = static_cast<size_t>(config.requests) * config.num_q_heads;
  KVSIM_ASSIGN_OR_RETURN(DeviceBuffer q, Upload(backend, inputs.q));
  KVSIM_ASSIGN_OR_RETURN(DeviceBuffer seq_lens, Upload(backend, inputs.seq_lens));
  KVSIM_ASSIGN_OR_RETURN(DeviceBuffer out,
                         backend.Allocate(head_rows * static_cast<size_t>(shape.v_head_dim) * 4));
  KVSIM_ASSIGN_OR_RETURN(DeviceBuffer request_status,
                         backend.Allocate(static_cast<size_t>(config.requests) * 4));
  DecodeAttentionArgs decode;
  decode.cache = storage.view();
  decode.block_table = block_table;
  decode.seq_lens = &seq_lens;
  decode.q = &q;
  decode.num_q_heads = config.num_q_heads;
  decode.softmax_scale = 1.0f / std::sqrt(static_cast<float>(shape.head_dim));
  decode.out = &out;
  decode.request_status = &request_status;
  decode.launch.path = config.path;
  // FP8 products where the format takes them; the others (the BF16 baseline among them) keep
  // bf16 products.
  decode.fast_mla_math =
      config.mla_products == FastMlaMath::kFp8 && !FastMlaFp8Supported(shape.format)
          ? FastMlaMath::kBf16
          : config.mla_products;
  KVSIM_RETURN_IF_ERROR(DecodeAttention(backend, decode));
  KVSIM_ASSIGN_OR_RETURN(const std::vector<int32_t> statuses,
                         Download<int32_t>(backend, request_status));
  for (int32_t s : statuses) {
    if (s != 0) return InternalError("decode reported status " + std::to_string(s));
  }
  return Download<float>(backend, out);
}

// W o for one output row: 8 independent sums (which the compiler vectorises), then a fixed tree.
double ProjectRow(const double* __restrict w, const float* __restrict o, int v_dim) {
  constexpr int kLanes = 8;
  double lanes[kLanes] = {};
  for (int i = 0; i < v_dim; i += kLanes) {
    for (int lane = 0; lane < kLanes; ++lane) lanes[lane] += w[i + lane] * o[i + lane];
  }
  return ((lanes[0] + lanes[1]) + (lanes[2] + lanes[3])) +
         ((lanes[4] + lanes[5]) + (lanes[6] + lanes[7]));
}

// The argmax of W o for each (request, head) output row of `v_dim` values (a multiple of 8).
std::vector<int> ProjectedArgmax(const std::vector<double>& projection, int vocab, int v_dim,
                                 const std::vector<float>& outputs) {
  std::vector<int> argmax;
  for (size_t row = 0; row + static_cast<size_t>(v_dim) <= outputs.size();
       row += static_cast<size_t>(v_dim)) {
    int best = 0;
    double best_logit = -INFINITY;
    for (int token = 0; token < vocab; ++token) {
      const double logit =
          ProjectRow(&projection[static_cast<size_t>(token) * v_dim], &outputs[row], v_dim);
      if (logit > best_logit) {
        best_logit = logit;
        best = token;
      }
    }
    argmax.push_back(best);
  }
  return argmax;
}

// Values that storing with `scale` clamps.
int64_t CountSaturated(const std::vector<uint16_t>& values, float scale, KvDtype dtype) {
  int64_t count = 0;
  for (uint16_t bits : values) count += Fp8Saturates(DecodeBf16(bits), scale, dtype) ? 1 : 0;
  return count;
}

}  // namespace

std::string FastMlaMathName(FastMlaMath math) {
  switch (math) {
    case FastMlaMath::kAuto:
      return "auto";
    case FastMlaMath::kBf16:
      return "bf16";
    case FastMlaMath::kFp8:
      return "fp8";
  }
  return "auto";
}

Result<FastMlaMath> ParseFastMlaMath(const std::string& text) {
  for (FastMlaMath math : {FastMlaMath::kAuto, FastMlaMath::kBf16, FastMlaMath::kFp8}) {
    if (text == FastMlaMathName(math)) return math;
  }
  return InvalidArgumentError("unknown MLA products '" + text + "'; allowed: auto, bf16, fp8");
}

Status ValidateKvAccuracyConfig(const KvAccuracyConfig& config) {
  auto range = [](const char* field, int value, int lo, int hi) -> Status {
    if (value < lo || value > hi) {
      return OutOfRangeError(std::string(field) + " " + std::to_string(value) +
                             " is out of range; allowed: " + std::to_string(lo) + " to " +
                             std::to_string(hi));
    }
    return Status::Ok();
  };
  KVSIM_RETURN_IF_ERROR(range("requests", config.requests, 1, 64));
  KVSIM_RETURN_IF_ERROR(range("tokens", config.tokens, 1, 32768));
  KVSIM_RETURN_IF_ERROR(range("page_size", config.page_size, 1, kMaxPageSize));
  KVSIM_RETURN_IF_ERROR(range("vocab", config.vocab, 1, 65536));
  const KvCacheShape shape =
      config.kind == AttentionKind::kMla
          ? MlaCacheShape(1, config.page_size, {})
          : GqaCacheShape(1, config.page_size, config.num_kv_heads, config.head_dim, {});
  KVSIM_RETURN_IF_ERROR(ValidateKvCacheShape(shape));
  KVSIM_RETURN_IF_ERROR(ValidateDecodeHeads(shape, config.num_q_heads));
  if (config.mla_products != FastMlaMath::kAuto && config.path != KernelPath::kFast) {
    return InvalidArgumentError("MLA products " + FastMlaMathName(config.mla_products) +
                                " are the fast path's; allowed with kernel path fast only");
  }
  // The inputs are held on the host: at most 2^31 values of K (4 GiB), and as many of V.
  const int64_t values =
      int64_t{config.requests} * config.tokens * shape.num_kv_heads * shape.head_dim;
  if (values > (int64_t{1} << 31)) {
    return OutOfRangeError("requests x tokens x KV heads x head_dim = " + std::to_string(values) +
                           " values of K; allowed: up to 2^31");
  }
  return Status::Ok();
}

Result<std::vector<KvAccuracyRow>> MeasureKvAccuracy(Backend& backend,
                                                     const KvAccuracyConfig& config) {
  KVSIM_RETURN_IF_ERROR(ValidateKvAccuracyConfig(config));
  Prng prng(config.seed);
  const bool mla = config.kind == AttentionKind::kMla;
  const int v_dim = mla ? kMlaLoraRank : config.head_dim;
  std::vector<double> projection(static_cast<size_t>(config.vocab) * v_dim);
  {
    Prng stream = prng.fork();
    for (double& w : projection) w = SampleGaussian(stream) / std::sqrt(static_cast<double>(v_dim));
  }
  std::vector<KvAccuracyRow> rows;
  for (Distribution distribution :
       {Distribution::kGaussian, Distribution::kHeavyTailed, Distribution::kOutlierChannels}) {
    Prng stream = prng.fork();
    const StudyInputs inputs = DrawInputs(config, distribution, stream);
    KVSIM_ASSIGN_OR_RETURN(const std::vector<float> baseline,
                           RunCache(backend, config, inputs, {}, 1.0f, 1.0f));
    const std::vector<int> baseline_top1 =
        ProjectedArgmax(projection, config.vocab, v_dim, baseline);
    for (const Variant& variant : Variants(config)) {
      const float max_finite = Fp8MaxFinite(variant.format.dtype);
      float k_scale = 1.0f;
      float v_scale = 1.0f;
      if (variant.scale == ScaleMode::kCalibrated || variant.scale == ScaleMode::kInverse) {
        k_scale = inputs.k_absmax / max_finite;
        v_scale = mla ? k_scale : inputs.v_absmax / max_finite;
        if (variant.scale == ScaleMode::kInverse) {
          k_scale = 1.0f / k_scale;
          v_scale = 1.0f / v_scale;
        }
      }
      KVSIM_ASSIGN_OR_RETURN(const std::vector<float> outputs,
                             RunCache(backend, config, inputs, variant.format, k_scale, v_scale));
      KvAccuracyRow row;
      row.distribution = DistributionName(distribution);
      row.format = KvFormatName(variant.format);
      row.scale = ScaleModeName(variant.scale);
      row.k_absmax = inputs.k_absmax;
      for (size_t i = 0; i < outputs.size(); ++i) row.error.Add(baseline[i], outputs[i]);
      const std::vector<int> top1 = ProjectedArgmax(projection, config.vocab, v_dim, outputs);
      int agree = 0;
      for (size_t i = 0; i < top1.size(); ++i) agree += top1[i] == baseline_top1[i] ? 1 : 0;
      row.top1_agreement = static_cast<double>(agree) / static_cast<double>(top1.size());
      row.stored_values = static_cast<int64_t>(inputs.k.size() + inputs.v.size());
      if (variant.format.scaling == KvScaling::kPerTensor) {
        row.saturated = CountSaturated(inputs.k, k_scale, variant.format.dtype) +
                        CountSaturated(inputs.v, v_scale, variant.format.dtype);
      }
      rows.push_back(std::move(row));
    }
  }
  return rows;
}

}  // namespace kvsim
