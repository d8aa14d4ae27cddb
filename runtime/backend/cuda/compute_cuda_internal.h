// The CUDA backend's class and its per-chunk state, shared by its three files: compute_cuda.cpp
// (construction, buffers), compute_cuda_chunk.cpp (F, B, W), compute_cuda_state.cpp (optimizer, state).
//
// The CUDA backend (see compute_cuda.h). Mirrors cpu/compute_cpu.cpp op for op: per chunk the
// parameters (fp32 master, bf16 copy, fp32 grad, m, v), per activation slot the device buffers B
// and W need. Every op is enqueued on the stage's stream and ends with a synchronize of that
// stream only, so the interpreter's wall-clock spans are GPU times and a failure is reported by the
// op that caused it. Buffers come from the stream-ordered allocator; activation_bytes() counts the
// slot buffers held, as the planner's M_B and M_W do.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "runtime/backend/cuda/compute_cuda.h"
#include "runtime/backend/cuda/gemm_lt.h"
#include "runtime/backend/cuda/kernels.cuh"
#include "runtime/cuda/check.h"
#include "runtime/cuda/device_buffers.h"
#include "runtime/cuda/stream_timer.h"

namespace zbpp::cuda_backend {

using cuda::bf16;

struct Param {
  int id = -1;
  long n = 0;
  float *value = nullptr, *grad = nullptr, *m = nullptr, *v = nullptr;
  bf16* value16 = nullptr;  ///< what GEMMs and bias epilogues read
};


struct Buf {
  void* p = nullptr;
  size_t bytes = 0;
  bf16* h() const { return static_cast<bf16*>(p); }
  float* f() const { return static_cast<float*>(p); }
};

struct BlockActs {
  Buf ln1, ln1_mean, ln1_rstd, qkv, lse, atty, res2, ln2, ln2_mean, ln2_rstd, fch, fch_gelu, out;
  Buf d_qkv, d_attproj, d_ln1, d_ln2, d_fch, d_fcproj;
  std::array<Buf*, 19> all() {
    return {&ln1, &ln1_mean, &ln1_rstd, &qkv, &lse, &atty, &res2, &ln2, &ln2_mean, &ln2_rstd, &fch, &fch_gelu, &out,
            &d_qkv, &d_attproj, &d_ln1, &d_ln2, &d_fch, &d_fcproj};
  }
};

struct Stash {
  int mb = -1;
  Buf x;
  std::vector<BlockActs> blocks;
  Buf lnf, lnf_mean, lnf_rstd, logits, d_lnf, d_x;  // logits become dlogits in F (the fused classifier)
};

struct Chunk {
  int vs = 0;
  bool embed = false, head = false;
  int first = 0, count = 0;
  std::vector<std::array<Param, kBlockTensors>> blocks;
  Param wte, wpe, lnfw, lnfb, lmw;
  std::vector<Stash> slots;
  std::vector<Param*> params;  // in global order
};

class CudaCompute final : public Compute {
 public:
  CudaCompute(const GptConfig& config, const std::vector<int>& vss, int total_vs, int microbatches, std::uint64_t seed,
              const AdamWConfig& adamw, const CudaStage& stage);
  ~CudaCompute() override;

  std::string refuses(const Payload& p) const override {
    return p.on_device() ? "" : p.what() + ", where the CUDA backend takes device buffers (a CUDA transport's)";
  }
  size_t activation_bytes() const override { return held_bytes_; }

  // compute_cuda.cpp: the step's tokens
  void set_step_data(const std::vector<std::vector<int>>* microbatches) override;
  // compute_cuda_chunk.cpp: F, B and W
  void forward(int chunk_index, int mb, int slot, const Payload* input, Payload* output) override;
  void backward_input(int chunk_index, int mb, int slot, const Payload* doutput, Payload* dinput) override;
  void backward_weight(int chunk_index, int mb, int slot) override;
  // compute_cuda_state.cpp: losses, the optimizer, the state
  bool loss(int mb, double* out) const override;
  void zero_grad() override;
  GradStats grad_stats() const override;
  void optimizer_step(double global_norm) override;
  void optimizer_rollback(double global_norm) override;
  void inject_nonfinite() override;
  bool inject_device_fault() override;
  bool save_state(std::string* bytes) const override;
  bool load_state(const std::string& bytes, std::string* err) override;
  std::vector<std::pair<int, std::vector<float>>> parameters() const override;
  std::vector<std::pair<int, std::vector<float>>> gradients() const override;
  OpTimer* timer() override { return timer_.get(); }

