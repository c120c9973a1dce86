// Reading request traces: the Azure CSV and the Mooncake JSON lines, line by line.
#include "sim/workload/request_trace.h"

#include "base/input_file.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <utility>

#include "base/check.h"

namespace kvsim::sim {
namespace {

constexpr const char* kAzureHeader = "TIMESTAMP,ContextTokens,GeneratedTokens";

// Lines of at most kMaxTraceLineBytes, a trailing '\r' removed (the Azure files end lines with
// CRLF), counted from 1.
class LineReader {
 public:
  LineReader(std::istream& in, const std::string& path) : in_(in), path_(path) {}

  // The next line into `line`; false at the end of the input or on an error (then status()).
  bool Next(std::string& line) {
    // Byte by byte from the stream's buffer, so that a file with no line ends (gigabytes in one
    // line) is refused at the limit instead of read whole into memory.
    line.clear();
    std::streambuf& buffer = *in_.rdbuf();
    bool any = false;
    for (int c = buffer.sbumpc(); c != std::char_traits<char>::eof(); c = buffer.sbumpc()) {
      any = true;
      if (c == '\n') break;
      if (line.size() == kMaxTraceLineBytes) {
        ++number_;
        status_ = InvalidArgumentError(Where() + "a line longer than " +
                                       std::to_string(kMaxTraceLineBytes) +
                                       " bytes; not a request trace");
        return false;
      }
      line.push_back(static_cast<char>(c));
    }
    if (!any) return false;
    ++number_;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    return true;
  }
  int32_t number() const { return number_; }
  // "path:line", and the same followed by ": " to begin a message.
  std::string Location() const { return path_ + ":" + std::to_string(number_); }
  std::string Where() const { return Location() + ": "; }
  const Status& status() const { return status_; }

