// Scheduler policy names and validation.
#include "sim/sched/scheduler_config.h"

namespace kvsim::sim {

const char* ReservationName(Reservation reservation) {
  switch (reservation) {
    case Reservation::kFull:
      return "full";
    case Reservation::kPrompt:
      return "prompt";
    case Reservation::kSglang:
      return "sglang";
    case Reservation::kWholePrompt:
      return "whole_prompt";
  }
  return "unknown";
}

Result<Reservation> ParseReservation(const std::string& text) {
  for (Reservation r : {Reservation::kFull, Reservation::kPrompt, Reservation::kSglang,
                        Reservation::kWholePrompt}) {
    if (text == ReservationName(r)) return r;
  }
  return InvalidArgumentError("unknown reservation '" + text +
                              "'; allowed: full, prompt, sglang, whole_prompt");
}

const char* PreemptionVictimName(PreemptionVictim victim) {
  switch (victim) {
    case PreemptionVictim::kNewest:
      return "newest";
    case PreemptionVictim::kMostPages:
      return "most_pages";
    case PreemptionVictim::kFewestOutputs:
      return "fewest_outputs";
    case PreemptionVictim::kPriority:
      return "priority";
  }
  return "unknown";
}

Result<PreemptionVictim> ParsePreemptionVictim(const std::string& text) {
  for (PreemptionVictim v : {PreemptionVictim::kNewest, PreemptionVictim::kMostPages,
                             PreemptionVictim::kFewestOutputs, PreemptionVictim::kPriority}) {
    if (text == PreemptionVictimName(v)) return v;
  }
  return InvalidArgumentError("unknown preemption victim '" + text +
                              "'; allowed: newest, most_pages, fewest_outputs, priority");
}

const char* PrefixPublicationName(PrefixPublication publication) {
  switch (publication) {
    case PrefixPublication::kAfterPrefill:
      return "after_prefill";
    case PrefixPublication::kAfterChunk:
      return "after_chunk";
    case PrefixPublication::kOnSchedule:
      return "on_schedule";
  }
  return "unknown";
}

Result<PrefixPublication> ParsePrefixPublication(const std::string& text) {
  for (PrefixPublication p : {PrefixPublication::kAfterPrefill, PrefixPublication::kAfterChunk,
                              PrefixPublication::kOnSchedule}) {
    if (text == PrefixPublicationName(p)) return p;
  }
  return InvalidArgumentError("unknown publication '" + text +
                              "'; allowed: after_prefill, after_chunk, on_schedule");
}

const char* OutputCachingName(OutputCaching caching) {
  switch (caching) {
    case OutputCaching::kNone:
      return "none";
    case OutputCaching::kAtEnd:
      return "at_end";
    case OutputCaching::kWhileDecoding:
      return "while_decoding";
  }
  return "unknown";
}

Result<OutputCaching> ParseOutputCaching(const std::string& text) {
  for (OutputCaching c :
       {OutputCaching::kNone, OutputCaching::kAtEnd, OutputCaching::kWhileDecoding}) {
    if (text == OutputCachingName(c)) return c;
  }
  return InvalidArgumentError("unknown output caching '" + text +
                              "'; allowed: none, at_end, while_decoding");
}

const char* LengthLimitName(LengthLimit limit) {
  return limit == LengthLimit::kReject ? "reject" : "clip";
}

Result<LengthLimit> ParseLengthLimit(const std::string& text) {
  if (text == "reject") return LengthLimit::kReject;
  if (text == "clip") return LengthLimit::kClip;
  return InvalidArgumentError("unknown length limit '" + text + "'; allowed: reject, clip");
}

const char* EnginePresetName(EnginePreset preset) {
  switch (preset) {
    case EnginePreset::kCustom:
      return "custom";
    case EnginePreset::kVllmV1:
      return "vllm-v1";
    case EnginePreset::kSglang:
      return "sglang";
    case EnginePreset::kVidur:
      return "vidur";
  }
  return "unknown";
}

Result<EnginePreset> ParseEnginePreset(const std::string& text) {
  for (EnginePreset e : {EnginePreset::kCustom, EnginePreset::kVllmV1, EnginePreset::kSglang,
                         EnginePreset::kVidur}) {
    if (text == EnginePresetName(e)) return e;
  }
  return InvalidArgumentError("unknown engine '" + text +
                              "'; allowed: custom, vllm-v1, sglang, vidur");
}

const char* InstanceRoleName(InstanceRole role) {
  switch (role) {
    case InstanceRole::kUnified:
      return "unified";
    case InstanceRole::kPrefill:
      return "prefill";
    case InstanceRole::kDecode:
      return "decode";
  }
  return "unknown";
}

Status ValidateSchedulerConfig(const SchedulerConfig& c) {
  if (c.page_size < 1 || c.page_size > 65536) {
    return OutOfRangeError("page_size " + std::to_string(c.page_size) +
                           " is out of range; allowed: 1 to 65536");
  }
  if (c.max_running < 1 || c.max_running > kMaxSchedulerRequests) {
    return OutOfRangeError("max_running " + std::to_string(c.max_running) +
                           " is out of range; allowed: 1 to " +
                           std::to_string(kMaxSchedulerRequests));
  }
  if (c.token_budget < 1 || c.token_budget > (1 << 24)) {
    return OutOfRangeError("token_budget " + std::to_string(c.token_budget) +
                           " is out of range; allowed: 1 to 16777216");
  }
  if (c.prefill_chunk < 0 || c.prefill_chunk > (1 << 24)) {
    return OutOfRangeError("prefill_chunk " + std::to_string(c.prefill_chunk) +
                           " is out of range; allowed: 0 (the budget) to 16777216");
  }
  if (c.watermark_pages < 0 || c.watermark_pages >= c.pool.num_pages) {
    return OutOfRangeError("watermark_pages " + std::to_string(c.watermark_pages) +
                           " is out of range; allowed: 0 to the pool's pages - 1 (" +
                           std::to_string(c.pool.num_pages - 1) + ")");
  }
  if (c.max_model_tokens < 1) {
    return OutOfRangeError("max_model_tokens must be positive");
  }
  return Status::Ok();
}

}  // namespace kvsim::sim
