// FuzzInput: a fuzz input read as a stream of small decisions, a byte at a time. It works the same
// in the replay build (gcc) as under libFuzzer, unlike <fuzzer/FuzzedDataProvider.h>.
#pragma once

#include <cstddef>
#include <cstdint>

namespace kvsim::fuzz {

// Reads the input a byte at a time; zeros once it runs out, so every input is a whole run.
class FuzzInput {
 public:
  FuzzInput(const uint8_t* data, size_t size) : data_(data), size_(size) {}

  uint8_t Next() { return position_ < size_ ? data_[position_++] : 0; }
  // A value in [lo, lo + span); span >= 1.
  int32_t In(int32_t lo, int32_t span) { return lo + static_cast<int32_t>(Next() % span); }
  bool Bool() { return Next() % 2 == 1; }
  // Whether every byte has been read.
  bool done() const { return position_ >= size_; }

 private:
  const uint8_t* data_;
  size_t size_;
  size_t position_ = 0;
};

}  // namespace kvsim::fuzz
