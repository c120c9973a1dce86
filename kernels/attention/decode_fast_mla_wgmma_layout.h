// The shared-memory layouts of the wgmma FP8 MLA decode kernel (decode_fast_mla_wgmma.cu), as
// host/device code so that decode_fast_mla_wgmma_layout_test runs every thread's placement on the
// CPU and reads the operands back the way wgmma reads them.
//
// wgmma takes its shared-memory operands through 64-bit descriptors. 8-bit operands must be
// K-major (each row's k values contiguous; wgmma transposes 16-bit types only), and the layout
// here is the canonical one without swizzling: the operand is cut into core matrices of 8 rows x
// 16 bytes, each core matrix's rows 16 bytes apart (128 contiguous bytes, read without bank
// conflicts); the descriptor's leading byte offset is the distance between core matrices adjacent
// along k, its stride byte offset the distance between core matrices adjacent along M (or N).
// Here the core matrices of one 8-row group lie next to each other along k (leading offset 128)
// and the groups follow one another (stride offset 8 x the row's bytes).
#pragma once

#include <cstdint>

#include "kernels/attention/decode_plan.h"
#include "kernels/attention/kv_format.h"
#include "kernels/host_device.h"

namespace kvsim {

inline constexpr int kWgmmaCoreRows = 8;                                        // rows
inline constexpr int kWgmmaCoreRowBytes = 16;                                   // bytes a row
inline constexpr int kWgmmaLeadingBytes = kWgmmaCoreRows * kWgmmaCoreRowBytes;  // 128

// The kernel's block: two warpgroups of four warps over a tile of 64 query heads (M) and a
// 32-token tile of the split. Warpgroup 0 computes S = Q K^T (18 m64n32k32 products) and the
// online softmax; each warpgroup then computes its 256 of the 512 V columns of P V (four
// m64n64k32 products).
inline constexpr int kMlaWgmmaThreads = 256;
inline constexpr int kMlaWgmmaHeads = kFastMlaHeadsPerTile;           // 64
inline constexpr int kMlaWgmmaTile = kDecodeTileTokens;               // 32 tokens
inline constexpr int kMlaWgmmaK = 32;                                 // one e4m3 product
inline constexpr int kMlaWgmmaScoreSteps = kMlaHeadDim / kMlaWgmmaK;  // 18
inline constexpr int kMlaWgmmaColumnsPerGroup = kMlaLoraRank / 2;     // 256
inline constexpr int kMlaWgmmaPvN = 64;                               // per P V product
inline constexpr int kMlaWgmmaPvProducts = kMlaWgmmaColumnsPerGroup / kMlaWgmmaPvN;  // 4
inline constexpr int kMlaWgmmaStages = 4;  // cp.async stages: the tile in use and three ahead
static_assert(kMlaHeadDim % (2 * kMlaWgmmaK) == 0, "score k-steps come in pairs");
static_assert(kMlaWgmmaTile == kMlaWgmmaK, "one P V k-step covers a token tile");

// Byte offset of (row, k byte) in a K-major operand of rows of `row_bytes` bytes (a multiple of
// 16), laid out as above.
KVSIM_HD_INLINE int WgmmaKMajorOffset(int row, int k_byte, int row_bytes) {
  return (row / kWgmmaCoreRows) * (kWgmmaCoreRows * row_bytes) +
         (k_byte / kWgmmaCoreRowBytes) * kWgmmaLeadingBytes +
         (row % kWgmmaCoreRows) * kWgmmaCoreRowBytes + k_byte % kWgmmaCoreRowBytes;
}

// The stride byte offset of such an operand: 8 rows of row_bytes.
KVSIM_HD_INLINE int WgmmaStrideBytes(int row_bytes) { return kWgmmaCoreRows * row_bytes; }

// The matrix descriptor of an operand at shared-memory address `start` (bytes, 16-byte aligned,
// below 256 KB): bits 0-13 start >> 4, bits 16-29 leading byte offset >> 4, bits 32-45 stride
// byte offset >> 4; base offset (bits 49-51) and swizzle mode (bits 62-63) 0: none.
KVSIM_HD_INLINE uint64_t WgmmaDescriptor(uint32_t start, uint32_t leading, uint32_t stride) {
  return static_cast<uint64_t>((start >> 4) & 0x3FFFu) |
         (static_cast<uint64_t>((leading >> 4) & 0x3FFFu) << 16) |
         (static_cast<uint64_t>((stride >> 4) & 0x3FFFu) << 32);
}

// The operands: Q codes [64 heads][576], a K tile [32 tokens][576], V^T [512 columns][32 tokens]
// and the weights P [64 heads][32 tokens], all e4m3 and K-major.
inline constexpr int kMlaWgmmaQBytes = kMlaWgmmaHeads * kMlaHeadDim;     // 36,864
inline constexpr int kMlaWgmmaStageBytes = kMlaWgmmaTile * kMlaHeadDim;  // 18,432
inline constexpr int kMlaWgmmaVtBytes = kMlaLoraRank * kMlaWgmmaTile;    // 16,384
inline constexpr int kMlaWgmmaPBytes = kMlaWgmmaHeads * kMlaWgmmaTile;   // 2,048

// Where score k-step s starts in Q and in a K tile: k bytes 32 s, two core matrices per step.
KVSIM_HD_INLINE int MlaWgmmaScoreStepOffset(int step) {
  return step * (kMlaWgmmaK / kWgmmaCoreRowBytes) * kWgmmaLeadingBytes;
}
// Where P V product q of warpgroup g starts in V^T: columns 256 g + 64 q .. + 64.
KVSIM_HD_INLINE int MlaWgmmaVtProductOffset(int group, int product) {
  return WgmmaKMajorOffset(group * kMlaWgmmaColumnsPerGroup + product * kMlaWgmmaPvN, 0,
                           kMlaWgmmaTile);
}

// The descriptors the kernel passes to wgmma, from the shared-memory address of each operand's
// start: score step s of Q (A) and of a K tile (B); P (A) and warpgroup g's P V product q of V^T
// (B).
KVSIM_HD_INLINE uint64_t MlaWgmmaScoreDescriptor(uint32_t operand, int step) {
  return WgmmaDescriptor(operand + static_cast<uint32_t>(MlaWgmmaScoreStepOffset(step)),
                         kWgmmaLeadingBytes, static_cast<uint32_t>(WgmmaStrideBytes(kMlaHeadDim)));
}
KVSIM_HD_INLINE uint64_t MlaWgmmaWeightDescriptor(uint32_t p) {
  return WgmmaDescriptor(p, kWgmmaLeadingBytes,
                         static_cast<uint32_t>(WgmmaStrideBytes(kMlaWgmmaTile)));
}
KVSIM_HD_INLINE uint64_t MlaWgmmaValueDescriptor(uint32_t v_t, int group, int product) {
  return WgmmaDescriptor(v_t + static_cast<uint32_t>(MlaWgmmaVtProductOffset(group, product)),
                         kWgmmaLeadingBytes,
                         static_cast<uint32_t>(WgmmaStrideBytes(kMlaWgmmaTile)));
}

// The 16-byte copies of one K tile: 32 tokens x 36 chunks, in kMlaWgmmaCopyRounds rounds of
// one chunk per thread (the last round only threads below 128). Thread t copies chunks
// c0 + 8 r of one token: a warp takes 8 tokens x 4 consecutive chunks per round, so each 8 lanes
// fill one core matrix (128 contiguous bytes of shared memory, no bank conflict) and each token's
// 4 chunks are 64 contiguous bytes of its row in memory; a round moves a thread's shared-memory
// destination by 1,024 bytes and its source by 128.
inline constexpr int kMlaWgmmaTileChunks = kMlaWgmmaTile * kMlaHeadDim / 16;  // 1,152
inline constexpr int kMlaWgmmaCopyRounds =
    (kMlaWgmmaTileChunks + kMlaWgmmaThreads - 1) / kMlaWgmmaThreads;  // 5
static_assert(kMlaHeadDim / 16 % 8 == 4, "the last round is half the block");
KVSIM_HD_INLINE bool MlaWgmmaCopies(int thread, int round) {
  return round + 1 < kMlaWgmmaCopyRounds || thread < kMlaWgmmaThreads / 2;
}
KVSIM_HD_INLINE int MlaWgmmaCopyToken(int thread) {
  return (thread / 32) % (kMlaWgmmaTile / 8) * 8 + thread % 8;
}
KVSIM_HD_INLINE int MlaWgmmaCopyChunk(int thread, int round) {
  return thread / 128 * 4 + (thread / 8) % 4 + 8 * round;
}

// A byte permute as PRMT does it (CUDA's __byte_perm): byte i of the result is byte
// (selector >> 4 i) & 7 of the eight bytes of {y, x} (x bytes 0-3, y bytes 4-7).
KVSIM_HD_INLINE uint32_t MlaWgmmaBytePerm(uint32_t x, uint32_t y, uint32_t selector) {
#if defined(__CUDA_ARCH__)
  return __byte_perm(x, y, selector);
#else
  const uint64_t bytes = (static_cast<uint64_t>(y) << 32) | x;
  uint32_t out = 0;
  for (int i = 0; i < 4; ++i) {
    const uint32_t which = (selector >> (4 * i)) & 7u;
    out |= static_cast<uint32_t>((bytes >> (8 * which)) & 0xFFu) << (8 * i);
  }
  return out;
#endif
}

// V^T from a landed K tile, in kMlaWgmmaTransposeRounds rounds: thread t moves tokens
// 4 (t % 8) .. + 4 of latent columns 4 (t / 8) + 128 r .. + 4 (four 32-bit reads, eight byte
// permutes, four 32-bit writes), so a round moves its reads by 1,024 bytes and its writes by
// 4,096.
inline constexpr int kMlaWgmmaTransposeRounds =
    kMlaWgmmaTile / 4 * (kMlaLoraRank / 4) / kMlaWgmmaThreads;  // 4
KVSIM_HD_INLINE void MlaWgmmaTransposeBlock(const uint8_t* tile, uint8_t* v_t, int thread,
                                            int round) {
  const int token = 4 * (thread % (kMlaWgmmaTile / 4));
  const int column = 4 * (thread / (kMlaWgmmaTile / 4)) + 128 * round;
  uint32_t r[4];
  for (int i = 0; i < 4; ++i) {
    r[i] = *reinterpret_cast<const uint32_t*>(tile +
                                              WgmmaKMajorOffset(token + i, column, kMlaHeadDim));
  }
  // Interleave the bytes of tokens (0, 1) and (2, 3), then their 16-bit halves: each column's
  // four bytes in token order.
  const uint32_t t0 = MlaWgmmaBytePerm(r[0], r[1], 0x5140);  // r0.b0 r1.b0 r0.b1 r1.b1
  const uint32_t t1 = MlaWgmmaBytePerm(r[0], r[1], 0x7362);  // r0.b2 r1.b2 r0.b3 r1.b3
  const uint32_t t2 = MlaWgmmaBytePerm(r[2], r[3], 0x5140);
  const uint32_t t3 = MlaWgmmaBytePerm(r[2], r[3], 0x7362);
  const uint32_t columns[4] = {MlaWgmmaBytePerm(t0, t2, 0x5410), MlaWgmmaBytePerm(t0, t2, 0x7632),
                               MlaWgmmaBytePerm(t1, t3, 0x5410), MlaWgmmaBytePerm(t1, t3, 0x7632)};
  for (int x = 0; x < 4; ++x) {
    *reinterpret_cast<uint32_t*>(v_t + WgmmaKMajorOffset(column + x, token, kMlaWgmmaTile)) =
        columns[x];
  }
}

// Register r of thread t (0..127) of a warpgroup's m64nN fp32 accumulator holds (row, column):
// warp t / 32 owns rows 16 (t / 32) .. + 16, and per 8-column block r / 4 the lane holds the
// cells of mma.sync's m16n8 layout (rows lane / 4 and + 8, columns 2 (lane % 4) and + 1).
KVSIM_HD_INLINE void WgmmaAccumulatorCell(int thread, int r, int* row, int* column) {
  const int lane = thread % 32;
  *row = 16 * (thread / 32) + lane / 4 + 8 * ((r % 4) / 2);
  *column = 8 * (r / 4) + 2 * (lane % 4) + r % 2;
}

// Where the kernel's shared memory goes, in bytes from its start (all 128-byte aligned).
struct MlaWgmmaSmemLayout {
  int q_offset = 0;        // Q codes
  int q_scale_offset = 0;  // float [64]: their scales
  int stage_offset = 0;    // kMlaWgmmaStages K tiles of kMlaWgmmaStageBytes
  int v_offset = 0;        // V^T
  int p_offset = 0;        // P
  int rows_offset = 0;     // int64 [kMlaWgmmaStages + 1][32]: pool row per token (-1: none)
  int scales_offset = 0;   // float [kMlaWgmmaStages][32]: per-token scales (1 when none)
  int carry_offset = 0;    // float [64]: each head row's accumulator factor for the tile
  int flag_offset = 0;     // int: a page of this block was out of range
  int total_bytes = 0;
};

KVSIM_HD_INLINE int MlaWgmmaAlign(int bytes) { return (bytes + 127) / 128 * 128; }

KVSIM_HD_INLINE MlaWgmmaSmemLayout MakeMlaWgmmaSmemLayout() {
  MlaWgmmaSmemLayout layout;
  layout.q_offset = 0;
  layout.q_scale_offset = layout.q_offset + kMlaWgmmaQBytes;
  layout.stage_offset = MlaWgmmaAlign(layout.q_scale_offset + kMlaWgmmaHeads * 4);
  layout.v_offset = layout.stage_offset + kMlaWgmmaStages * kMlaWgmmaStageBytes;
  layout.p_offset = layout.v_offset + kMlaWgmmaVtBytes;
  layout.rows_offset = layout.p_offset + kMlaWgmmaPBytes;
  layout.scales_offset =
      MlaWgmmaAlign(layout.rows_offset + (kMlaWgmmaStages + 1) * kMlaWgmmaTile * 8);
  layout.carry_offset = MlaWgmmaAlign(layout.scales_offset + kMlaWgmmaStages * kMlaWgmmaTile * 4);
  layout.flag_offset = MlaWgmmaAlign(layout.carry_offset + kMlaWgmmaHeads * 4);
  layout.total_bytes = MlaWgmmaAlign(layout.flag_offset + 4);
  return layout;
}

}  // namespace kvsim
