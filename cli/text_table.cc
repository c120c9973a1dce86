// TextTable layout.
#include "cli/text_table.h"

#include <algorithm>

#include "base/check.h"

namespace kvsim::cli {

std::string Grouped(int64_t value) {
  // Through uint64_t: the magnitude of INT64_MIN does not fit in int64_t.
  const uint64_t magnitude =
      value < 0 ? 0 - static_cast<uint64_t>(value) : static_cast<uint64_t>(value);
  const std::string digits = std::to_string(magnitude);
  std::string out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return value < 0 ? "-" + out : out;
}

TextTable::TextTable(std::vector<std::string> headers, std::vector<Align> align)
    : headers_(std::move(headers)), align_(std::move(align)) {
  if (align_.empty()) {
    align_.assign(headers_.size(), Align::kRight);
    if (!align_.empty()) align_[0] = Align::kLeft;
  }
  KVSIM_CHECK_EQ(align_.size(), headers_.size());
}

void TextTable::AddRow(std::vector<std::string> cells) {
  KVSIM_CHECK_EQ(cells.size(), headers_.size());
  rows_.push_back(std::move(cells));
}

void TextTable::Print(std::ostream& out, int indent) const {
  std::vector<size_t> widths(headers_.size());
  for (size_t c = 0; c < headers_.size(); ++c) {
    widths[c] = headers_[c].size();
    for (const auto& row : rows_) widths[c] = std::max(widths[c], row[c].size());
  }
  const std::string margin(static_cast<size_t>(indent), ' ');
  auto print_line = [&](const std::vector<std::string>& cells) {
    std::string line = margin;
    for (size_t c = 0; c < cells.size(); ++c) {
      const std::string padding(widths[c] - cells[c].size(), ' ');
      if (c > 0) line += "  ";
      line += align_[c] == Align::kLeft ? cells[c] + padding : padding + cells[c];
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out << line << "\n";
  };
  print_line(headers_);
  size_t rule_width = 0;
  for (size_t w : widths) rule_width += w;
  rule_width += 2 * (widths.empty() ? 0 : widths.size() - 1);
  out << margin << std::string(rule_width, '-') << "\n";
  for (const auto& row : rows_) print_line(row);
}

}  // namespace kvsim::cli
