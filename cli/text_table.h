// TextTable: columns of text aligned for a terminal, numbers right-aligned, text left-aligned.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

namespace kvsim::cli {

// A count with thousands separated as tables show them: 1379584 -> "1,379,584".
std::string Grouped(int64_t value);

class TextTable {
 public:
  enum class Align { kLeft, kRight };

  // One header per column; `align` has one entry per column (default: first left, rest right).
  explicit TextTable(std::vector<std::string> headers, std::vector<Align> align = {});

  // Adds a row; it must have exactly one cell per column.
  void AddRow(std::vector<std::string> cells);

  // Writes the table: header, a rule, rows; columns separated by two spaces, each line indented.
  void Print(std::ostream& out, int indent = 2) const;

 private:
  std::vector<std::string> headers_;
  std::vector<Align> align_;
  std::vector<std::vector<std::string>> rows_;
};

}  // namespace kvsim::cli