 private:
  std::istream& in_;
  const std::string& path_;
  int32_t number_ = 0;
  Status status_;
};

bool IsDigit(char c) { return c >= '0' && c <= '9'; }

// A decimal integer from 0 to `max`, digits only.
bool ParseCount(const std::string& text, int64_t max, int64_t& value) {
  if (text.empty() || text.size() > 19) return false;
  value = 0;
  for (char c : text) {
    if (!IsDigit(c)) return false;
    const int64_t digit = c - '0';
    if (value > (max - digit) / 10) return false;
    value = value * 10 + digit;
  }
  return true;
}

// Days from 1970-01-01 to the proleptic Gregorian date y-m-d (Howard Hinnant's days_from_civil).
int64_t DaysFromCivil(int64_t y, int64_t m, int64_t d) {
  y -= m <= 2 ? 1 : 0;
  const int64_t era = (y >= 0 ? y : y - 399) / 400;
  const int64_t yoe = y - era * 400;
  const int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + doe - 719468;
}

// Days in month m (1..12) of year y of the Gregorian calendar.
int64_t DaysInMonth(int64_t y, int64_t m) {
  static constexpr int64_t kDays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  const bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
  return m == 2 && leap ? 29 : kDays[m - 1];
}

// "2023-11-16 18:15:46.6805900" (the fraction optional, 1 to 9 digits) as nanoseconds since
// 1970-01-01 00:00:00.
bool ParseTimestamp(const std::string& text, SimNs& ns) {
  // Positions of the fixed digits of "YYYY-MM-DD HH:MM:SS" and the separators between them.
  static constexpr char kShape[] = "0000-00-00 00:00:00";
  constexpr size_t kFixed = sizeof(kShape) - 1;
  if (text.size() < kFixed) return false;
  for (size_t i = 0; i < kFixed; ++i) {
    if (kShape[i] == '0' ? !IsDigit(text[i]) : text[i] != kShape[i]) return false;
  }
  const auto number = [&](size_t at, size_t digits) {
    int64_t v = 0;
    for (size_t i = at; i < at + digits; ++i) v = v * 10 + (text[i] - '0');
    return v;
  };
  const int64_t year = number(0, 4), month = number(5, 2), day = number(8, 2);
  const int64_t hour = number(11, 2), minute = number(14, 2), second = number(17, 2);
  // Years from 1970 to 2200 keep nanoseconds since 1970 inside an int64.
  if (year < 1970 || year > 2200 || month < 1 || month > 12 || day < 1 || day > 31 || hour > 23 ||
      minute > 59 || second > 60) {
    return false;
  }
  // A day the month does not have (February 30) would be read as a day of the next month, and
  // the line after it blamed for going back in time.
  if (day > DaysInMonth(year, month)) return false;
  int64_t fraction_ns = 0;
  if (text.size() > kFixed) {
    const size_t digits = text.size() - kFixed - 1;
    if (text[kFixed] != '.' || digits < 1 || digits > 9) return false;
    for (size_t i = kFixed + 1; i < text.size(); ++i) {
      if (!IsDigit(text[i])) return false;
    }
    fraction_ns = number(kFixed + 1, digits);
    for (size_t i = digits; i < 9; ++i) fraction_ns *= 10;
  }
  const int64_t seconds =
      DaysFromCivil(year, month, day) * 86400 + hour * 3600 + minute * 60 + second;
  ns = seconds * 1'000'000'000 + fraction_ns;
  return true;
}

// A length as the trace gives it: 0 to kMaxTraceTokens, read as at least 1.
Status ParseLength(const std::string& text, const char* field, const LineReader& lines,
                   int32_t& tokens) {
  int64_t value = 0;
  if (!ParseCount(text, kMaxTraceTokens, value)) {
    return InvalidArgumentError(lines.Where() + "field '" + field +
                                "': expected a whole number of tokens from 0 to " +
                                std::to_string(kMaxTraceTokens) + ", got '" + text + "'");
  }
  tokens = static_cast<int32_t>(std::max<int64_t>(value, 1));
  return Status::Ok();
}

// A flat JSON object of integers and arrays of integers: the only shape a Mooncake line has.
// Positions in messages are 1-based columns.
class JsonLine {
 public:
  JsonLine(const std::string& text, const LineReader& lines) : text_(text), lines_(lines) {}

  Status Open() { return Expect('{'); }
  // The next key, or "" at the closing brace.
  Result<std::string> NextKey() {
    SkipSpace();
    if (Peek() == '}') {
      ++at_;
      SkipSpace();
      if (at_ != text_.size()) return Error("text after the closing brace");
      return std::string();
    }
    if (!first_) KVSIM_RETURN_IF_ERROR(Expect(','));
    first_ = false;
    SkipSpace();
    key_at_ = at_;
    KVSIM_RETURN_IF_ERROR(Expect('"'));
    const size_t start = at_;
    while (at_ < text_.size() && text_[at_] != '"' && text_[at_] != '\\') ++at_;
    if (Peek() != '"') return Error("a key with an escape or no closing quote");
    std::string key = text_.substr(start, at_ - start);
    ++at_;
    KVSIM_RETURN_IF_ERROR(Expect(':'));
    return key;
  }
  // An integer from 0 to `max`.
  Result<int64_t> Count(const std::string& key, int64_t max) {
    SkipSpace();
    const size_t start = at_;
    while (at_ < text_.size() && IsDigit(text_[at_])) ++at_;
    // What may follow a number: a separator, a closing bracket, or space.
    const bool ends =
        at_ == text_.size() || std::string(" \t,}]").find(text_[at_]) != std::string::npos;
    int64_t value = 0;
    if (!ends || !ParseCount(text_.substr(start, at_ - start), max, value)) {
      at_ = start;
      return Error("field '" + key + "': expected a whole number from 0 to " + std::to_string(max));
    }
    return value;
  }
  // An array of integers from 0 to `max`, at most `max_items` of them, appended to `out`.
  Status CountArray(const std::string& key, int64_t max, size_t max_items,
                    std::vector<uint64_t>& out) {
    KVSIM_RETURN_IF_ERROR(Expect('['));
    SkipSpace();
    if (Peek() == ']') {
      ++at_;
      return Status::Ok();
    }
    for (size_t items = 0;; ++items) {
      if (items == max_items)
        return Error("field '" + key + "': more than " + std::to_string(max_items) + " items");
      KVSIM_ASSIGN_OR_RETURN(const int64_t value, Count(key, max));
      out.push_back(static_cast<uint64_t>(value));
      SkipSpace();
      if (Peek() == ']') {
        ++at_;
        return Status::Ok();
      }
      KVSIM_RETURN_IF_ERROR(Expect(','));
    }
  }
  // An error at the current position, or at the last key read.
  Status Error(const std::string& message) const { return ErrorAt(at_, message); }
  Status KeyError(const std::string& message) const { return ErrorAt(key_at_, message); }

