// Workload: the requests a run issues. Open loop (arrivals from a process, whatever the server
// does), closed loop (N clients, each issuing its next request when its last one ends, as the
// published decode benchmarks run) or a recorded trace (its requests' lengths and prompt blocks,
// at its times or from an arrival process); lengths from distributions; shared-prefix groups;
// multi-turn sessions whose prompts carry the conversation so far; cancellations and retries. Every
// draw comes from the run's workload stream, split per purpose so that, e.g., turning cancellations
// on does not change the lengths drawn.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/prng.h"
#include "base/status.h"
#include "sim/workload/distributions.h"
#include "sim/workload/request_spec.h"
#include "sim/workload/request_trace.h"

namespace kvsim::sim {

enum class LoopKind { kOpen, kClosed, kTrace };
// "open", "closed", "trace".
const char* LoopKindName(LoopKind kind);

// Probabilities are kept as parts per million so that the draw that uses them is an integer one.
inline constexpr int64_t kPartsPerMillion = 1'000'000;

struct SharedPrefixSpec {
  int32_t groups = 0;     // 0: no shared prefixes
  int32_t tokens = 0;     // tokens of each group's prefix, before the request's own prompt
  int64_t share_ppm = 0;  // requests that start with a group's prefix
  double zipf_s = 0;      // 0: groups chosen uniformly; else group k has weight k^-s
};

struct SessionSpec {
  LengthSpec turns;    // turns per session (closed loop); each turn's prompt is the whole
                       // conversation so far plus a new message drawn from prompt_tokens
  SimNs think_ns = 0;  // between a turn's end and the next turn
};

struct CancelSpec {
  int64_t probability_ppm = 0;
  bool at_page_boundary = false;  // cancel at the first page boundary reached (else after_ms)
  LengthSpec after_ms;            // delay from arrival, in milliseconds
  int64_t retry_ppm = 0;          // cancelled requests that are retried
  SimNs retry_delay_ns = 0;       // 0: the retry arrives in the same instant
};

// A trace-driven workload (loop kTrace): an open loop whose requests are a trace's first ones, in
// its order, with its lengths (Mooncake: its prompt blocks, so that equal hash ids share tokens),
// arriving at its times or from a replacement arrival process.
struct TraceWorkloadSpec {
  std::string file;  // as the scenario names it: relative to the configs folder, or absolute
  TraceFormat format = TraceFormat::kAzureCsv;
  // Arrivals from WorkloadSpec::arrival instead of the trace's times (as Vidur runs a trace's
  // lengths at a Poisson rate).
  bool replace_arrivals = false;
  double time_scale = 1;    // the trace's times are multiplied by this (2: half the rate)
  int32_t clip_tokens = 0;  // 0: none; else prompt + output cut to at most this by clip_rule
  ClipRule clip_rule = ClipRule::kProportional;
  // The trace's requests, read when the scenario is prepared; shared by the runs that use them.
  std::shared_ptr<const RequestTrace> requests;
};

struct WorkloadSpec {
  LoopKind loop = LoopKind::kClosed;
  int64_t requests = 1;      // requests issued in all, retries excluded; trace: 0 means all of it
  ArrivalSpec arrival;       // open loop; trace with replace_arrivals
  int32_t clients = 1;       // closed loop
  SimNs think_ns = 0;        // closed loop: between a request's end and the client's next
  LengthSpec prompt_tokens;  // open and closed loops
  LengthSpec output_tokens;
  // Declared output limit; 0: output_tokens.upper(), or for a trace each request's own output
  // length (a client that knows what it will get, as Vidur's requests do).
  int32_t max_new_tokens = 0;
  SharedPrefixSpec shared_prefix;
  std::optional<SessionSpec> sessions;  // closed loop only
  CancelSpec cancel;
  TraceWorkloadSpec trace;  // loop kTrace only
  // Requests draw a priority from 0 to priority_levels - 1, evenly (1: every request 0). A
  // scheduler whose preemption is `priority` admits and preempts by it.
  int32_t priority_levels = 1;
};

// Bounds on a workload: requests per run and closed-loop clients.
inline constexpr int64_t kMaxRequests = int64_t{1} << 30;
// The longest a workload's delays may add up to, in seconds (about 31 years): its requests times
// the mean arrival gap, think time and retry delay. A fifth of the clock's range (kClockLimitNs),
// so that the random tails of the gaps stay inside it too.
inline constexpr double kMaxWorkloadSpanS = 1e9;
inline constexpr int32_t kMaxClients = 1 << 20;
inline constexpr int32_t kMaxPriorityLevels = 1000;
static_assert(kMaxTraceRequests <= kMaxRequests, "a whole trace is a valid request count");

// Checks every field; errors name the field and what is allowed. A trace's requests need not be
// read yet.
Status ValidateWorkloadSpec(const WorkloadSpec& spec);

class Workload {
 public:
  // A trace workload needs its trace read (spec.trace.requests), holding at least `requests`
  // requests whose outputs are within max_new_tokens; errors name the trace's file and line.
  static Result<Workload> Create(const WorkloadSpec& spec, uint64_t seed);

