// Request generation.
#include "sim/workload/workload.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>

#include "base/check.h"

namespace kvsim::sim {
namespace {

// Seeds of shared-prefix groups: fixed per group index, so every run's group g is the same text.
constexpr uint64_t kGroupSeedBase = 0x6a09e667f3bcc908ULL;
// Seeds of trace blocks: fixed per hash id, so equal ids are the same text in every request.
constexpr uint64_t kTraceBlockSeedBase = 0xbb67ae8584caa73bULL;
// Mixed into the run's seed for each request's priority.
constexpr uint64_t kPrioritySeedBase = 0x3c6ef372fe94f82bULL;

Status CheckPpm(const char* field, int64_t ppm) {
  if (ppm < 0 || ppm > kPartsPerMillion) {
    return OutOfRangeError(std::string(field) + " must be a probability from 0 to 1");
  }
  return Status::Ok();
}

Status ValidateTraceWorkload(const WorkloadSpec& spec) {
  const TraceWorkloadSpec& trace = spec.trace;
  if (spec.requests < 0 || spec.requests > kMaxTraceRequests) {
    return OutOfRangeError("workload.requests " + std::to_string(spec.requests) +
                           " is out of range for a trace; allowed: 0 (all of it) to " +
                           std::to_string(kMaxTraceRequests));
  }
  if (trace.file.empty()) return InvalidArgumentError("workload.trace.file is empty");
  if (trace.replace_arrivals) {
    KVSIM_RETURN_IF_ERROR(ValidateArrivalSpec(spec.arrival).WithContext("workload.arrival"));
  }
  if (!(trace.time_scale > 0 && trace.time_scale <= kMaxTraceTimeScale)) {
    return OutOfRangeError("workload.trace.time_scale must be above 0 and at most 1000");
  }
  if (trace.clip_tokens != 0 && (trace.clip_tokens < 2 || trace.clip_tokens > kMaxTraceTokens)) {
    return OutOfRangeError("workload.trace.clip.max_tokens must be 2 to " +
                           std::to_string(kMaxTraceTokens));
  }
  if (spec.max_new_tokens < 0 || spec.max_new_tokens > kMaxTraceTokens) {
    return OutOfRangeError("workload.max_new_tokens must be 0 to " +
                           std::to_string(kMaxTraceTokens));
  }
  if (spec.sessions || spec.shared_prefix.groups > 0) {
    return InvalidArgumentError(
        "a trace workload takes its prompts from the trace: no sessions or shared prefixes");
  }
  return Status::Ok();
}

// A trace request's lengths once clipped as the spec says.
ClippedLengths TraceLengths(const TraceWorkloadSpec& spec, const TraceRequest& r) {
  if (spec.clip_tokens == 0) return {r.prompt_tokens, r.output_tokens};
  return ClipLengths(r.prompt_tokens, r.output_tokens, spec.clip_tokens, spec.clip_rule);
}

// Checks that the trace holds the requests the spec asks for, within its declared output limit.
Status CheckTraceRequests(const WorkloadSpec& spec) {
  const RequestTrace* trace = spec.trace.requests.get();
  if (trace == nullptr) {
    return InvalidArgumentError("workload.trace: " + spec.trace.file +
                                " has not been read (a scenario reads it when it is prepared)");
  }
  if (static_cast<int64_t>(trace->size()) < spec.requests) {
    return InvalidArgumentError(trace->path() + ": holds " + std::to_string(trace->size()) +
                                " requests; workload.requests asks for the first " +
                                std::to_string(spec.requests));
  }
  if (spec.max_new_tokens == 0) return Status::Ok();
  for (size_t i = 0; i < trace->size(); ++i) {
    const int32_t output = TraceLengths(spec.trace, trace->request(i)).output_tokens;
    if (output > spec.max_new_tokens) {
      return InvalidArgumentError(trace->Where(i) + ": an output of " + std::to_string(output) +
                                  " tokens exceeds workload.max_new_tokens " +
                                  std::to_string(spec.max_new_tokens) +
                                  "; a request never generates more than it declared");
    }
  }
  return Status::Ok();
}

// The workload's delays added up over its requests as if each came after the last: a bound on
// its expected span. Kept within kMaxWorkloadSpanS so that no run nears the clock's range; the
// error names the field that contributes most and the largest value it may take.
Status CheckWorkloadSpan(const WorkloadSpec& spec) {
  int64_t requests = spec.requests;
  if (spec.loop == LoopKind::kTrace) {
    if (!spec.trace.replace_arrivals || spec.trace.requests == nullptr) return Status::Ok();
    if (requests == 0) requests = static_cast<int64_t>(spec.trace.requests->size());
  }
  struct Term {
    const char* field;
    double seconds;  // per request
    bool is_rate;
  };
  std::vector<Term> terms;
  if (spec.loop != LoopKind::kClosed) {
    terms.push_back({"workload.arrival.rate", 1.0 / spec.arrival.rate_per_s, true});
  } else {
    terms.push_back({"workload.think_ms", NsToSeconds(spec.think_ns), false});
  }
  if (spec.sessions) {
    terms.push_back({"workload.sessions.think_ms", NsToSeconds(spec.sessions->think_ns), false});
  }
  if (spec.cancel.retry_ppm > 0) {
    terms.push_back(
        {"workload.cancel.retry_delay_ms", NsToSeconds(spec.cancel.retry_delay_ns), false});
  }
  double per_request = 0;
  for (const Term& term : terms) per_request += term.seconds;
  const double n = static_cast<double>(requests);
  if (n * per_request <= kMaxWorkloadSpanS) return Status::Ok();
  const Term& top = *std::max_element(terms.begin(), terms.end(), [](const Term& a, const Term& b) {
    return a.seconds < b.seconds;
  });
  const double room = kMaxWorkloadSpanS / n - (per_request - top.seconds);
  char allowed[96];
  if (room <= 0) {
    // The other delays alone fill the span: no value of this field fits.
    std::snprintf(allowed, sizeof allowed, "no value, until the other delays are shortened");
  } else if (top.is_rate) {
    std::snprintf(allowed, sizeof allowed, "at least %.3g requests per second", 1.0 / room);
  } else {
    std::snprintf(allowed, sizeof allowed, "at most %.0f ms", std::floor(room * 1e3));
  }
  char span[64];
  std::snprintf(span, sizeof span, "%.3g s", n * per_request);
  return OutOfRangeError(
      std::string(top.field) + ": " + std::to_string(requests) + " requests would span " + span +
      " of simulated time, past the " + std::to_string(static_cast<int64_t>(kMaxWorkloadSpanS)) +
      " s (about 31 years) a workload may span; allowed with these requests: " + allowed);
}

}  // namespace

const char* LoopKindName(LoopKind kind) {
  switch (kind) {
    case LoopKind::kOpen:
      return "open";
    case LoopKind::kClosed:
      return "closed";
    case LoopKind::kTrace:
      return "trace";
  }
  return "unknown";
}

Status ValidateWorkloadSpec(const WorkloadSpec& spec) {
  if (spec.priority_levels < 1 || spec.priority_levels > kMaxPriorityLevels) {
    return OutOfRangeError("workload.priority_levels " + std::to_string(spec.priority_levels) +
                           " is out of range; allowed: 1 to " + std::to_string(kMaxPriorityLevels));
  }
  if (spec.loop == LoopKind::kTrace) {
    KVSIM_RETURN_IF_ERROR(ValidateTraceWorkload(spec));
  } else if (spec.requests < 1 || spec.requests > kMaxRequests) {
    return OutOfRangeError("workload.requests " + std::to_string(spec.requests) +
                           " is out of range; allowed: 1 to " + std::to_string(kMaxRequests));
  }
  if (spec.loop == LoopKind::kOpen) {
    KVSIM_RETURN_IF_ERROR(ValidateArrivalSpec(spec.arrival).WithContext("workload.arrival"));
    if (spec.sessions) {
      return InvalidArgumentError(
          "workload.sessions needs a closed loop: a session's next turn follows its last one");
    }
  } else if (spec.loop == LoopKind::kClosed && (spec.clients < 1 || spec.clients > kMaxClients)) {
    return OutOfRangeError("workload.clients " + std::to_string(spec.clients) +
                           " is out of range; allowed: 1 to " + std::to_string(kMaxClients));
  }
  if (spec.think_ns < 0) return OutOfRangeError("workload.think_ms must not be negative");
  KVSIM_RETURN_IF_ERROR(ValidateLengthSpec(spec.prompt_tokens, "workload.prompt_tokens"));
  KVSIM_RETURN_IF_ERROR(ValidateLengthSpec(spec.output_tokens, "workload.output_tokens"));
  if (spec.loop != LoopKind::kTrace && spec.max_new_tokens != 0 &&
      spec.max_new_tokens < spec.output_tokens.upper()) {
    return OutOfRangeError("workload.max_new_tokens " + std::to_string(spec.max_new_tokens) +
                           " is below the longest output the workload draws (" +
                           std::to_string(spec.output_tokens.upper()) +
                           "); a request never generates more than it declared");
  }
  const SharedPrefixSpec& shared = spec.shared_prefix;
  if (shared.groups < 0 || shared.groups > 1 << 20) {
    return OutOfRangeError("workload.shared_prefix.groups must be 0 to 1048576");
  }
  if (shared.groups > 0) {
    if (shared.tokens < 1 || shared.tokens > kMaxLengthTokens) {
      return OutOfRangeError("workload.shared_prefix.tokens must be 1 to " +
                             std::to_string(kMaxLengthTokens));
    }
    KVSIM_RETURN_IF_ERROR(CheckPpm("workload.shared_prefix.share", shared.share_ppm));
    if (!(shared.zipf_s >= 0 && shared.zipf_s <= 10)) {
      return OutOfRangeError("workload.shared_prefix.zipf_s must be 0 to 10");
    }
  }
  if (spec.sessions) {
    KVSIM_RETURN_IF_ERROR(ValidateLengthSpec(spec.sessions->turns, "workload.sessions.turns"));
    if (spec.sessions->think_ns < 0) {
      return OutOfRangeError("workload.sessions.think_ms must not be negative");
    }
  }
  const CancelSpec& cancel = spec.cancel;
  KVSIM_RETURN_IF_ERROR(CheckPpm("workload.cancel.probability", cancel.probability_ppm));
  KVSIM_RETURN_IF_ERROR(CheckPpm("workload.cancel.retry", cancel.retry_ppm));
  if (cancel.probability_ppm > 0 && !cancel.at_page_boundary) {
    KVSIM_RETURN_IF_ERROR(ValidateLengthSpec(cancel.after_ms, "workload.cancel.after_ms"));
  }
  if (cancel.retry_delay_ns < 0) {
    return OutOfRangeError("workload.cancel.retry_delay_ms must not be negative");
  }
  KVSIM_RETURN_IF_ERROR(CheckWorkloadSpan(spec));
  return Status::Ok();
}

Result<Workload> Workload::Create(const WorkloadSpec& spec, uint64_t seed) {
  KVSIM_RETURN_IF_ERROR(ValidateWorkloadSpec(spec));
  if (spec.loop == LoopKind::kTrace) KVSIM_RETURN_IF_ERROR(CheckTraceRequests(spec));
  return Workload(spec, seed);
}

Workload::Workload(const WorkloadSpec& spec, uint64_t seed)
    : spec_(spec),
      prompt_(spec.prompt_tokens),
      output_(spec.output_tokens),
      seed_(seed),
      arrivals_rng_(seed),
      lengths_rng_(arrivals_rng_.fork()),
      prefix_rng_(arrivals_rng_.fork()),
      cancel_rng_(arrivals_rng_.fork()),
      seeds_rng_(arrivals_rng_.fork()),
      arrivals_(spec.loop == LoopKind::kOpen || spec.trace.replace_arrivals ? spec.arrival
                                                                            : ArrivalSpec()),
      total_requests_(spec.requests) {
  if (spec_.loop == LoopKind::kTrace) {
    if (total_requests_ == 0) total_requests_ = static_cast<int64_t>(spec_.trace.requests->size());
  } else if (spec_.max_new_tokens == 0) {
    spec_.max_new_tokens = spec_.output_tokens.upper();
  }
  if (spec_.sessions) turns_.emplace(spec_.sessions->turns);
  if (spec_.cancel.probability_ppm > 0 && !spec_.cancel.at_page_boundary) {
    cancel_after_.emplace(spec_.cancel.after_ms);
  }
  const SharedPrefixSpec& shared = spec_.shared_prefix;
  double sum = 0;
  for (int32_t g = 1; g <= shared.groups; ++g) {
    sum += shared.zipf_s > 0 ? std::pow(static_cast<double>(g), -shared.zipf_s) : 1.0;
    group_cdf_.push_back(sum);
  }
  for (double& c : group_cdf_) c /= sum;
  if (!group_cdf_.empty()) group_cdf_.back() = 1.0;
  if (spec_.loop == LoopKind::kClosed) sessions_.resize(static_cast<size_t>(spec_.clients));
}

RequestSpec Workload::Make(SimNs arrival_ns, int32_t client, std::vector<PromptSegment> history) {
  RequestSpec r;
  r.id = next_id_++;
  r.arrival_ns = arrival_ns;
  r.client = client;
  r.prompt = std::move(history);
  const SharedPrefixSpec& shared = spec_.shared_prefix;
  // Draws happen whether or not they are used, so one request's draws never depend on another's
  // branch.
  const bool shares = prefix_rng_.chance(static_cast<uint64_t>(shared.share_ppm), kPartsPerMillion);
  const double u = prefix_rng_.unit_f64();
  if (r.prompt.empty() && shared.groups > 0 && shares) {
    const auto at = std::upper_bound(group_cdf_.begin(), group_cdf_.end(), u);
    const uint64_t group = static_cast<uint64_t>(at - group_cdf_.begin());
    r.prompt.push_back({MixIds(kGroupSeedBase, group), shared.tokens});
  }
  r.prompt.push_back({seeds_rng_.next_u64(), prompt_.Sample(lengths_rng_)});
  int64_t prompt_tokens = 0;
  for (const PromptSegment& segment : r.prompt) prompt_tokens += segment.tokens;
  KVSIM_CHECK_LE(prompt_tokens, int64_t{INT32_MAX} / 2) << "a prompt too long to index";
  r.prompt_tokens = static_cast<int32_t>(prompt_tokens);
  r.output_tokens = output_.Sample(lengths_rng_);
  r.max_new_tokens = spec_.max_new_tokens;
  DrawOutputAndCancel(r);
  return r;
}

RequestSpec Workload::SmallestRequest() const {
  RequestSpec r;
  if (spec_.loop == LoopKind::kTrace) {
    const RequestTrace& trace = *spec_.trace.requests;
    int64_t least = INT64_MAX;
    for (size_t i = 0; i < static_cast<size_t>(total_requests_); ++i) {
      const ClippedLengths lengths = TraceLengths(spec_.trace, trace.request(i));
      const int32_t max_new =
          spec_.max_new_tokens == 0 ? lengths.output_tokens : spec_.max_new_tokens;
      if (int64_t{lengths.prompt_tokens} + max_new >= least) continue;
      least = int64_t{lengths.prompt_tokens} + max_new;
      r.prompt_tokens = lengths.prompt_tokens;
      r.output_tokens = lengths.output_tokens;
      r.max_new_tokens = max_new;
    }
  } else {
    r.prompt_tokens = spec_.prompt_tokens.lower();
    r.output_tokens = spec_.output_tokens.lower();
    r.max_new_tokens = spec_.max_new_tokens;
  }
  r.prompt.push_back({0, r.prompt_tokens});
  return r;
}

RequestSpec Workload::MakeFromTrace(size_t index, SimNs arrival_ns) {
  const RequestTrace& trace = *spec_.trace.requests;
  const TraceRequest& row = trace.request(index);
  const ClippedLengths lengths = TraceLengths(spec_.trace, row);
  RequestSpec r;
  r.id = next_id_++;
  r.arrival_ns = arrival_ns;
  if (trace.format() == TraceFormat::kMooncakeJsonl) {
    // One segment per block, seeded by its hash id: requests whose ids agree up to a block share
    // every token before it. The last block holds what is left of the (clipped) prompt.
    int32_t left = lengths.prompt_tokens;
    for (int32_t block = 0; left > 0; ++block) {
      const int32_t tokens = std::min(left, kTraceBlockTokens);
      r.prompt.push_back({MixIds(kTraceBlockSeedBase, trace.block_id(index, block)), tokens});
      left -= tokens;
    }
  } else {
    r.prompt.push_back({seeds_rng_.next_u64(), lengths.prompt_tokens});
  }
  r.prompt_tokens = lengths.prompt_tokens;
  r.output_tokens = lengths.output_tokens;
  r.max_new_tokens = spec_.max_new_tokens == 0 ? lengths.output_tokens : spec_.max_new_tokens;
  DrawOutputAndCancel(r);
  return r;
}

void Workload::DrawOutputAndCancel(RequestSpec& r) {
  r.output_seed = seeds_rng_.next_u64();
  // From the request's id and the workload's seed alone, so that no other draw moves.
  if (spec_.priority_levels > 1) {
    r.priority =
        static_cast<int32_t>(MixIds(seed_ ^ kPrioritySeedBase, static_cast<uint64_t>(r.id)) %
                             static_cast<uint64_t>(spec_.priority_levels));
  }
  const CancelSpec& cancel = spec_.cancel;
  const bool cancelled =
      cancel_rng_.chance(static_cast<uint64_t>(cancel.probability_ppm), kPartsPerMillion);
  const int32_t after_ms = cancel_after_ ? cancel_after_->Sample(cancel_rng_) : 0;
  if (cancelled) {
    if (cancel.at_page_boundary) {
      r.page_boundary_cancel = true;
    } else {
      r.cancel_after_ns = SimNs{after_ms} * 1'000'000;
    }
  }
}

std::optional<RequestSpec> Workload::NextTurn(int32_t client, SimNs arrival_ns) {
  if (issued_ >= total_requests_) return std::nullopt;
  ++issued_;
  if (!turns_) return Make(arrival_ns, client, {});
  Session& session = sessions_[static_cast<size_t>(client)];
  if (session.turns_left == 0) {
    session.history.clear();
    session.turns_left = turns_->Sample(lengths_rng_);
  }
  --session.turns_left;
  RequestSpec r = Make(arrival_ns, client, session.history);
  // The next turn's prompt is this whole exchange: the prompt and the answer.
  session.history = SequenceSegments(r);
  return r;
}

std::vector<RequestSpec> Workload::Start() {
  std::vector<RequestSpec> first;
  if (arrivals_are_open()) {
    if (std::optional<RequestSpec> r = NextArrival()) first.push_back(std::move(*r));
    return first;
  }
  for (int32_t client = 0; client < spec_.clients; ++client) {
    std::optional<RequestSpec> r = NextTurn(client, 0);
    if (!r) break;
    first.push_back(std::move(*r));
  }
  return first;
}

std::optional<RequestSpec> Workload::NextArrival() {
  KVSIM_CHECK(arrivals_are_open());
  if (issued_ >= total_requests_) return std::nullopt;
  const size_t index = static_cast<size_t>(issued_++);
  if (spec_.loop == LoopKind::kTrace && !spec_.trace.replace_arrivals) {
    const SimNs trace_ns = spec_.trace.requests->request(index).time_ns;
    // Exact for a scale of 1: a trace spans at most 2^50 ns, which a double holds exactly.
    last_arrival_ns_ =
        static_cast<SimNs>(std::llround(static_cast<double>(trace_ns) * spec_.trace.time_scale));
  } else {
    // The first arrival comes after one gap too, so that time 0 is not special.
    last_arrival_ns_ = ClockAdd(last_arrival_ns_, arrivals_.NextGap(arrivals_rng_));
  }
  if (spec_.loop == LoopKind::kTrace) return MakeFromTrace(index, last_arrival_ns_);
  return Make(last_arrival_ns_, -1, {});
}

std::optional<RequestSpec> Workload::NextForClient(int32_t client, SimNs now) {
  KVSIM_CHECK(spec_.loop == LoopKind::kClosed);
  KVSIM_CHECK(client >= 0 && client < spec_.clients) << client;
  const SimNs think = turns_ && sessions_[static_cast<size_t>(client)].turns_left > 0
                          ? spec_.sessions->think_ns
                          : spec_.think_ns;
  return NextTurn(client, ClockAdd(now, think));
}

std::optional<RequestSpec> Workload::RetryOf(const RequestSpec& cancelled, SimNs now) {
  if (!cancel_rng_.chance(static_cast<uint64_t>(spec_.cancel.retry_ppm), kPartsPerMillion)) {
    return std::nullopt;
  }
  RequestSpec retry = cancelled;
  retry.id = next_id_++;
  retry.arrival_ns = ClockAdd(now, spec_.cancel.retry_delay_ns);
  retry.retry_of = cancelled.id;
  // A retry runs to its end: cancelling it again could retry forever.
  retry.cancel_after_ns = -1;
  retry.page_boundary_cancel = false;
  return retry;
}

}  // namespace kvsim::sim
