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

#include "kernels/attention/decode_fast_mla.h"
#include "kernels/attention/decode_splits.h"
#include "kernels/attention/kv_format.h"
#include "kernels/host_device.h"

namespace kvsim {

inline constexpr int kWgmmaCoreRows = 8;                                        // rows
inline constexpr int kWgmmaCoreRowBytes = 16;                                   // bytes a row
inline constexpr int kWgmmaLeadingBytes = kWgmmaCoreRows * kWgmmaCoreRowBytes;  // 128

// The kernel's block: two warpgroups of four warps over a tile of 64 query heads (M) and a
// 64-token tile of the split. Warpgroup g computes S = Q K^T for tokens 32 g .. + 32 (nine steps
// of two chained m64n32k32 products) and its part of the online softmax; each warpgroup then
// computes its 256 of the 512 V columns of P V over all 64 tokens (two products of two chained
// m64n128k32 each).
inline constexpr int kMlaWgmmaThreads = 256;
inline constexpr int kMlaWgmmaHeads = kFastMlaHeadsPerTile;              // 64
inline constexpr int kMlaWgmmaTile = kFastMlaFp8TileTokens;              // 64 tokens
inline constexpr int kMlaWgmmaGroupTokens = kMlaWgmmaTile / 2;           // 32 per warpgroup
inline constexpr int kMlaWgmmaK = kFastMlaFp8K;                          // one e4m3 product
inline constexpr int kMlaWgmmaSteps = kMlaHeadDim / kFastMlaFp8StepK;    // 9 score steps
inline constexpr int kMlaWgmmaScoreProducts = kMlaHeadDim / kMlaWgmmaK;  // 18
inline constexpr int kMlaWgmmaColumnsPerGroup = kMlaLoraRank / 2;        // 256
inline constexpr int kMlaWgmmaPvN = 128;                                 // per P V product
inline constexpr int kMlaWgmmaPvProducts = kMlaWgmmaColumnsPerGroup / kMlaWgmmaPvN;  // 2
inline constexpr int kMlaWgmmaPvKSteps = kMlaWgmmaTile / kMlaWgmmaK;                 // 2, chained
inline constexpr int kMlaWgmmaStages = 3;  // cp.async stages: the tile in use and two ahead
static_assert(kFastMlaFp8StepK == 2 * kMlaWgmmaK, "a step is two chained k32 products");
static_assert(kMlaWgmmaTile == kFastMlaFp8StepK, "one P V step covers a token tile");
static_assert(kMlaWgmmaGroupTokens == kDecodeTileTokens, "each warpgroup scores a 32-token group");

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

// The operands: Q codes [64 heads][576], a K tile [64 tokens][576], V^T [512 columns][64 tokens]
// and the weights P [64 heads][64 tokens], all e4m3 and K-major.
inline constexpr int kMlaWgmmaQBytes = kMlaWgmmaHeads * kMlaHeadDim;     // 36,864
inline constexpr int kMlaWgmmaStageBytes = kMlaWgmmaTile * kMlaHeadDim;  // 36,864
inline constexpr int kMlaWgmmaVtBytes = kMlaLoraRank * kMlaWgmmaTile;    // 32,768
inline constexpr int kMlaWgmmaPBytes = kMlaWgmmaHeads * kMlaWgmmaTile;   // 4,096

// Where k32 product s starts along k in an operand of K-major rows: k bytes 32 s, two core
// matrices each.
KVSIM_HD_INLINE int MlaWgmmaKOffset(int product) {
  return product * (kMlaWgmmaK / kWgmmaCoreRowBytes) * kWgmmaLeadingBytes;
}
// Where warpgroup g's tokens start in a K tile of rows of `row_bytes`: rows 32 g .. + 32.
KVSIM_HD_INLINE int MlaWgmmaGroupTokensOffset(int group, int row_bytes = kMlaHeadDim) {
  return WgmmaKMajorOffset(group * kMlaWgmmaGroupTokens, 0, row_bytes);
}
// Where P V product q of warpgroup g starts in V^T: columns 256 g + 128 q .. + 128.
KVSIM_HD_INLINE int MlaWgmmaVtProductOffset(int group, int product) {
  return WgmmaKMajorOffset(group * kMlaWgmmaColumnsPerGroup + product * kMlaWgmmaPvN, 0,
                           kMlaWgmmaTile);
}

// The descriptors the kernel passes to wgmma, from the shared-memory address of each operand's
// start: k32 product s of Q (A) and of warpgroup g's tokens of a K tile (B, `operand` the tile's
// start plus MlaWgmmaGroupTokensOffset(g)); k32 product s of P (A) and of warpgroup g's P V
// product q of V^T (B).
// (FlashMLA rows: Q's and the tile's codes are rows of 512 bytes, `row_bytes`.)
KVSIM_HD_INLINE uint64_t MlaWgmmaScoreDescriptor(uint32_t operand, int product,
                                                 int row_bytes = kMlaHeadDim) {
  return WgmmaDescriptor(operand + static_cast<uint32_t>(MlaWgmmaKOffset(product)),
                         kWgmmaLeadingBytes, static_cast<uint32_t>(WgmmaStrideBytes(row_bytes)));
}
KVSIM_HD_INLINE uint64_t MlaWgmmaWeightDescriptor(uint32_t p, int product) {
  return WgmmaDescriptor(p + static_cast<uint32_t>(MlaWgmmaKOffset(product)), kWgmmaLeadingBytes,
                         static_cast<uint32_t>(WgmmaStrideBytes(kMlaWgmmaTile)));
}
KVSIM_HD_INLINE uint64_t MlaWgmmaValueDescriptor(uint32_t v_t, int group, int product,
                                                 int k_product) {
  return WgmmaDescriptor(v_t + static_cast<uint32_t>(MlaWgmmaVtProductOffset(group, product) +
                                                     MlaWgmmaKOffset(k_product)),
                         kWgmmaLeadingBytes,
                         static_cast<uint32_t>(WgmmaStrideBytes(kMlaWgmmaTile)));
}

// The 16-byte copies of one K tile: 64 tokens x 36 chunks, in kMlaWgmmaCopyRounds rounds of one
// chunk per thread. Thread t copies chunks c0 + 4 r of one token: a warp takes 8 tokens x 4
// consecutive chunks per round, so each 8 lanes fill one core matrix (128 contiguous bytes of
// shared memory, no bank conflict) and each token's 4 chunks are 64 contiguous bytes of its row
// in memory; a round moves a thread's shared-memory destination by 512 bytes and its source by
// 64.
inline constexpr int kMlaWgmmaTileChunks = kMlaWgmmaTile * kMlaHeadDim / 16;        // 2,304
inline constexpr int kMlaWgmmaCopyRounds = kMlaWgmmaTileChunks / kMlaWgmmaThreads;  // 9
static_assert(kMlaWgmmaTileChunks % kMlaWgmmaThreads == 0, "every round is the whole block");
static_assert(kMlaHeadDim / 16 % 4 == 0, "a token's chunks are whole groups of 4");
KVSIM_HD_INLINE int MlaWgmmaCopyToken(int thread) { return (thread / 32) * 8 + thread % 8; }
KVSIM_HD_INLINE int MlaWgmmaCopyChunk(int thread, int round) {
  return (thread / 8) % 4 + 4 * round;
}
// What a round adds to a thread's shared-memory destination and to its source.
inline constexpr int kMlaWgmmaCopyDestinationStride = 4 * kWgmmaLeadingBytes;  // 512
inline constexpr int kMlaWgmmaCopySourceStride = 4 * 16;                       // 64

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
// 4 (t % 16) .. + 4 of latent columns 4 (t / 16) + 64 r .. + 4 (four 32-bit reads, eight byte
// permutes, four 32-bit writes). Its four tokens lie in one core matrix (16 bytes apart) and so
// do its four columns in V^T; a round moves its reads by 512 bytes (4 core matrices along k) and
// its writes by 4,096 (8 row groups of V^T): every address is a thread's base plus a constant.
inline constexpr int kMlaWgmmaTransposeRounds =
    kMlaWgmmaTile / 4 * (kMlaLoraRank / 4) / kMlaWgmmaThreads;               // 8
inline constexpr int kMlaWgmmaTransposeTokenBlocks = kMlaWgmmaTile / 4;      // 16
inline constexpr int kMlaWgmmaTransposeReadStride = 4 * kWgmmaLeadingBytes;  // 512
inline constexpr int kMlaWgmmaTransposeWriteStride =
    kMlaWgmmaThreads / kMlaWgmmaTransposeTokenBlocks * 4 / kWgmmaCoreRows * kWgmmaCoreRows *
    kMlaWgmmaTile;  // 4,096: 8 row groups of 8 rows of 64 bytes
static_assert(kMlaWgmmaThreads / kMlaWgmmaTransposeTokenBlocks * 4 == 64,
              "a round covers 64 columns: 4 core matrices of a tile row");
KVSIM_HD_INLINE int MlaWgmmaTransposeReadOffset(int thread, int row_bytes = kMlaHeadDim) {
  return WgmmaKMajorOffset(4 * (thread % kMlaWgmmaTransposeTokenBlocks),
                           4 * (thread / kMlaWgmmaTransposeTokenBlocks), row_bytes);
}
KVSIM_HD_INLINE int MlaWgmmaTransposeWriteOffset(int thread) {
  return WgmmaKMajorOffset(4 * (thread / kMlaWgmmaTransposeTokenBlocks),
                           4 * (thread % kMlaWgmmaTransposeTokenBlocks), kMlaWgmmaTile);
}
// One round of a thread's transposition: `read` is the tile plus MlaWgmmaTransposeReadOffset,
// `write` V^T plus MlaWgmmaTransposeWriteOffset.
KVSIM_HD_INLINE void MlaWgmmaTransposeBlock(const uint8_t* read, uint8_t* write, int round) {
  read += round * kMlaWgmmaTransposeReadStride;
  write += round * kMlaWgmmaTransposeWriteStride;
  uint32_t r[4];
  for (int i = 0; i < 4; ++i) {
    r[i] = *reinterpret_cast<const uint32_t*>(read + i * kWgmmaCoreRowBytes);
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
    *reinterpret_cast<uint32_t*>(write + x * kWgmmaCoreRowBytes) = columns[x];
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

// Where the FP8 kernel's thread `thread` (0..255) stores the weights of its score registers r and
// r + 1 (r even): head row `row`, tokens `token` and token + 1 of the 64-token tile (warpgroup g's
// accumulator holds tokens 32 g .. + 32).
KVSIM_HD_INLINE void MlaWgmmaWeightCell(int thread, int r, int* row, int* token) {
  int column = 0;
  WgmmaAccumulatorCell(thread % 128, r, row, &column);
  *token = (thread / 128) * kMlaWgmmaGroupTokens + column;
}

// FlashMLA rows (656 bytes: 512 e4m3 codes, 4 fp32 block scales, 64 bf16 rope values) in the
// same kernel: Q's latent codes are rows of 512 bytes and its rope a bf16 operand [64][64]; a
// stage holds the tile's codes [64][512] (K-major; V^T is transposed from them as above), its
// rope [64][64] bf16 (K-major: the B of four m64n32k16 products per warpgroup) and its block
// scales [64 tokens][4] as stored; P is four matrices [64][64], one per block of 128 V columns.
inline constexpr int kMlaWgmmaBlockCodeBytes = kMlaLoraRank;                       // 512 a row
inline constexpr int kMlaWgmmaRopeRowBytes = kMlaRopeDim * 2;                      // 128 a row
inline constexpr int kMlaWgmmaBlockScaleBytes = kMlaScaleBlocks * 4;               // 16 a token
inline constexpr int kMlaWgmmaRopeProducts = kMlaRopeDim / kFastMlaRopeStepK;      // 4 k16
inline constexpr int kMlaWgmmaBlockProducts = kFastMlaFp8BlockStepK / kMlaWgmmaK;  // 4 k32
inline constexpr int kMlaWgmmaBlockStageCodesBytes = kMlaWgmmaTile * kMlaWgmmaBlockCodeBytes;
inline constexpr int kMlaWgmmaBlockStageRopeBytes = kMlaWgmmaTile * kMlaWgmmaRopeRowBytes;
inline constexpr int kMlaWgmmaBlockStageBytes = kMlaWgmmaBlockStageCodesBytes +
                                                kMlaWgmmaBlockStageRopeBytes +
                                                kMlaWgmmaTile * kMlaWgmmaBlockScaleBytes;  // 41,984
static_assert(kMlaWgmmaPvN == kMlaScaleBlock, "each P V product is one scale block's columns");
static_assert(kMlaBlockRowBytes == kMlaLoraRank + kMlaWgmmaBlockScaleBytes + kMlaWgmmaRopeRowBytes,
              "a FlashMLA row is codes, scales, rope");

// The rope operands (Q's [64 heads][64] and a stage's [64 tokens][64], bf16, K-major): k16
// product s of the operand at `operand` (for the tile's, plus MlaWgmmaGroupTokensOffset(g, 128)).
KVSIM_HD_INLINE uint64_t MlaWgmmaRopeDescriptor(uint32_t operand, int product) {
  return WgmmaDescriptor(operand + static_cast<uint32_t>(product * 2 * kWgmmaLeadingBytes),
                         kWgmmaLeadingBytes,
                         static_cast<uint32_t>(WgmmaStrideBytes(kMlaWgmmaRopeRowBytes)));
}

// The copies of a FlashMLA tile, with the thread mapping above: 40 chunks a token (32 of codes,
// 8 of rope) in 10 rounds, rounds 0-7 the codes and 8-9 the rope (whose source is 16 bytes
// further on, past the scales; its destination the stage's rope); threads 0-63 also copy their
// token's 16 bytes of scales.
inline constexpr int kMlaWgmmaBlockCopyRounds = kMlaWgmmaTile *
                                                (kMlaWgmmaBlockCodeBytes + kMlaWgmmaRopeRowBytes) /
                                                16 / kMlaWgmmaThreads;  // 10
inline constexpr int kMlaWgmmaBlockCodeRounds =
    kMlaWgmmaTile * kMlaWgmmaBlockCodeBytes / 16 / kMlaWgmmaThreads;  // 8
static_assert(kMlaWgmmaBlockCopyRounds == 10 && kMlaWgmmaBlockCodeRounds == 8,
              "every round is the whole block");
// Round r's destination and source offsets for thread t (from the stage and from the row).
KVSIM_HD_INLINE int MlaWgmmaBlockCopyDestination(int thread, int round) {
  const int token = MlaWgmmaCopyToken(thread);
  const int chunk = MlaWgmmaCopyChunk(thread, round);
  if (round < kMlaWgmmaBlockCodeRounds) {
    return WgmmaKMajorOffset(token, 16 * chunk, kMlaWgmmaBlockCodeBytes);
  }
  return kMlaWgmmaBlockStageCodesBytes +
         WgmmaKMajorOffset(token, 16 * chunk - kMlaWgmmaBlockCodeBytes, kMlaWgmmaRopeRowBytes);
}
KVSIM_HD_INLINE int MlaWgmmaBlockCopySource(int thread, int round) {
  const int chunk = MlaWgmmaCopyChunk(thread, round);
  return 16 * chunk + (round < kMlaWgmmaBlockCodeRounds ? 0 : kMlaWgmmaBlockScaleBytes);
}
// Where a stage's token scales start: [64 tokens][4] fp32.
inline constexpr int kMlaWgmmaBlockStageScalesOffset =
    kMlaWgmmaBlockStageCodesBytes + kMlaWgmmaBlockStageRopeBytes;

// Where the kernel's shared memory goes, in bytes from its start (all 128-byte aligned).
struct MlaWgmmaSmemLayout {
  int q_offset = 0;         // Q codes
  int q_rope_offset = 0;    // FlashMLA rows: Q's rope, bf16 [64][64] (else empty)
  int q_scale_offset = 0;   // float [64]: their scales
  int stage_offset = 0;     // kMlaWgmmaStages K tiles of stage_bytes
  int stage_bytes = 0;      // kMlaWgmmaStageBytes, or kMlaWgmmaBlockStageBytes
  int v_offset = 0;         // V^T
  int p_offset = 0;         // P (FlashMLA rows: four, kMlaWgmmaPBytes apart)
  int rows_offset = 0;      // int64 [kMlaWgmmaStages + 1][64]: pool row per token (-1: none)
  int scales_offset = 0;    // float [kMlaWgmmaStages][64]: per-token scales (1 when none)
  int exchange_offset = 0;  // float [2 (max, sum)][2 warpgroups][64]: each group's row parts
  int sigma_offset = 0;     // FlashMLA rows: float [2 (tile parity)][4]: each block's sigma_b
  int flag_offset = 0;      // int: a page of this block was out of range
  int total_bytes = 0;
};

KVSIM_HD_INLINE int MlaWgmmaAlign(int bytes) { return (bytes + 127) / 128 * 128; }

// `blocks`: the layout for FlashMLA rows.
KVSIM_HD_INLINE MlaWgmmaSmemLayout MakeMlaWgmmaSmemLayout(bool blocks = false) {
  MlaWgmmaSmemLayout layout;
  layout.q_offset = 0;
  layout.q_rope_offset =
      layout.q_offset + (blocks ? kMlaWgmmaHeads * kMlaWgmmaBlockCodeBytes : kMlaWgmmaQBytes);
  layout.q_scale_offset =
      layout.q_rope_offset + (blocks ? kMlaWgmmaHeads * kMlaWgmmaRopeRowBytes : 0);
  layout.stage_offset = MlaWgmmaAlign(layout.q_scale_offset + kMlaWgmmaHeads * 4);
  layout.stage_bytes = blocks ? kMlaWgmmaBlockStageBytes : kMlaWgmmaStageBytes;
  layout.v_offset = layout.stage_offset + kMlaWgmmaStages * layout.stage_bytes;
  layout.p_offset = layout.v_offset + kMlaWgmmaVtBytes;
  layout.rows_offset = layout.p_offset + (blocks ? kMlaScaleBlocks : 1) * kMlaWgmmaPBytes;
  layout.scales_offset =
      MlaWgmmaAlign(layout.rows_offset + (kMlaWgmmaStages + 1) * kMlaWgmmaTile * 8);
  layout.exchange_offset =
      MlaWgmmaAlign(layout.scales_offset + kMlaWgmmaStages * kMlaWgmmaTile * 4);
  layout.sigma_offset = MlaWgmmaAlign(layout.exchange_offset + 2 * 2 * kMlaWgmmaHeads * 4);
  layout.flag_offset = MlaWgmmaAlign(layout.sigma_offset + (blocks ? 2 * kMlaScaleBlocks * 4 : 0));
  layout.total_bytes = MlaWgmmaAlign(layout.flag_offset + 4);
  return layout;
}

// The bf16 kernel (decode_fast_mla_wgmma_bf16.cu; bf16 caches, the bf16 variant's arithmetic):
// 32-token tiles; warpgroup 0 computes S with 36 chained m64n32k16 bf16 products and the online
// softmax; each warpgroup computes its 256 V columns with two m64n128k16 products per k16 step,
// reading V straight from the K tile: bf16 operands may be MN-major, and a K tile's core matrices
// (8 tokens x 8 latent values, 16 bytes a token) are also V's, with tokens as k and the values
// contiguous along N. Every operand as above: no swizzling, core matrices of 8 rows x 16 bytes.
inline constexpr int kMlaWgmmaBf16Tile = kDecodeTileTokens;                       // 32 tokens
inline constexpr int kMlaWgmmaBf16RowBytes = kMlaHeadDim * 2;                     // 1,152
inline constexpr int kMlaWgmmaBf16K = 16;                                         // a bf16 product
inline constexpr int kMlaWgmmaBf16ScoreProducts = kMlaHeadDim / kMlaWgmmaBf16K;   // 36
inline constexpr int kMlaWgmmaBf16PvKSteps = kMlaWgmmaBf16Tile / kMlaWgmmaBf16K;  // 2
inline constexpr int kMlaWgmmaBf16Stages = 3;  // the tile in use and two ahead
inline constexpr int kMlaWgmmaBf16QBytes = kMlaWgmmaHeads * kMlaWgmmaBf16RowBytes;         // 73,728
inline constexpr int kMlaWgmmaBf16StageBytes = kMlaWgmmaBf16Tile * kMlaWgmmaBf16RowBytes;  // 36,864
inline constexpr int kMlaWgmmaBf16PRowBytes = kMlaWgmmaBf16Tile * 2;                       // 64
inline constexpr int kMlaWgmmaBf16PBytes = kMlaWgmmaHeads * kMlaWgmmaBf16PRowBytes;        // 4,096

// Where k16 product s starts along k in a K-major bf16 operand: two core matrices each.
KVSIM_HD_INLINE int MlaWgmmaBf16KOffset(int product) {
  return product * (kMlaWgmmaBf16K * 2 / kWgmmaCoreRowBytes) * kWgmmaLeadingBytes;
}
// S's operands, K-major: k16 product s of Q (A) or of a K tile (B).
KVSIM_HD_INLINE uint64_t MlaWgmmaBf16ScoreDescriptor(uint32_t operand, int product) {
  return WgmmaDescriptor(operand + static_cast<uint32_t>(MlaWgmmaBf16KOffset(product)),
                         kWgmmaLeadingBytes,
                         static_cast<uint32_t>(WgmmaStrideBytes(kMlaWgmmaBf16RowBytes)));
}
// P V's A: k16 product s of the weights P [64 heads][32 tokens], K-major.
KVSIM_HD_INLINE uint64_t MlaWgmmaBf16WeightDescriptor(uint32_t p, int product) {
  return WgmmaDescriptor(p + static_cast<uint32_t>(MlaWgmmaBf16KOffset(product)),
                         kWgmmaLeadingBytes,
                         static_cast<uint32_t>(WgmmaStrideBytes(kMlaWgmmaBf16PRowBytes)));
}
// P V's B, MN-major from a K tile at `tile`: warpgroup g's product q (columns 256 g + 128 q
// .. + 128), k16 step s (tokens 16 s .. + 16). Along N the next 8 columns are the next core matrix
// of the same 8 tokens (128 bytes on); along k the next 8 tokens are the next row group (8 rows
// of 1,152 bytes on). The leading byte offset is the distance along k, the stride byte offset
// the distance along N, as for K-major operands (the PTX ISA's definition of the two fields).
inline constexpr int kMlaWgmmaBf16ValueLeadingBytes = kWgmmaCoreRows * kMlaWgmmaBf16RowBytes;
KVSIM_HD_INLINE int MlaWgmmaBf16ValueOffset(int group, int product, int k_product) {
  const int column = group * kMlaWgmmaColumnsPerGroup + product * kMlaWgmmaPvN;
  return WgmmaKMajorOffset(k_product * kMlaWgmmaBf16K, column * 2, kMlaWgmmaBf16RowBytes);
}
KVSIM_HD_INLINE uint64_t MlaWgmmaBf16ValueDescriptor(uint32_t tile, int group, int product,
                                                     int k_product) {
  return WgmmaDescriptor(
      tile + static_cast<uint32_t>(MlaWgmmaBf16ValueOffset(group, product, k_product)),
      static_cast<uint32_t>(kMlaWgmmaBf16ValueLeadingBytes), kWgmmaLeadingBytes);
}

// The 16-byte copies of 32 bf16 rows (a K tile, or half of Q): 32 rows x 72 chunks in
// kMlaWgmmaBf16CopyRounds rounds of one chunk per thread. Thread t copies chunks c0 + 8 r of row
// MlaWgmmaBf16CopyRow(t): a warp takes 8 rows x 4 consecutive chunks per round, so each 8 lanes
// fill one core matrix and each row's 4 chunks are 64 contiguous bytes in memory; a round moves
// the destination by 1,024 bytes and the source by 128.
inline constexpr int kMlaWgmmaBf16RowChunks = kMlaWgmmaBf16RowBytes / 16;  // 72
inline constexpr int kMlaWgmmaBf16CopyRounds =
    kMlaWgmmaBf16Tile * kMlaWgmmaBf16RowChunks / kMlaWgmmaThreads;                 // 9
inline constexpr int kMlaWgmmaBf16CopyDestinationStride = 8 * kWgmmaLeadingBytes;  // 1,024
inline constexpr int kMlaWgmmaBf16CopySourceStride = 8 * 16;                       // 128
static_assert(kMlaWgmmaBf16Tile * kMlaWgmmaBf16RowChunks % kMlaWgmmaThreads == 0,
              "every round is the whole block");
KVSIM_HD_INLINE int MlaWgmmaBf16CopyRow(int thread) { return (thread / 32) % 4 * 8 + thread % 8; }
KVSIM_HD_INLINE int MlaWgmmaBf16CopyChunk(int thread, int round) {
  return thread / 128 * 4 + (thread / 8) % 4 + 8 * round;
}

// Where the bf16 kernel's shared memory goes, in bytes from its start (all 128-byte aligned).
struct MlaWgmmaBf16SmemLayout {
  int q_offset = 0;       // Q [64][576] bf16, K-major
  int stage_offset = 0;   // kMlaWgmmaBf16Stages K tiles [32][576] bf16, K-major
  int p_offset = 0;       // P [64][32] bf16, K-major
  int rows_offset = 0;    // int64 [kMlaWgmmaBf16Stages + 1][32]: pool row per token (-1: none)
  int scales_offset = 0;  // float [kMlaWgmmaBf16Stages][32]: token scales (1: bf16 has none)
  int carry_offset = 0;   // float [64]: each head row's rescale factor for the tile
  int flag_offset = 0;    // int: a page of this block was out of range
  int total_bytes = 0;
};

KVSIM_HD_INLINE MlaWgmmaBf16SmemLayout MakeMlaWgmmaBf16SmemLayout() {
  MlaWgmmaBf16SmemLayout layout;
  layout.q_offset = 0;
  layout.stage_offset = layout.q_offset + kMlaWgmmaBf16QBytes;
  layout.p_offset = layout.stage_offset + kMlaWgmmaBf16Stages * kMlaWgmmaBf16StageBytes;
  layout.rows_offset = layout.p_offset + kMlaWgmmaBf16PBytes;
  layout.scales_offset =
      MlaWgmmaAlign(layout.rows_offset + (kMlaWgmmaBf16Stages + 1) * kMlaWgmmaBf16Tile * 8);
  layout.carry_offset =
      MlaWgmmaAlign(layout.scales_offset + kMlaWgmmaBf16Stages * kMlaWgmmaBf16Tile * 4);
  layout.flag_offset = MlaWgmmaAlign(layout.carry_offset + kMlaWgmmaHeads * 4);
  layout.total_bytes = MlaWgmmaAlign(layout.flag_offset + 4);
  return layout;
}

}  // namespace kvsim
