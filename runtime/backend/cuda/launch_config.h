// Launch configurations (grid, block, shared memory) of every kernel in kernels_*.cu, as plain host
// functions without the CUDA toolkit: the launchers take their <<<...>>> arguments from
// here, and the launch audit (tests/runtime/launch_audit_test.cpp) checks the same numbers against
// the GPU's limits in the CPU-only build, for the largest model zbrun accepts.
#pragma once

#include <algorithm>
#include <stdexcept>
#include <string>

#include "runtime/host_device.h"

namespace zbpp::cuda {

/// Threads per block of the element-wise and row kernels.
constexpr int kThreads = 256;
/// Column reductions split the rows into this many parts, then add the parts in order.
constexpr int kColumnSplits = 32;
/// Scratch floats layernorm_backward_weight and bias_backward need for `cols` columns.
inline long column_scratch_floats(int cols) { return 2L * kColumnSplits * cols; }
/// Partial sums of sum_squares (doubles of scratch); also its number of blocks.
constexpr int kSumPartials = 256;

/// Limits of the GPUs zbpp targets (sm_80; sm_90 allows more): threads per block, grid sizes,
/// static shared memory, and dynamic shared memory a kernel may opt into.
constexpr long kMaxThreadsPerBlock = 1024;
constexpr long kMaxGridX = 2147483647;  // 2^31 - 1
constexpr long kMaxGridYZ = 65535;
constexpr long kStaticSharedLimit = 48 * 1024;
constexpr long kOptInSharedLimit = 163 * 1024;  // sm_80: 164 KiB per SM, 1 KiB reserved
/// What the attention kernels ask for at most: under sm_80's opt-in limit.
constexpr long kAttentionSharedBudget = 160 * 1024;

/// Static shared memory of the kernels that declare some (kernels_*.cu size their arrays with these).
constexpr long kSumSquaresDoubles = kThreads;

struct Dim {
  long x = 1, y = 1, z = 1;
};

struct LaunchConfig {
  const char* kernel = "";
  Dim grid, block;
  long dynamic_shared = 0;  ///< bytes
  long static_shared = 0;   ///< bytes
  /// Dynamic shared memory over the default 48 KiB: the launcher must first raise the kernel's
  /// cudaFuncAttributeMaxDynamicSharedMemorySize (prepare_launch does).
  bool needs_opt_in() const { return dynamic_shared > kStaticSharedLimit; }
};

/// Blocks of `threads` covering n items.
inline long blocks_for(long n, long threads = kThreads) { return (n + threads - 1) / threads; }

/// One thread per element, grid-stride: the grid is capped at the x limit and each thread loops,
/// so n may exceed 2^31 blocks' worth (e.g. logits of 2^22 tokens x 2^20 vocabulary).
inline LaunchConfig elementwise_launch(const char* kernel, long n) {
  return {kernel, {std::max(1L, std::min(blocks_for(n), kMaxGridX))}, {kThreads}, 0, 0};
}

/// The element-wise bf16 maps (GELU, residual add) move 8 elements (16 bytes) a thread where n is a
/// multiple of 8 (and, checked at launch, every pointer 16-byte aligned), else one.
inline bool map_vectorised(long n) { return n % 8 == 0; }
inline LaunchConfig map_launch(const char* kernel, long n, bool vectorised) {
  return elementwise_launch(kernel, vectorised ? n / 8 : n);
}

/// One warp per row, kThreads / 32 rows per block (layernorm, attention delta).
inline LaunchConfig warp_rows_launch(const char* kernel, long rows) {
  return {kernel, {std::max(1L, blocks_for(rows, kThreads / 32))}, {kThreads}, 0, 0};
}

/// One block per item (a row of the cross-entropy, a distinct token of the embedding gradient).
inline LaunchConfig block_per_item_launch(const char* kernel, long items, long static_shared = 0) {
  return {kernel, {items}, {kThreads}, 0, static_shared};
}

/// Column partial sums: x over columns, y over the kColumnSplits row ranges.
inline LaunchConfig column_partials_launch(const char* kernel, long cols) {
  return {kernel, {std::max(1L, blocks_for(cols)), kColumnSplits}, {kThreads}, 0, 0};
}

/// The attention kernels: one warp per row, `floats_per_warp` floats of dynamic shared memory per
/// warp (the row's scores: T, or 2T in the key-side backward), up to 4 warps within the budget.
inline LaunchConfig attention_launch(const char* kernel, long floats_per_warp, long rows) {
  const long per_warp = floats_per_warp * 4;
  const long warps = std::min(4L, kAttentionSharedBudget / per_warp);
  if (warps < 1)
    throw std::runtime_error(std::string(kernel) + ": a sequence of " + std::to_string(floats_per_warp) +
                             " score floats per row does not fit the attention kernel's shared memory");
  return {kernel, {std::max(1L, blocks_for(rows, warps))}, {32 * warps}, per_warp * warps, 0};  // a row a warp
}

// --- attention ------------------------------------------------------------------------------------

/// Which kernels compute the causal attention. kFlash (attention_flash.cu): tensor-core tiles, one
/// pass over the keys forward and a merged dQ/dK/dV backward; the default where the head size
/// allows (flash_supports). kWarp and kLane: one warp per query row, the scores in shared memory,
/// without tensor cores (kernels_attention.cu); kWarp reads coalesced, kLane is the first version, kept as a
/// second opinion. Each is deterministic; they differ in rounding.
enum class AttentionVariant { kLane, kWarp, kFlash };

inline const char* attention_variant_name(AttentionVariant v) {
  switch (v) {
    case AttentionVariant::kFlash: return "flash";
    case AttentionVariant::kWarp: return "warp";
    case AttentionVariant::kLane: return "lane";
  }
  return "?";
}

/// The flash kernels' tiles: query rows per forward block (16 per warp), key rows per tile, query
/// rows per step of the backward, and warps per block.
constexpr int kFlashQueryRows = 64, kFlashKeyRows = 64, kFlashBackwardRows = 32, kFlashWarps = 4;
/// The head is padded with zeros to a multiple of 16 channels (the bf16 mma's k), at most this.
constexpr int kFlashMaxHead = 128;
ZBPP_HD inline int flash_head_pad(int hs) { return (hs + 15) / 16 * 16; }
inline bool flash_supports(int hs) { return hs >= 1 && flash_head_pad(hs) <= kFlashMaxHead; }

/// The variant ZBPP_CUDA_ATTENTION's value asks for: flash, warp or lane; null or empty: flash where
/// the head size allows, else warp. Throws on anything else, or on flash with a head it does not take.
inline AttentionVariant attention_variant_from(const char* value, int head_size) {
  const std::string v = value == nullptr ? "" : value;
  if (v.empty()) return flash_supports(head_size) ? AttentionVariant::kFlash : AttentionVariant::kWarp;
  if (v == "warp") return AttentionVariant::kWarp;
  if (v == "lane") return AttentionVariant::kLane;
  if (v == "flash") {
    if (!flash_supports(head_size))
      throw std::runtime_error("ZBPP_CUDA_ATTENTION=flash: the flash kernels take heads of up to " +
                               std::to_string(kFlashMaxHead) + " channels, this model's have " +
                               std::to_string(head_size) + " (use warp, or leave ZBPP_CUDA_ATTENTION unset)");
    return AttentionVariant::kFlash;
  }
  throw std::runtime_error("ZBPP_CUDA_ATTENTION=" + v +
                           ": expected flash, warp or lane (unset: flash where the head size allows, else warp)");
}

/// Where the flash kernels keep their tiles in shared memory (byte offsets from the block's
/// start). bf16 tiles have rows of ldh = hsp + 8 elements, fp32 tiles of ldf = hsp + 4, scores
/// rows of kScoreLd floats and probabilities rows of kProbLd bf16: the pads move consecutive rows
/// to other banks and keep every 16-row fragment 32-byte aligned, as WMMA's loads require.
struct FlashSmem {
  static constexpr int kScoreLd = kFlashKeyRows + 4, kProbLd = kFlashKeyRows + 8;
  int hsp = 0, ldh = 0, ldf = 0;
  long q = 0, k = 0, v = 0, dout = 0, s = 0, dp = 0, p = 0, ds = 0, o = 0, stats = 0, stage = 0, bytes = 0;
};

namespace detail {
// Lays a FlashSmem out: each slot 128-byte aligned, after the one before.
struct FlashLayout {
  FlashSmem m;
  long at = 0;
  ZBPP_HD explicit FlashLayout(int hs) { m.hsp = flash_head_pad(hs), m.ldh = m.hsp + 8, m.ldf = m.hsp + 4; }
  ZBPP_HD long take(long bytes) {
    const long here = at;
    at += (bytes + 127) / 128 * 128;
    return here;
  }
  ZBPP_HD long head_rows(long rows) { return take(rows * m.ldh * 2); }  // bf16 rows of the padded head
  ZBPP_HD long float_head_rows(long rows) { return take(rows * m.ldf * 4); }
  ZBPP_HD long scores(long rows) { return take(rows * FlashSmem::kScoreLd * 4); }  // fp32, a key tile wide
  ZBPP_HD long probs(long rows) { return take(rows * FlashSmem::kProbLd * 2); }    // bf16, a key tile wide
  ZBPP_HD FlashSmem done() {
    m.bytes = at;
    return m;
  }
};
}  // namespace detail

/// Forward: Q (kFlashQueryRows rows), K and V (a key tile), per warp 16 rows of scores (fp32),
/// probabilities (bf16) and the output accumulator (fp32), and each row's running sum.
ZBPP_HD inline FlashSmem flash_forward_smem(int hs) {
  detail::FlashLayout l(hs);
  l.m.q = l.head_rows(kFlashQueryRows);
  l.m.k = l.head_rows(kFlashKeyRows);
  l.m.v = l.head_rows(kFlashKeyRows);
  l.m.s = l.scores(kFlashQueryRows);
  l.m.p = l.probs(kFlashQueryRows);
  l.m.o = l.float_head_rows(kFlashQueryRows);
  l.m.stats = l.take(kFlashQueryRows * 4L);
  return l.done();
}

/// Backward, per block one (batch, head): K and V of a key tile; Q and dout of a step's query rows,
/// their scores, dP (fp32), P and dS (bf16), each row's lse and delta, and a 16 x 16 fp32 tile a
/// warp to write dK and dV out through (they are summed in registers).
ZBPP_HD inline FlashSmem flash_backward_smem(int hs) {
  detail::FlashLayout l(hs);
  l.m.k = l.head_rows(kFlashKeyRows);
  l.m.v = l.head_rows(kFlashKeyRows);
  l.m.q = l.head_rows(kFlashBackwardRows);
  l.m.dout = l.head_rows(kFlashBackwardRows);
  l.m.s = l.scores(kFlashBackwardRows);
  l.m.dp = l.scores(kFlashBackwardRows);
  l.m.p = l.probs(kFlashBackwardRows);
  l.m.ds = l.probs(kFlashBackwardRows);
  l.m.stats = l.take(2L * kFlashBackwardRows * 4);
  l.m.stage = l.take(kFlashWarps * 16L * 16 * 4);
  return l.done();
}

/// Rows of the flash backward's fp32 dQ accumulator per (batch, head): T rounded up to a key tile.
ZBPP_HD inline long flash_padded_rows(int T) { return (T + kFlashKeyRows - 1L) / kFlashKeyRows * kFlashKeyRows; }

/// Floats of scratch attention_backward needs: delta (a float per row) and, for kFlash, the dQ
/// accumulator (B*NH x flash_padded_rows(T) x hsp), which comes first (32-byte aligned for WMMA).
inline long attention_backward_scratch_floats(int B, int T, int C, int NH, AttentionVariant v) {
  const long rows = 1L * B * NH * T;
  if (v != AttentionVariant::kFlash) return rows;
  return 1L * B * NH * flash_padded_rows(T) * flash_head_pad(C / NH) + rows;
}

/// Raises the kernel's dynamic shared memory limit when the launch needs more than 48 KiB.
/// `set_max_dynamic_shared(bytes)` is the CUDA call (cudaFuncSetAttribute with
/// cudaFuncAttributeMaxDynamicSharedMemorySize) in launch.cuh, a recorder in the audit.
template <typename SetMaxDynamicShared>
void prepare_launch(const LaunchConfig& c, SetMaxDynamicShared&& set_max_dynamic_shared) {
  if (c.needs_opt_in()) set_max_dynamic_shared(c.dynamic_shared);
}

// --- every launch of kernels_*.cu, by launcher ----------------------------------------------------

inline LaunchConfig encoder_forward_launch(long BT, int C) {
  return elementwise_launch("encoder_forward_kernel", BT * C);
}
inline LaunchConfig encoder_dwpe_launch(int T, int C) { return elementwise_launch("encoder_dwpe_kernel", 1L * T * C); }
inline LaunchConfig encoder_dwte_launch(int n_uniq) { return block_per_item_launch("encoder_dwte_kernel", n_uniq); }
inline LaunchConfig layernorm_forward_launch(long BT) { return warp_rows_launch("layernorm_forward_kernel", BT); }
inline LaunchConfig add_layernorm_forward_launch(long BT) {
  return warp_rows_launch("add_layernorm_forward_kernel", BT);
}
inline LaunchConfig layernorm_backward_input_launch(long BT) {
  return warp_rows_launch("layernorm_backward_input_kernel", BT);
}
inline LaunchConfig layernorm_dw_partial_launch(int C) {
  return column_partials_launch("layernorm_dw_partial_kernel", C);
}
inline LaunchConfig bias_partial_launch(int OC) { return column_partials_launch("bias_partial_kernel", OC); }
inline LaunchConfig add_partials_launch(int cols) { return elementwise_launch("add_partials_kernel", cols); }
inline LaunchConfig attention_forward_launch(int T, long rows) {
  return attention_launch("attention_forward_kernel", T, rows);
}
inline LaunchConfig attention_delta_launch(long rows) { return warp_rows_launch("attention_delta_kernel", rows); }
inline LaunchConfig attention_dq_launch(int T, long rows) { return attention_launch("attention_dq_kernel", T, rows); }
inline LaunchConfig attention_dkv_launch(int T, long rows) {
  return attention_launch("attention_dkv_kernel", 2L * T, rows);
}
/// Flash: x over (batch, head) (up to 2^26, so not y), y over the query tiles (T / 64 <= 1024).
inline LaunchConfig flash_forward_launch(int T, long batch_heads, int hs) {
  return {"flash_attention_forward_kernel",
          {batch_heads, (T + kFlashQueryRows - 1) / kFlashQueryRows},
          {32 * kFlashWarps},
          flash_forward_smem(hs).bytes,
          0};
}
inline LaunchConfig flash_backward_launch(long batch_heads, int hs) {
  return {"flash_attention_backward_kernel", {batch_heads}, {32 * kFlashWarps}, flash_backward_smem(hs).bytes, 0};
}
/// A block per row, holding each warp's running max and sum (two floats a warp) and the row's
/// log-sum-exp.
inline LaunchConfig crossentropy_launch(long BT) {
  return block_per_item_launch("crossentropy_kernel", BT, (2L * (kThreads / 32) + 1) * 4);
}
inline LaunchConfig sum_squares_partial_launch() {
  return {"sum_squares_partial_kernel", {kSumPartials}, {kThreads}, 0, kSumSquaresDoubles * 8};
}
inline LaunchConfig sum_partials_launch() { return {"sum_partials_kernel", {1}, {1}, 0, 0}; }
inline LaunchConfig device_fault_launch() { return {"device_fault_kernel", {1}, {1}, 0, 0}; }

}  // namespace zbpp::cuda
