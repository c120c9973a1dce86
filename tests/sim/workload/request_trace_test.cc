// Reading request traces: good Azure and Mooncake rows, every malformed row named by file and
// line, empty files, the first-N option that stops reading, and Vidur's two clipping rules.
#include "sim/workload/request_trace.h"

#include <gtest/gtest.h>

#include <sstream>
#include <string>

namespace kvsim::sim {
namespace {

Result<RequestTrace> Read(const std::string& text, TraceFormat format, int64_t first = 0) {
  std::istringstream in(text);
  return RequestTrace::Read(in, "t.trace", format, first);
}

// The message of a read that must fail.
std::string ReadError(const std::string& text, TraceFormat format, int64_t first = 0) {
  const Result<RequestTrace> trace = Read(text, format, first);
  EXPECT_FALSE(trace.ok()) << text;
  if (trace.ok()) return "";
  EXPECT_EQ(trace.status().code(), StatusCode::kInvalidArgument);
  return trace.status().message();
}

constexpr const char* kAzure =
    "TIMESTAMP,ContextTokens,GeneratedTokens\r\n"
    "2023-11-16 18:15:46.6805900,374,44\r\n"
    "2023-11-16 18:15:50.9951690,396,109\r\n"
    "2023-11-16 18:15:51.2,879,0\r\n"
    "2023-11-17 00:00:00,5,7";  // the next day, no fraction, no line end

TEST(RequestTraceTest, ReadsAzureRowsWithTimesFromTheFirst) {
  const Result<RequestTrace> trace = Read(kAzure, TraceFormat::kAzureCsv);
  ASSERT_TRUE(trace.ok()) << trace.status().ToString();
  ASSERT_EQ(trace->size(), 4u);
  EXPECT_EQ(trace->request(0).time_ns, 0);
  EXPECT_EQ(trace->request(0).prompt_tokens, 374);
  EXPECT_EQ(trace->request(0).output_tokens, 44);
  EXPECT_EQ(trace->request(1).time_ns, 4'314'579'000);  // 50.9951690 - 46.6805900 s
  EXPECT_EQ(trace->request(2).time_ns, 4'519'410'000);
  EXPECT_EQ(trace->request(2).output_tokens, 1);  // 0 generated tokens is read as 1
  // 18:15:46.68059 to midnight: 5 h 44 min 13.31941 s.
  EXPECT_EQ(trace->request(3).time_ns, 20'653'319'410'000);
  EXPECT_EQ(trace->request(3).block_count, 0);
  EXPECT_EQ(trace->Where(3), "t.trace:5");
}

TEST(RequestTraceTest, NamesTheFileAndLineOfEveryMalformedAzureRow) {
  const std::string header = "TIMESTAMP,ContextTokens,GeneratedTokens\n";
  const std::string good = "2023-11-16 18:15:46.68,374,44\n";
  EXPECT_EQ(ReadError(header + good + "2023-11-16 18:15:47,374\n", TraceFormat::kAzureCsv),
            "t.trace:3: expected 3 fields (TIMESTAMP,ContextTokens,GeneratedTokens), got 2");
  EXPECT_EQ(
      ReadError(header + good + good + "2023-11-16 18:15:47,374,44,1\n", TraceFormat::kAzureCsv),
      "t.trace:4: expected 3 fields (TIMESTAMP,ContextTokens,GeneratedTokens), got 4");
  EXPECT_EQ(ReadError(header + "2023-13-16 18:15:47,374,44\n", TraceFormat::kAzureCsv),
            "t.trace:2: field 'TIMESTAMP': expected a date and time like 2023-11-16 "
            "18:15:46.6805900, got '2023-13-16 18:15:47'");
  // A line past 1 MiB (here a file with no line end at all) is refused at the limit, never read
  // whole: the second line is blamed.
  EXPECT_EQ(ReadError(header + std::string(kMaxTraceLineBytes + 7, '9'), TraceFormat::kAzureCsv),
            "t.trace:2: a line longer than 1048576 bytes; not a request trace");
  // A day its month does not have is refused on its own line, not read as the next month's.
  for (const char* impossible : {"2023-02-29", "2024-02-30", "2023-04-31", "2100-02-29"}) {
    EXPECT_EQ(ReadError(header + impossible + " 00:00:00,1,1\n", TraceFormat::kAzureCsv),
              std::string("t.trace:2: field 'TIMESTAMP': expected a date and time like 2023-11-16 "
                          "18:15:46.6805900, got '") +
                  impossible + " 00:00:00'");
  }
  EXPECT_TRUE(Read(header + "2024-02-29 00:00:00,1,1\n", TraceFormat::kAzureCsv, 0).ok());
  EXPECT_TRUE(Read(header + "2000-02-29 00:00:00,1,1\n", TraceFormat::kAzureCsv, 0).ok());
  EXPECT_NE(ReadError(header + "2023-11-16 18:15:47.,374,44\n", TraceFormat::kAzureCsv)
                .find("t.trace:2: field 'TIMESTAMP'"),
            std::string::npos);
  EXPECT_EQ(ReadError(header + "2023-11-16 18:15:47,-3,44\n", TraceFormat::kAzureCsv),
            "t.trace:2: field 'ContextTokens': expected a whole number of tokens from 0 to "
            "16777216, got '-3'");
  EXPECT_EQ(ReadError(header + "2023-11-16 18:15:47,3,many\n", TraceFormat::kAzureCsv),
            "t.trace:2: field 'GeneratedTokens': expected a whole number of tokens from 0 to "
            "16777216, got 'many'");
  EXPECT_EQ(ReadError(header + "2023-11-16 18:15:47,99999999,1\n", TraceFormat::kAzureCsv),
            "t.trace:2: field 'ContextTokens': expected a whole number of tokens from 0 to "
            "16777216, got '99999999'");
  EXPECT_EQ(ReadError(header + good + "2023-11-16 18:15:40,1,1\n", TraceFormat::kAzureCsv),
            "t.trace:3: the time goes back; a trace lists its requests in the order they "
            "arrived");
  EXPECT_NE(ReadError(header + "2300-01-01 00:00:00,1,1\n", TraceFormat::kAzureCsv)
                .find("t.trace:2: field 'TIMESTAMP'"),
            std::string::npos);
  EXPECT_EQ(ReadError(header + good + "2023-12-01 00:00:00,1,1\n", TraceFormat::kAzureCsv),
            "t.trace:3: more than 2^50 ns (about 13 days) after the first request; a trace spans "
            "at most that");
  EXPECT_EQ(ReadError("time,in,out\n" + good, TraceFormat::kAzureCsv),
            "t.trace:1: the header is 'time,in,out'; an Azure LLM trace starts with "
            "TIMESTAMP,ContextTokens,GeneratedTokens");
}

TEST(RequestTraceTest, AnEmptyFileOrOneWithoutRequestsIsAnError) {
  EXPECT_EQ(ReadError("", TraceFormat::kAzureCsv),
            "t.trace: empty; an Azure LLM trace starts with the header "
            "TIMESTAMP,ContextTokens,GeneratedTokens");
  EXPECT_EQ(ReadError("TIMESTAMP,ContextTokens,GeneratedTokens\n\n", TraceFormat::kAzureCsv),
            "t.trace: no requests in the trace");
  EXPECT_EQ(ReadError("", TraceFormat::kMooncakeJsonl), "t.trace: no requests in the trace");
  EXPECT_EQ(RequestTrace::Load("no/such/trace.csv", TraceFormat::kAzureCsv, 0).status().code(),
            StatusCode::kNotFound);
}

TEST(RequestTraceTest, TheFirstNRequestsStopTheReading) {
  // Row 3 is malformed; reading the first two never reaches it.
  const std::string text =
      std::string(kAzure).substr(0, std::string(kAzure).find("2023-11-16 18:15:51")) + "garbage\n";
  const Result<RequestTrace> two = Read(text, TraceFormat::kAzureCsv, 2);
  ASSERT_TRUE(two.ok()) << two.status().ToString();
  EXPECT_EQ(two->size(), 2u);
  EXPECT_NE(ReadError(text, TraceFormat::kAzureCsv, 3).find("t.trace:4:"), std::string::npos);
  // Asking for more than the trace holds reads all of it; the workload says it is short.
  const Result<RequestTrace> all = Read(kAzure, TraceFormat::kAzureCsv, 100);
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(all->size(), 4u);
  EXPECT_EQ(Read(kAzure, TraceFormat::kAzureCsv, -1).status().code(), StatusCode::kOutOfRange);
}

TEST(RequestTraceTest, ReadsMooncakeLinesWithTheirBlocks) {
  const std::string text =
      "{\"timestamp\": 0, \"input_length\": 1100, \"output_length\": 5, \"hash_ids\": [0, 1, 2]}\n"
      "{\"hash_ids\":[0,7],\"output_length\":0,\"input_length\":1024,\"timestamp\":1500}\n"
      "\n"
      "  { \"timestamp\" : 1500 , \"input_length\" : 512 , \"output_length\" : 9 , "
      "\"hash_ids\" : [ 9223372036854775807 ] }  \n";
  const Result<RequestTrace> trace = Read(text, TraceFormat::kMooncakeJsonl);
  ASSERT_TRUE(trace.ok()) << trace.status().ToString();
  ASSERT_EQ(trace->size(), 3u);
  EXPECT_EQ(trace->request(0).block_count, 3);
  EXPECT_EQ(trace->block_id(0, 2), 2u);
  EXPECT_EQ(trace->request(1).time_ns, 1'500'000'000);
  EXPECT_EQ(trace->request(1).output_tokens, 1);
  EXPECT_EQ(trace->block_id(1, 0), 0u);
  EXPECT_EQ(trace->block_id(1, 1), 7u);
  EXPECT_EQ(trace->request(2).prompt_tokens, 512);
  EXPECT_EQ(trace->block_id(2, 0), uint64_t{INT64_MAX});
  EXPECT_EQ(trace->Where(2), "t.trace:4");
}

TEST(RequestTraceTest, NamesTheFileLineAndColumnOfEveryMalformedMooncakeLine) {
  const auto error = [](const std::string& line) {
    return ReadError(
        "{\"timestamp\": 0, \"input_length\": 1, \"output_length\": 1, "
        "\"hash_ids\": [0]}\n" +
            line + "\n",
        TraceFormat::kMooncakeJsonl);
  };
  EXPECT_EQ(error("{\"timestamp\": 0, \"input_length\": 600, \"output_length\": 1, "
                  "\"hash_ids\": [0]}"),
            "t.trace:2: field 'hash_ids': 1 ids for an input_length of 600 tokens; a 512-token "
            "block each makes 2");
  EXPECT_EQ(error("{\"timestamp\": 0, \"input_length\": 1, \"output_length\": 1}"),
            "t.trace:2: no key 'hash_ids'");
  EXPECT_EQ(error("{\"timestamp\": 0, \"input_length\": 1, \"output_length\": 1, \"hash_ids\": "
                  "[0], \"user\": 3}"),
            "t.trace:2:74: unknown key 'user'; a Mooncake line has timestamp, input_length, "
            "output_length, hash_ids");
  EXPECT_EQ(error("{\"timestamp\": 1.5}"),
            "t.trace:2:15: field 'timestamp': expected a whole number from 0 to 8796093022208");
  EXPECT_EQ(error("{\"timestamp\": 1, \"timestamp\": 2}"),
            "t.trace:2:18: key 'timestamp' appears twice");
  EXPECT_EQ(error("{\"timestamp\": 1, \"input_length\": 1, \"output_length\": 1, "
                  "\"hash_ids\": [0,]}"),
            "t.trace:2:72: field 'hash_ids': expected a whole number from 0 to "
            "9223372036854775807");
  EXPECT_EQ(error("{\"timestamp\": 1} x"), "t.trace:2:18: text after the closing brace");
  EXPECT_EQ(error("[1, 2]"), "t.trace:2:1: expected '{'");
  EXPECT_EQ(error("{\"timestamp\" 1}"), "t.trace:2:14: expected ':'");
}

TEST(RequestTraceTest, ClipsAsVidursTwoTraceReadersDo) {
  // Under the limit: unchanged.
  EXPECT_EQ(ClipLengths(3000, 1000, 4096, ClipRule::kProportional).prompt_tokens, 3000);
  // 6,000 tokens, 1,904 too many: ceil(1904 x 5000/6000) = 1587 off the prompt, ceil(1904 x
  // 1000/6000) = 318 off the output (Vidur's trace length generator).
  const ClippedLengths proportional = ClipLengths(5000, 1000, 4096, ClipRule::kProportional);
  EXPECT_EQ(proportional.prompt_tokens, 3413);
  EXPECT_EQ(proportional.output_tokens, 682);
  // All of it off the prompt (Vidur's trace replay generator).
  const ClippedLengths prompt = ClipLengths(5000, 1000, 4096, ClipRule::kPrompt);
  EXPECT_EQ(prompt.prompt_tokens, 3096);
  EXPECT_EQ(prompt.output_tokens, 1000);
  // Neither side goes below one token, and the total stays within the limit.
  const ClippedLengths long_output = ClipLengths(10, 5000, 4096, ClipRule::kPrompt);
  EXPECT_EQ(long_output.prompt_tokens, 1);
  EXPECT_EQ(long_output.output_tokens, 4095);
  const ClippedLengths tiny_prompt = ClipLengths(1, 9000, 4096, ClipRule::kProportional);
  EXPECT_EQ(tiny_prompt.prompt_tokens, 1);
  EXPECT_EQ(tiny_prompt.output_tokens, 4095);
  for (int32_t p = 1; p < 6000; p += 97) {
    for (int32_t o = 1; o < 6000; o += 89) {
      for (ClipRule rule : {ClipRule::kProportional, ClipRule::kPrompt}) {
        const ClippedLengths c = ClipLengths(p, o, 4096, rule);
        ASSERT_GE(c.prompt_tokens, 1);
        ASSERT_GE(c.output_tokens, 1);
        ASSERT_LE(c.prompt_tokens + c.output_tokens, 4096);
        ASSERT_LE(c.prompt_tokens, p);
        ASSERT_LE(c.output_tokens, o);
      }
    }
  }
}

TEST(RequestTraceTest, FormatNamesRoundTrip) {
  for (TraceFormat format : {TraceFormat::kAzureCsv, TraceFormat::kMooncakeJsonl}) {
    EXPECT_EQ(*ParseTraceFormat(TraceFormatName(format)), format);
  }
  EXPECT_EQ(ParseTraceFormat("csv").status().message(),
            "unknown trace format 'csv'; allowed: azure_csv, mooncake_jsonl");
}

}  // namespace
}  // namespace kvsim::sim