 private:
  struct Group {
    long uniq = 0, offsets = 0, positions = 0;  // offsets into groups_
    int n_uniq = 0;
  };

  void sync(const char* what) const { ZBPP_CK(cudaStreamSynchronize(stream_), std::string(what) + " on the stage stream"); }

  Stash& stash(Chunk& ch, int slot) { return slot_stash(ch, slot); }
  static void check_slot(const Stash& s, int mb, int slot) { zbpp::check_slot(s.mb, mb, slot); }

  static std::string layer(int block, const char* name) { return "block " + std::to_string(block) + " " + name; }

  // compute_cuda.cpp: parameters, token groups, slot buffers
  void copy_in(void* dst, const void* src, size_t bytes, const char* what);
  void make_param(Param* p, long n, int id, std::uint64_t seed, float stdv, float constant, bool use_constant);
  void upload_groups(const std::vector<int>& inputs);
  Buf hold(size_t bytes, const char* what);
  void drop(Buf* b);
  Buf adopt(const Payload* from, size_t bytes, const char* what);
  void hand_off(Buf* b, Payload* out);
  void free_stash(Stash& s, bool counted);
  // compute_cuda_chunk.cpp: a block's layers, the head's
  // A LayerNorm's output, statistics and weights: where a residual add's sum is normalised to.
  struct Norm {
    Buf *out = nullptr, *mean = nullptr, *rstd = nullptr;
    const float *w = nullptr, *b = nullptr;
    const char* what = "";
  };
  static Norm ln1_of(const std::array<Param, kBlockTensors>& p, BlockActs& a);
  static Norm lnf_of(Chunk& ch, Stash& s);
  void hold_norm(const Norm& to);
  void layernorm_into(const Norm& to, const Buf& x);
  void add_layernorm_into(const Norm& to, Buf* sum, const Buf& a, const Buf& b);
  void block_forward(const std::array<Param, kBlockTensors>& p, BlockActs& a, const Buf& x, int l, bool ln1_ready,
                     const Norm* next);
  Buf block_backward_input(const std::array<Param, kBlockTensors>& p, BlockActs& a, const Buf& x, Buf dout, int l);
  void block_backward_weight(std::array<Param, kBlockTensors>& p, BlockActs& a, const Buf& x, int l);
  void head_forward(Chunk& ch, Stash& s, const Buf& last, int mb, bool lnf_ready);
  Buf head_backward_input(Chunk& ch, Stash& s);
  // compute_cuda_state.cpp
  std::vector<std::pair<int, std::vector<float>>> all(float* Param::*field, const char* what) const;
  void adamw_all(double global_norm, bool rollback);

  GptConfig c_;
  int m_;
  AdamWConfig adamw_;
  mutable std::vector<double> losses_;  // [mb], read from token_losses_ by loss()
  mutable bool losses_read_ = false;     // losses_ holds what token_losses_ has
  std::vector<bool> has_loss_;
  float* token_losses_ = nullptr;        // (m, BT): the head's per-token losses this step
  std::unique_ptr<cuda::GemmLt> gemm_;  // made once the device is selected
  // ZBPP_CUDA_ATTENTION: which attention kernels run (kernels.cuh).
  const cuda::AttentionVariant attention_ = cuda::attention_variant_from_env(c_.channels / c_.heads);
  cudaStream_t stream_ = nullptr;
  bool own_stream_ = false;
  std::unique_ptr<cuda::StreamTimer> timer_;  // ops return once enqueued: they are timed on stream_
  std::vector<std::unique_ptr<Chunk>> chunks_;
  int* tokens_ = nullptr;
  int* targets_ = nullptr;
  int* groups_ = nullptr;
  std::vector<Group> groups_of_;
  float* scratch_ = nullptr;
  double* norm_scratch_ = nullptr;
  size_t held_bytes_ = 0;
  int step_ = 0;
};

}  // namespace zbpp::cuda_backend
