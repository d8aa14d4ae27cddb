// Launch configurations (grid, block, shared memory) of every kernel in kernels.cu, as plain host
// functions without the CUDA toolkit: kernels.cu's launchers take their <<<...>>> arguments from
// here, and the launch audit (tests/runtime/launch_audit_test.cpp) checks the same numbers against
// the GPU's limits in the CPU-only build, for the largest model zbrun accepts.
#pragma once

#include <algorithm>
#include <stdexcept>
#include <string>

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

/// Static shared memory of the kernels that declare some (kernels.cu sizes its arrays with these).
constexpr long kBlockReduceFloats = kThreads / 32 + 1;  // block_sum / block_max: a float per warp and the total
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

/// Raises the kernel's dynamic shared memory limit when the launch needs more than 48 KiB.
/// `set_max_dynamic_shared(bytes)` is the CUDA call (cudaFuncSetAttribute with
/// cudaFuncAttributeMaxDynamicSharedMemorySize) in kernels.cu, a recorder in the audit.
template <typename SetMaxDynamicShared>
void prepare_launch(const LaunchConfig& c, SetMaxDynamicShared&& set_max_dynamic_shared) {
  if (c.needs_opt_in()) set_max_dynamic_shared(c.dynamic_shared);
}

// --- every launch of kernels.cu, by launcher ------------------------------------------------------

inline LaunchConfig encoder_forward_launch(long BT, int C) {
  return elementwise_launch("encoder_forward_kernel", BT * C);
}
inline LaunchConfig encoder_dwpe_launch(int T, int C) { return elementwise_launch("encoder_dwpe_kernel", 1L * T * C); }
inline LaunchConfig encoder_dwte_launch(int n_uniq) { return block_per_item_launch("encoder_dwte_kernel", n_uniq); }
inline LaunchConfig layernorm_forward_launch(long BT) { return warp_rows_launch("layernorm_forward_kernel", BT); }
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
inline LaunchConfig crossentropy_forward_launch(long BT) {
  return block_per_item_launch("crossentropy_forward_kernel", BT, 2 * kBlockReduceFloats * 4);
}
inline LaunchConfig crossentropy_backward_launch(long BT, int V) {
  return elementwise_launch("crossentropy_backward_kernel", BT * V);
}
inline LaunchConfig sum_squares_partial_launch() {
  return {"sum_squares_partial_kernel", {kSumPartials}, {kThreads}, 0, kSumSquaresDoubles * 8};
}
inline LaunchConfig sum_partials_launch() { return {"sum_partials_kernel", {1}, {1}, 0, 0}; }

}  // namespace zbpp::cuda
