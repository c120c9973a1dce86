// Whether the fast GQA decode kernel and its CPU twin are linked in. While only the stub
// (decode_fast_gqa_stub.cc) is, DecodeAttention answers a GQA call on the fast path with an error
// naming what the fast path supports instead of reaching it; flipping this to true is the switch.
#pragma once

namespace kvsim {

inline constexpr bool kFastGqaBuilt = false;

}  // namespace kvsim
