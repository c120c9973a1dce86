// What an FP8 KV cache costs in attention quality: the same K, V and queries through a BF16 cache
// and through each FP8 format and scale choice, with the real append_kv and decode kernels on a
// backend, compared output by output.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"
#include "kernels/attention/attention_launch.h"
#include "kernels/attention/kv_format.h"
#include "kernels/backend.h"
#include "kernels/error_stats.h"

#include "kernels/launch_options.h"

namespace kvsim {

// The study's shape: every request holds `tokens` tokens of each distribution's K and V.
struct KvAccuracyConfig {
  AttentionKind kind = AttentionKind::kGqa;
  int requests = 4;      // 1..64
  int tokens = 512;      // per request, 1..32768
  int num_kv_heads = 8;  // GQA only
  int head_dim = 128;    // GQA only (MLA: 576)
  int num_q_heads = 64;  // GQA: a multiple of num_kv_heads; MLA: heads sharing the latent
  int page_size = 64;
  int vocab = 1024;        // rows of the random projection whose argmax gives the top-1 token
  bool e4m3_only = false;  // the short version: e4m3 formats only
  uint64_t seed = 0x5eed;
  KernelPath path = kDefaultKernelPath;  // the decode attention kernels, BF16 and FP8 caches alike
  // The fast MLA path's products: kAuto (decode_fast_mla.h's rule), kBf16, or kFp8 for every
  // format the FP8 variant takes (e4m3 and e5m2, per tensor or per token and head) with bf16
  // products for the others (the BF16 cache, FlashMLA rows). Only with the fast path and MLA.
  FastMlaMath mla_products = FastMlaMath::kAuto;
};

// The name of `math` ("auto", "bf16", "fp8") and its parse (InvalidArgument naming the allowed).
std::string FastMlaMathName(FastMlaMath math);
Result<FastMlaMath> ParseFastMlaMath(const std::string& text);

// One (distribution, format, scale) cell.
struct KvAccuracyRow {
  std::string distribution;   // "gaussian", "student-t3 x50", "outlier channels x200"
  std::string format;         // KvFormatName
  std::string scale;          // "calibrated", "1.0", "inverse", "dynamic", "block pow2"
  ErrorStats error;           // FP8-cache outputs against BF16-cache outputs, every element
  double top1_agreement = 0;  // fraction of (request, head) whose projected logits' argmax agree
  int64_t saturated = 0;      // stored values clamped: beyond the largest finite value, rounded
  int64_t stored_values = 0;  // K and V values stored
  float k_absmax = 0;         // the largest |K| drawn, which a per-tensor scale must cover
};

// Ok with the rows (distributions in order, then formats), or the first error. Deterministic for
// a seed on a backend.
Result<std::vector<KvAccuracyRow>> MeasureKvAccuracy(Backend& backend,
                                                     const KvAccuracyConfig& config);

// Checks a configuration's ranges and head shapes; the message names the field and what is
// allowed.
Status ValidateKvAccuracyConfig(const KvAccuracyConfig& config);

}  // namespace kvsim
