// Causal attention on tensor cores (AttentionVariant::kFlash): bf16 WMMA 16x16x16 products with fp32
// accumulators, the tiles of launch_config.h (FlashSmem) in shared memory.
//
// Forward, a block per (batch*head, 64 query rows), a warp per 16 of them: one pass over the key
// tiles up to the diagonal, the running max and sum of each row (online softmax), P rounded to bf16
// for P V as in FlashAttention. Writes the output and each row's log-sum-exp.
//
// Backward, a block per (batch, head), deterministic: the block walks the key tiles in order and,
// for each, the query steps at or below the diagonal, recomputing P from the lse. dK and dV of the
// tile stay in registers (each warp its 16 key rows); dQ is summed in an fp32 scratch in global
// memory that only this block touches, always in the same order, so no atomics and the same bits
// every run.
//
// Rows past T and channels past the head size are zeros in the tiles and are never written back;
// scores past the diagonal or past T are masked.
#include "runtime/backend/cuda/attention_flash.cuh"

#include "runtime/backend/cuda/launch.cuh"

#include <mma.h>

#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <string>

namespace zbpp::cuda {

namespace {

namespace wmma = nvcuda::wmma;
using FragA = wmma::fragment<wmma::matrix_a, 16, 16, 16, bf16, wmma::row_major>;
using FragAT = wmma::fragment<wmma::matrix_a, 16, 16, 16, bf16, wmma::col_major>;  // a transposed tile
using FragB = wmma::fragment<wmma::matrix_b, 16, 16, 16, bf16, wmma::row_major>;
using FragBT = wmma::fragment<wmma::matrix_b, 16, 16, 16, bf16, wmma::col_major>;
using FragC = wmma::fragment<wmma::accumulator, 16, 16, 16, float>;

constexpr int kThreadsFlash = 32 * kFlashWarps;
constexpr int kScoreLd = FlashSmem::kScoreLd, kProbLd = FlashSmem::kProbLd;

// `rows` rows of a head's q, k, v or dout, from src (row r at src + r * stride), into a bf16 tile
// with rows of ld elements, zero past `valid` rows and past hs channels up to hsp. By the whole block.
__device__ void load_tile(bf16* dst, int ld, const bf16* src, long stride, int rows, int valid, int hs, int hsp,
                          bool vec) {
  if (vec) {  // 16-byte loads: hs, the stride and src are multiples of 8 elements
    const int per_row = hsp / 8;
    for (int i = threadIdx.x; i < rows * per_row; i += blockDim.x) {
      int r = i / per_row, c = (i % per_row) * 8;
      uint4 v = make_uint4(0, 0, 0, 0);
      if (r < valid && c < hs) v = *reinterpret_cast<const uint4*>(src + r * stride + c);
      *reinterpret_cast<uint4*>(dst + r * ld + c) = v;
    }
  } else {
    for (int i = threadIdx.x; i < rows * hsp; i += blockDim.x) {
      int r = i / hsp, c = i % hsp;
      dst[r * ld + c] = (r < valid && c < hs) ? src[r * stride + c] : __float2bfloat16(0.0f);
    }
  }
}

__device__ bool vector_loads(const bf16* base, long stride, int hs) {
  return hs % 8 == 0 && stride % 8 == 0 && reinterpret_cast<uintptr_t>(base) % 16 == 0;
}

template <typename T>
__device__ T* at(unsigned char* smem, long offset) {
  return reinterpret_cast<T*>(smem + offset);
}

__global__ void __launch_bounds__(kThreadsFlash)
    flash_attention_forward_kernel(bf16* out, float* lse, const bf16* qkv, int T, int C, int NH, int hs, float scale) {
  extern __shared__ __align__(128) unsigned char smem[];
  const FlashSmem m = flash_forward_smem(hs);
  const int hsp = m.hsp, ldh = m.ldh, ldf = m.ldf;
  bf16* Qs = at<bf16>(smem, m.q);
  bf16* Ks = at<bf16>(smem, m.k);
  bf16* Vs = at<bf16>(smem, m.v);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  float* Sw = at<float>(smem, m.s) + warp * 16 * kScoreLd;  // this warp's 16 rows
  bf16* Pw = at<bf16>(smem, m.p) + warp * 16 * kProbLd;
  float* Ow = at<float>(smem, m.o) + warp * 16 * ldf;
  float* row_sum = at<float>(smem, m.stats) + warp * 16;

  const int bh = blockIdx.x, b = bh / NH, h = bh % NH;
  const int q0 = blockIdx.y * kFlashQueryRows;
  const long stride = 3L * C;
  const bf16* q_base = qkv + static_cast<long>(b) * T * stride + h * hs;  // (b, t = 0, h)
  const bool vec = vector_loads(q_base, stride, hs);

  load_tile(Qs, ldh, q_base + q0 * stride, stride, kFlashQueryRows, T - q0, hs, hsp, vec);
  for (int i = lane; i < 16 * hsp; i += 32) Ow[(i / hsp) * ldf + i % hsp] = 0.0f;

  // Lanes 2r and 2r + 1 own row r of the warp's 16, each half of the 64 keys of a tile.
  const int r = lane / 2, half = lane % 2;
  const int t = q0 + warp * 16 + r;  // this row's position
  float row_max = -INFINITY, sum = 0.0f;

  const int key_end = min(T, q0 + kFlashQueryRows);  // the diagonal: keys past the block's last row are masked
  for (int k0 = 0; k0 < key_end; k0 += kFlashKeyRows) {
    __syncthreads();  // every warp is done with the last tile
    load_tile(Ks, ldh, q_base + C + k0 * stride, stride, kFlashKeyRows, T - k0, hs, hsp, vec);
    load_tile(Vs, ldh, q_base + 2 * C + k0 * stride, stride, kFlashKeyRows, T - k0, hs, hsp, vec);
    __syncthreads();

    // S (16 x 64) = Q_w K^T
    for (int n = 0; n < kFlashKeyRows / 16; ++n) {
      FragC acc;
      wmma::fill_fragment(acc, 0.0f);
      for (int kk = 0; kk < hsp; kk += 16) {
        FragA qa;
        FragBT kb;
        wmma::load_matrix_sync(qa, Qs + warp * 16 * ldh + kk, ldh);
        wmma::load_matrix_sync(kb, Ks + n * 16 * ldh + kk, ldh);
        wmma::mma_sync(acc, qa, kb, acc);
      }
      wmma::store_matrix_sync(Sw + n * 16, acc, kScoreLd, wmma::mem_row_major);
    }
    __syncwarp();

    // Online softmax of row r: the new max, P = exp(s - max) in bf16, the old sum and output rescaled.
    float* srow = Sw + r * kScoreLd;
    float tile_max = -INFINITY;
    for (int c = half * 32; c < half * 32 + 32; ++c) {
      const int key = k0 + c;
      const float s = (key <= t && key < T) ? srow[c] * scale : -INFINITY;
      srow[c] = s;
      tile_max = fmaxf(tile_max, s);
    }
    tile_max = fmaxf(tile_max, __shfl_xor_sync(0xffffffffu, tile_max, 1));
    const float new_max = fmaxf(row_max, tile_max);
    const float base = new_max == -INFINITY ? 0.0f : new_max;  // a row with no key yet (never on the diagonal's left)
    const float alpha = expf(row_max - base);                   // 0 on the first tile
    float tile_sum = 0.0f;
    for (int c = half * 32; c < half * 32 + 32; ++c) {
      const float p = expf(srow[c] - base);
      Pw[r * kProbLd + c] = __float2bfloat16(p);
      tile_sum += p;
    }
    tile_sum += __shfl_xor_sync(0xffffffffu, tile_sum, 1);
    sum = sum * alpha + tile_sum;
    row_max = new_max;
    for (int d = half; d < hsp; d += 2) Ow[r * ldf + d] *= alpha;
    __syncwarp();

    // O_w (16 x hsp) += P_w V
    for (int n = 0; n < hsp; n += 16) {
      FragC acc;
      wmma::load_matrix_sync(acc, Ow + n, ldf, wmma::mem_row_major);
      for (int kk = 0; kk < kFlashKeyRows; kk += 16) {
        FragA pa;
        FragB vb;
        wmma::load_matrix_sync(pa, Pw + kk, kProbLd);
        wmma::load_matrix_sync(vb, Vs + kk * ldh + n, ldh);
        wmma::mma_sync(acc, pa, vb, acc);
      }
      wmma::store_matrix_sync(Ow + n, acc, ldf, wmma::mem_row_major);
    }
    __syncwarp();
  }

  if (half == 0) {
    row_sum[r] = sum;
    if (t < T) lse[static_cast<long>(bh) * T + t] = row_max + logf(sum);
  }
  __syncwarp();
  // The warp writes row by row, adjacent lanes adjacent channels.
  for (int rr = 0; rr < 16; ++rr) {
    const int tt = q0 + warp * 16 + rr;
    if (tt >= T) break;
    const float inv = 1.0f / row_sum[rr];
    bf16* o = out + (static_cast<long>(b) * T + tt) * C + h * hs;
    for (int d = lane; d < hs; d += 32) o[d] = __float2bfloat16(Ow[rr * ldf + d] * inv);
  }
}

// The backward kernel's steps (flash_attention_backward_kernel, below), each over its block's
// shared-memory tiles; kN = hsp / 16 as there.

// S = Q K^T and dP = dout V^T of one query step and key tile (32 x 64 each, fp32): warp w takes row
// tile w / 2, column tiles 2(w % 2) and +1.
template <int kN>
__device__ __forceinline__ void backward_scores(float* Ss, float* dPs, const bf16* Qs, const bf16* Ks, const bf16* dOs,
                                                const bf16* Vs, int ldh, int warp) {
  constexpr int hsp = 16 * kN;
  const int mt = warp / 2;
#pragma unroll
  for (int j = 0; j < 2; ++j) {
    const int nt = (warp % 2) * 2 + j;
    FragC s_acc, dp_acc;
    wmma::fill_fragment(s_acc, 0.0f);
    wmma::fill_fragment(dp_acc, 0.0f);
#pragma unroll 2
    for (int kk = 0; kk < hsp; kk += 16) {
      FragA a;
      FragBT bt;
      wmma::load_matrix_sync(a, Qs + mt * 16 * ldh + kk, ldh);
      wmma::load_matrix_sync(bt, Ks + nt * 16 * ldh + kk, ldh);
      wmma::mma_sync(s_acc, a, bt, s_acc);
      wmma::load_matrix_sync(a, dOs + mt * 16 * ldh + kk, ldh);
      wmma::load_matrix_sync(bt, Vs + nt * 16 * ldh + kk, ldh);
      wmma::mma_sync(dp_acc, a, bt, dp_acc);
    }
    wmma::store_matrix_sync(Ss + mt * 16 * kScoreLd + nt * 16, s_acc, kScoreLd, wmma::mem_row_major);
    wmma::store_matrix_sync(dPs + mt * 16 * kScoreLd + nt * 16, dp_acc, kScoreLd, wmma::mem_row_major);
  }
}

// P = exp(s * scale - lse), masked (causal, and rows and keys past T); dS = P (dP - delta). Query
// rows i0.., key rows k0...
__device__ __forceinline__ void backward_probabilities(bf16* Ps, bf16* dSs, const float* Ss, const float* dPs,
                                                       const float* lse_s, const float* delta_s, int i0, int k0, int T,
                                                       float scale) {
  for (int i = threadIdx.x; i < kFlashBackwardRows * kFlashKeyRows; i += blockDim.x) {
    const int r = i / kFlashKeyRows, c = i % kFlashKeyRows;
    const int t = i0 + r, key = k0 + c;
    float p = 0.0f;
    if (t < T && key < T && key <= t) p = expf(Ss[r * kScoreLd + c] * scale - lse_s[r]);
    Ps[r * kProbLd + c] = __float2bfloat16(p);
    dSs[r * kProbLd + c] = __float2bfloat16(p * (dPs[r * kScoreLd + c] - delta_s[r]));
  }
}

// dV (the warp's 16 key rows x hsp) += P^T dout and dK += dS^T Q, over the step's query rows.
template <int kN>
__device__ __forceinline__ void accumulate_dv_dk(FragC (&dv)[kN], FragC (&dk)[kN], const bf16* Ps, const bf16* dSs,
                                                 const bf16* dOs, const bf16* Qs, int ldh, int warp) {
#pragma unroll
  for (int kk = 0; kk < kFlashBackwardRows; kk += 16) {
    FragAT pt, dst;
    wmma::load_matrix_sync(pt, Ps + kk * kProbLd + warp * 16, kProbLd);
    wmma::load_matrix_sync(dst, dSs + kk * kProbLd + warp * 16, kProbLd);
#pragma unroll
    for (int n = 0; n < kN; ++n) {
      FragB bm;
      wmma::load_matrix_sync(bm, dOs + kk * ldh + n * 16, ldh);
      wmma::mma_sync(dv[n], pt, bm, dv[n]);
      wmma::load_matrix_sync(bm, Qs + kk * ldh + n * 16, ldh);
      wmma::mma_sync(dk[n], dst, bm, dk[n]);
    }
  }
}

// dQ (32 x hsp, query rows i0..) += dS K, in the global accumulator `dq`: tiles (row tile, column
// tile) dealt to the warps in turn. The first key tile (k0 = 0) starts each row's sum.
template <int kN>
__device__ __forceinline__ void accumulate_dq(float* dq, const bf16* dSs, const bf16* Ks, int ldh, int i0, int k0,
                                              int warp) {
  constexpr int hsp = 16 * kN;
  for (int tile = warp; tile < 2 * kN; tile += kFlashWarps) {
    const int mt = tile % 2, n = (tile / 2) * 16;
    float* dst = dq + static_cast<long>(i0 + mt * 16) * hsp + n;
    FragC acc;
    if (k0 == 0) wmma::fill_fragment(acc, 0.0f);
    else wmma::load_matrix_sync(acc, dst, hsp, wmma::mem_row_major);
#pragma unroll
    for (int kk = 0; kk < kFlashKeyRows; kk += 16) {
      FragA a;
      FragB bm;
      wmma::load_matrix_sync(a, dSs + mt * 16 * kProbLd + kk, kProbLd);
      wmma::load_matrix_sync(bm, Ks + kk * ldh + n, ldh);
      wmma::mma_sync(acc, a, bm, acc);
    }
    wmma::store_matrix_sync(dst, acc, hsp, wmma::mem_row_major);
  }
}

// dK (scaled) and dV of the warp's 16 key rows (key tile k0, head h of sequence b) into dqkv, a
// 16 x 16 tile at a time through the warp's `stage` in shared memory: lane l writes row l / 2,
// columns 8 (l % 2) .. + 7.
template <int kN>
__device__ __forceinline__ void store_dk_dv(bf16* dqkv, float* stage, const FragC (&dk)[kN], const FragC (&dv)[kN],
                                            int b, int h, int k0, int warp, int lane, int T, int C, int hs, long stride,
                                            float scale) {
  const int r = lane / 2, c0 = (lane % 2) * 8, key = k0 + warp * 16 + r;
  bf16* dk_row = dqkv + (static_cast<long>(b) * T + key) * stride + C + h * hs;
#pragma unroll
  for (int n = 0; n < kN; ++n) {
#pragma unroll
    for (int which = 0; which < 2; ++which) {
      wmma::store_matrix_sync(stage, which == 0 ? dk[n] : dv[n], 16, wmma::mem_row_major);
      __syncwarp();
      if (key < T)
        for (int c = c0; c < c0 + 8; ++c) {
          const int d = n * 16 + c;
          if (d < hs) dk_row[which * C + d] = __float2bfloat16(stage[r * 16 + c] * (which == 0 ? scale : 1.0f));
        }
      __syncwarp();
    }
  }
}

// kN = hsp / 16: the column tiles of a head, a compile-time count so that each warp's dK and dV
// (16 key rows x hsp, 2 kN fragments) stay in registers.
template <int kN>
__global__ void __launch_bounds__(kThreadsFlash, 2)
    flash_attention_backward_kernel(bf16* dqkv, float* dq_acc, const float* delta, const bf16* dout, const bf16* qkv,
                                    const float* lse, int T, int C, int NH, int hs, float scale) {
  extern __shared__ __align__(128) unsigned char smem[];
  const FlashSmem m = flash_backward_smem(hs);
  constexpr int hsp = 16 * kN;
  const int ldh = m.ldh;
  bf16* Ks = at<bf16>(smem, m.k);
  bf16* Vs = at<bf16>(smem, m.v);
  bf16* Qs = at<bf16>(smem, m.q);
  bf16* dOs = at<bf16>(smem, m.dout);
  float* Ss = at<float>(smem, m.s);
  float* dPs = at<float>(smem, m.dp);
  bf16* Ps = at<bf16>(smem, m.p);
  bf16* dSs = at<bf16>(smem, m.ds);
  float* lse_s = at<float>(smem, m.stats);
  float* delta_s = lse_s + kFlashBackwardRows;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  float* stage = at<float>(smem, m.stage) + warp * 16 * 16;

  const int bh = blockIdx.x, b = bh / NH, h = bh % NH;
  const long stride = 3L * C;
  const bf16* q_base = qkv + static_cast<long>(b) * T * stride + h * hs;
  const bf16* do_base = dout + static_cast<long>(b) * T * C + h * hs;
  const bool vec = vector_loads(q_base, stride, hs) && vector_loads(do_base, C, hs);
  const long head_row0 = static_cast<long>(bh) * T;  // lse and delta rows of (b, h, t = 0)
  float* dq = dq_acc + static_cast<long>(bh) * flash_padded_rows(T) * hsp;

  for (int k0 = 0; k0 < T; k0 += kFlashKeyRows) {
    __syncthreads();  // every warp is done with the last key tile
    load_tile(Ks, ldh, q_base + C + k0 * stride, stride, kFlashKeyRows, T - k0, hs, hsp, vec);
    load_tile(Vs, ldh, q_base + 2 * C + k0 * stride, stride, kFlashKeyRows, T - k0, hs, hsp, vec);
    FragC dv[kN], dk[kN];  // warp w: key rows k0 + 16w .. + 15
#pragma unroll
    for (int n = 0; n < kN; ++n) {
      wmma::fill_fragment(dv[n], 0.0f);
      wmma::fill_fragment(dk[n], 0.0f);
    }
    // Query steps from the one holding row k0 (the diagonal) to the end.
    for (int i0 = k0 / kFlashBackwardRows * kFlashBackwardRows; i0 < T; i0 += kFlashBackwardRows) {
      __syncthreads();  // the last step is done with Q, dout, P and dS
      load_tile(Qs, ldh, q_base + i0 * stride, stride, kFlashBackwardRows, T - i0, hs, hsp, vec);
      load_tile(dOs, ldh, do_base + static_cast<long>(i0) * C, C, kFlashBackwardRows, T - i0, hs, hsp, vec);
      for (int i = threadIdx.x; i < kFlashBackwardRows; i += blockDim.x) {
        const bool in = i0 + i < T;
        lse_s[i] = in ? lse[head_row0 + i0 + i] : 0.0f;
        delta_s[i] = in ? delta[head_row0 + i0 + i] : 0.0f;
      }
      __syncthreads();

      backward_scores<kN>(Ss, dPs, Qs, Ks, dOs, Vs, ldh, warp);
      __syncthreads();

      backward_probabilities(Ps, dSs, Ss, dPs, lse_s, delta_s, i0, k0, T, scale);
      __syncthreads();

      accumulate_dv_dk<kN>(dv, dk, Ps, dSs, dOs, Qs, ldh, warp);
      accumulate_dq<kN>(dq, dSs, Ks, ldh, i0, k0, warp);
    }
    store_dk_dv<kN>(dqkv, stage, dk, dv, b, h, k0, warp, lane, T, C, hs, stride, scale);
  }
  __syncthreads();  // makes the block's dQ writes visible to all of its threads
  for (long i = threadIdx.x; i < static_cast<long>(T) * hs; i += blockDim.x) {
    const int t = static_cast<int>(i / hs), d = static_cast<int>(i % hs);
    dqkv[(static_cast<long>(b) * T + t) * stride + h * hs + d] = __float2bfloat16(dq[static_cast<long>(t) * hsp + d] * scale);
  }
}

}  // namespace

void flash_attention_forward(bf16* out, float* lse, const bf16* qkv, int B, int T, int C, int NH, float scale,
                             cudaStream_t s) {
  const int hs = C / NH;
  launch(flash_forward_launch(T, 1L * B * NH, hs), s, flash_attention_forward_kernel, out, lse, qkv, T, C, NH, hs,
         scale);
}

void flash_attention_backward(bf16* dqkv, float* dq_acc, const float* delta, const bf16* dout, const bf16* qkv,
                              const float* lse, int B, int T, int C, int NH, float scale, cudaStream_t s) {
  const int hs = C / NH;
  const LaunchConfig c = flash_backward_launch(1L * B * NH, hs);
  switch (flash_head_pad(hs) / 16) {  // flash_supports: 1..8
#define ZBPP_FLASH_BACKWARD(N) \
  case N: launch(c, s, flash_attention_backward_kernel<N>, dqkv, dq_acc, delta, dout, qkv, lse, T, C, NH, hs, scale); break;
    ZBPP_FLASH_BACKWARD(1)
    ZBPP_FLASH_BACKWARD(2)
    ZBPP_FLASH_BACKWARD(3)
    ZBPP_FLASH_BACKWARD(4)
    ZBPP_FLASH_BACKWARD(5)
    ZBPP_FLASH_BACKWARD(6)
    ZBPP_FLASH_BACKWARD(7)
    ZBPP_FLASH_BACKWARD(8)
#undef ZBPP_FLASH_BACKWARD
    default: throw std::runtime_error("flash attention backward: head of " + std::to_string(hs) + " channels (at most " +
                                      std::to_string(kFlashMaxHead) + ")");
  }
}

}  // namespace zbpp::cuda
