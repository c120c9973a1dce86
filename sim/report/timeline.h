// Timeline: a run in time, written in the JSON trace-event format that ui.perfetto.dev
// and chrome://tracing open): each serving instance's steps on its own track with their batch, each
// request's queueing, prefill and decode as an async span, KV transfers, aborts and cancellations
// as instants, and the instances' pages, running and waiting requests as counters. Times are the
// simulated clock's, so a seed gives the same file.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "sim/engine/event_queue.h"

namespace kvsim::sim {

class Timeline {
 public:
  // The tracks of the serving instances, in order ("unified", or "prefill" and "decode").
  explicit Timeline(std::vector<std::string> instance_names);

  // A step of `instance` from `start` to `end`: its decode rows and prefill tokens, and the
  // step-time model's time of each operator in microseconds ("routed experts", 812.5), as it priced
  // them.
  void Step(int instance, SimNs start, SimNs end, int32_t decode_rows, int64_t prefill_tokens,
            const std::vector<std::pair<std::string, double>>& operator_us);
  // A request's life: queued from arrival to its first step, prefilling to its first token,
  // decoding to its end; `outcome` ("finished", "cancelled", ...) names its end.
  void Request(int64_t id, SimNs arrival, SimNs first_scheduled, SimNs first_token, SimNs end,
               const char* outcome);
  // The KV of request `id` crossing from the prefill instance to the decode instance.
  void Transfer(int64_t id, SimNs start, SimNs end);
  // Something that happened at an instant in `instance`: an abort, a cancellation.
  void Instant(int instance, SimNs time, const std::string& name, const std::string& detail);
  // The state of `instance` at `time`.
  void Counters(int instance, SimNs time, int32_t pages_used, int32_t running, int32_t waiting);

  // Writes the whole timeline as one JSON object.
  void Write(std::ostream& out) const;

 private:
  struct Span {
    char phase;  // 'X' complete, 'b'/'e' async begin/end, 'i' instant, 'C' counter
    int pid;
    int64_t id;
    SimNs time;
    SimNs duration;
    std::string name;
    std::string args;  // a JSON object's members, already escaped
  };

  std::vector<std::string> instance_names_;
  std::vector<Span> spans_;
};

}  // namespace kvsim::sim
