// SchedulerConfig: the policies of the simulated server's scheduler and the shape of its KV pool.
#pragma once

#include <cstdint>
#include <limits>
#include <string>

#include "base/status.h"
#include "sim/memory/page_pool.h"
#include "sim/memory/prefix_cache.h"

namespace kvsim::sim {

// What admission sets aside for a request (it never reads the request's true output length).
enum class Reservation {
  // Pages for the prompt plus the declared max_new_tokens, counted at admission and allocated as
  // tokens arrive (TensorRT-LLM's GUARANTEED_NO_EVICT capacity policy): an admitted request
  // always finishes without preemption, and exactly as many requests run as `kvsim plan` says
  // fit.
  kFull,
  // Pages for the next prefill chunk only, as vLLM v1 and SGLang admit: more requests run, and
  // when the pool runs out a running request is preempted and later recomputed.
  kPrompt,
};
// "full", "prompt".
const char* ReservationName(Reservation reservation);
Result<Reservation> ParseReservation(const std::string& text);

// Which running request is preempted when a page is needed and none is free or evictable.
enum class PreemptionVictim {
  kNewest,     // the most recently admitted (vLLM v1: the back of the running queue)
  kMostPages,  // the one holding the most pages (frees the most at once)
};
// "newest", "most_pages".
const char* PreemptionVictimName(PreemptionVictim victim);
Result<PreemptionVictim> ParsePreemptionVictim(const std::string& text);

// What a serving instance does in a deployment: everything, or one side of prefill/decode
// disaggregation.
enum class InstanceRole {
  kUnified,  // prefill and decode in one instance
  kPrefill,  // prefills requests, produces their first token, hands their KV to the decode instance
  kDecode,   // receives requests' KV from the prefill instance and decodes them
};
// "unified", "prefill", "decode".
const char* InstanceRoleName(InstanceRole role);

struct SchedulerConfig {
  InstanceRole role = InstanceRole::kUnified;
  // The KV pool: pages, tokens per page, reuse order, dummy page, tags.
  PagePoolConfig pool;
  int32_t page_size = 16;
  // At most this many requests run at once (vLLM max_num_seqs, SGLang max_running_requests).
  int32_t max_running = 256;
  // Tokens one step computes at most, prefill and decode together (max_num_batched_tokens).
  int32_t token_budget = 8192;
  // Prompts split into chunks of the remaining budget; off, a prompt runs whole in one step and
  // one longer than the budget is rejected.
  bool chunked_prefill = true;
  // With chunked prefill, the most prompt tokens one request computes in a step, so that several
  // prompts share a step (vLLM's long_prefill_token_threshold); 0: the whole remaining budget.
  int32_t prefill_chunk = 0;
  Reservation reservation = Reservation::kFull;
  // Pages admission leaves free for running requests to grow into (vLLM's watermark).
  int32_t watermark_pages = 0;
  PreemptionVictim victim = PreemptionVictim::kNewest;
  bool prefix_cache = false;
  EvictionPolicy eviction = EvictionPolicy::kLru;
  // The longest sequence (prompt + max_new_tokens) the model serves; longer ones are rejected.
  int32_t max_model_tokens = std::numeric_limits<int32_t>::max();
};

// The most requests a scheduler holds at once, waiting and running together.
inline constexpr int32_t kMaxSchedulerRequests = 1 << 22;

// Checks every field; errors name the field and what is allowed.
Status ValidateSchedulerConfig(const SchedulerConfig& config);

}  // namespace kvsim::sim
