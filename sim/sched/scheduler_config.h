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
  // Pages for the next prefill chunk only, as vLLM v1 admits (KVCacheManager.allocate_slots):
  // more requests run, and when the pool runs out a running request is preempted and later
  // recomputed.
  kPrompt,
  // SGLang's PrefillAdder: a new request is charged its remaining prompt, its max_new_tokens
  // clipped to kSglangClipMaxNewTokens, and a page; every running request its remaining
  // max_new_tokens (clipped) times the new-token ratio, which decays each step without a
  // retraction and resets on one. Admission stops when the charge exceeds the free and evictable
  // tokens.
  kSglang,
  // The whole prompt's pages above the watermark, allocated at once (Vidur's vLLM and Sarathi
  // replica schedulers, `_can_allocate_request`); growth is a page at a time as decode needs it.
  kWholePrompt,
};
// "full", "prompt", "sglang", "whole_prompt".
const char* ReservationName(Reservation reservation);
Result<Reservation> ParseReservation(const std::string& text);

// Which running request is preempted when a page is needed and none is free or evictable.
enum class PreemptionVictim {
  kNewest,     // the most recently admitted (vLLM v1: the back of the running queue)
  kMostPages,  // the one holding the most pages (frees the most at once)
  // SGLang's retraction order (ScheduleBatch.retract_decode): the fewest output tokens, then the
  // longest prompt, then the newest.
  kFewestOutputs,
  // vLLM's priority policy (Scheduler.schedule under SchedulingPolicy.PRIORITY): the largest
  // (priority, arrival); the waiting queue is served in (priority, arrival) order too.
  kPriority,
};
// "newest", "most_pages", "fewest_outputs", "priority".
const char* PreemptionVictimName(PreemptionVictim victim);
Result<PreemptionVictim> ParsePreemptionVictim(const std::string& text);

// When a prompt's whole pages become hittable by other requests' prefix matches.
enum class PrefixPublication {
  kAfterPrefill,  // when the whole (re)computation's prefill has completed
  kAfterChunk,    // after every prefill chunk that ran (SGLang: cache_unfinished_req)
  // When the step that writes them is scheduled (vLLM v1: allocate_slots caches full blocks), so
  // a request admitted later in the same step hits them: every step writes before it reads. A
  // page whose writing row does not run is withdrawn from the cache before any row reads, and
  // the rows that matched it are preempted.
  kOnSchedule,
};
// "after_prefill", "after_chunk", "on_schedule".
const char* PrefixPublicationName(PrefixPublication publication);
Result<PrefixPublication> ParsePrefixPublication(const std::string& text);

// Whether generated tokens' pages enter the prefix cache.
enum class OutputCaching {
  kNone,  // only as part of a recomputation's prefill after a preemption
  // Prompt and output (whole pages of computed tokens) when a request finishes or is preempted
  // (SGLang: cache_finished_req).
  kAtEnd,
  // As at_end, and each output page as soon as it is full, at the moment `publish` says (vLLM v1
  // caches full blocks during decode).
  kWhileDecoding,
};
// "none", "at_end", "while_decoding".
const char* OutputCachingName(OutputCaching caching);
Result<OutputCaching> ParseOutputCaching(const std::string& text);

// A request longer than the model serves (prompt + max_new_tokens > max_model_tokens).
enum class LengthLimit {
  kReject,  // rejected (vLLM v1: the input processor refuses it)
  kClip,    // max_new_tokens clipped to what fits; a prompt that alone does not fit is rejected
};
// "reject", "clip".
const char* LengthLimitName(LengthLimit limit);
Result<LengthLimit> ParseLengthLimit(const std::string& text);

// The engine whose rules a scheduler follows; each rule stays settable field by field.
enum class EnginePreset {
  kCustom,  // the rules as the scenario sets them, today's defaults otherwise
  kVllmV1,
  kSglang,
  kVidur,
};
// "custom", "vllm-v1", "sglang", "vidur".
const char* EnginePresetName(EnginePreset preset);
Result<EnginePreset> ParseEnginePreset(const std::string& text);

// SGLang's admission constants (schedule_policy.py, global_config.py, their defaults): the most
// output tokens it charges a request for (CLIP_MAX_NEW_TOKENS); the new-token ratio's start, its
// floor as a fraction of the start, and the decode steps it takes to fall from one to the other;
// the decode steps a retraction's estimate counts per request left running.
inline constexpr int32_t kSglangClipMaxNewTokens = 4096;
inline constexpr double kSglangInitRatio = 0.7;
inline constexpr double kSglangMinRatioFactor = 0.14;
inline constexpr int32_t kSglangDecaySteps = 600;
inline constexpr int32_t kSglangRetractDecodeSteps = 20;

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
  // The longest sequence (prompt + max_new_tokens) the model serves; see length_limit.
  int32_t max_model_tokens = std::numeric_limits<int32_t>::max();
  // The engine the rules below were set from (the report names it and every rule).
  EnginePreset engine = EnginePreset::kCustom;
  PrefixPublication publish = PrefixPublication::kAfterPrefill;
  OutputCaching output_caching = OutputCaching::kNone;
  // Off: a step either prefills (running prefills and admissions) or decodes, never both
  // (SGLang without enable_mixed_chunk).
  bool mixed_steps = true;
  // On: a request whose prefill computed pages another request cached first frees its copies and
  // maps the cached ones (SGLang); off: it keeps its copies (vLLM v1).
  bool free_duplicates = true;
  LengthLimit length_limit = LengthLimit::kReject;
};

// The most requests a scheduler holds at once, waiting and running together.
inline constexpr int32_t kMaxSchedulerRequests = 1 << 22;

// Checks every field; errors name the field and what is allowed.
Status ValidateSchedulerConfig(const SchedulerConfig& config);

}  // namespace kvsim::sim
