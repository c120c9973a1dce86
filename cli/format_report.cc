// Format tables and the round-trip statistics table.
#include "cli/format_report.h"

#include <fmt/format.h>

#include <string>
#include <vector>

#include "base/seed.h"
#include "cli/text_table.h"
#include "kernels/format_accuracy.h"
#include "kernels/formats.h"

namespace kvsim::cli {

void PrintFp8E4M3Table(std::ostream& out) {
  out << "FP8 e4m3fn: 1 sign, 4 exponent (bias 7), 3 mantissa bits; no infinities.\n"
      << "Value of every positive code (code = 0x80 | code for the negative); exact decimals.\n\n";
  std::vector<std::string> headers = {"exponent field"};
  for (int mantissa = 0; mantissa < 8; ++mantissa) headers.push_back(fmt::format("m={}", mantissa));
  TextTable table(headers);
  for (int exponent = 0; exponent < 16; ++exponent) {
    std::vector<std::string> row = {
        exponent == 0 ? "0 (subnormal)" : fmt::format("{} (2^{})", exponent, exponent - 7)};
    for (int mantissa = 0; mantissa < 8; ++mantissa) {
      const uint8_t code = static_cast<uint8_t>(exponent << 3 | mantissa);
      const float value = DecodeFp8E4M3(code);
      row.push_back(value != value ? std::string("NaN") : fmt::format("{:.10g}", value));
    }
    table.AddRow(row);
  }
  table.Print(out);
  out << "\n  Largest finite: 448 (0x7E). Smallest normal: 2^-6 (0x08). Smallest subnormal: 2^-9 "
         "(0x01).\n  Encoding rounds to nearest, ties to even; beyond 448 it saturates to +-448 "
         "or gives NaN (by mode).\n";
}

void PrintInt4Table(std::ostream& out) {
  out << "INT4: eight 4-bit values per 32-bit word; element i in bits [4i, 4i+4) "
         "(element 0 lowest).\n\n";
  TextTable table({"code", "bits", "signed", "unsigned"});
  for (uint32_t code = 0; code < 16; ++code) {
    const uint32_t word = SetInt4(0, 0, code);
    table.AddRow({fmt::format("0x{:X}", code), fmt::format("{:04b}", code),
                  fmt::format("{}", GetInt4(word, 0)), fmt::format("{}", GetUint4(word, 0))});
  }
  table.Print(out);
}

void PrintFormatRoundTrips(std::ostream& out, uint64_t seed, int samples) {
  out << fmt::format(
             "Round trip (value -> format -> value) on {} seeded samples per distribution, "
             "seed {}.\n",
             samples, FormatSeed(seed))
      << "rel rms = ||error|| / ||value||; cosine between values and round trip; flushed = "
         "nonzero values that came back 0;\nsaturated = values beyond the format's largest finite "
         "value. 'absmax scale': one per-tensor scale absmax/448; 'g32': one per 32 values.\n\n";
  TextTable table(
      {"distribution", "format", "rel rms", "max rel err", "cosine", "flushed", "saturated"},
      {TextTable::Align::kLeft, TextTable::Align::kLeft, TextTable::Align::kRight,
       TextTable::Align::kRight, TextTable::Align::kRight, TextTable::Align::kRight,
       TextTable::Align::kRight});
  for (const FormatRoundTrip& row : MeasureFormatRoundTrips(seed, samples)) {
    table.AddRow({row.distribution, row.format, fmt::format("{:.3e}", row.error.relative_rms()),
                  fmt::format("{:.3e}", row.error.max_relative_error()),
                  fmt::format("{:.6f}", row.error.cosine_similarity()),
                  fmt::format("{}", row.flushed_to_zero), fmt::format("{}", row.saturated)});
  }
  table.Print(out);
}

}  // namespace kvsim::cli
