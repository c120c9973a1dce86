// The timeline, written as trace events (the trace-event JSON format).
#include "sim/report/timeline.h"

#include <fmt/format.h>

#include <utility>

namespace kvsim::sim {
namespace {

// Process ids of the tracks that are not serving instances.
constexpr int kRequestsPid = 100;
constexpr int kTransfersPid = 101;

// Microseconds with nanosecond digits, as the format expects them.
std::string Micros(SimNs ns) { return fmt::format("{}.{:03d}", ns / 1000, ns % 1000); }

std::string Escaped(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      out += fmt::format("\\u{:04x}", static_cast<int>(c));
    } else {
      out += c;
    }
  }
  return out;
}

}  // namespace

Timeline::Timeline(std::vector<std::string> instance_names)
    : instance_names_(std::move(instance_names)) {}

void Timeline::Step(int instance, SimNs start, SimNs end, int32_t decode_rows,
                    int64_t prefill_tokens,
                    const std::vector<std::pair<std::string, double>>& operator_us) {
  std::string operators;
  for (const auto& [name, us] : operator_us) {
    operators += fmt::format("{}\"{}\":{:.3f}", operators.empty() ? "" : ",", name, us);
  }
  spans_.push_back({'X', instance, 0, start, end - start, "step",
                    fmt::format("\"decode_rows\":{},\"prefill_tokens\":{},\"operators_us\":{{{}}}",
                                decode_rows, prefill_tokens, operators)});
}

void Timeline::Request(int64_t id, SimNs arrival, SimNs first_scheduled, SimNs first_token,
                       SimNs end, const char* outcome) {
  const std::string args = fmt::format("\"request\":{},\"outcome\":\"{}\"", id, outcome);
  const auto span = [&](const char* name, SimNs begin, SimNs finish) {
    if (begin < 0 || finish < begin) return;
    spans_.push_back({'b', kRequestsPid, id, begin, 0, name, args});
    spans_.push_back({'e', kRequestsPid, id, finish, 0, name, args});
  };
  const SimNs scheduled = first_scheduled >= 0 ? first_scheduled : end;
  span("queued", arrival, scheduled);
  if (first_scheduled < 0) return;
  span("prefill", first_scheduled, first_token >= 0 ? first_token : end);
  if (first_token >= 0) span("decode", first_token, end);
}

void Timeline::Transfer(int64_t id, SimNs start, SimNs end) {
  spans_.push_back({'X', kTransfersPid, 0, start, end - start, fmt::format("request {}", id),
                    fmt::format("\"request\":{}", id)});
}

void Timeline::Instant(int instance, SimNs time, const std::string& name,
                       const std::string& detail) {
  spans_.push_back(
      {'i', instance, 0, time, 0, name, fmt::format("\"detail\":\"{}\"", Escaped(detail))});
}

void Timeline::Counters(int instance, SimNs time, int32_t pages_used, int32_t running,
                        int32_t waiting) {
  spans_.push_back({'C', instance, 0, time, 0, "pool",
                    fmt::format("\"pages_used\":{},\"running\":{},\"waiting\":{}", pages_used,
                                running, waiting)});
}

void Timeline::Write(std::ostream& out) const {
  out << "{\"displayTimeUnit\":\"ms\",\"traceEvents\":[\n";
  bool first = true;
  const auto separator = [&]() -> const char* {
    const char* s = first ? "" : ",\n";
    first = false;
    return s;
  };
  const auto name_process = [&](int pid, const std::string& name) {
    out << separator()
        << fmt::format(
               R"({{"ph":"M","name":"process_name","pid":{},"tid":0,"args":{{"name":"{}"}}}})", pid,
               Escaped(name));
  };
  for (size_t instance = 0; instance < instance_names_.size(); ++instance) {
    name_process(static_cast<int>(instance), instance_names_[instance] + " instance");
  }
  name_process(kRequestsPid, "requests");
  name_process(kTransfersPid, "KV transfers");
  for (const Span& s : spans_) {
    out << separator();
    switch (s.phase) {
      case 'X':
        out << fmt::format(
            R"({{"ph":"X","name":"{}","pid":{},"tid":0,"ts":{},"dur":{},"args":{{{}}}}})",
            Escaped(s.name), s.pid, Micros(s.time), Micros(s.duration), s.args);
        break;
      case 'b':
      case 'e':
        out << fmt::format(
            R"({{"ph":"{}","cat":"request","name":"{}","id":{},"pid":{},"tid":0,"ts":{},"args":{{{}}}}})",
            s.phase, s.name, s.id, s.pid, Micros(s.time), s.args);
        break;
      case 'i':
        out << fmt::format(
            R"({{"ph":"i","s":"p","name":"{}","pid":{},"tid":0,"ts":{},"args":{{{}}}}})",
            Escaped(s.name), s.pid, Micros(s.time), s.args);
        break;
      default:
        out << fmt::format(R"({{"ph":"C","name":"{}","pid":{},"tid":0,"ts":{},"args":{{{}}}}})",
                           s.name, s.pid, Micros(s.time), s.args);
        break;
    }
  }
  out << "\n]}\n";
}

}  // namespace kvsim::sim