 private:
  Status ErrorAt(size_t at, const std::string& message) const {
    return InvalidArgumentError(lines_.Location() + ":" + std::to_string(at + 1) + ": " + message);
  }
  char Peek() const { return at_ < text_.size() ? text_[at_] : '\0'; }
  void SkipSpace() {
    while (at_ < text_.size() && (text_[at_] == ' ' || text_[at_] == '\t')) ++at_;
  }
  Status Expect(char c) {
    SkipSpace();
    if (Peek() != c) return Error(std::string("expected '") + c + "'");
    ++at_;
    return Status::Ok();
  }

  const std::string& text_;
  const LineReader& lines_;
  size_t at_ = 0;
  size_t key_at_ = 0;
  bool first_ = true;
};

// One CSV row: its time (ns since 1970) and lengths.
Status ReadAzureRow(const std::string& line, const LineReader& lines,
                    std::vector<std::string>& fields, SimNs& time_ns, TraceRequest& r) {
  fields.clear();
  size_t start = 0;
  for (size_t comma; (comma = line.find(',', start)) != std::string::npos; start = comma + 1) {
    fields.push_back(line.substr(start, comma - start));
  }
  fields.push_back(line.substr(start));
  if (fields.size() != 3) {
    return InvalidArgumentError(lines.Where() + "expected 3 fields (" + kAzureHeader + "), got " +
                                std::to_string(fields.size()));
  }
  if (!ParseTimestamp(fields[0], time_ns)) {
    return InvalidArgumentError(lines.Where() + "field 'TIMESTAMP': expected a date and time " +
                                "like 2023-11-16 18:15:46.6805900, got '" + fields[0] + "'");
  }
  KVSIM_RETURN_IF_ERROR(ParseLength(fields[1], "ContextTokens", lines, r.prompt_tokens));
  KVSIM_RETURN_IF_ERROR(ParseLength(fields[2], "GeneratedTokens", lines, r.output_tokens));
  return Status::Ok();
}

// One JSON line: its time (ns since the trace's clock began), lengths and hash ids, appended to
// `blocks`.
Status ReadMooncakeRow(const std::string& line, const LineReader& lines,
                       std::vector<uint64_t>& blocks, SimNs& time_ns, TraceRequest& r) {
  JsonLine json(line, lines);
  KVSIM_RETURN_IF_ERROR(json.Open());
  // Bit k: key k of kKeys was seen.
  static const char* const kKeys[] = {"timestamp", "input_length", "output_length", "hash_ids"};
  uint32_t seen = 0;
  r.first_block = static_cast<int32_t>(blocks.size());
  for (;;) {
    KVSIM_ASSIGN_OR_RETURN(const std::string key, json.NextKey());
    if (key.empty()) break;
    const auto known =
        std::find_if(std::begin(kKeys), std::end(kKeys), [&](const char* k) { return key == k; });
    if (known == std::end(kKeys)) {
      return json.KeyError("unknown key '" + key +
                           "'; a Mooncake line has timestamp, input_length, output_length, "
                           "hash_ids");
    }
    const uint32_t bit = 1u << (known - std::begin(kKeys));
    if ((seen & bit) != 0) return json.KeyError("key '" + key + "' appears twice");
    seen |= bit;
    if (key == "timestamp") {
      // Milliseconds, up to about 280 years.
      KVSIM_ASSIGN_OR_RETURN(const int64_t ms, json.Count(key, int64_t{1} << 43));
      time_ns = ms * 1'000'000;
    } else if (key == "hash_ids") {
      KVSIM_RETURN_IF_ERROR(json.CountArray(key, INT64_MAX, kMaxTraceBlocks, blocks));
    } else {
      KVSIM_ASSIGN_OR_RETURN(const int64_t tokens, json.Count(key, kMaxTraceTokens));
      (key == "input_length" ? r.prompt_tokens : r.output_tokens) =
          static_cast<int32_t>(std::max<int64_t>(tokens, 1));
    }
  }
  for (size_t k = 0; k < std::size(kKeys); ++k) {
    if ((seen & (1u << k)) == 0) {
      return InvalidArgumentError(lines.Where() + "no key '" + kKeys[k] + "'");
    }
  }
  if (blocks.size() > kMaxTraceBlockIds) {
    return InvalidArgumentError(lines.Where() + "more than " + std::to_string(kMaxTraceBlockIds) +
                                " hash ids in the requests so far; read fewer requests");
  }
  r.block_count = static_cast<int32_t>(blocks.size()) - r.first_block;
  const int32_t expected = (r.prompt_tokens + kTraceBlockTokens - 1) / kTraceBlockTokens;
  if (r.block_count != expected) {
    return InvalidArgumentError(
        lines.Where() + "field 'hash_ids': " + std::to_string(r.block_count) +
        " ids for an input_length of " + std::to_string(r.prompt_tokens) + " tokens; a " +
        std::to_string(kTraceBlockTokens) + "-token block each makes " + std::to_string(expected));
  }
  return Status::Ok();
}

}  // namespace

const char* TraceFormatName(TraceFormat format) {
  switch (format) {
    case TraceFormat::kAzureCsv:
      return "azure_csv";
    case TraceFormat::kMooncakeJsonl:
      return "mooncake_jsonl";
  }
  return "unknown";
}

Result<TraceFormat> ParseTraceFormat(const std::string& text) {
  if (text == "azure_csv") return TraceFormat::kAzureCsv;
  if (text == "mooncake_jsonl") return TraceFormat::kMooncakeJsonl;
  return InvalidArgumentError("unknown trace format '" + text +
                              "'; allowed: azure_csv, mooncake_jsonl");
}

const char* ClipRuleName(ClipRule rule) {
  switch (rule) {
    case ClipRule::kProportional:
      return "proportional";
    case ClipRule::kPrompt:
      return "prompt";
  }
  return "unknown";
}

uint64_t RequestTrace::block_id(size_t index, int32_t block) const {
  const TraceRequest& r = requests_[index];
  KVSIM_CHECK(block >= 0 && block < r.block_count) << block << " of " << r.block_count;
  return blocks_[static_cast<size_t>(r.first_block + block)];
}

std::string RequestTrace::Where(size_t index) const {
  return path_ + ":" + std::to_string(requests_[index].line);
}

Result<RequestTrace> RequestTrace::Read(std::istream& in, const std::string& path,
                                        TraceFormat format, int64_t max_requests) {
  if (max_requests < 0 || max_requests > kMaxTraceRequests) {
    return OutOfRangeError("the first " + std::to_string(max_requests) +
                           " requests of a trace: allowed 0 (all) to " +
                           std::to_string(kMaxTraceRequests));
  }
  const int64_t wanted = max_requests == 0 ? kMaxTraceRequests : max_requests;
  RequestTrace trace(path, format);
  LineReader lines(in, path);
  std::string line;
  std::vector<std::string> fields;
  SimNs first_ns = 0;
  SimNs last_ns = 0;
  if (format == TraceFormat::kAzureCsv) {
    if (!lines.Next(line)) {
      KVSIM_RETURN_IF_ERROR(lines.status());
      return InvalidArgumentError(path + ": empty; an Azure LLM trace starts with the header " +
                                  kAzureHeader);
    }
    if (line != kAzureHeader) {
      return InvalidArgumentError(lines.Where() + "the header is '" + line +
                                  "'; an Azure LLM trace starts with " + kAzureHeader);
    }
  }
  while (static_cast<int64_t>(trace.requests_.size()) < wanted && lines.Next(line)) {
    if (line.empty()) continue;
    TraceRequest r;
    r.line = lines.number();
    SimNs time_ns = 0;
    if (format == TraceFormat::kAzureCsv) {
      KVSIM_RETURN_IF_ERROR(ReadAzureRow(line, lines, fields, time_ns, r));
    } else {
      KVSIM_RETURN_IF_ERROR(ReadMooncakeRow(line, lines, trace.blocks_, time_ns, r));
    }
    if (trace.requests_.empty()) first_ns = time_ns;
    if (time_ns < last_ns) {
      return InvalidArgumentError(lines.Where() +
                                  "the time goes back; a trace lists its requests in the order "
                                  "they arrived");
    }
    if (time_ns - first_ns > kMaxTraceSpanNs) {
      return InvalidArgumentError(lines.Where() +
                                  "more than 2^50 ns (about 13 days) after the first request; a "
                                  "trace spans at most that");
    }
    last_ns = time_ns;
    r.time_ns = time_ns - first_ns;
    trace.requests_.push_back(r);
  }
  KVSIM_RETURN_IF_ERROR(lines.status());
  if (trace.requests_.empty()) return InvalidArgumentError(path + ": no requests in the trace");
  return trace;
}

Result<RequestTrace> RequestTrace::Load(const std::string& path, TraceFormat format,
                                        int64_t max_requests) {
  KVSIM_RETURN_IF_ERROR(CheckRegularFile(path, "trace file"));
  std::ifstream in(path, std::ios::binary);
  if (!in) return NotFoundError(path + ": cannot open the trace file");
  return Read(in, path, format, max_requests);
}

ClippedLengths ClipLengths(int32_t prompt, int32_t output, int32_t max_tokens, ClipRule rule) {
  KVSIM_CHECK_GE(max_tokens, 2);
  KVSIM_CHECK(prompt >= 1 && output >= 1);
  const int64_t total = int64_t{prompt} + output;
  const int64_t excess = total - max_tokens;
  if (excess <= 0) return {prompt, output};
  int64_t p = prompt;
  int64_t o = output;
  if (rule == ClipRule::kProportional) {
    // As Vidur computes it, in double: each share of the excess rounded up.
    const double excess_f = static_cast<double>(excess);
    const double total_f = static_cast<double>(total);
    p -= static_cast<int64_t>(std::ceil(excess_f * (static_cast<double>(prompt) / total_f)));
    o -= static_cast<int64_t>(std::ceil(excess_f * (static_cast<double>(output) / total_f)));
  } else {
    p -= excess;
  }
  p = std::max<int64_t>(p, 1);
  o = std::max<int64_t>(o, 1);
  // Raising a share to 1 may overshoot by a token; it comes off the other.
  if (p + o > max_tokens) (o > 1 ? o : p) = max_tokens - (o > 1 ? p : o);
  KVSIM_CHECK(p >= 1 && o >= 1 && p + o <= max_tokens) << p << " + " << o << " > " << max_tokens;
  return {static_cast<int32_t>(p), static_cast<int32_t>(o)};
}

}  // namespace kvsim::sim