  // The requests issued at time 0: the first open-loop or trace arrival (its own arrival time),
  // or the first request of every closed-loop client.
  std::vector<RequestSpec> Start();
  // Open loop and trace: the arrival after the last one (nullopt once all have been issued).
  std::optional<RequestSpec> NextArrival();
  // The least any request of this workload holds: its shortest prompt (without a shared prefix
  // or history) and its shortest declared output (a trace's shortest request). Draws nothing: a
  // pool that cannot hold even this can hold no request of the workload.
  RequestSpec SmallestRequest() const;
  // Closed loop: `client`'s next request after its last one ended at `now` (nullopt when the run
  // has issued all its requests).
  std::optional<RequestSpec> NextForClient(int32_t client, SimNs now);
  // The retry of a request cancelled at `now`, if the draw says it is retried.
  std::optional<RequestSpec> RetryOf(const RequestSpec& cancelled, SimNs now);

  int64_t issued() const { return issued_; }
  // The requests a run issues, retries excluded (a trace's: `requests`, or all it holds).
  int64_t total_requests() const { return total_requests_; }
  const WorkloadSpec& spec() const { return spec_; }
  // Whether requests arrive on their own (open loop, trace) rather than from clients.
  bool arrivals_are_open() const { return spec_.loop != LoopKind::kClosed; }

 private:
  // The conversation of one closed-loop client.
  struct Session {
    std::vector<PromptSegment> history;
    int32_t turns_left = 0;
  };

  Workload(const WorkloadSpec& spec, uint64_t seed);
  // A new request arriving at `arrival_ns`, its prompt starting with `history`.
  RequestSpec Make(SimNs arrival_ns, int32_t client, std::vector<PromptSegment> history);
  // Request `index` of the trace, arriving at `arrival_ns`.
  RequestSpec MakeFromTrace(size_t index, SimNs arrival_ns);
  // The output seed and the cancellation draws every new request makes, in this order.
  void DrawOutputAndCancel(RequestSpec& r);
  std::optional<RequestSpec> NextTurn(int32_t client, SimNs arrival_ns);

  WorkloadSpec spec_;
  LengthSampler prompt_;
  LengthSampler output_;
  std::optional<LengthSampler> turns_;
  std::optional<LengthSampler> cancel_after_;
  std::vector<double> group_cdf_;  // shared-prefix group weights, cumulative
  uint64_t seed_;
  Prng arrivals_rng_;
  Prng lengths_rng_;
  Prng prefix_rng_;
  Prng cancel_rng_;
  Prng seeds_rng_;
  ArrivalSampler arrivals_;
  SimNs last_arrival_ns_ = 0;
  int64_t total_requests_ = 0;
  int64_t issued_ = 0;   // requests issued, retries excluded
  int64_t next_id_ = 0;  // ids, retries included
  std::vector<Session> sessions_;
};

}  // namespace kvsim::sim
