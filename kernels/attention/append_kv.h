// append_kv: quantises new tokens' K and V (BF16 in) in the cache's format and writes them into
// the slots their block tables and positions name. Bit-identical on the CPU and CUDA backends.
#pragma once

#include "base/status.h"
#include "kernels/attention/kv_cache.h"
#include "kernels/backend.h"
#include "kernels/launch_options.h"

namespace kvsim {

// Tokens per call.
inline constexpr int kMaxAppendTokens = 1 << 20;

// The arguments of one append_kv call: buffers on the backend the call runs on.
struct AppendKvArgs {
  KvCache cache;
  BlockTable block_table;
  int num_tokens = 0;  // 1..kMaxAppendTokens
  // bf16 bits. GQA: [num_tokens, num_kv_heads, head_dim]. MLA: [num_tokens, 576], the latent
  // (kv_lora_rank values, then the rope values).
  const DeviceBuffer* k_new = nullptr;
  const DeviceBuffer* v_new = nullptr;  // GQA: as k_new; MLA: nullptr
  // int32 [num_tokens]: the block-table row (request) of each token.
  const DeviceBuffer* token_request = nullptr;
  // int32 [num_tokens]: each token's position in its request's sequence (0-based); the slot is
  // (block_table[request][position / page_size], position % page_size).
  const DeviceBuffer* token_position = nullptr;
  // int32 [num_tokens], written: a KvAccessStatus per token. A token that is not kOk writes
  // nothing anywhere.
  DeviceBuffer* token_status = nullptr;
  // The CUDA stream of the call. append_kv has one implementation: launch.path is not consulted.
  LaunchOptions launch;
};

// Validates every shape and buffer (an error names what is wrong and what is allowed), then runs
// on `backend` (on CUDA, asynchronously: a fault while the kernel runs surfaces at the next
// Synchronize or CopyToHost). Per-token problems (a request, position or page out of range) are not
// errors of the call: they are reported in token_status and that token is skipped.
//
// Formats: bf16 stores the input bits; per-tensor FP8 stores Encode(x / scale) (round to nearest
// even, saturating); per-token-head FP8 first sets the row's scale to max(absmax / largest finite,
// 2^-126) over its finite values; MLA block128 does that per 128 values with FlashMLA's
// power-of-two scales and copies the rope values as bf16. NaN inputs store NaN codes.
//
// Two or more tokens of one call that name the same (page, slot), through one block-table row or
// two rows sharing a page: the last of them in call order is written whole (all heads, K and V,
// codes and scales) and every earlier one gets kSuperseded and writes nothing, identically on both
// backends, so a slot never holds one token's codes with another's scale. (A serving engine
// re-sending a token, as on a retried step, wants the newest values; the status shows it.)
//
// On CUDA the call is three launches on launch.stream and allocates nothing: (1) each token's
// status, and each named slot's claim word (the first 4 bytes of its head-0 K row) set to -1;
// (2) every located token takes atomicMax(claim, token index), and whichever of two tokens the
// maximum leaves behind is marked kSuperseded (exactly one writer per mark); (3) the tokens still
// kOk write their rows, overwriting the claim word with data. The slot's old contents are lost
// from launch (1) on, as they would be by the write.
Status AppendKv(Backend& backend, const AppendKvArgs& args);

}  // namespace kvsim
